"""Corpus mutants found by grading a third batch of held-out broken plugins (issue 46, lane D: RAC269): a value
read once per process, right only when the first host the process builds is the node's, two shapes (neither the
held-out plugin's own: the driver version read once). Round 7's held-out survivor was that one, a sysfs
module version cached in a module global (every fixture runs the same driver, so it agreed with all): two shapes
of it, the tool's answer kept in a module global and the library's kept by the plugin, killed by RAC269's
``a-new-version-is-read`` (each fixture built again with its versions one release on).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it (``c-driver-probed-once`` as ``c_driver_probed_once``).
"""

from __future__ import annotations

from rayaccel import Device, HealthReason, HealthReport, Host
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect
from rayaccel_testplugins.corpus_contained_health import (
    CounterNotSupported,
    add_counter_machine,
    counter_library,
    reports,
)
from rayaccel_testplugins.corpus_failed_listings import ACME_LIB, with_library


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


#: acme-smi's version as this process first read it (the defect of ToolVersionReadOnce).
_TOOL_VERSION: str | None = None


class ToolVersionReadOnce(Healthy):
    DEFECT = ("acme-smi's version is read once per process and kept in a module global ('the driver cannot change "
              "while the agent runs'): after a driver upgrade, or on the next host the process builds, the old one")
    KILLED_BY = ("RAC269", "invariant a-new-version-is-read")

    def tool_version(self, host: Host) -> str | None:
        global _TOOL_VERSION
        if _TOOL_VERSION is None:
            _TOOL_VERSION = super().tool_version(host)
        return _TOOL_VERSION


class LibraryVersionReadOnce(Healthy):
    DEFECT = ("the driver's version is asked of acmelib once, when the plugin first opens it, and kept: after a "
              "driver upgrade, or on the next host the process builds, the old one")
    KILLED_BY = ("RAC269", "invariant a-new-version-is-read")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        with_library(name)
        self._driver: str | None = None

    def tool_version(self, host: Host) -> str | None:
        if self._driver is None:
            try:
                self._driver = host.library(ACME_LIB).driver_version()
            except Exception:  # no library here: the tool answers
                return super().tool_version(host)
        return self._driver


#: Each card's fatal-error count as this process first read it (the defect of FatalCountedFromFirstRead).
_FATAL_AT_FIRST_READ: dict[str, int] = {}


class FatalCountedFromFirstRead(Healthy):
    DEFECT = ("a card's fatal errors counted from the driver's count at the process's first read, kept in a module "
              "global ('what matters is what happens while we watch'): a card that failed before the agent started "
              "is healthy")
    KILLED_BY = ("RAC269", "invariant a-fault-built-first-is-seen")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        out = []
        for device, report in zip(devices, super().rayaccel_health(host, devices), strict=True):
            if any(r.code == "acme-fatal" for r in report.reasons):  # the count was read: a number
                count = int(acme._read(host, f"{SYSFS}/acme{device.index}/fatal_errors"))
                if count - _FATAL_AT_FIRST_READ.setdefault(device.id, count) <= 0:
                    report = HealthReport(device=device.id, state="healthy")
            else:
                _FATAL_AT_FIRST_READ.setdefault(device.id, 0)
            out.append(report)
        return out


class LibraryFatalFromFirstRead(Healthy):
    DEFECT = ("each card's fatal-error count from the counter library taken relative to the plugin's first read of "
              "it (kept by the plugin): a card whose count was already up when the agent started is healthy")
    KILLED_BY = ("RAC269", "invariant a-fault-built-first-is-seen")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_counter_machine(name, "acme-4-errlib", library=True)
        self._first: dict[int, int] = {}

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        if (counters := counter_library(host)) is None:
            return super().rayaccel_health(host, devices)
        fatal: dict[int, int | None] = {}
        for device in devices:
            try:
                count = counters.count(device.index, "fatal")
            except CounterNotSupported:
                fatal[device.index] = None
                continue
            fatal[device.index] = count - self._first.setdefault(device.index, count)
        return reports(self, host, devices, fatal)


for _cls in (DriverProbedOnce, CountersProbedOnce, ToolVersionReadOnce, LibraryVersionReadOnce,
             FatalCountedFromFirstRead, LibraryFatalFromFirstRead):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
