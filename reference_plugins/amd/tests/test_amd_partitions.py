"""MI300X partitions as ROCm really reports them (issue 27).

- uuids: ``amdsmi_uuid_gen`` puts the partition index in the uuid's *second* byte; ROCm before 7.12 writes
  0xff there for every partition, so the partitions of a GPU share its uuid (ROCm/rocm-systems#3977). The
  plugin then derives the id ROCm 7.12 reports, from what the data shows (kfd_info's partition id, else the
  PCI function), so a node keeps its device ids across the upgrade; it says so in a warning.
- PCI: each partition is its own function of the GPU's device (0000:05:00.0 ... .7, ROCm/amdsmi#132).
- amd-smi 26 moved partition data out of ``static`` into ``amd-smi partition`` (ROCm/rocm-systems#223): both
  layouts are read, and which one is in use is decided by the output, not the version.
- Every fixture's ``source`` names its tool and version and where that format is documented.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rayaccel.testing import Fixture, PluginManager, SimulatedHost, build_inventory, collect_problems, parse_fixture
from rayaccel_amd import cli, plugin
from rayaccel_amd.discovery import partition_profile
from rayaccel_amd.readings import partition_uuid

FIXTURE_NAMES = sorted(p.stem for p in (Path(plugin.__file__).parent / "fixtures").glob("*.yaml"))

CPX, SHARED = "mi300x-cpx-nps4", "mi300x-cpx-nps4-shared-uuid"
DPX_25, DPX_26 = "mi300x-dpx-amd-smi-25", "mi300x-dpx-amd-smi-26"
Fixtures = dict[str, Fixture]
BDF = re.compile(r"([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2})\.([0-7])")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:2])


def logical_gpus(fixture: Fixture) -> list[dict[str, Any]]:
    """(uuid, bdf, partition id, ROCm version) of each logical GPU, as the fixture's vendor interface answers."""
    state = fixture.host
    if "amdsmi" in state.libraries:
        data = state.libraries["amdsmi"]
        return [{"uuid": g["uuid"], "bdf": g["bdf"], "partition": (g.get("kfd_info") or {}).get("current_partition_id"),
                 "rocm": data["rocm_version"]} for g in data["gpus"].values()]
    listing = json.loads(state.commands["amd-smi list --json"].stdout)
    (version,) = json.loads(state.commands["amd-smi version --json"].stdout)
    return [{"uuid": e["uuid"], "bdf": e["bdf"], "partition": e.get("partition_id"), "rocm": version["rocm_version"]}
            for e in listing]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_rocm_version_agrees_with_its_uuids_and_pci_functions(fixtures: Fixtures, name: str) -> None:
    gpus = logical_gpus(fixtures[name])
    by_device: dict[str, list[dict[str, Any]]] = {}
    for gpu in gpus:
        place = BDF.fullmatch(gpu["bdf"])
        assert place is not None, gpu["bdf"]
        by_device.setdefault(place.group(1), []).append(gpu)
    for members in by_device.values():
        # A partition is its own PCI function: one address per logical GPU.
        assert len({g["bdf"] for g in members}) == len(members)
        for gpu in members:
            second_byte = int(gpu["uuid"][2:4], 16)
            if _version(gpu["rocm"]) < (7, 12):
                assert second_byte == 0xFF  # amdsmi_uuid_gen's "no partition": partitions share the GPU's uuid
            elif gpu["partition"] is not None:
                assert second_byte == gpu["partition"]  # the partition index sits in the second byte
        if len(members) > 1 and _version(members[0]["rocm"]) < (7, 12):
            assert len({g["uuid"] for g in members}) == 1


def test_partition_uuid_puts_the_partition_in_the_second_byte() -> None:
    assert partition_uuid("1aff74a1-0000-1000-804f-6a2f95e3d5c0", 3) == "1a0374a1-0000-1000-804f-6a2f95e3d5c0"
    assert partition_uuid("1a0374a1-0000-1000-804f-6a2f95e3d5c0", 3) is None  # already a partition's uuid
    assert partition_uuid("GPU-4c1e0f5a9b2d7360", 0) is None  # not amdsmi's uuid


def test_rocm_7_12_partition_ids_are_the_uuids_amdsmi_reports(manager: PluginManager, fixtures: Fixtures) -> None:
    result = build_inventory(manager, SimulatedHost(fixtures[CPX]))
    family = result.family("amd")
    assert family is not None and "fallback-device-id" not in {p.code for p in result.problems}
    for device in family.devices[:2]:
        # The GPU is the "no partition" uuid; each partition keeps the uuid amdsmi reports for it.
        assert device.id[2:4] == "ff" and device.pci_bus_id is not None and device.pci_bus_id.endswith(".0")
        for partition in device.partitions:
            number = partition.attributes["partition_id"]
            assert int(str(partition.attributes["uuid"])[2:4], 16) == number
            assert str(partition.attributes["pci_bus_id"]).endswith(f".{number}")


def test_shared_uuids_become_the_ids_rocm_7_12_reports(manager: PluginManager, fixtures: Fixtures) -> None:
    # The same machine before (ROCm 7.0.2) and after (ROCm 7.12.0) the upgrade: the device ids do not change.
    before = build_inventory(manager, SimulatedHost(fixtures[SHARED]))
    after = build_inventory(manager, SimulatedHost(fixtures[CPX]))
    assert before.family("amd") is not None and after.family("amd") is not None
    assert [d.id for d in before.family("amd").devices] == [d.id for d in after.family("amd").devices]
    (warning,) = [p for p in before.problems if p.code == "fallback-device-id"]
    assert warning.severity == "warning"
    assert "64 logical GPUs report uuid" not in warning.message  # 8 per GPU, not one uuid for the node
    assert "8 logical GPUs report uuid 1aff74a1-" in warning.message and "ROCm 7.12+" in warning.message


def _shared_uuid_host(fixtures: Fixtures, change: Callable[[dict[str, Any]], Any]) -> SimulatedHost:
    data = fixtures[SHARED].model_dump(mode="json", by_alias=True)
    for gpu in data["host"]["libraries"]["amdsmi"]["gpus"].values():
        change(gpu)
    return SimulatedHost(parse_fixture(data, "shared-uuid variant"))


def test_without_kfd_info_the_pci_function_gives_the_partition(manager: PluginManager, fixtures: Fixtures) -> None:
    # ROCm 6.1/6.2 have no amdsmi_get_gpu_kfd_info: the partition is still visible as the PCI function.
    host = _shared_uuid_host(fixtures, lambda gpu: gpu.pop("kfd_info"))
    family = build_inventory(manager, host).family("amd")
    assert family is not None
    assert [d.id for d in family.devices] == fixtures[SHARED].expected.device_ids


def test_without_any_partition_source_ids_are_a_fallback_that_says_it_changes(manager: PluginManager,
                                                                              fixtures: Fixtures) -> None:
    def hide_partition(gpu: dict[str, Any]) -> None:
        gpu.pop("kfd_info")
        gpu["errors"] = {"amdsmi_get_gpu_device_bdf": 2}

    result = build_inventory(manager, _shared_uuid_host(fixtures, hide_partition))
    family = result.family("amd")
    # No PCI address: the HIP uuid (the package's) still groups the partitions into their GPU.
    assert family is not None and len(family.devices) == 8
    assert family.devices[0].id == "1aff74a1-0000-1000-804f-6a2f95e3d5c0"
    assert family.devices[0].partitions[1].attributes["uuid"] == "1aff74a1-0000-1000-804f-6a2f95e3d5c0-1"
    (warning,) = [p for p in result.problems if p.code == "fallback-device-id"]
    assert "changes when the node moves to ROCm 7.12+" in warning.message


def _ran(fixture: Fixture) -> list[str]:
    ran: list[str] = []

    class Recording(SimulatedHost):  # type: ignore[misc]
        def run(self, argv, timeout=5.0):  # type: ignore[no-untyped-def]
            ran.append(" ".join(argv[1:-1]))
            return super().run(argv, timeout)

    plugin.rayaccel_discover(Recording(fixture))
    return ran


@pytest.mark.parametrize(("name", "commands"), [(DPX_25, ["list", "static", "version"]),
                                                (DPX_26, ["list", "static", "partition --current", "version"])])
def test_both_amd_smi_layouts_give_partition_mode_and_id(manager: PluginManager, fixtures: Fixtures, name: str,
                                                         commands: list[str]) -> None:
    result = build_inventory(manager, SimulatedHost(fixtures[name]))
    family = result.family("amd")
    assert family is not None and [p for p in result.problems if p.severity == "error"] == []
    assert [p.attributes["partition_id"] for d in family.devices for p in d.partitions] == [0, 1] * 8
    assert {d.attributes.get("compute_partition") for d in family.devices} == {"DPX"}
    assert {p.profile for d in family.devices for p in d.partitions} == {"dpx.4xcd.96gb"}
    assert family.devices[0].attributes["memory_partition"] == "NPS1"
    assert family.labels["amd.com/gpu.compute-partition"] == "DPX"
    # Partitions share their GPU's uuid on ROCm 6.4/7.0: the ids are the ones ROCm 7.12 reports.
    assert [d.id for d in family.devices] == fixtures[name].expected.device_ids
    # `amd-smi partition` runs only when `static` has no partition section (amd-smi 26+).
    assert _ran(fixtures[name]) == commands


def test_partition_command_failing_keeps_the_gpus_and_their_ids(manager: PluginManager, fixtures: Fixtures) -> None:
    result = build_inventory(manager, SimulatedHost(fixtures[DPX_26], faults=["amd-smi-partition-fails"]))
    family = result.family("amd")
    assert family is not None
    assert [d.id for d in family.devices] == fixtures[DPX_26].expected.device_ids  # list's partition_id
    assert "compute_partition" not in family.devices[0].attributes
    # The mode is unknown, the count is not: 2 of an MI300X's 8 XCDs' worth each is DPX.
    assert {p.profile for d in family.devices for p in d.partitions} == {"dpx.4xcd.96gb"}
    (failed,) = [p for p in result.problems if p.code == "amd-smi-failed"]
    assert "amd-smi partition --current --json" in failed.message


def test_partition_rows_without_a_mode_do_not_give_a_partition_id() -> None:
    # amd-smi 26 prints the previous row's partition_id on a secondary partition whose profile query failed.
    text = json.dumps({"current_partition": [
        {"gpu_id": 0, "memory": "NPS4", "accelerator_type": "CPX", "accelerator_profile_index": 3, "partition_id": "0"},
        {"gpu_id": 1, "memory": "N/A", "accelerator_type": "N/A", "accelerator_profile_index": "N/A",
         "partition_id": "0"}]})
    assert cli.parse_partition(text) == {
        0: {"compute_partition": "CPX", "memory_partition": "NPS4", "partition_id": 0},
        1: {"compute_partition": None, "memory_partition": None, "partition_id": None}}


def test_partition_rows_with_a_bad_gpu_id_are_reported_and_skipped() -> None:
    with collect_problems() as sink:
        found = cli.parse_partition(json.dumps({"current_partition": [{"gpu_id": "x"}, {"gpu_id": 2}]}))
    assert list(found) == [2]
    assert "gpu_id" in sink.drain()[0].message


def test_list_reads_each_logical_gpus_partition_id() -> None:
    text = json.dumps([{"gpu": 0, "bdf": "0000:05:00.0", "uuid": "u", "partition_id": 0},
                       {"gpu": 1, "bdf": "0000:05:00.1", "uuid": "u", "partition_id": 1},
                       {"gpu": 2, "bdf": "0000:26:00.0", "uuid": "v", "partition_id": "N/A"}])
    assert [g["partition_id"] for g in cli.parse_list(text).values()] == [0, 1, None]


URL = re.compile(r"https://\S+")
TOOL_VERSION = re.compile(r"(amdsmi|amd-smi)[^;]*?\b\d+\.\d+(\.\d+)?", re.IGNORECASE)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_every_fixture_source_names_its_tool_version_and_documentation(fixtures: Fixtures, name: str) -> None:
    source = fixtures[name].source
    assert TOOL_VERSION.search(source), source
    assert any("rocm.docs.amd.com/projects/amdsmi" in url for url in URL.findall(source)), source


# -- Issue 25: a partitioned GPU is one device; its partitions' health ---------------------------------------

def _without(fixtures: Fixtures, *logical: str) -> SimulatedHost:
    data = fixtures[CPX].model_dump(mode="json", by_alias=True)
    for key in logical:
        del data["host"]["libraries"]["amdsmi"]["gpus"][key]
    return SimulatedHost(parse_fixture(data, "cpx with logical GPUs gone"))


def test_a_secondary_partition_gone_drains_only_itself_and_a_primary_gone_drains_its_gpu(
        fixtures: Fixtures) -> None:
    devices = plugin.rayaccel_discover(SimulatedHost(fixtures[CPX]))
    assert len(devices) == 8 and [len(d.partitions) for d in devices] == [8] * 8
    # Logical GPU 9 (partition 1 of GPU 1) falls off: only partition "9" is unhealthy; GPU 1 stays healthy.
    reports = {r.device: r for r in plugin.rayaccel_health(_without(fixtures, "9"), devices)}
    assert reports["9"].state == "unhealthy" and reports["9"].reasons[0].code == "gpu-lost"
    assert reports[devices[1].id].state == "healthy"
    assert {d for d, r in reports.items() if r.state != "healthy"} == {"9"}
    # Logical GPU 8 is GPU 1's primary partition: the package is gone, every partition of it with it.
    reports = {r.device: r for r in plugin.rayaccel_health(_without(fixtures, "8"), devices)}
    assert reports[devices[1].id].state == "unhealthy" and reports[devices[1].id].reasons[0].fatal


def test_a_partition_profile_is_its_mode_then_what_sizes_it() -> None:
    # One mode, two products, two sizes: two names (MI300X's and MI350X's DPX partitions; RAC244).
    assert partition_profile("DPX", 4, 98296) == "dpx.4xcd.96gb"
    assert partition_profile("DPX", 4, 147456) == "dpx.4xcd.144gb"
    assert partition_profile("CPX", 1, 24574) == "cpx.1xcd.24gb"  # 23.998 GiB: rounded, as MIG's 1g.10gb
    # What the plugin cannot tell is left out, never guessed: a product of unknown XCDs, an unread memory size.
    assert partition_profile("DPX", None, 98296) == "dpx.96gb"
    assert partition_profile("QPX", 2, None) == "qpx.2xcd"


def test_a_partitioned_gpu_is_offered_only_as_its_partitions(manager: PluginManager, fixtures: Fixtures) -> None:
    result = build_inventory(manager, SimulatedHost(fixtures[CPX]))
    family = result.family("amd")
    assert family is not None and family.schedulable_units == []
    assert result.resources == {"GPU_COMPUTE_PARTITION_cpx.1xcd.24gb": 64.0,
                                "accelerator_type:AMD-Instinct-MI300X-OAM": 1.0}
    gpu = family.devices[0]
    assert gpu.memory_mib == sum(p.memory_mib or 0 for p in gpu.partitions) == 196592
    assert gpu.partition_capacity is not None and (gpu.partition_capacity.compute_slices,
                                                   gpu.partition_capacity.memory_slices) == (8, 4)
    assert {(p.kind, p.profile, p.compute_slices) for p in gpu.partitions} == {
        ("compute-partition", "cpx.1xcd.24gb", 1)}
    assert [p.attributes["device_file"] for p in gpu.partitions] == [f"/dev/dri/renderD{128 + n}" for n in range(8)]


def _memory_mode(fixtures: Fixtures, name: str, mode: str) -> SimulatedHost:
    """Fixture ``name`` with every logical GPU that states a memory partition mode stating ``mode`` instead (the
    compute mode, the partitions and their VRAM as they were)."""
    data = fixtures[name].model_dump(mode="json", by_alias=True)
    for gpu in data["host"]["libraries"]["amdsmi"]["gpus"].values():
        if str(gpu.get("memory_partition", "N/A")).startswith("NPS"):
            gpu["memory_partition"] = mode
    return SimulatedHost(parse_fixture(data, f"{name} in {mode}"))


def _capacities(host: SimulatedHost) -> set[tuple[int, int]]:
    return {(d.partition_capacity.compute_slices, d.partition_capacity.memory_slices)
            for d in plugin.rayaccel_discover(host) if d.partition_capacity is not None}


@pytest.mark.parametrize(("name", "capacity"), [(CPX, (8, 4)), (DPX_25, (8, 1)), ("mi350x-dpx-nps2-pod", (8, 2)),
                                                ("mi350x-qpx-nps2-pod", (8, 2))])
def test_memory_slices_are_the_memory_partitions_whatever_the_compute_mode(fixtures: Fixtures, name: str,
                                                                         capacity: tuple[int, int]) -> None:
    # NPS<n> splits the HBM into n memory partitions (AMD's MI300X quick start: NPS4 is four of 48 GB), however many
    # compute partitions share them: CPX's 8 over NPS4's 4, DPX's 2 over NPS1's 1 (round 12's a1 counted the former).
    assert _capacities(SimulatedHost(fixtures[name])) == {capacity}


def test_memory_slices_follow_the_memory_mode_alone(fixtures: Fixtures) -> None:
    # CPX with NPS1 and with NPS4 are both MI300X modes (RCCL's docs: NPS4 only with CPX; NPS1 with every compute
    # mode), and each CPX partition reports 24 GiB in both (the kernel's KFD_XCP_MEMORY_SIZE: its memory partition
    # over the partitions sharing it, 192/8 or 48/2): only the memory mode tells them apart.
    nps1 = _memory_mode(fixtures, CPX, "NPS1")
    assert _capacities(nps1) == {(8, 1)}
    assert {p.profile for d in plugin.rayaccel_discover(nps1) for p in d.partitions} == {"cpx.1xcd.24gb"}
