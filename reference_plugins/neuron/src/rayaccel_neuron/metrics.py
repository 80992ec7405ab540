"""Metrics from neuron-ls's memory size and the driver's sysfs: memory total and used, uncorrected ECC events.

NeuronCore utilisation comes only from neuron-monitor, a streaming daemon: it is not sampled here.
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Device, Host, MetricSample
from rayaccel_neuron import sysfs


def metrics_of(host: Host, devices: Sequence[Device]) -> list[MetricSample]:
    samples = []
    for device in devices:
        if device.memory_mib:
            samples.append(MetricSample(device=device.id, name="memory_total", unit="bytes",
                                        value=device.memory_mib * 2**20))
        used = sysfs.device_memory_used(host, device.index)
        if used is not None:
            samples.append(MetricSample(device=device.id, name="memory_used", unit="bytes", value=used))
        ecc = sysfs.ecc_counters(host, device.index)
        if ecc.mem_uncorrected is not None or ecc.sram_uncorrected is not None:
            samples.append(MetricSample(device=device.id, name="ecc_errors_uncorrected", unit="count",
                                        value=ecc.uncorrected))
    return samples
