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
            samples += [
                MetricSample(device=device.id, name="utilization", unit="percent", value=s.utilization_percent),
                MetricSample(device=device.id, name="temperature", unit="celsius", value=s.temperature_c),
                MetricSample(device=device.id, name="power", unit="watts", value=s.power_w),
                MetricSample(device=device.id, name="memory_used", unit="bytes", value=s.memory_used_mib * MIB),
            ]
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
