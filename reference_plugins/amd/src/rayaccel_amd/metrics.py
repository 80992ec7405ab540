"""Per-GPU metrics in the standard names and units; a partitioned GPU's are its partitions' together (memory
summed, utilization averaged, power summed over the partitions that report it, the hottest temperature, ECC
counts as the partition reporting most: they are the package's, not per partition). Where the primary partition
states its whole GPU's memory (ROCm 6.4.1+, :mod:`rayaccel_amd.primary_partition`), the GPU's memory total and
memory in use are those figures alone: the secondaries' are another accounting of a part of it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rayaccel import Device, MetricSample
from rayaccel_amd.discovery import members
from rayaccel_amd.readings import GpuRecord, Snapshot

_COMBINE: dict[str, Callable[[list[float]], float]] = {
    "utilization": lambda v: sum(v) / len(v), "vendor.umc_activity": lambda v: sum(v) / len(v),
    "temperature": max, "ecc_errors_corrected": max, "ecc_errors_uncorrected": max}


def _memory(used: int | None, total: int | None, mib: int | None) -> list[tuple[str, str, float | int | None]]:
    return [("memory_used", "bytes", used), ("memory_total", "bytes", total or (mib * 2**20 if mib else None))]


def _values(gpu: GpuRecord, memory: bool) -> list[tuple[str, str, float | int | None]]:
    values: list[tuple[str, str, float | int | None]] = [
        ("utilization", "percent", gpu.gfx_activity), ("vendor.umc_activity", "percent", gpu.umc_activity),
        ("power", "watts", gpu.power_w), ("temperature", "celsius", gpu.temperature_c)]
    if memory:
        values += _memory(gpu.vram_used_bytes, gpu.vram_total_bytes, gpu.vram_mib)
    if gpu.ecc is not None:
        values += [("ecc_errors_corrected", "count", gpu.ecc.correctable),
                   ("ecc_errors_uncorrected", "count", gpu.ecc.uncorrectable)]
    return values


def metrics_of(snapshot: Snapshot | None, devices: Sequence[Device]) -> list[MetricSample]:
    if snapshot is None:
        return []
    samples = []
    for device in devices:
        gpus = [g for g in members(device, snapshot) if g is not None]
        whole_gpu = next((g.whole_gpu for g in gpus if g.whole_gpu is not None), None)
        readings = [value for gpu in gpus for value in _values(gpu, memory=whole_gpu is None)]
        if whole_gpu is not None:
            readings += _memory(whole_gpu.used_bytes, whole_gpu.total_bytes, whole_gpu.mib)
        seen: dict[tuple[str, str], list[float]] = {}
        for name, unit, value in readings:
            if value is not None:
                seen.setdefault((name, unit), []).append(float(value))
        samples += [MetricSample(device=device.id, name=name, unit=unit, value=_COMBINE.get(name, sum)(values))
                    for (name, unit), values in seen.items()]
    return samples
