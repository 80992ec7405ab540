"""The ``autoscaler`` export drives a real Ray autoscaler: ``ray.cluster_utils.AutoscalingCluster`` (the fake
multi-node provider, autoscaler v2, which schedules by label selector) scales a node type from the export up
from zero for a task that asks for its accelerator or selects its labels, and back down when idle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ports import free_ports

from rayaccel.inventory.cloud import CloudCatalog, collect_cloud_catalog
from rayaccel.outputs.exporters import ExportError, ExportOptions, export
from rayaccel.plugins import instance_types
from rayaccel.plugins.manager import default_manager
from rayaccel.ray.processes import cluster_processes
from rayaccel.simulation.host_factory import fixture_hosts
from rayaccel.support.polling import wait_for

pytest.importorskip("rayaccel_nvidia", reason="the NVIDIA reference plugin hints at aws:p5.48xlarge")
pytest.importorskip("rayaccel_neuron", reason="the Neuron reference plugin records trn1.32xlarge")

ray = pytest.importorskip("ray")


def cloud_catalog(instance_types: list[tuple[str, str]] | None = None,
                  plugins: list[str] | None = None) -> CloudCatalog:
    """The installed plugins' cloud catalog, checked against their fixtures as ``rayaccel export`` does."""
    manager = default_manager()
    return collect_cloud_catalog(manager, instance_types or [], plugins, recordings=fixture_hosts(manager))


def table_of(path: Path) -> str:
    """The plugin whose instance-types.yaml ``path`` is (rayaccel_<plugin>/instance-types.yaml)."""
    return path.parent.name.removeprefix("rayaccel_")


def changed_table(monkeypatch: pytest.MonkeyPatch, plugin: str, instance_type: str, **change: Any) -> None:
    """The plugin's instance-types.yaml as if one of its entries said ``change``."""
    load = instance_types.load_instance_types

    def changed(path: Path) -> instance_types.InstanceTypeTable:
        table = load(path)
        if table_of(path) != plugin:
            return table
        return table.model_copy(update={"instance_types": {
            provider: {name: entry.model_copy(update=change) if name == instance_type else entry
                       for name, entry in types.items()} for provider, types in table.instance_types.items()}})
    monkeypatch.setattr(instance_types, "load_instance_types", changed)


# A real autoscaler launches and removes nodes on its own cadence: under the parallel part's load (two test
# files, each starting Ray) one launch took over 240 s, so make test runs this file on its own, afterwards.
pytestmark = pytest.mark.alone

GPU_TYPE = "aws-p5.48xlarge-nvidia"
NEURON_TYPE = "aws-trn1.32xlarge-neuron"
RAYACCEL = [sys.executable, "-m", "rayaccel"]
#: The head node type's name, as ray.cluster_utils.AutoscalingCluster names it.
HEAD_TYPE = "ray.head.default"


def exported_node_types() -> dict[str, Any]:
    """``rayaccel export --format autoscaler`` of the NVIDIA and Neuron plugins (every instance type they list,
    and those the Neuron fixtures record); the YAML and the JSON carry the same node types."""
    argv = [*RAYACCEL, "export", "--format", "autoscaler", "--plugin", "nvidia", "--plugin", "neuron",
            "--max-workers", "1"]
    as_yaml, as_json = (subprocess.run(argv + extra, capture_output=True, text=True, timeout=120)
                        for extra in ([], ["--json"]))
    assert as_json.returncode == 0 and as_yaml.returncode == 0, as_json.stderr + as_yaml.stderr
    document = json.loads(as_json.stdout)
    assert document["problems"] == []
    assert yaml.safe_load(as_yaml.stdout)["available_node_types"] == document["available_node_types"]
    types: dict[str, Any] = document["available_node_types"]
    return types


class FakeMultiNodeCluster:
    """What ``ray.cluster_utils.AutoscalingCluster(head_resources, worker_node_types, autoscaler_v2=True)``
    starts (a head whose autoscaler launches nodes through Ray's fake multi-node provider), written out
    because that class cannot be used here: its constructor reads
    ``ray/autoscaler/_private/fake_multi_node/example.yaml``, which the Ray 2.60 wheel does not ship
    (FileNotFoundError on any pip install), and its start() and shutdown() run ``ray stop --force``, which
    would end every other Ray on the machine (parallel test workers'). The config is that example's, the
    env is what AutoscalingCluster.start sets; this one has ports of its own and is stopped by address."""

    def __init__(self, worker_node_types: dict[str, Any], gcs_port: int, idle_timeout_minutes: float) -> None:
        self.address = f"{ray.util.get_node_ip_address()}:{gcs_port}"
        self.gcs_port = gcs_port
        self.config = {
            "cluster_name": "rayaccel-export", "max_workers": 8, "upscaling_speed": 1.0,
            "idle_timeout_minutes": idle_timeout_minutes,
            # The fake provider by module path: as type fake_multinode the autoscaler would read the missing
            # example.yaml for its defaults too (providers._get_default_config).
            "provider": {"type": "external",
                         "module": "ray.autoscaler._private.fake_multi_node.node_provider.FakeMultiNodeProvider",
                         "use_node_id_as_ip": True, "disable_node_updaters": True,
                         "disable_launch_config_check": True, "gcs_address": self.address,
                         # autoscaler v2, as AutoscalingCluster(autoscaler_v2=True) sets it
                         "launch_multiple": True, "head_node_id": "fake_head_node_id"},
            "available_node_types": {**worker_node_types,
                                     HEAD_TYPE: {"resources": {}, "node_config": {}, "max_workers": 0}},
            "head_node_type": HEAD_TYPE, "auth": {}, "docker": {}, "file_mounts": {}, "cluster_synced_files": [],
            "initialization_commands": [], "setup_commands": [], "head_setup_commands": [],
            "worker_setup_commands": [], "head_start_ray_commands": [], "worker_start_ray_commands": [],
            "file_mounts_sync_continuously": False, "rsync_exclude": [], "rsync_filter": []}

    def start(self, config_file: Path) -> None:
        config_file.write_text(json.dumps(self.config))
        client, agent, agent_grpc, metrics, runtime_env, objects = free_ports(6)
        env = {**os.environ, "AUTOSCALER_UPDATE_INTERVAL_S": "1", "RAY_FAKE_CLUSTER": "1",
               "RAY_enable_autoscaler_v2": "1", "RAY_CLOUD_INSTANCE_ID": "fake_head_node_id",
               "RAY_OVERRIDE_NODE_ID_FOR_TESTING": "fake_head_node_id"}
        started = subprocess.run(
            [str(Path(sys.executable).parent / "ray"), "start", "--head", f"--autoscaling-config={config_file}",
             f"--port={self.gcs_port}", f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={agent}",
             f"--dashboard-agent-grpc-port={agent_grpc}", f"--metrics-export-port={metrics}",
             f"--runtime-env-agent-port={runtime_env}", f"--object-manager-port={objects}", "--num-cpus=0",
             "--include-dashboard=false"], env=env, timeout=180, capture_output=True, text=True)
        assert started.returncode == 0, started.stderr[-3000:]

    def stop(self) -> None:
        """Stop the head and every node its autoscaler launched (their command lines name this GCS)."""
        subprocess.run([*RAYACCEL, "stop", f"--address={self.address}", "--grace", "3"], timeout=120,
                       capture_output=True)
        wait_for(lambda: cluster_processes(self.address), lambda pids: pids == [], timeout=60,
                 what=f"no process of cluster {self.address} left")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeMultiNodeCluster]:
    exported = exported_node_types()
    types = {name: exported[name] for name in (GPU_TYPE, NEURON_TYPE)}  # the operator picks the types to offer
    for node_type in types.values():
        node_type["resources"]["CPU"] = 1  # the operator's part: the plugins know no CPU count
    (port,) = free_ports(1)
    autoscaling = FakeMultiNodeCluster(types, port, idle_timeout_minutes=0.1)
    try:
        autoscaling.start(tmp_path_factory.mktemp("autoscaler") / "config.json")
        ray.init(address=autoscaling.address)
        yield autoscaling
    finally:
        ray.shutdown()
        autoscaling.stop()


def alive_of_type(resource: str) -> list[dict[str, Any]]:
    return [n for n in ray.nodes() if n["Alive"] and n["Resources"].get(resource)]


def where_am_i() -> dict[str, Any]:
    context = ray.get_runtime_context()
    return {"node": context.get_node_id(), "labels": context.get_node_labels()}


def test_the_export_promises_what_the_recorded_node_publishes() -> None:
    types = exported_node_types()
    gpu, neuron = types[GPU_TYPE], types[NEURON_TYPE]
    assert gpu["resources"] == {"GPU": 8.0, "accelerator_type:H100": 1.0}
    assert gpu["labels"] == {"rayaccel.io/family": "nvidia", "rayaccel.io/vendor": "NVIDIA",
                             "ray.io/accelerator-type": "H100"}
    assert neuron["resources"] == {"neuron_cores": 32.0, "accelerator_type:aws-neuron-core": 1.0}
    assert neuron["labels"]["aws.amazon.com/neuron.instance-type"] == "trn1.32xlarge"
    assert neuron["labels"]["rayaccel.io/count"] == "16"
    assert (neuron["min_workers"], neuron["max_workers"]) == (0, 1)


def test_a_task_asking_for_the_accelerator_scales_its_type_up_from_zero_and_down(
        cluster: FakeMultiNodeCluster) -> None:
    assert alive_of_type("GPU") == []
    placed = ray.get(ray.remote(num_cpus=0, num_gpus=1)(where_am_i).remote(), timeout=240)

    gpu_nodes = alive_of_type("GPU")
    assert [n["NodeID"] for n in gpu_nodes] == [placed["node"]]
    assert gpu_nodes[0]["Resources"]["GPU"] == 8.0
    assert placed["labels"]["ray.io/accelerator-type"] == "H100"
    wait_for(lambda: alive_of_type("GPU"), lambda nodes: nodes == [], timeout=180, interval=2,
             what="the idle GPU node to be scaled down")


def test_a_task_selecting_the_labels_scales_its_type_up_from_zero_and_down(
        cluster: FakeMultiNodeCluster) -> None:
    assert alive_of_type("neuron_cores") == []
    selector = {"aws.amazon.com/neuron.instance-type": "trn1.32xlarge"}
    placed = ray.get(ray.remote(num_cpus=0, label_selector=selector)(where_am_i).remote(), timeout=240)

    neuron_nodes = alive_of_type("neuron_cores")
    assert [n["NodeID"] for n in neuron_nodes] == [placed["node"]]
    assert neuron_nodes[0]["Resources"]["neuron_cores"] == 32.0
    assert placed["labels"]["rayaccel.io/family"] == "neuron"
    assert alive_of_type("GPU") == []  # the selector, not any free CPU, chose the type
    wait_for(lambda: alive_of_type("neuron_cores"), lambda nodes: nodes == [], timeout=180, interval=2,
             what="the idle Neuron node to be scaled down")


def test_no_hinted_instance_type_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    listing = instance_types.instance_type_hints
    monkeypatch.setattr(instance_types, "instance_type_hints",  # a plugin that lists none
                        lambda path: [] if table_of(path) == "nvidia" else listing(path))
    catalog = cloud_catalog([("aws", "m5.large")], plugins=["nvidia"])
    with pytest.raises(ExportError, match="--instance-type PROVIDER:TYPE") as refused:
        export("autoscaler", None, ExportOptions(cloud=catalog))  # type: ignore[arg-type]
    assert "\n" not in str(refused.value)


def test_a_hint_that_disagrees_with_its_instance_types_fixture_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    changed_table(monkeypatch, "neuron", "trn1.32xlarge", count=16)  # the table says 16, the fixture finds 32
    catalog = cloud_catalog(plugins=["neuron"])

    (problem,) = catalog.problems
    assert (problem.plugin, problem.hook, problem.code) == ("neuron", "rayaccel_cloud_hints", "cloud-hint-disagrees")
    assert "aws:trn1.32xlarge is hinted as 16 neuron_cores" in problem.message
    assert "fixture neuron/trn1.32xlarge of that instance type discovers 32" in problem.message
    exported = export("autoscaler", None, ExportOptions(cloud=catalog))  # type: ignore[arg-type]
    assert exported.warnings and "cloud-hint-disagrees" not in exported.text  # the message, not the code
    assert "# problem: error: plugin neuron" in exported.text


def test_a_hint_without_the_type_its_instance_types_fixture_publishes_is_reported(
        monkeypatch: pytest.MonkeyPatch) -> None:
    changed_table(monkeypatch, "neuron", "trn1.32xlarge", accelerator_type=None)  # the count alone (held-out s1)
    catalog = cloud_catalog(plugins=["neuron"])

    (problem,) = catalog.problems
    assert (problem.plugin, problem.code) == ("neuron", "cloud-hint-disagrees"), problem
    assert "aws:trn1.32xlarge is hinted as 32 neuron_cores of type (none), but fixture neuron/trn1.32xlarge of " \
           "that instance type discovers 32 of type " in problem.message, problem.message
    (node_type,) = [t for t in catalog.node_types if t.instance_type == "trn1.32xlarge"]
    assert not [r for r in node_type.resources if r.startswith("accelerator_type:")]  # the hint's, reported


def test_a_hint_without_an_accelerator_type_and_no_fixture_of_its_type_is_reported(
        monkeypatch: pytest.MonkeyPatch) -> None:
    changed_table(monkeypatch, "gaudi", "dl1.24xlarge", accelerator_type=None)
    catalog = cloud_catalog(plugins=["gaudi"])

    (problem,) = catalog.problems
    assert (problem.plugin, problem.hook, problem.code) == ("gaudi", "rayaccel_cloud_hints", "cloud-hint-untyped")
    assert "aws:dl1.24xlarge is hinted as 8 HPU without an accelerator type, while a node of the family publishes " \
           "its SKU's (" in problem.message, problem.message
    assert "the node type lacks accelerator_type:<type>" in problem.message


@pytest.mark.parametrize(("argv", "message"), [
    (["--instance-type", "aws-p5.48xlarge"], "instance type 'aws-p5.48xlarge' is not PROVIDER:TYPE"),
    (["--min-workers", "3", "--max-workers", "1"], "--min-workers 3 is more than --max-workers 1"),
])
def test_bad_autoscaler_input_is_one_line_and_exit_2(argv: list[str], message: str) -> None:
    done = subprocess.run([*RAYACCEL, "export", "--format", "autoscaler", *argv], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_every_instance_type_a_plugin_lists_is_a_node_type_without_being_named() -> None:
    import rayaccel_nvidia
    import rayaccel_tpu

    names = {(t.provider, t.instance_type, t.family) for t in cloud_catalog().node_types}

    nvidia, tpu = (instance_types.load_instance_types(Path(p.__file__).parent / "instance-types.yaml")
                   for p in (rayaccel_nvidia, rayaccel_tpu))
    assert len(nvidia.instance_types["aws"]) > 30 and len(tpu.instance_types["gcp"]) > 5
    assert {("aws", name, "nvidia") for name in nvidia.instance_types["aws"]} <= names
    assert {("gcp", name, "tpu") for name in tpu.instance_types["gcp"]} <= names
    assert {"amd", "gaudi", "neuron"} <= {family for _, _, family in names}


def test_a_listed_hint_that_differs_from_the_hint_for_its_type_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    listing = instance_types.instance_type_hints
    monkeypatch.setattr(instance_types, "instance_type_hints",
                        lambda path: [h.model_copy(update={"count": 4}) if table_of(path) == "gaudi" else h
                                      for h in listing(path)])
    catalog = cloud_catalog(plugins=["gaudi"])

    (problem,) = catalog.problems
    assert (problem.hook, problem.code) == ("rayaccel_cloud_instance_types", "cloud-hints-differ")
    assert "aws:dl1.24xlarge is listed as 4" in problem.message
    (node_type,) = catalog.node_types
    assert node_type.resources["HPU"] == 8.0  # what rayaccel_cloud_hints answers, not the listing


def test_a_hinted_accelerator_type_ray_cannot_take_as_a_label_is_left_out_and_reported(
        monkeypatch: pytest.MonkeyPatch) -> None:
    changed_table(monkeypatch, "gaudi", "dl1.24xlarge", accelerator_type="Intel GAUDI/1")
    catalog = cloud_catalog(plugins=["gaudi"])

    (node_type,) = catalog.node_types
    assert "ray.io/accelerator-type" not in node_type.labels and node_type.labels["rayaccel.io/family"] == "gaudi"
    assert [p.code for p in catalog.problems] == ["invalid-label"]
    assert "aws:dl1.24xlarge: label ray.io/accelerator-type='Intel GAUDI/1'" in catalog.problems[0].message


def test_a_type_recorded_in_two_configurations_agrees_with_the_default_one() -> None:
    # trn2.48xlarge is recorded at logical-core config 2 (its default: 64 cores) and at 1 (128): the hint
    # (64) is the type as launched; it agrees with one recording, whose labels the node type carries.
    catalog = cloud_catalog(plugins=["neuron"])

    assert [p.code for p in catalog.problems] == []
    (trn2,) = [t for t in catalog.node_types if t.instance_type == "trn2.48xlarge"]
    assert trn2.resources["neuron_cores"] == 64.0 and trn2.fixture == "neuron/trn2.48xlarge"


def test_a_hint_for_a_name_the_plugin_lists_under_another_provider_is_left_out_and_reported(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Held-out round 15's c3: the table looked up by name whatever the provider asked (RAC222,
    # a-hint-is-its-providers); gaudi lists dl1.24xlarge under aws only.
    lookup = instance_types.cloud_hint

    def by_name_alone(path: Path, provider: str, instance_type: str) -> Any:
        found = lookup(path, "aws", instance_type)
        return found.model_copy(update={"provider": provider}) if found else None
    monkeypatch.setattr(instance_types, "cloud_hint", by_name_alone)
    catalog = cloud_catalog([("gcp", "dl1.24xlarge")], plugins=["gaudi"])

    assert [(t.provider, t.instance_type) for t in catalog.node_types] == [("aws", "dl1.24xlarge")]
    (problem,) = catalog.problems
    assert (problem.hook, problem.code) == ("rayaccel_cloud_hints", "hint-for-another-provider")
    assert "gcp:dl1.24xlarge is hinted as 8" in problem.message and "under aws only" in problem.message
