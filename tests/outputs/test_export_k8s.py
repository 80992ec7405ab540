"""`rayaccel export` for Ray and Kubernetes (ray-start, kuberay, dra, nfd), each checked by the real tool:
Ray's own `ray start` parser (and one real `ray start`), the Kubernetes project's OpenAPI schemas through
kubernetes-validate for every version from 1.34 to the newest it ships, the DRA API's documented limits,
and NFD's local-source file rules. The formats are called directly and through the CLI, for five reference
fixtures and a freshly baked template plugin (with a generated node of 160 devices: several slices, one pool).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from ports import free_ports

from rayaccel.cli import main
from rayaccel.cli.inventory import node_inventory
from rayaccel.inventory.visible_units import restrict_to_visible
from rayaccel.outputs.exporters import FORMATS, ExportError, ExportOptions, export
from rayaccel.outputs.exporters.dra import MAX_ATTRIBUTES, MAX_DEVICES, MAX_DEVICES_WITH_TAINTS, TAINT_KEY, split
from rayaccel.outputs.exporters.kuberay import pod_template
from rayaccel.outputs.exporters.nfd import EXPIRY_INTERVALS, MAX_FILE_BYTES
from rayaccel.plugins.manager import default_manager
from rayaccel.records import NodeInventory, SchedulerNames

kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate (dev extra)")
from kubernetes_validate.utils import all_versions  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "templates" / "vendor-plugin"
BIN = Path(sys.executable).parent
REFERENCE_FIXTURES = ["nvidia/dgx-h100", "amd/mi300x-8", "tpu/v5p-16-worker0", "neuron/trn1.32xlarge",
                      "gaudi/hls-gaudi3"]
K8S_FORMATS = ["kuberay", "dra"]
#: Every Kubernetes version kubernetes-validate ships from 1.34 (resource.k8s.io/v1) on.
K8S_VERSIONS = sorted({v for v in all_versions() if tuple(int(p) for p in v.split(".")[:2]) >= (1, 34)},
                      key=lambda v: tuple(int(p) for p in v.split(".")))
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_ATTRIBUTE = re.compile(r"^(([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*){1,63}/)?"
                                 r"[A-Za-z_][A-Za-z0-9_]{0,31}$")
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def inventory_of(fixture: str, *faults: str) -> NodeInventory:
    return node_inventory(default_manager(), fixture, list(faults), None)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- the real checkers -------------------------------------------------------------------------------------

@pytest.fixture(scope="module", autouse=True)
def _schemas_parsed_once() -> Iterator[None]:
    """kubernetes-validate parses a version's schema files (its 1.5 MB ``_definitions.json`` among them) again on
    every call, and this module validates each object for every version: each file is parsed once here. The files
    are the package's data, and validating never changes them; a missing one still raises each time."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kubernetes_validate.utils, "schema_contents", functools.cache(
            kubernetes_validate.utils.schema_contents))
        yield


def check_k8s_object(obj: dict[str, Any]) -> None:
    """Valid for every Kubernetes version from 1.34 on (strict: no unknown field)."""
    assert K8S_VERSIONS, "kubernetes-validate ships no version >= 1.34"
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(obj, version, strict=True)


def check_resource_slices(slices: list[dict[str, Any]], inventory: NodeInventory) -> None:
    """The schemas, then every documented limit the schemas do not carry."""
    pools: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for item in slices:
        check_k8s_object(item)
        assert DNS_SUBDOMAIN.match(item["metadata"]["name"]), item["metadata"]["name"]
        spec = item["spec"]
        assert DNS_SUBDOMAIN.match(spec["driver"]) and len(spec["driver"]) <= 63
        devices = spec["devices"]
        tainted = any("taints" in d for d in devices)
        assert 0 < len(devices) <= (MAX_DEVICES_WITH_TAINTS if tainted else MAX_DEVICES)
        for device in devices:
            assert DNS_LABEL.match(device["name"]), device["name"]
            assert len(device.get("attributes", {})) + len(device.get("capacity", {})) <= MAX_ATTRIBUTES
            assert all(QUALIFIED_ATTRIBUTE.match(k) for k in device.get("attributes", {})), device["attributes"]
            for value in device["attributes"].values():
                assert len(value) == 1 and next(iter(value)) in ("bool", "int", "string", "version")
            assert len(device.get("taints", [])) <= 4
            for taint in device.get("taints", []):
                assert taint["effect"] in ("NoSchedule", "NoExecute", "None")
        pools.setdefault((spec["driver"], spec["pool"]["name"]), []).append(item)
    units = 0
    for pool in pools.values():
        assert {s["spec"]["pool"]["resourceSliceCount"] for s in pool} == {len(pool)}
        names = [d["name"] for s in pool for d in s["spec"]["devices"]]
        assert len(names) == len(set(names)), "device names repeat within a pool"
        units += len(names)
    assert units == sum(len(d.unit_ids) for f in inventory.families for d in f.devices)
    assert len(pools) == len([f for f in inventory.families if f.devices])


def check_kuberay(fragment: dict[str, Any], inventory: NodeInventory) -> None:
    template = pod_template(fragment)
    check_k8s_object({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "rayaccel-export"},
                      "template": template})
    assert fragment["metadata"]["annotations"] == {"ray.io/overwrite-container-cmd": "true"}
    (group,) = fragment["spec"]["workerGroupSpecs"]
    assert DNS_LABEL.match(group["groupName"])
    (container,) = template["spec"]["containers"]
    assert "rayaccel start" in container["args"][0] and "KUBERAY_GEN_RAY_START_CMD" in container["args"][0]
    family = next(f for f in inventory.families if f.devices)
    name = family.family.schedulers.kubernetes_resource
    assert container["resources"]["limits"] == {name: str(len(family.schedulable_units))}
    params = group["rayStartParams"]
    resources = json.loads(json.loads(params["resources"])) if "resources" in params else {}
    if "num-gpus" in params:
        resources["GPU"] = int(params["num-gpus"])
    assert resources == {k: v for k, v in inventory.resources.items()}
    assert not [k for k in group["labels"] if k.startswith("ray.io/")]


def check_ray_start(data: dict[str, Any]) -> None:
    """Ray's own `ray start` command parses the arguments, and its label parser takes the labels."""
    from ray._private.label_utils import parse_node_labels_string
    from ray.scripts.scripts import start

    argv = data["argv"]
    assert argv[:2] == ["ray", "start"]
    start.make_context("start", list(argv[2:]))  # click raises on anything `ray start` would refuse
    options = dict(a[2:].split("=", 1) for a in argv[2:])
    assert parse_node_labels_string(options.get("labels", "")) == {
        k: v for k, v in data["labels"].items() if not k.startswith("ray.io/")}
    resources = json.loads(options.get("resources", "{}"))
    assert all(float(v).is_integer() and v >= 0 for v in resources.values())
    assert "GPU" not in resources and "CPU" not in resources
    assert shlex.split(data["line"])[-len(argv):] == argv


def check_nfd(text: str, inventory: NodeInventory, interval: float, now: datetime) -> dict[str, str]:
    """NFD's local source rules (source/local/local.go): '# +' directives, key=value lines, 64 KiB at most,
    keys with a namespace outside kubernetes.io; every key and value in Kubernetes label syntax."""
    from ray._private.label_utils import validate_node_label_syntax

    assert len(text.encode()) <= MAX_FILE_BYTES
    labels: dict[str, str] = {}
    expiry = None
    for line in text.splitlines():
        if line.startswith("# +"):
            key, _, value = line[3:].partition("=")
            assert key == "expiry-time", line
            expiry = datetime.fromisoformat(value.replace("Z", "+00:00"))
            continue
        if line.startswith("#") or not line.strip():
            continue
        assert expiry is not None, "labels before the expiry directive never expire"
        key, sep, value = line.partition("=")
        assert sep and "/" in key and not key.split("/")[0].endswith("kubernetes.io"), line
        labels[key] = value
    assert expiry == now + timedelta(seconds=EXPIRY_INTERVALS * interval)
    validate_node_label_syntax(labels)  # Ray's copy of the Kubernetes label rules
    assert labels == {k: v for k, v in inventory.labels.items() if not k.startswith("ray.io/")}
    return labels


# -- five reference plugins ----------------------------------------------------------------------------------

@pytest.mark.parametrize("fixture", REFERENCE_FIXTURES)
def test_every_format_of_a_reference_fixture_passes_its_checker(fixture: str) -> None:
    inventory = inventory_of(fixture)
    from rayaccel.ray.node import node_config

    env = node_config(restrict_to_visible(inventory, default_manager()), simulate=fixture).env
    check_ray_start(export("ray-start", inventory, ExportOptions(node_env=env)).data)
    check_kuberay(export("kuberay", inventory).data, inventory)
    check_resource_slices(export("dra", inventory).data["items"], inventory)
    check_nfd(export("nfd", inventory, ExportOptions(now=NOW, monitor_interval=7)).text, inventory, 7, NOW)


@pytest.mark.parametrize("fixture", REFERENCE_FIXTURES)
def test_the_cli_writes_each_format_atomically_and_json_matches(fixture: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    inventory = inventory_of(fixture)
    for name in ("ray-start", "kuberay", "dra", "nfd"):
        target = tmp_path / f"{name}.out"
        code, out, err = cli(capsys, "export", "--format", name, "--simulate", fixture, "-o", str(target))
        assert code == 0, err
        assert out == "" and "wrote" in err
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left
        code, out, err = cli(capsys, "export", "--format", name, "--simulate", fixture, "--json")
        assert code == 0, err
        data = json.loads(out)
        text = target.read_text()
        if name == "dra":
            assert list(yaml.safe_load_all(text)) == data["items"]
            check_resource_slices(data["items"], inventory)
        elif name == "kuberay":
            assert yaml.safe_load(text) == data
            check_kuberay(data, inventory)
        elif name == "ray-start":
            assert text.strip() == data["line"]
            check_ray_start(data)
        else:
            assert {k: v for k, v in (ln.split("=", 1) for ln in text.splitlines() if not ln.startswith("#"))
                    } == data["labels"]


@pytest.mark.parametrize(("fault", "effect"), [("ecc-uncorrectable", "NoSchedule"), ("xid-79", "NoSchedule")])
def test_an_unhealthy_device_is_a_taint_in_dra_and_absent_from_the_nfd_count(fault: str, effect: str) -> None:
    """A fatal reason (the GPU fell off the bus) evicts what runs on it; any other stops new claims."""
    inventory = inventory_of("nvidia/dgx-h100", fault)
    sick = [h.device for f in inventory.families for h in f.health if h.state == "unhealthy"]
    assert len(sick) == 1
    slices = export("dra", inventory).data["items"]
    check_resource_slices(slices, inventory)
    devices = {d["attributes"]["uuid"]["string"]: d for s in slices for d in s["spec"]["devices"]}
    assert len(devices) == 8  # still published: a claim must see it is there and why it is not usable
    assert devices[sick[0]]["taints"] == [{"key": TAINT_KEY, "value": fault, "effect": effect}]
    assert [d for uuid, d in devices.items() if uuid != sick[0] and "taints" in d] == []
    labels = check_nfd(export("nfd", inventory, ExportOptions(now=NOW)).text, inventory, 5.0, NOW)
    assert labels["rayaccel.io/count"] == "7"
    healthy = check_nfd(export("nfd", inventory_of("nvidia/dgx-h100"), ExportOptions(now=NOW)).text,
                        inventory_of("nvidia/dgx-h100"), 5.0, NOW)
    assert healthy["rayaccel.io/count"] == "8"


def test_the_kuberay_container_runs_kuberays_generated_arguments_through_rayaccel_start(tmp_path: Path) -> None:
    """The container's own script, run by bash as the pod would, with KubeRay's generated line in its env and a
    stand-in `rayaccel` that prints what it was given."""
    data = export("kuberay", inventory_of("nvidia/dgx-h100"), ExportOptions(plugins=("nvidia",))).data
    (group,) = data["spec"]["workerGroupSpecs"]
    (container,) = group["template"]["spec"]["containers"]
    fake = tmp_path / "rayaccel"
    fake.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\nsys.exit(3)\n")
    fake.chmod(0o755)
    # KubeRay writes each rayStartParams value after `--name=` as it is given (the resources value quotes itself).
    generated = (f"ray start  --address=raycluster-head-svc.default.svc.cluster.local:6379  --block  "
                 f"--num-gpus={group['rayStartParams']['num-gpus']}  --resources={group['rayStartParams']['resources']}"
                 "  --metrics-export-port=8080")
    shell, login, *rest = container["command"]
    assert (shell, login) == ("/bin/bash", "-lc")
    # --noprofile: this machine's /etc/profile would reset PATH and hide the stand-in (an image's is its own).
    done = subprocess.run([shell, "--noprofile", login, *rest, *container["args"]], capture_output=True, text=True,
                          timeout=60, env={"PATH": f"{tmp_path}{os.pathsep}/usr/bin:/bin",
                                           "KUBERAY_GEN_RAY_START_CMD": generated})
    assert done.returncode == 3, done.stderr  # the stand-in's exit: `&& exec sleep infinity` not reached
    argv = json.loads(done.stdout.splitlines()[-1])
    assert argv == ["start", "--plugin", "nvidia", "--address=raycluster-head-svc.default.svc.cluster.local:6379",
                    "--num-gpus=8", '--resources={"accelerator_type:H100":1}', "--metrics-export-port=8080"]


@pytest.mark.parametrize("fixture", ["nvidia/dgx-h100", "tpu/v5p-16-worker0"])
def test_with_the_activation_kuberays_generated_ray_start_runs_unchanged(fixture: str) -> None:
    """--kuberay-start activation: no annotation, no command (KubeRay's own `ray start` runs, in an image where
    `rayaccel enable` was run), the same resources, labels and limits; still a valid PodTemplateSpec; the header
    says what each way loses."""
    inventory = inventory_of(fixture)
    replaced = export("kuberay", inventory, ExportOptions(simulate=fixture))
    kept = export("kuberay", inventory, ExportOptions(simulate=fixture, kuberay_start="activation"))
    assert "metadata" not in kept.data  # no ray.io/overwrite-container-cmd
    (group,) = kept.data["spec"]["workerGroupSpecs"]
    (container,) = group["template"]["spec"]["containers"]
    assert "command" not in container and "args" not in container
    assert container["env"] == [{"name": "RAYACCEL_SIMULATE", "value": fixture}]
    (other,) = replaced.data["spec"]["workerGroupSpecs"]
    (other_container,) = other["template"]["spec"]["containers"]
    assert {k: v for k, v in group.items() if k != "template"} == {k: v for k, v in other.items() if k != "template"}
    assert container["resources"] == other_container["resources"]
    check_k8s_object({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "w"},
                      "template": pod_template(kept.data)})
    header = " ".join(line.lstrip("# ") for line in kept.text.splitlines() if line.startswith("#"))
    assert "rayaccel enable" in header and "loses the health monitor" in header
    assert "The alternative, --kuberay-start rayaccel" in header
    assert yaml.safe_load(kept.text) == kept.data


def test_a_worker_group_carries_the_node_types_labels_not_one_nodes_state() -> None:
    from rayaccel.labels import node_own_label

    inventory = inventory_of("tpu/v5p-16-worker0")
    (group,) = export("kuberay", inventory).data["spec"]["workerGroupSpecs"]
    left_out = set(inventory.labels) - set(group["labels"])
    assert left_out == {k for k in inventory.labels if k.startswith("ray.io/") or node_own_label(k)}
    assert {"rayaccel.io/scale-up-domain", "rayaccel.io/health", "ray.io/tpu-slice-name", "ray.io/tpu-worker-id",
            "ray.io/accelerator-type"} <= left_out
    assert group["labels"]["rayaccel.io/scale-up-domain-size"] == "8"
    assert [k for k in ("rayaccel.io/scale-up-domain-1", "rayaccel.io/scale-up-domain-1-size") if node_own_label(k)
            ] == ["rayaccel.io/scale-up-domain-1"]


def test_neuron_slices_have_one_device_per_core_sharing_the_devices_memory() -> None:
    inventory = inventory_of("neuron/trn1.32xlarge")
    slices = export("dra", inventory).data["items"]
    devices = [d for s in slices for d in s["spec"]["devices"]]
    assert len(devices) == 32 and devices[0]["name"] == "core-0"
    assert devices[0]["capacity"] == {"memory": {"value": "16384Mi"}}  # 32 GiB Trainium shared by 2 cores
    assert devices[0]["attributes"]["uuid"] == devices[1]["attributes"]["uuid"]


def test_dra_attributes_are_typed_with_the_standard_pci_name() -> None:
    inventory = inventory_of("nvidia/dgx-h100")
    (first,) = [d for s in export("dra", inventory).data["items"] for d in s["spec"]["devices"]][:1]
    attributes = first["attributes"]
    assert attributes["resource.kubernetes.io/pciBusID"] == {"string": "0000:1b:00.0"}  # NVML's 00000000:1B:00.0
    assert attributes["driverVersion"] == {"version": "550.54.15"}
    assert attributes["numaNode"] == {"int": 0}
    assert attributes["productName"] == {"string": "NVIDIA H100 80GB HBM3"}
    assert attributes["scaleUpDomainKind"] == {"string": "nvswitch"}
    assert first["capacity"]["memory"] == {"value": "81559Mi"}


def test_slices_split_at_128_devices_and_at_64_once_one_has_taints() -> None:
    plain = [{"name": f"d-{i}"} for i in range(300)]
    assert [len(c) for c in split(plain)] == [128, 128, 44]
    tainted = [{"name": f"d-{i}", **({"taints": [{}]} if i == 70 else {})} for i in range(200)]
    chunks = list(split(tainted))
    assert sum(map(len, chunks)) == 200
    assert all(len(c) <= (64 if any("taints" in d for d in c) else 128) for c in chunks)


def test_each_format_in_the_table_is_documented() -> None:
    docs = (REPO / "docs" / "exporters.md").read_text()
    for name in FORMATS:
        assert f"`--format {name}`" in docs, name


def test_the_template_fills_the_scheduler_names_with_derived_defaults() -> None:
    spec = json.loads((TEMPLATE / "cookiecutter.json").read_text())
    assert {"kubernetes_resource", "dra_driver", "slurm_gres"} <= set(spec)
    assert SchedulerNames(kubernetes_resource="example.example.com/example", dra_driver="example.example.com",
                          slurm_gres="example", device_files=["/dev/example{index}"])


@pytest.mark.parametrize(("field", "value"), [
    ("kubernetes_resource", "gpu"), ("kubernetes_resource", "kubernetes.io/gpu"), ("dra_driver", "GPU"),
    ("dra_driver", "nodots"), ("slurm_gres", "gpu:h100"), ("device_files", ["/dev/nvidia0"]),
    ("device_files", ["/dev/../etc/x{index}"]), ("device_files", ["dev/nvidia{index}"]),
])
def test_a_bad_scheduler_name_is_refused_with_its_rule(field: str, value: object) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=field):
        SchedulerNames.model_validate({field: value})


# -- a freshly baked template plugin ------------------------------------------------------------------------

LARGE_NODE_DEVICES = 160


@pytest.fixture(scope="module")
def baked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(site, large fixture): the template baked with its default answers by real cookiecutter and installed
    into a directory of its own, and a node of 160 of its devices in the plugin's own sysfs layout."""
    root = tmp_path_factory.mktemp("bake")
    done = subprocess.run([sys.executable, "-m", "cookiecutter", "--no-input", str(TEMPLATE), "-o", str(root)],
                          capture_output=True, text=True, timeout=240, env={**os.environ, "HOME": str(root / "home")})
    assert done.returncode == 0, done.stderr[-3000:]
    project = root / "rayaccel-example"
    site = root / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--target", str(site), str(project)], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    four = yaml.safe_load((project / "src" / "rayaccel_example" / "fixtures" / "example-4.yaml").read_text())
    return site, write_large_node(four, root / "example-160.yaml")


def write_large_node(four: dict[str, Any], path: Path) -> Path:
    """The baked fixture's first device, repeated: the same vendor files under 160 sysfs directories."""
    base = "/sys/class/example/example"
    files = four["host"]["files"]
    first = {key[len(f"{base}0/"):]: value for key, value in files.items()
             if key.startswith(f"{base}0/") and "/links/" not in key}
    ids = [f"EXAMPLE-5e1f4c2a-{i:04d}" for i in range(LARGE_NODE_DEVICES)]
    large: dict[str, str] = {k: v for k, v in files.items() if not k.startswith(base)}
    for i in range(LARGE_NODE_DEVICES):
        for leaf, value in first.items():
            large[f"{base}{i}/{leaf}"] = value
        large[f"{base}{i}/uuid"] = ids[i] + "\n"
        large[f"{base}{i}/pci_bus_id"] = f"0000:{0x10 + i // 32:02x}:{i % 32:02x}.0\n"
        large[f"{base}{i}/numa_node"] = f"{i // 80}\n"
    (resource, _), *others = four["expected"]["resources"].items()
    expected = {**four["expected"], "devices": LARGE_NODE_DEVICES, "device_ids": ids, "links": 0,
                "skus": dict.fromkeys(ids, "example-x1"),
                "resources": {resource: float(LARGE_NODE_DEVICES), **dict(others)},
                "labels": {**four["expected"]["labels"], "rayaccel.io/count": str(LARGE_NODE_DEVICES)}}
    fault_expected = {"health": {ids[2]: "unhealthy"}, "fatal": True,
                      "resources": {resource: float(LARGE_NODE_DEVICES - 1), **dict(others)}}
    data = {"schema": four["schema"], "plugin": four["plugin"], "name": "example-160",
            "description": f"{LARGE_NODE_DEVICES} Example X1 devices, no links (generated by the export tests)",
            "source": "generated by tests/outputs/test_export_k8s.py", "host": {**four["host"], "files": large},
            "expected": expected,
            "faults": [{"name": "fatal-2", "description": "device 2 reports a fatal error", "kind": "fatal-error",
                        "patch": {"files": {f"{base}2/fatal_errors": "1\n"}}, "expected": fault_expected}]}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture
def with_baked(baked: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    """The baked plugin importable in this process (its entry point found on sys.path); the large fixture."""
    site, large = baked
    monkeypatch.syspath_prepend(str(site))
    return large


def test_a_freshly_baked_template_plugin_passes_every_format(with_baked: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    inventory = inventory_of("example/example-4")
    assert [f.family.name for f in inventory.families] == ["example"]
    family = inventory.families[0]
    assert family.family.schedulers.kubernetes_resource == "example.example.com/example"
    from rayaccel.ray.node import node_config

    env = node_config(restrict_to_visible(inventory, default_manager()), simulate="example/example-4").env
    check_ray_start(export("ray-start", inventory, ExportOptions(node_env=env)).data)
    for name in ("ray-start", "kuberay", "dra", "nfd"):
        code, out, err = cli(capsys, "export", "--format", name, "--simulate", "example/example-4", "--json")
        assert code == 0, err
        data = json.loads(out)
        if name == "ray-start":
            check_ray_start(data)
        elif name == "kuberay":
            check_kuberay(data, inventory)
        elif name == "dra":
            check_resource_slices(data["items"], inventory)
            assert {s["spec"]["driver"] for s in data["items"]} == {"example.example.com"}
        else:
            target = tmp_path / "features"
            code, _, err = cli(capsys, "export", "--format", "nfd", "--simulate", "example/example-4",
                               "--monitor-interval", "30", "-o", str(target))
            assert code == 0, err
            text = target.read_text()
            written = re.search(r"written (\S+);", text)
            assert written is not None, text
            check_nfd(text, inventory, 30, datetime.fromisoformat(written.group(1).replace("Z", "+00:00")))
            assert data["labels"]["rayaccel.io/count"] == "4"


def test_a_node_of_more_than_128_units_gives_several_slices_in_one_pool(with_baked: Path) -> None:
    inventory = inventory_of(str(with_baked))
    assert len(inventory.families[0].devices) == LARGE_NODE_DEVICES
    slices = export("dra", inventory).data["items"]
    check_resource_slices(slices, inventory)
    assert [len(s["spec"]["devices"]) for s in slices] == [128, 32]
    assert {s["spec"]["pool"]["name"] for s in slices} == {"example-node"}
    sick = inventory_of(str(with_baked), "fatal-2")
    slices = export("dra", sick).data["items"]
    check_resource_slices(slices, sick)
    counts = [(len(s["spec"]["devices"]), any("taints" in d for d in s["spec"]["devices"])) for s in slices]
    assert counts == [(64, True), (96, False)]


# -- bad input ------------------------------------------------------------------------------------------------

#: A test plugin whose family declares no scheduler names (acme declares its own).
NAMELESS = {"RAYACCEL_PLUGINS": "qts=rayaccel_testplugins.qts", "RAYACCEL_NO_AUTOLOAD": "1"}


@pytest.fixture
def nameless_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key, value in NAMELESS.items():
        monkeypatch.setenv(key, value)
    yield


@pytest.mark.parametrize("name", K8S_FORMATS)
def test_a_family_without_kubernetes_names_is_one_line_and_nothing_written(
        name: str, nameless_only: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out.yaml"
    code, out, err = cli(capsys, "export", "--format", name, "--simulate", "qts/qts-6", "-o", str(target))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: family 'qts'") and "SchedulerNames(" in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("argv", "message"), [
    (["--format", "helm"], "unknown export format 'helm'; choose one of ray-start, kuberay, dra, nfd"),
    (["--format", "nfd", "--simulate", "nvidia/dgx-h100", "-o", "{tmp}"], "is a directory"),
    (["--format", "nfd", "--simulate", "nvidia/dgx-h100", "-o", "{tmp}/missing/x"], "does not exist"),
    (["--format", "dra", "--simulate", "nvidia/dgx-h100", "--node-name", "Not_A_Node"], "not a Kubernetes node"),
    (["--format", "nfd", "--simulate", "nvidia/dgx-h100", "--monitor-interval", "-1"], "--monitor-interval"),
    (["--format", "kuberay", "--simulate", "nvidia/dgx-h100", "--kuberay-start", "systemd"],
     "--kuberay-start 'systemd' is not one of: rayaccel, activation"),
    (["--format", "kuberay", "--simulate", "nvidia/dgx-h100", "--kuberay-start", "activation", "--plugin", "nvidia"],
     "--plugin cannot choose"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], message: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    before = sorted(tmp_path.rglob("*"))
    code, out, err = cli(capsys, "export", *(a.format(tmp=tmp_path) for a in argv))
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err
    assert sorted(tmp_path.rglob("*")) == before


def test_an_export_error_names_the_format_choices() -> None:
    with pytest.raises(ExportError, match="choose one of"):
        export("yaml", inventory_of("nvidia/dgx-h100"))


# -- a real ray start -------------------------------------------------------------------------------------

@pytest.mark.timeout(240)
def test_a_node_started_with_the_exported_line_has_the_inventorys_resources_and_labels(tmp_path: Path) -> None:
    inventory = inventory_of("amd/mi300x-8")
    from rayaccel.ray.node import node_config

    config = node_config(restrict_to_visible(inventory, default_manager()), simulate="amd/mi300x-8")
    data = export("ray-start", inventory, ExportOptions(node_env=config.env)).data
    port, dashboard = free_ports(2)
    address = f"127.0.0.1:{port}"
    line = f"{data['line']} --head --port={port} --num-cpus=1 --include-dashboard=false --dashboard-port={dashboard}"
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    started = subprocess.run(["bash", "-c", line], env=env, capture_output=True, text=True, timeout=180)
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        probe = (f"import json, ray; ray.init(address={address!r}, log_to_driver=False); n = ray.nodes()[0]; "
                 "print(json.dumps([n['Resources'], n.get('Labels', {})]))")
        done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        resources, labels = json.loads(done.stdout.strip().splitlines()[-1])
        for name, amount in data["resources"].items():
            assert resources[name] == amount, name
        for key, value in data["labels"].items():
            assert labels[key] == value, key
    finally:
        subprocess.run([sys.executable, "-m", "rayaccel", "stop", f"--address={address}", "--grace", "3"], env=env,
                       capture_output=True, timeout=120)


# -- files the health monitor keeps current ---------------------------------------------------------------

def test_kept_files_follow_a_device_that_fails_and_recovers(tmp_path: Path) -> None:
    from rayaccel.outputs.exporters.upkeep import KeptFiles

    kept = KeptFiles.from_env(2.0, {"RAYACCEL_NFD_FILE": str(tmp_path / "nfd"),
                                    "RAYACCEL_DRA_FILE": str(tmp_path / "slices.yaml")})
    healthy, sick = inventory_of("nvidia/dgx-h100"), inventory_of("nvidia/dgx-h100", "ecc-uncorrectable")

    def state() -> tuple[str, int, int]:
        labels = dict(ln.split("=", 1) for ln in (tmp_path / "nfd").read_text().splitlines() if ln[:1] != "#")
        slices = list(yaml.safe_load_all((tmp_path / "slices.yaml").read_text()))
        tainted = sum("taints" in d for s in slices for d in s["spec"]["devices"])
        return labels["rayaccel.io/count"], slices[0]["spec"]["pool"]["generation"], tainted

    assert len(kept.write(healthy)) == 2 and state() == ("8", 1, 0)
    assert kept.write(healthy) == [str(tmp_path / "nfd")]  # slices unchanged: the same generation, not rewritten
    kept.write(sick)
    assert state() == ("7", 2, 1)
    kept.write(healthy)
    assert state() == ("8", 3, 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nfd", "slices.yaml"]  # no temporary file left
    assert not KeptFiles.from_env(2.0, {})


@pytest.mark.ray
@pytest.mark.timeout(300)
def test_the_health_monitor_keeps_the_nfd_file_current(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rayaccel.ray
    from rayaccel.support.polling import wait_for

    nfd = tmp_path / "features.d" / "rayaccel"
    nfd.parent.mkdir()
    fault_file = tmp_path / "faults"
    monkeypatch.setenv("RAYACCEL_NFD_FILE", str(nfd))  # the node's env: the monitor's worker inherits it
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")

    def count() -> str | None:
        if not nfd.exists():
            return None
        return dict(ln.split("=", 1) for ln in nfd.read_text().splitlines() if ln[:1] != "#")["rayaccel.io/count"]

    rayaccel.ray.init(simulate="nvidia/dgx-h100", fault_file=str(fault_file), monitor=True, monitor_interval=1.0,
                      num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        wait_for(count, lambda c: c == "8", timeout=120, what="the monitor to write the NFD file")
        fault_file.write_text("ecc-uncorrectable\n")
        wait_for(count, lambda c: c == "7", timeout=60, what="the failed GPU to leave the NFD count")
        fault_file.write_text("")
        wait_for(count, lambda c: c == "8", timeout=60, what="the recovered GPU to return to the NFD count")
        stamp = next(ln for ln in nfd.read_text().splitlines() if ln.startswith("# +expiry-time="))
        assert datetime.fromisoformat(stamp.split("=", 1)[1].replace("Z", "+00:00")) > datetime.now(UTC)
    finally:
        from rayaccel.ray.registry import uninstall

        rayaccel.ray.shutdown()
        uninstall()


# The slurm format on the same bake (exporters-hpc; the slurmd check lives in tests/outputs/test_export_slurm.py).


def test_slurmd_reads_the_freshly_baked_plugins_gres(with_baked: Path, tmp_path: Path) -> None:
    from test_export_slurm import SLURMD, expected_rows, slurmd_reads

    from rayaccel.outputs.exporters.slurm import slurm_node

    if SLURMD is None:
        pytest.skip("Debian's slurmd is not installed (make install adds it)")
    for fixture, faults, count in (("example/example-4", [], 4), (str(with_baked), ["fatal-2"], 159)):
        inventory = inventory_of(fixture, *faults)
        root = tmp_path / fixture.rsplit("/", 1)[-1] / "dev"
        root.parent.mkdir()
        node = slurm_node(inventory, device_root=str(root))
        understood = slurmd_reads(node, root.parent)
        expected = expected_rows(inventory, root)
        assert sum(int(row["count"]) for row in understood) == len(expected) == count
        assert node.gres == f"example:example-x1:{count}"
        # Linked devices are a line each; unlinked ones of the same cores share a File range (Count > 1).
        assert {(row["type"], row.get("cores")) for row in understood} == {
            (want["type"], want["cores"]) for want in expected}
