"""Per-GPU metrics in the standard names and units; a partitioned GPU's are its partitions' together (memory
summed, utilization averaged, power summed over the partitions that report it, the hottest temperature, ECC
counts as the partition reporting most: they are the package's, not per partition)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rayaccel import Device, MetricSample
from rayaccel_amd.discovery import members
from rayaccel_amd.readings import GpuRecord, Snapshot

_COMBINE: dict[str, Callable[[list[float]], float]] = {
    "utilization": lambda v: sum(v) / len(v), "vendor.umc_activity": lambda v: sum(v) / len(v),
    "temperature": max, "ecc_errors_corrected": max, "ecc_errors_uncorrected": max}


def _values(gpu: GpuRecord) -> list[tuple[str, str, float | int | None]]:
    total = gpu.vram_total_bytes or (gpu.vram_mib * 2**20 if gpu.vram_mib else None)
    values = [("utilization", "percent", gpu.gfx_activity), ("vendor.umc_activity", "percent", gpu.umc_activity),
              ("power", "watts", gpu.power_w), ("temperature", "celsius", gpu.temperature_c),
              ("memory_used", "bytes", gpu.vram_used_bytes), ("memory_total", "bytes", total)]
    if gpu.ecc is not None:
        values += [("ecc_errors_corrected", "count", gpu.ecc.correctable),
                   ("ecc_errors_uncorrected", "count", gpu.ecc.uncorrectable)]
    return values


def metrics_of(snapshot: Snapshot | None, devices: Sequence[Device]) -> list[MetricSample]:
    if snapshot is None:
        return []
    samples = []
    for device in devices:
        seen: dict[tuple[str, str], list[float]] = {}
        for gpu in members(device, snapshot):
            for name, unit, value in _values(gpu) if gpu is not None else []:
                if value is not None:
                    seen.setdefault((name, unit), []).append(float(value))
        samples += [MetricSample(device=device.id, name=name, unit=unit, value=_COMBINE.get(name, sum)(values))
                    for (name, unit), values in seen.items()]
    return samples
