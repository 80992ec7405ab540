"""Corpus mutants that take away, under a fault, metrics whose readings the fault leaves in place (issue 46,
held-out round 10's c3: a command-csv bake publishing nothing for a device with fatal errors, "its readings are
garbage until reset"). No fixture's fault states metric values, so only RAC223's ``a-fault-takes-only-its-readings``
sees it: under acme-4's fatal-2 (card 2's fatal_errors 0 -> 1) card 2's temperature, busy, power and memory files are
as they were, and a device still discovered keeps the metrics they give. Two shapes: a card left out of the samples
once its health report is not healthy (per device, through the health hook), and every card's sensors left unread
once any card's fatal_errors file counts one (per node, from the driver's file).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-samples-dropped-when-unhealthy`` as
``c_samples_dropped_when_unhealthy``).
"""

from __future__ import annotations

from rayaccel import Device, Host, MetricSample
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect


def _capacity(device: Device) -> list[MetricSample]:
    return [MetricSample(device=device.id, name="memory_total", unit="bytes", value=device.memory_mib * 2**20)
            ] if device.memory_mib is not None else []


class SamplesDroppedWhenUnhealthy(Healthy):
    DEFECT = ("a card its health hook reports not healthy is left out of the samples (its readings taken for garbage "
              "until reset), though its driver's sensor files are as they were")
    KILLED_BY = ("RAC223", "invariant a-fault-takes-only-its-readings")

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        healthy = {r.device for r in self.rayaccel_health(host, devices) if r.state == "healthy"}
        return [s for d in devices if d.id in healthy for s in self.samples(host, d)]  # the defect


class SensorsUnreadAfterFatal(Healthy):
    DEFECT = ("once any card's fatal_errors file counts one, no card's sensor files are read (only the capacity the "
              "listing gives is published): the node's readings taken for garbage until reset")
    KILLED_BY = ("RAC223", "invariant a-fault-takes-only-its-readings")

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        fatal = any((acme._number(host, f"{SYSFS}/acme{d.index}/fatal_errors") or 0) > 0 for d in devices)
        if fatal:  # the defect
            return [s for d in devices for s in _capacity(d)]
        return [s for d in devices for s in self.samples(host, d)]


for _cls in (SamplesDroppedWhenUnhealthy, SensorsUnreadAfterFatal):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
