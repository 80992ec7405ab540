"""Differential tests: Ray 2.60's NeuronAcceleratorManager and the plugin read the same simulated machine.

Ray's manager is fed the fixture at its own vendor interface: ``os.path.isdir`` of /opt/aws/neuron/bin,
``subprocess.run`` of neuron-ls (answered by the same SimulatedHost the plugin reads) and the process
environment. Ray's methods are not patched. Every deliberate difference is asserted as such.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rayaccel import CommandTimeout
from rayaccel.testing import PluginKit, PluginManager, SimulatedHost, build_inventory, check_quantity, load_fixture
from rayaccel_neuron import neuronls, plugin

ray_neuron = pytest.importorskip("ray._private.accelerators.neuron")
Ray = ray_neuron.NeuronAcceleratorManager

FIXTURES = sorted((Path(plugin.__file__).parent / "fixtures").glob("*.yaml"))
CASES = [(path, None) for path in FIXTURES] + [
    (path, fault.name) for path in FIXTURES for fault in load_fixture(path).faults]


class RayView:
    """Ray's Neuron manager wired to a simulated host; records how Ray runs neuron-ls."""

    def __init__(self, host: SimulatedHost, monkeypatch: pytest.MonkeyPatch) -> None:
        self.host = host
        self.runs: list[dict[str, Any]] = []
        monkeypatch.delenv("NEURON_RT_VISIBLE_CORES", raising=False)
        real_isdir = os.path.isdir
        monkeypatch.setattr(os.path, "isdir",
                            lambda p: host.is_dir(p) if str(p).startswith("/opt/aws") else real_isdir(p))
        monkeypatch.setattr(ray_neuron.sys, "platform", "linux")
        monkeypatch.setattr(ray_neuron, "subprocess", SimpleNamespace(run=self._run, PIPE=subprocess.PIPE))

    def _run(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        self.runs.append(kwargs)
        # Ray passes no timeout; a short one here, and CommandTimeout stands for Ray blocking forever.
        result = self.host.run(argv, timeout=kwargs.get("timeout") or 0.01)
        return subprocess.CompletedProcess(argv, result.returncode, result.stdout.encode(), result.stderr.encode())


@pytest.fixture(scope="module")
def manager(rayaccel_manager: PluginManager) -> PluginManager:
    return rayaccel_manager  # the testing kit's: just this plugin, under its entry-point name


@pytest.mark.parametrize(("path", "fault"), CASES, ids=lambda v: getattr(v, "stem", v) or "healthy")
def test_plugin_and_ray_agree_on_the_same_machine(manager: PluginManager, monkeypatch: pytest.MonkeyPatch,
                                                  path: Path, fault: str | None) -> None:
    fixture = load_fixture(path)
    host = SimulatedHost(fixture, faults=[fault] if fault else [])
    inventory = build_inventory(manager, host, plugins=["neuron"])
    family = inventory.family("neuron")
    ray = RayView(host, monkeypatch)
    declaration = manager.family("neuron")

    assert Ray.get_resource_name() == declaration.resource_name
    assert Ray.get_visible_accelerator_ids_env_var() == declaration.visible_devices_env_var
    assert Ray.get_current_node_additional_resources() is None
    assert Ray.get_current_node_accelerator_labels() is None
    assert {k for k in inventory.labels if k.startswith("ray.io/")} <= {"ray.io/accelerator-type"}

    kind = fixture.fault(fault).kind if fault else None
    if kind == "tool-hang":
        # Ray runs neuron-ls with no timeout: on this machine node start would block for good.
        with pytest.raises(CommandTimeout):
            Ray.get_current_node_num_accelerators()
        assert "timeout" not in ray.runs[-1]
        assert family is None and [p.code for p in inventory.problems] == ["hook-raised"]
        return
    if kind == "tool-garbage":
        # Ray's defect: bad JSON from neuron-ls raises out of node start. The plugin reports zero devices
        # and one problem that names the tool and the fix.
        with pytest.raises(json.JSONDecodeError):
            Ray.get_current_node_num_accelerators()
        assert family is None and [p.code for p in inventory.problems] == ["hook-raised"]
        return

    assert family is not None
    ray_count = Ray.get_current_node_num_accelerators()
    if not host.exists(neuronls.NEURON_LS) and host.which("neuron-ls") is None:
        # Deliberate difference: no aws-neuronx-tools (a container given only the driver's devices). Ray needs
        # /opt/aws/neuron/bin and counts 0; the plugin reads the driver's sysfs, logical cores, with a warning.
        assert ray_count == 0 < sum(len(d.unit_ids) for d in family.devices)
        assert "neuron-ls-missing" in {p.code for p in inventory.problems}
        return
    legacy = host.run([neuronls.NEURON_LS, *neuronls.NEURON_LS_ARGS], timeout=1)
    if legacy.returncode != 0:
        # Deliberate difference: Ray knows only `neuron-ls --json-output`, which Neuron 2.34 removed (and which
        # fails on a broken tools install): Ray counts 0 cores. The plugin reads `--output-format json`, or the
        # driver's sysfs when neuron-ls fails.
        assert ray_count == 0 < sum(len(d.unit_ids) for d in family.devices)
        return
    assert ray_count == sum(len(d.unit_ids) for d in family.devices)
    unhealthy = [h for h in family.health if h.state == "unhealthy"]
    if unhealthy:
        # Ray has no health signal: it schedules the cores of a device with uncorrected ECC errors.
        assert inventory.resources["neuron_cores"] == ray_count - sum(
            len(d.unit_ids) for d in family.devices if d.id in {h.device for h in unhealthy})
    else:
        assert inventory.resources["neuron_cores"] == ray_count
    assert Ray.get_current_node_accelerator_type() == family.accelerator_type == "aws-neuron-core"
    extra = {k: v for k, v in inventory.resources.items()
             if k != "neuron_cores" and not k.startswith("accelerator_type:")}
    assert extra == {}


@pytest.mark.parametrize("quantity", [0, 0.5, 1, 1.0, 1.5, 2, 3, 16, 32.0, 2.25])
def test_quantity_rule_is_ray_s(manager: PluginManager, quantity: float) -> None:
    ours, _ = check_quantity(manager.family("neuron").quantity_rule, "neuron_cores", quantity)
    theirs, _ = Ray.validate_resource_request_quantity(quantity)
    assert ours == theirs


@pytest.mark.parametrize("value", ["0", "0,1", "4,5,6,7", "", "12,3"])
def test_visible_core_lists_parse_as_ray_parses_them(manager: PluginManager, monkeypatch: pytest.MonkeyPatch,
                                                     value: str) -> None:
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", value)
    assert Ray.get_current_process_visible_accelerator_ids() == manager.parse_visible("neuron", value)


@pytest.mark.parametrize(("value", "ours"), [("0-3", ["0", "1", "2", "3"]), ("0,4-5", ["0", "4", "5"])])
def test_ranges_are_expanded_where_ray_keeps_them_as_one_id(manager: PluginManager,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           value: str, ours: list[str]) -> None:
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", value)
    assert Ray.get_current_process_visible_accelerator_ids() == value.split(",")
    assert manager.parse_visible("neuron", value) == ours


@pytest.mark.parametrize("ids", [["0"], ["2", "3"], ["0", "1", "2", "3"]])
def test_visible_env_is_what_ray_sets(manager: PluginManager, monkeypatch: pytest.MonkeyPatch,
                                      ids: list[str]) -> None:
    # Set first, so the undo also removes what Ray's manager writes into os.environ: a leaked value made a later
    # Ray node in the same test process offer only that core (the trn1 node of test_ray_cluster: 1, not 32).
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "")
    monkeypatch.delenv("NEURON_RT_VISIBLE_CORES")
    monkeypatch.delenv("RAY_EXPERIMENTAL_NOSET_NEURON_RT_VISIBLE_CORES", raising=False)
    Ray.set_current_process_visible_accelerator_ids(ids)
    assert manager.visible_env("neuron", ids) == {"NEURON_RT_VISIBLE_CORES": os.environ["NEURON_RT_VISIBLE_CORES"]}


def test_ec2_hints_match_ray_and_add_trainium2(rayaccel_kit: PluginKit) -> None:
    for instance_type in (*ray_neuron.AWS_NEURON_INSTANCE_MAP, "trn2.48xlarge", "trn2u.48xlarge", "inf1.6xlarge"):
        ray_count = Ray.get_ec2_instance_num_accelerators(instance_type, {})
        hint = rayaccel_kit.cloud_hint("aws", instance_type)
        assert hint is not None and hint.accelerator_type == Ray.get_ec2_instance_accelerator_type(instance_type, {})
        if ray_count is None:
            assert instance_type not in ray_neuron.AWS_NEURON_INSTANCE_MAP  # Ray has no entry; the plugin does
        else:
            assert hint.count == ray_count
