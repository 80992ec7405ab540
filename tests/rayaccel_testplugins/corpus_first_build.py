"""Corpus mutants found by grading a third batch of held-out broken plugins (issue 46, lane D: RAC269): a value
read once per process, right only when the first host the process builds is the node's, two shapes (neither the
held-out plugin's own: the driver version read once).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it (``c-driver-probed-once`` as ``c_driver_probed_once``).
"""

from __future__ import annotations

from rayaccel import Device, HealthReason, HealthReport, Host
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect


class DriverProbedOnce(Healthy):
    DEFECT = ("whether the driver is loaded is asked once per process (its sysfs class directory, 'it cannot appear "
              "while the agent runs'): an agent whose first look came before the driver loaded finds no card ever")
    KILLED_BY = ("RAC269", "invariant inventory-answers-the-host")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._driver_loaded: bool | None = None

    def rayaccel_discover(self, host: Host) -> list[Device]:
        if self._driver_loaded is None:
            self._driver_loaded = host.is_dir(SYSFS)
        return super().rayaccel_discover(host) if self._driver_loaded else []


class CountersProbedOnce(Healthy):
    DEFECT = ("whether the driver publishes fatal-error counters is probed once per process, on its first look "
              "(the counters are 'a driver feature'): probed before the driver loaded, every card's health is "
              "unknown for good")
    KILLED_BY = ("RAC269", "a value kept from a host built before")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._counters: bool | None = None

    def rayaccel_discover(self, host: Host) -> list[Device]:
        if self._counters is None:
            self._counters = host.exists(f"{SYSFS}/acme0/fatal_errors")
        return super().rayaccel_discover(host)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        if self._counters:
            return super().rayaccel_health(host, devices)
        return [HealthReport(device=d.id, state="unknown", reasons=[HealthReason(
            code="acme-counters-unreadable", message="the driver publishes no fatal-error counters")]) for d in devices]


for _cls in (DriverProbedOnce, CountersProbedOnce):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
