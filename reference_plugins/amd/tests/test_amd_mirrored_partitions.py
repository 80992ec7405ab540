"""Partitions that print their whole GPU's values (amdsmi up to ROCm 6.4.0): each GPU's memory, power,
temperature and ECC counts are read once, and each partition is its share of the GPU
(rayaccel_amd.mirrored_partitions; the fixture mi300x-cpx-nps4-rocm-6.4.0 is the machine as that release prints it)."""

from __future__ import annotations

import pytest

from rayaccel.testing import Fixture, PluginManager, SimulatedHost, build_inventory
from rayaccel_amd.mirrored_partitions import mirrors_primary, unmirror
from rayaccel_amd.readings import EccCounts, GpuRecord

MIRRORED = "mi300x-cpx-nps4-rocm-6.4.0"
GPU_MIB = 196592  # one MI300X


@pytest.mark.parametrize(("version", "mirrored"), [
    ("6.4.0", True), ("6.3.3", True), ("6.1.2", True), ("6.4.0-47", True),
    ("6.4.1", False), ("6.4.2", False), ("7.0.2", False), ("7.12.0", False), (None, False), ("N/A", False)])
def test_releases_before_6_4_1_mirror_the_primary_partition(version: str | None, mirrored: bool) -> None:
    assert mirrors_primary(version) is mirrored


def _partition(index: int, rocm: str) -> GpuRecord:
    # What amdsmi of a mirroring release answers on every partition: the whole GPU's readings.
    return GpuRecord(index=index, uuid="1aff74a1-0000-1000-804f-6a2f95e3d5c0", market_name="AMD Instinct MI300X",
                     rocm_version=rocm, partition_id=index, vram_mib=GPU_MIB + 1,
                     vram_total_bytes=(GPU_MIB + 1) * 2**20,
                     vram_used_bytes=283 * 2**20, power_w=201.0, temperature_c=46.0, gfx_activity=37.0,
                     ecc=EccCounts(correctable=5), ras_blocks={"UMC": "ENABLED"},
                     errors={"activity": "AMDSMI_STATUS_IO"} if index == 3 else {})


def test_a_mirroring_release_reads_the_package_once_and_splits_its_memory() -> None:
    group = [_partition(i, "6.4.0") for i in range(8)]
    unmirror(group)
    # The parts add up to the GPU (the primary keeps the remainder), not to 8 GPUs.
    assert sum(g.vram_mib or 0 for g in group) == GPU_MIB + 1
    assert sum(g.vram_total_bytes or 0 for g in group) == (GPU_MIB + 1) * 2**20
    assert {g.vram_mib for g in group[1:]} == {(GPU_MIB + 1) // 8}
    primary = group[0]
    assert (primary.power_w, primary.temperature_c, primary.vram_used_bytes, primary.gfx_activity) == (
        201.0, 46.0, 283 * 2**20, 37.0)
    assert primary.ecc == EccCounts(correctable=5) and primary.ras_blocks == {"UMC": "ENABLED"}
    for gpu in group[1:]:
        assert (gpu.power_w, gpu.temperature_c, gpu.vram_used_bytes, gpu.gfx_activity, gpu.ecc) == (
            None, None, None, None, None)
    # A failed query is the partition's own evidence: it stays, so that partition is still drained.
    assert group[3].errors == {"activity": "AMDSMI_STATUS_IO"}


@pytest.mark.parametrize("rocm", ["6.4.1", "7.0.2", None])
def test_a_release_whose_partitions_answer_for_themselves_is_read_as_printed(rocm: str | None) -> None:
    group = [_partition(i, rocm or "") for i in range(8)]
    for gpu in group:
        gpu.rocm_version = rocm
    unmirror(group)
    assert [g.vram_mib for g in group] == [GPU_MIB + 1] * 8 and [g.power_w for g in group] == [201.0] * 8


def test_a_whole_gpu_is_left_as_it_is() -> None:
    (gpu,) = group = [_partition(0, "6.4.0")]
    unmirror(group)
    assert gpu.vram_mib == GPU_MIB + 1 and gpu.power_w == 201.0


def test_each_gpu_of_the_6_4_0_machine_reports_its_own_memory_power_and_ecc_once(
        manager: PluginManager, fixtures: dict[str, Fixture]) -> None:
    fixture = fixtures[MIRRORED]
    family = build_inventory(manager, SimulatedHost(fixture)).family("amd")
    assert family is not None
    got = {(m.device, m.name): m.value for m in family.metrics}
    stated = fixture.expected.metric_values
    assert {(d, n): v for d, values in stated.items() for n, v in values.items()} == {
        (d, n): got[(d, n)] for d, values in stated.items() for n in values}
    assert got[(fixture.expected.device_ids[3], "ecc_errors_corrected")] == 5  # not 8 partitions x 5
    for device in family.devices:
        assert device.memory_mib == GPU_MIB
        assert [p.memory_mib for p in device.partitions] == [GPU_MIB // 8] * 8
        assert [p.profile for p in device.partitions] == ["cpx.1xcd.24gb"] * 8
