"""Per-device metrics in the standard names and units."""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Device, MetricSample
from rayaccel_gaudi.readings import Snapshot


def metrics_of(snapshot: Snapshot | None, devices: Sequence[Device]) -> list[MetricSample]:
    if snapshot is None:
        return []
    by_uuid = snapshot.by_uuid()
    samples = []
    for device in devices:
        state = by_uuid.get(device.id)
        if state is None:
            continue
        aip = state.aip
        values = [
            ("utilization", "percent", aip.utilization), ("power", "watts", aip.power_w),
            ("temperature", "celsius", aip.temperature_c),
            ("memory_used", "bytes", aip.memory_used_mib * 2**20 if aip.memory_used_mib is not None else None),
            ("memory_total", "bytes", aip.memory_total_mib * 2**20 if aip.memory_total_mib is not None else None),
            ("ecc_errors_uncorrected", "count", aip.ecc_uncorrected),
            ("ecc_errors_corrected", "count", aip.ecc_corrected),
        ]
        samples += [MetricSample(device=device.id, name=name, unit=unit, value=float(value))
                    for name, unit, value in values if value is not None]
    return samples
