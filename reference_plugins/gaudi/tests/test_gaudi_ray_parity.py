"""Differential tests: Ray 2.60's HPUAcceleratorManager and the plugin, fed the same simulated machine.

Ray's manager reads the HPU runtime, ``habana_frameworks.torch.hpu`` (``is_available``, ``device_count``,
``is_initialized``, ``get_device_name``). A fake of that package, answering from the fixture (the devices
hl-smi lists, and the name the runtime gives that part), is put in ``sys.modules`` and Ray's module is
reloaded so its import-time package check sees it. Ray's manager itself is not patched.

Deliberate differences, each asserted (and listed in the README):
- before the HPU runtime is initialised Ray reports no accelerator type; the plugin reads it from hl-smi;
- Ray hands out HABANA_VISIBLE_MODULES ids 0..N-1; the plugin's units are the modules hl-smi reports, which
  differ from 0..N-1 once a module is lost.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types

import pytest

from rayaccel.testing import SimulatedHost, build_inventory, check_quantity
from rayaccel_gaudi.hlsmi import QUERY_ARGV

#: What the HPU runtime calls each part (habana_frameworks.torch.hpu.get_device_name()).
RUNTIME_NAMES = {"HL-205": "GAUDI", "HL-225": "GAUDI2", "HL-325L": "GAUDI3"}
QUANTITIES = [1, 2, 8, 1.0, 3.0, 0.5, 1.5, 0.25]
VISIBLE = ["0", "2,6,3", "", "7"]


def runtime_view(host: SimulatedHost) -> tuple[int, str]:
    """(device count, runtime device name) of the simulated machine, read straight from hl-smi's answer."""
    import shlex

    rows = [line for line in host.state().commands[shlex.join(QUERY_ARGV)].stdout.splitlines() if line.strip()]
    return len(rows), RUNTIME_NAMES[rows[0].split(",")[2].strip()]


def fake_runtime(count: int, name: str, initialized: bool) -> dict[str, types.ModuleType]:
    modules = {}
    for dotted in ("habana_frameworks", "habana_frameworks.torch", "habana_frameworks.torch.hpu"):
        module = types.ModuleType(dotted)
        module.__spec__ = importlib.machinery.ModuleSpec(dotted, None, is_package=not dotted.endswith("hpu"))
        modules[dotted] = module
    hpu = modules["habana_frameworks.torch.hpu"]
    hpu.is_available = lambda: count > 0
    hpu.device_count = lambda: count
    hpu.is_initialized = lambda: initialized
    hpu.get_device_name = lambda: name
    modules["habana_frameworks"].torch = modules["habana_frameworks.torch"]
    modules["habana_frameworks.torch"].hpu = hpu
    return modules


@pytest.fixture
def ray_hpu(monkeypatch):
    import ray._private.accelerators.hpu as ray_hpu_module

    def feed(host: SimulatedHost, initialized: bool):
        count, name = runtime_view(host)
        for dotted, module in fake_runtime(count, name, initialized).items():
            monkeypatch.setitem(sys.modules, dotted, module)
        return importlib.reload(ray_hpu_module).HPUAcceleratorManager

    yield feed
    monkeypatch.undo()
    importlib.reload(ray_hpu_module)


@pytest.mark.parametrize("name", ["hls-gaudi2", "hls-gaudi3"])
def test_ray_and_plugin_agree_on_the_same_machine(ray_hpu, rayaccel_manager, rayaccel_fixtures, name, monkeypatch):
    host = SimulatedHost(rayaccel_fixtures[name])
    ray_manager = ray_hpu(host, initialized=True)
    inventory = build_inventory(rayaccel_manager, host)
    family = inventory.family("gaudi")

    assert ray_manager.get_current_node_num_accelerators() == len(family.devices) == inventory.resources["HPU"]
    assert ray_manager.get_current_node_accelerator_type() == family.accelerator_type
    assert ray_manager.get_resource_name() == family.family.resource_name
    assert ray_manager.get_visible_accelerator_ids_env_var() == family.family.visible_devices_env_var
    assert ray_manager.get_current_node_additional_resources() in (None, {})
    for quantity in QUANTITIES:
        assert ray_manager.validate_resource_request_quantity(quantity)[0] == check_quantity(
            family.family.quantity_rule, "HPU", quantity)[0], quantity
    for value in VISIBLE:
        monkeypatch.setenv("HABANA_VISIBLE_MODULES", value)
        ours = rayaccel_manager.parse_visible("gaudi", value)
        assert ray_manager.get_current_process_visible_accelerator_ids() == ours


def test_ray_defect_type_unknown_until_the_runtime_is_initialised(ray_hpu, rayaccel_manager, rayaccel_fixtures):
    host = SimulatedHost(rayaccel_fixtures["hls-gaudi3"])
    ray_manager = ray_hpu(host, initialized=False)
    assert ray_manager.get_current_node_num_accelerators() == 8
    assert ray_manager.get_current_node_accelerator_type() is None
    assert build_inventory(rayaccel_manager, host).family("gaudi").accelerator_type == "Intel-GAUDI3"


def test_ray_defect_positions_are_not_module_ids_after_a_loss(ray_hpu, rayaccel_manager, rayaccel_fixtures):
    host = SimulatedHost(rayaccel_fixtures["hls-gaudi3"], faults=["module-lost"])
    ray_manager = ray_hpu(host, initialized=True)
    count = ray_manager.get_current_node_num_accelerators()
    units = build_inventory(rayaccel_manager, host).family("gaudi").schedulable_units
    assert count == len(units) == 7
    ray_ids = {str(i) for i in range(count)}  # what Ray would put in HABANA_VISIBLE_MODULES
    assert "5" in ray_ids and "5" not in units  # module 5 is the lost one
    assert "7" in units and "7" not in ray_ids


def test_without_the_runtime_ray_counts_zero(monkeypatch, rayaccel_manager, rayaccel_fixtures):
    import ray._private.accelerators.hpu as ray_hpu_module

    monkeypatch.setitem(sys.modules, "habana_frameworks", None)
    try:
        manager = importlib.reload(ray_hpu_module).HPUAcceleratorManager
        assert manager.get_current_node_num_accelerators() == 0
    finally:
        monkeypatch.undo()
        importlib.reload(ray_hpu_module)
    family = build_inventory(rayaccel_manager, SimulatedHost(rayaccel_fixtures["hls-gaudi2"])).family("gaudi")
    assert len(family.devices) == 8
