"""Per-GPU metrics in the standard names and units."""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Device, MetricSample
from rayaccel_amd.readings import Snapshot


def metrics_of(snapshot: Snapshot | None, devices: Sequence[Device]) -> list[MetricSample]:
    if snapshot is None:
        return []
    by_uuid = snapshot.by_uuid()
    samples = []
    for device in devices:
        gpu = by_uuid.get(device.id)
        if gpu is None:
            continue
        total = gpu.vram_total_bytes or (gpu.vram_mib * 2**20 if gpu.vram_mib else None)
        values = [("utilization", "percent", gpu.gfx_activity), ("vendor.umc_activity", "percent", gpu.umc_activity),
                  ("power", "watts", gpu.power_w), ("temperature", "celsius", gpu.temperature_c),
                  ("memory_used", "bytes", gpu.vram_used_bytes), ("memory_total", "bytes", total)]
        if gpu.ecc is not None:
            values += [("ecc_errors_corrected", "count", gpu.ecc.correctable),
                       ("ecc_errors_uncorrected", "count", gpu.ecc.uncorrectable)]
        samples += [MetricSample(device=device.id, name=name, unit=unit, value=float(value))
                    for name, unit, value in values if value is not None]
    return samples
