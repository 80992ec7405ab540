"""A primary partition that states its whole GPU's memory (amdsmi from ROCm 6.4.1: sysfs mem_info_vram_total, the
PCI device's alone): the GPU's memory and memory in use are its figures, its partition is sized as the others
(rayaccel_amd.primary_partition; the fixtures mi300x-cpx-nps4*, mi300x-dpx-amd-smi-25/26 and mi350x-*-pod are the
machines as those releases print them)."""

from __future__ import annotations

import pytest

from rayaccel import SkuMatch, SkuRecord
from rayaccel.testing import Fixture, PluginManager, SimulatedHost, build_inventory, parse_fixture
from rayaccel_amd import plugin
from rayaccel_amd.primary_partition import separate_whole_gpu
from rayaccel_amd.readings import GpuRecord, WholeGpuMemory

GPU_MIB, GPU_BYTES = 196592, 206141652992  # one MI300X, as its primary partition states it
CPX_MIB, CPX_BYTES = 24574, 25767706624  # a CPX partition, as KFD states it (ROCm/ROCm#4750)


def _partitions(rocm: str | None, primary_mib: int = GPU_MIB, primary_bytes: int = GPU_BYTES) -> list[GpuRecord]:
    primary = GpuRecord(index=0, uuid="p0", market_name="AMD Instinct MI300X", rocm_version=rocm, partition_id=0,
                        vram_mib=primary_mib, vram_total_bytes=primary_bytes, vram_used_bytes=283 * 2**20)
    return [primary, *(GpuRecord(index=i, uuid=f"p{i}", market_name="AMD Instinct MI300X", rocm_version=rocm,
                                 partition_id=i, vram_mib=CPX_MIB, vram_total_bytes=CPX_BYTES,
                                 vram_used_bytes=512 * 2**20) for i in range(1, 8))]


@pytest.mark.parametrize("rocm", ["6.4.1", "7.0.2", None])
def test_a_primary_stating_its_gpu_is_sized_as_its_secondaries(rocm: str | None) -> None:
    group = _partitions(rocm)
    separate_whole_gpu(group)
    primary = group[0]
    assert primary.whole_gpu == WholeGpuMemory(mib=GPU_MIB, total_bytes=GPU_BYTES, used_bytes=283 * 2**20)
    assert (primary.vram_mib, primary.vram_total_bytes, primary.vram_used_bytes) == (CPX_MIB, CPX_BYTES, None)
    assert {(g.vram_mib, g.vram_total_bytes, g.vram_used_bytes, g.whole_gpu) for g in group[1:]} == {
        (CPX_MIB, CPX_BYTES, 512 * 2**20, None)}


@pytest.mark.parametrize(("rocm", "primary_mib", "primary_bytes", "why"), [
    ("7.12.0", CPX_MIB, CPX_BYTES, "the primary states its share (ROCm/rocm-systems#8419)"),
    ("7.12.0", CPX_MIB + 2, CPX_BYTES + 2 * 2**20, "a share counted another way (reservations) is still a share"),
    ("6.4.0", GPU_MIB, GPU_BYTES, "a mirroring release: rayaccel_amd.mirrored_partitions splits it"),
])
def test_a_primary_stating_its_share_or_mirroring_is_left_as_it_is(rocm: str, primary_mib: int, primary_bytes: int,
                                                                    why: str) -> None:
    group = _partitions(rocm, primary_mib, primary_bytes)
    separate_whole_gpu(group)
    assert group[0].whole_gpu is None and group[0].vram_mib == primary_mib, why


def test_a_primary_stating_no_size_leaves_the_gpus_size_unknown_and_its_use_the_gpus() -> None:
    group = _partitions("7.0.2")
    group[0].vram_mib = group[0].vram_total_bytes = None  # a garbled answer: whole GPU or share, nothing says
    separate_whole_gpu(group)
    primary = group[0]
    assert primary.whole_gpu == WholeGpuMemory(mib=None, total_bytes=None, used_bytes=283 * 2**20)
    assert (primary.vram_mib, primary.vram_total_bytes, primary.vram_used_bytes) == (CPX_MIB, CPX_BYTES, None)


def test_secondaries_that_disagree_say_no_size() -> None:
    group = _partitions("7.0.2")
    group[5].vram_mib, group[5].vram_total_bytes = CPX_MIB * 2, CPX_BYTES * 2
    separate_whole_gpu(group)
    assert group[0].whole_gpu is None and group[0].vram_mib == GPU_MIB


@pytest.mark.parametrize("name", ["mi300x-cpx-nps4", "mi300x-dpx-amd-smi-25"])
def test_each_partition_is_its_share_and_the_gpu_its_primarys_figures(
        manager: PluginManager, fixtures: dict[str, Fixture], name: str) -> None:
    family = build_inventory(manager, SimulatedHost(fixtures[name])).family("amd")
    assert family is not None
    metrics = {(m.device, m.name): m.value for m in family.metrics}
    for device in family.devices:
        share = GPU_MIB // len(device.partitions)
        assert [p.memory_mib for p in device.partitions] == [share] * len(device.partitions)
        assert device.memory_mib == GPU_MIB
        # The whole GPU's total and the whole device's use (mem_info_vram_used), not the partitions' added to it.
        assert (metrics[(device.id, "memory_total")], metrics[(device.id, "memory_used")]) == (GPU_BYTES, 283 * 2**20)


def test_a_new_sku_keeps_its_whole_memory_on_the_primary(manager: PluginManager,
                                                         fixtures: dict[str, Fixture]) -> None:
    sku = SkuRecord(id="mi400x", marketing_name="AMD Instinct MI400X", accelerator_type="AMD-Instinct-MI400X",
                    memory_mib=442368, match=SkuMatch(pci_device_ids=["0x75b0"], product_names=["AMD Instinct MI400X"]))
    data = plugin.rayaccel_fixture_for_sku(fixtures["mi300x-cpx-nps4"].model_dump(mode="json", by_alias=True), sku)
    stated = [g["vram_info"]["vram_size"] for g in data["host"]["libraries"]["amdsmi"]["gpus"].values()][:8]
    assert stated == [442368] + [442368 // 8] * 7
    family = build_inventory(manager, SimulatedHost(parse_fixture(data, "mi300x-cpx-nps4"))).family("amd")
    assert family is not None
    assert {(d.memory_mib, *(p.memory_mib for p in d.partitions)) for d in family.devices} == {
        (442368, *[442368 // 8] * 8)}
