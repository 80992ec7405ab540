"""Differential tests: Ray 2.60's AMDGPUAcceleratorManager and the plugin, fed the same simulated machine.

Ray's manager is fed at its vendor interface: ``ray._private.thirdparty.pyamdsmi`` imports the ``amdsmi``
package, so a module built from the fixture's amdsmi data (the SDK's simulated adapter) is put in
``sys.modules["amdsmi"]`` and Ray's binding is reloaded. For the fixture read through the CLI, the same
machine's amdsmi answers are built from the amd-smi JSON it printed. Ray's manager itself is not patched.

Every deliberate difference is asserted as such (and listed in the README):
- fractional requests above 1 (``num_gpus=1.5``): Ray's AMD manager accepts them, the plugin refuses them;
- PCI ids ``0x679a``/``0x679b``: Ray's product lookup never matches, the plugin's does;
- without the amdsmi Python package Ray counts 0 GPUs; the plugin reads ``amd-smi --json``.
"""

from __future__ import annotations

import copy
import importlib
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from rayaccel.testing import SimulatedHost, build_inventory, check_quantity, parse_fixture
from rayaccel_amd import amdsmi as amdsmi_adapter, cli, plugin

# Every fixture, old and new (the partitioned MI300X ones included): Ray and the plugin must agree on each.
FIXTURE_NAMES = sorted(p.stem for p in (Path(plugin.__file__).parent / "fixtures").glob("*.yaml"))
QUANTITIES = [0.0001, 0.25, 0.5, 1, 2, 3, 8, 1.5, 2.5]
VISIBLE = ["0", "0,1,2,3", "", "NoDevFiles", "7,3"]


def library_data(host: SimulatedHost) -> dict[str, Any] | None:
    """The amdsmi data of the host: recorded, or rebuilt from what amd-smi printed (same machine, same answers)."""
    state = host.state()
    if "amdsmi" in state.libraries:
        return copy.deepcopy(state.libraries["amdsmi"])
    static = cli.parse_static(state.commands["amd-smi static --json"].stdout)
    listing = cli.parse_list(state.commands["amd-smi list --json"].stdout)
    return {"gpus": {str(i): {"gpu_id": g["device_id"], "asic_info": {"market_name": g["market_name"]},
                              "uuid": listing[i]["uuid"], "bdf": g["bdf"]} for i, g in static.items()}}


def as_module(data: dict[str, Any]) -> types.ModuleType:
    lib = amdsmi_adapter.SimulatedAmdSmi(data)
    module = types.ModuleType("amdsmi")
    for name in dir(lib):
        if name.startswith(("amdsmi_", "AmdSmi")):
            setattr(module, name, getattr(lib, name))
    return module


@pytest.fixture
def ray_amd(monkeypatch):
    """Ray's AMD manager, with a function to hand its amdsmi binding a simulated amdsmi (or none)."""
    import ray._private.thirdparty.pyamdsmi.pyamdsmi as binding
    from ray._private.accelerators.amd_gpu import AMDGPUAcceleratorManager

    def feed(data: dict[str, Any] | None) -> type[AMDGPUAcceleratorManager]:
        if data is None:
            monkeypatch.setitem(sys.modules, "amdsmi", None)  # `import amdsmi` raises ImportError
        else:
            monkeypatch.setitem(sys.modules, "amdsmi", as_module(data))
        importlib.reload(binding)
        return AMDGPUAcceleratorManager

    monkeypatch.delenv("ROCR_VISIBLE_DEVICES", raising=False)
    yield feed
    monkeypatch.undo()
    importlib.reload(binding)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_ray_and_plugin_agree_on_the_same_machine(ray_amd, manager, fixtures, name, monkeypatch):
    host = SimulatedHost(fixtures[name])
    ray_manager = ray_amd(library_data(host))
    inventory = build_inventory(manager, host)
    family = inventory.family("amd")

    offered = [p.id for d in family.devices for p in d.partitions] or [u for d in family.devices for u in d.unit_ids]
    assert ray_manager.get_current_node_num_accelerators() == len(offered)
    if any(d.partitions for d in family.devices):
        # Deliberate difference (README, "Partitions"): Ray counts each compute partition as a GPU; here they
        # are GPU_COMPUTE_PARTITION_<profile>, the same ids (HIP's) in HIP_VISIBLE_DEVICES, and no GPU is whole.
        (name,) = [k for k in inventory.resources if k.startswith("GPU_COMPUTE_PARTITION_")]
        assert inventory.resources[name] == len(offered) and "GPU" not in inventory.resources
        assert offered == [str(i) for i in range(len(offered))]  # Ray's ids are the positions: the same here
    else:
        assert len(family.devices) == inventory.resources["GPU"]
    assert ray_manager.get_current_node_accelerator_type() == family.accelerator_type
    assert ray_manager.get_resource_name() == family.family.resource_name
    assert ray_manager.get_visible_accelerator_ids_env_var() == family.family.visible_devices_env_var
    assert ray_manager.get_current_node_additional_resources() in (None, {})
    for quantity in QUANTITIES:
        ours, _ = check_quantity(family.family.quantity_rule, "GPU", quantity)
        theirs, _ = ray_manager.validate_resource_request_quantity(quantity)
        if quantity > 1 and not float(quantity).is_integer():
            assert theirs and not ours  # deliberate: Ray accepts num_gpus=1.5, which can never be scheduled
        else:
            assert ours == theirs
    for value in VISIBLE:
        monkeypatch.setenv("HIP_VISIBLE_DEVICES", value)
        assert ray_manager.get_current_process_visible_accelerator_ids() == manager.parse_visible("amd", value)


def test_fault_changes_both_the_same_way(ray_amd, manager, fixtures):
    host = SimulatedHost(fixtures["mi355x-8"], faults=["gpu6-lost"])
    ray_manager = ray_amd(library_data(host))
    ours = build_inventory(manager, host).family("amd").devices
    assert ray_manager.get_current_node_num_accelerators() == len(ours) == 7


def test_rocr_visible_devices_alone_is_refused_by_both(ray_amd, monkeypatch):
    from rayaccel_amd.visibility import visible_env_problem

    ray_manager = ray_amd(None)
    monkeypatch.delenv("HIP_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("ROCR_VISIBLE_DEVICES", "0")
    with pytest.raises(RuntimeError, match="Please use HIP_VISIBLE_DEVICES"):
        ray_manager.get_visible_accelerator_ids_env_var()
    assert visible_env_problem({"ROCR_VISIBLE_DEVICES": "0"}) is not None


def test_ray_defect_upper_case_product_keys_never_match(ray_amd, manager, fixtures):
    data = fixtures["mi210-pair"].model_dump(mode="json", by_alias=True)
    for gpu in data["host"]["libraries"]["amdsmi"]["gpus"].values():
        gpu["gpu_id"] = 0x679A
        gpu["asic_info"].update(market_name="AMD Radeon HD 7900 Series", device_id="0x679a")
    host = SimulatedHost(parse_fixture(data, "radeon"))
    ray_manager = ray_amd(library_data(host))
    assert ray_manager.get_current_node_num_accelerators() == 2
    assert ray_manager.get_current_node_accelerator_type() is None  # Ray looks up "0x679a"; its key is "0x679A"
    assert build_inventory(manager, host).family("amd").accelerator_type == "AMD-Radeon-HD-7900"


def test_without_the_amdsmi_package_ray_counts_zero_and_the_plugin_reads_the_cli(ray_amd, manager, fixtures):
    ray_manager = ray_amd(None)
    assert ray_manager.get_current_node_num_accelerators() == 0
    assert ray_manager.get_current_node_accelerator_type() is None
    assert len(build_inventory(manager, SimulatedHost(fixtures["mi300x-8"])).family("amd").devices) == 8


def test_unresponsive_gpu_is_counted_by_both_but_scheduled_only_by_ray(ray_amd, manager, fixtures):
    host = SimulatedHost(fixtures["mi355x-8"], faults=["gpu4-unresponsive"])
    ray_manager = ray_amd(library_data(host))
    inventory = build_inventory(manager, host)
    family = inventory.family("amd")
    assert ray_manager.get_current_node_num_accelerators() == len(family.devices) == 8
    assert ray_manager.get_current_node_accelerator_type() == family.accelerator_type == "AMD-Instinct-MI355X-OAM"
    assert inventory.resources["GPU"] == 7  # deliberate: the plugin does not schedule a GPU that stopped answering
