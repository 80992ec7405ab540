"""The partition model (issue 25): records that refuse impossible partitions, an inventory that offers a
partitioned device only as its partitions (each profile its own resource), and the node config that hands
them to Ray. No Ray node here; tests/ray/test_ray_partitions.py schedules them on one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rayaccel import FamilyDeclaration, Host, QuantityRule, hookimpl
from rayaccel.hosts.fixtures import load_fixture, parse_fixture
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.inventory.builder import collect_inventory
from rayaccel.plugins.manager import PluginManager
from rayaccel.ray import node_config
from rayaccel.ray.claims import PLACEMENT_ENV, load_placement
from rayaccel.ray.cordons import cordon_units
from rayaccel.ray.node import NODE_UNITS_ENV, OVERRIDE_RESOURCES_ENV, UNIT_INSTANCE_ENV
from rayaccel.ray.registry import FAMILIES_ENV, load_specs, manager_class
from rayaccel.records import Device, NodeInventory, Partition, PartitionCapacity, partition_resource_name
from rayaccel_nvidia import plugin

FIXTURES = Path(plugin.__file__).parent / "fixtures"


@pytest.fixture
def manager() -> PluginManager:
    pm = PluginManager(autoload=False)
    assert pm.register(plugin, "nvidia"), pm.problems
    return pm


def mig(uuid: str, profile: str, compute: int, memory: int) -> Partition:
    return Partition(id=uuid, kind="mig", profile=profile, compute_slices=compute, memory_slices=memory)


def gpu(*partitions: Partition, capacity: PartitionCapacity | None = None) -> Device:
    return Device(index=0, id="GPU-0", product_name="NVIDIA A100 80GB PCIe", partitions=list(partitions),
                  partition_capacity=capacity)


A100 = PartitionCapacity(compute_slices=7, memory_slices=8)


def inventory(manager: PluginManager, name: str, faults: tuple[str, ...] = (),
              data: dict[str, Any] | None = None) -> NodeInventory:
    fixture = parse_fixture(data, name) if data is not None else load_fixture(FIXTURES / f"{name}.yaml")
    return collect_inventory(manager, SimulatedHost(fixture, faults=faults))


# Records -------------------------------------------------------------------------------------------

def test_a_device_whose_partitions_fit_its_capacity_is_valid() -> None:
    device = gpu(mig("MIG-a", "3g.40gb", 3, 4), mig("MIG-b", "2g.20gb", 2, 2), mig("MIG-c", "2g.20gb", 2, 2),
                 capacity=A100)
    assert device.partitioned and [p.profile for p in device.partitions] == ["3g.40gb", "2g.20gb", "2g.20gb"]


def test_two_partitions_with_one_id_are_refused_in_one_line() -> None:
    with pytest.raises(ValidationError, match="id MIG-a is given to more than one partition"):
        gpu(mig("MIG-a", "1g.10gb", 1, 1), mig("MIG-a", "1g.10gb", 1, 1))


def test_a_partition_with_its_devices_own_id_is_refused_in_one_line() -> None:
    # A device named by its first partition's id (issue 46, held-out round 16's a2, its Partition.id form): the
    # device's health would drain every partition and a partition's only itself, under one id.
    with pytest.raises(ValidationError, match="id GPU-0 is the device's own id; a partition needs an id of its own"):
        gpu(mig("GPU-0", "3g.40gb", 3, 4), mig("MIG-b", "2g.20gb", 2, 2))


@pytest.mark.parametrize(("partitions", "field"), [
    ([("MIG-a", "4g.40gb", 4, 4), ("MIG-b", "4g.40gb", 4, 4)], "compute_slices add up to 8, more than the device's 7"),
    ([("MIG-a", "3g.40gb", 3, 4), ("MIG-b", "3g.40gb", 3, 4), ("MIG-c", "1g.10gb", 1, 1)],
     "memory_slices add up to 9, more than the device's 8"),
])
def test_partitions_larger_than_their_device_are_refused(partitions: list[tuple[str, str, int, int]],
                                                         field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        gpu(*(mig(*p) for p in partitions), capacity=A100)


def test_a_partition_needs_a_profile_and_a_kind_in_the_vocabulary() -> None:
    with pytest.raises(ValidationError, match="profile"):
        Partition(id="MIG-a", kind="mig")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="lower-case words joined by '-'"):
        Partition(id="MIG-a", kind="MIG slice", profile="1g.10gb")
    with pytest.raises(ValidationError, match="valid Ray label value"):
        Partition(id="MIG-a", kind="mig", profile="1g 10gb")


def test_the_resource_of_a_profile_is_named_by_one_rule() -> None:
    assert partition_resource_name("GPU", "mig", "1g.10gb") == "GPU_MIG_1g.10gb"
    assert (partition_resource_name("GPU", "compute-partition", "cpx.1xcd.24gb")
            == "GPU_COMPUTE_PARTITION_cpx.1xcd.24gb")


# The inventory --------------------------------------------------------------------------------------

def test_a_mixed_node_offers_the_whole_gpu_and_each_profile(manager: PluginManager) -> None:
    family = inventory(manager, "a100-80gb-mig-mixed").family("nvidia")
    assert family is not None
    split, whole = family.devices
    assert split.index == 0 and split.partitioned and not whole.partitioned
    assert family.schedulable_units == ["1"]  # GPU 0 (MIG mode) is not a unit of GPU
    assert family.resources == {"GPU": 1.0, "accelerator_type:A100": 1.0, "GPU_MIG_3g.40gb": 1.0,
                                "GPU_MIG_2g.20gb": 2.0}
    assert family.partition_units == {"GPU_MIG_3g.40gb": [split.partitions[0].id],
                                      "GPU_MIG_2g.20gb": [p.id for p in split.partitions[1:]]}
    assert family.labels["rayaccel.io/partition-mig-2g.20gb"] == "2"


def test_a_fault_of_one_instance_takes_only_that_instance(manager: PluginManager) -> None:
    family = inventory(manager, "a100-80gb-mig-mixed", ("mig-instance-xid-95",)).family("nvidia")
    assert family is not None
    split = family.devices[0]
    faulted = {h.device: h.state for h in family.health if h.state != "healthy"}
    assert faulted == {split.partitions[1].id: "unhealthy"}
    assert family.partition_units["GPU_MIG_2g.20gb"] == [split.partitions[2].id]
    assert family.resources["GPU"] == 1.0 and family.resources["GPU_MIG_3g.40gb"] == 1.0


def test_a_fault_of_the_parent_takes_all_its_partitions(manager: PluginManager) -> None:
    family = inventory(manager, "a100-80gb-mig-mixed", ("mig-parent-xid-79",)).family("nvidia")
    assert family is not None
    assert family.partition_units == {}
    assert family.resources == {"GPU": 1.0, "accelerator_type:A100": 1.0}


def test_a_partition_id_repeated_on_another_device_is_a_problem_naming_the_device(manager: PluginManager) -> None:
    data = load_fixture(FIXTURES / "a100-80gb-mig-mixed.yaml").model_dump(mode="json", by_alias=True)
    devices = data["host"]["libraries"]["nvml"]["devices"]
    devices["1"]["mig_mode"] = [1, 1]
    devices["1"]["max_mig_devices"] = 7
    devices["1"]["mig_devices"] = {"0": {**devices["0"]["mig_devices"]["0"],
                                         "name": "NVIDIA A100 80GB PCIe MIG 3g.40gb"}}
    result = inventory(manager, "a100-80gb-mig-mixed", data=data)
    (problem,) = [p for p in result.problems if p.code == "duplicate-partition"]
    assert devices["1"]["uuid"] in problem.message and devices["0"]["mig_devices"]["0"]["uuid"] in problem.message
    family = result.family("nvidia")
    assert family is not None and [d.index for d in family.devices] == [0]


# The node's Ray config -------------------------------------------------------------------------------

def test_the_node_config_makes_each_profile_a_unit_instance_resource_with_its_own_claims(
        manager: PluginManager) -> None:
    result = inventory(manager, "a100-80gb-mig-mixed")
    family = result.family("nvidia")
    assert family is not None
    migs = [p.id for p in family.devices[0].partitions]
    env = node_config(result).env
    assert {"GPU_MIG_3g.40gb", "GPU_MIG_2g.20gb"} <= set(env[UNIT_INSTANCE_ENV].split(","))
    specs = {s.resource_name: s for s in load_specs(env[FAMILIES_ENV])}
    assert specs["GPU_MIG_2g.20gb"].env_var == "CUDA_VISIBLE_DEVICES" and specs["GPU_MIG_2g.20gb"].partition
    placement = load_placement(env[PLACEMENT_ENV])
    assert placement["GPU"].units == ("1",)
    assert placement["GPU_MIG_2g.20gb"].units == tuple(migs[1:])
    assert sorted(json.loads(env[NODE_UNITS_ENV])["nvidia"]) == sorted(["1", *migs])
    # The health monitor cordons one instance by its profile's resource, a whole GPU by GPU's.
    assert cordon_units(placement, "GPU", migs[2]) == ("GPU_MIG_2g.20gb", [migs[2]])
    assert cordon_units(placement, "GPU", family.devices[1].id) == ("GPU", ["1"])


def test_a_partition_resource_never_reads_the_nodes_whole_device_ids(monkeypatch: pytest.MonkeyPatch,
                                                                     manager: PluginManager) -> None:
    specs = load_specs(node_config(inventory(manager, "a100-80gb-mig-mixed")).env[FAMILIES_ENV])
    cls: Any = manager_class(next(s for s in specs if s.resource_name == "GPU_MIG_2g.20gb"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    # Ray maps instance index i to the i-th id of this list: for a partition resource the claims table does.
    assert cls.get_current_process_visible_accelerator_ids() is None
    cls.set_current_process_visible_accelerator_ids(["MIG-x"])
    import os

    assert os.environ["CUDA_VISIBLE_DEVICES"] == "MIG-x"
    assert cls.__name__.isidentifier()


def test_a_node_whose_only_gpu_is_in_mig_mode_offers_no_whole_gpu(manager: PluginManager) -> None:
    config = node_config(inventory(manager, "a100-mig"))
    resources = json.loads(config.env[OVERRIDE_RESOURCES_ENV])
    assert resources["GPU"] == 0.0  # else Ray's NVIDIA manager would count the MIG-mode GPU itself
    assert (resources["GPU_MIG_3g.20gb"], resources["GPU_MIG_2g.10gb"]) == (1.0, 2.0)


# An operator's visible-devices setting ---------------------------------------------------------------

def test_an_operators_visible_devices_setting_can_name_mig_instances(manager: PluginManager) -> None:
    from rayaccel.inventory.visible_units import restrict_to_visible

    result = inventory(manager, "a100-80gb-mig-mixed")
    family = result.family("nvidia")
    assert family is not None
    migs = [p.id for p in family.devices[0].partitions]
    # One 2g.20gb instance only: the whole GPU and the other instances leave the node's resources.
    only = restrict_to_visible(result, manager, {"CUDA_VISIBLE_DEVICES": migs[2]})
    assert only.resources == {"accelerator_type:A100": 1.0, "GPU_MIG_2g.20gb": 1.0}
    assert only.labels["rayaccel.io/partition-mig-2g.20gb"] == "1"
    assert "rayaccel.io/partition-mig-3g.40gb" not in only.labels
    kept = only.family("nvidia")
    assert kept is not None and kept.partition_units == {"GPU_MIG_2g.20gb": [migs[2]]}
    (problem,) = [p for p in only.problems if p.code == "visible-devices"]
    assert migs[0] in problem.message and migs[1] in problem.message  # left out
    # The MIG-mode GPU's index keeps all its instances; the whole GPU 1 leaves.
    parent = restrict_to_visible(result, manager, {"CUDA_VISIBLE_DEVICES": "0"})
    assert parent.resources == {"accelerator_type:A100": 1.0, "GPU_MIG_3g.40gb": 1.0, "GPU_MIG_2g.20gb": 2.0}


def test_a_request_for_several_partitions_fills_one_device_first() -> None:
    from rayaccel_amd import plugin as amd_plugin

    pm = PluginManager(autoload=False)
    assert pm.register(amd_plugin, "amd"), pm.problems
    fixture = load_fixture(Path(amd_plugin.__file__).parent / "fixtures" / "mi300x-cpx-nps4.yaml")
    result = collect_inventory(pm, SimulatedHost(fixture))
    family = result.family("amd")
    assert family is not None
    placement = load_placement(node_config(result).env[PLACEMENT_ENV])["GPU_COMPUTE_PARTITION_cpx.1xcd.24gb"]
    first, second = family.devices[:2]
    assert placement.device_units[first.id] == tuple(p.id for p in first.partitions)
    # The last partition of GPU 0 and two of GPU 1 free: a 2-partition task gets GPU 1's pair.
    free = [first.partitions[-1].id, second.partitions[0].id, second.partitions[1].id]
    assert placement.choose(free, 2) == [second.partitions[0].id, second.partitions[1].id]


class TwoSpellingsOfOneName:
    """Partitions whose (kind, profile) pairs differ but spell the same Ray resource: 'mig-a'/'b' and
    'mig'/'A_b' are both ``XPU_MIG_A_b``."""

    @hookimpl
    def rayaccel_family(self) -> FamilyDeclaration:
        return FamilyDeclaration(name="xpu", vendor="Example", resource_name="XPU",
                                 visible_devices_env_var="XPU_VISIBLE_DEVICES", spec_version="1.0",
                                 quantity_rule=QuantityRule(kind="whole"))

    @hookimpl
    def rayaccel_discover(self, host: Host) -> list[Device]:
        partitions = [Partition(id="p0", kind="mig-a", profile="b"), Partition(id="p1", kind="mig", profile="A_b"),
                      Partition(id="p2", kind="mig-a", profile="b")]
        return [Device(index=0, id="X-0", product_name="Example X", partitions=partitions)]


def test_two_partition_kinds_that_spell_one_resource_name_are_not_merged_into_it() -> None:
    pm = PluginManager(autoload=False)
    assert pm.register(TwoSpellingsOfOneName(), "xpu"), pm.problems
    assert partition_resource_name("XPU", "mig-a", "b") == partition_resource_name("XPU", "mig", "A_b")
    result = collect_inventory(pm, SimulatedHost(load_fixture(FIXTURES / "a100-80gb-mig-mixed.yaml")))
    family = result.family("xpu")
    assert family is not None
    # The first spelling keeps the name (both its partitions); the other is refused, named, never counted in.
    assert family.partition_units == {"XPU_MIG_A_b": ["p0", "p2"]}
    assert family.resources["XPU_MIG_A_b"] == 2.0
    (problem,) = [p for p in result.problems if p.code == "partition-name-collision"]
    assert "'p1'" in problem.message and "'mig-a'" in problem.message and "'A_b'" in problem.message
