"""Per-device metrics with rayaccel's standard names and units."""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Device, MetricSample

from {{ cookiecutter.__module }}.readings import DeviceHealth, DeviceStats

MIB = 2**20


def to_samples(devices: Sequence[Device], stats: dict[str, DeviceStats],
               health: dict[str, DeviceHealth]) -> list[MetricSample]:
    samples = []
    for device in devices:
        s = stats.get(device.id)
        if s is not None:
            used = None if s.memory_used_mib is None else s.memory_used_mib * MIB
            readings = (("utilization", "percent", s.utilization_percent), ("temperature", "celsius", s.temperature_c),
                        ("power", "watts", s.power_w), ("memory_used", "bytes", used))
            # A reading the vendor does not measure has no sample: unknown, not 0.
            samples += [MetricSample(device=device.id, name=name, unit=unit, value=value)
                        for name, unit, value in readings if value is not None]
        if device.memory_mib is not None:
            samples.append(MetricSample(device=device.id, name="memory_total", unit="bytes",
                                        value=device.memory_mib * MIB))
        h = health.get(device.id)
        if h is not None:
            samples += [
                MetricSample(device=device.id, name="ecc_errors_corrected", unit="count", value=h.corrected_errors),
                MetricSample(device=device.id, name="ecc_errors_uncorrected", unit="count", value=h.fatal_errors),
            ]
    return samples
