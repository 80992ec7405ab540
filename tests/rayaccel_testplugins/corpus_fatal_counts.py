"""Corpus mutants that weigh a fatal-error count instead of taking one error as the fault (issue 46, held-out round
9's ``s2``: fewer than 8 fatal errors only degraded the device). Each raised its own fixture's fault past its
threshold, as the vendor who wrote the threshold would, so every fixture passes; RAC203 raises each fatal count a
fault raises by two or more by one instead (``invariant one-fatal-error-is-enough``). Two shapes: the driver's
``fatal_errors`` file compared with 8 (fewer only degrade, under a reason of their own), and an error library's
per-channel uncorrectable counts averaged (an error on one of four channels averages below one: healthy).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-fatal-count-thresholded`` as ``c_fatal_count_thresholded``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rayaccel import Device, HealthReason, HealthReport, Host, LibraryAdapter, LibraryUnavailable, report_problem
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, write_machine

#: The first count the thresholded mutant calls fatal, and what its acme-4's fault fatal-2 counts.
FATAL_THRESHOLD = 8
#: ACME's RAS library: per card, the uncorrectable errors each of its four memory channels counted.
LIBRARY = "acmeras"
CHANNELS = 4


def raise_fatal_fault(plugin: str, count: int) -> None:
    """The plugin's acme-4 with fault fatal-2 counting ``count`` fatal errors on card 2 (once: every process that
    imports the corpus calls it again)."""
    data = read_machine(plugin)
    fatal = next(f for f in data["faults"] if f["name"] == "fatal-2")
    path = f"{SYSFS}/acme2/fatal_errors"
    if fatal["patch"]["files"].get(path) == f"{count}\n":
        return
    fatal["patch"]["files"][path] = f"{count}\n"
    fatal["description"] = f"card 2 reports {count} fatal errors"
    write_machine(plugin, "acme-4", data)


class FatalCountThresholded(Healthy):
    DEFECT = (f"the driver's fatal-error count weighed: fewer than {FATAL_THRESHOLD} fatal errors only degrade the "
              "card (reason acme-fatal-few, 'transient?'); its acme-4's fault fatal-2 raised to 8 errors to match")
    KILLED_BY = ("RAC203", "invariant one-fatal-error-is-enough")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        raise_fatal_fault(name, FATAL_THRESHOLD)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        out = []
        for device, report in zip(devices, super().rayaccel_health(host, devices), strict=True):
            if any(r.code == "acme-fatal" for r in report.reasons):
                count = acme._number(host, f"{SYSFS}/acme{device.index}/fatal_errors")
                if count is not None and count < FATAL_THRESHOLD:  # the defect: a few fatal errors only watched
                    report = HealthReport(device=device.id, state="degraded", reasons=[HealthReason(
                        code="acme-fatal-few", message=f"{count} fatal errors (transient?)")])
            out.append(report)
        return out


class ChannelErrors:
    """ACME's RAS library, simulated: per card, each memory channel's uncorrectable count; a card the library
    cannot read is left out, and asking for it raises, as a binding does."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.cards = data.get("cards") or {}

    def uncorrectable(self, index: int) -> list[int]:
        counts = (self.cards.get(str(index)) or {}).get("uncorrectable")
        if not isinstance(counts, list) or not all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
            raise LookupError(f"card {index}: no uncorrectable counts")
        return counts


def _no_real_library() -> Any:
    raise LibraryUnavailable(f"{LIBRARY}: simulated only")


RAS_LIBRARY = LibraryAdapter(LIBRARY, _no_real_library, ChannelErrors)


def add_ras_machine(plugin: str, name: str, errors: int) -> None:
    """The plugin's acme-4 with ACME's RAS library, and fault fatal-2 counting ``errors`` uncorrectable errors on
    card 2's first channel there instead of in the driver's file."""
    data = read_machine(plugin)
    data["name"], data["description"] = name, f"{data['description']}, uncorrectable errors from acme's RAS library"
    ids = [data["host"]["files"][f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]
    data["host"]["libraries"] = {LIBRARY: {"cards": {str(i): {"uuid": ids[i], "uncorrectable": [0] * CHANNELS}
                                                     for i in range(4)}}}
    fatal = next(f for f in data["faults"] if f["name"] == "fatal-2")
    fatal["description"] = f"card 2's first memory channel counts {errors} uncorrectable errors"
    fatal["patch"] = {"libraries": {LIBRARY: {"cards": {"2": {"uncorrectable": [errors] + [0] * (CHANNELS - 1)}}}}}
    write_machine(plugin, name, data)


class FatalChannelsAveraged(Healthy):
    DEFECT = ("ACME's RAS library's per-channel uncorrectable counts averaged: a card is unhealthy when its channels "
              f"average one error or more, so one error on one of {CHANNELS} channels is healthy; its machine's fault "
              f"fatal-2 counts {CHANNELS} errors on one channel to match")
    KILLED_BY = ("RAC203", "invariant one-fatal-error-is-enough")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_ras_machine(name, "acme-4-ras", errors=CHANNELS)

    def counts_as_fatal(self, channels: list[int]) -> bool:
        return bool(channels) and sum(channels) / len(channels) >= 1  # the defect: one channel's error averaged away

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        try:
            ras: ChannelErrors = host.library(RAS_LIBRARY)
        except LibraryUnavailable:
            return super().rayaccel_health(host, devices)
        out = []
        for device, driver in zip(devices, super().rayaccel_health(host, devices), strict=True):
            try:
                channels = ras.uncorrectable(device.index)
            except LookupError as e:
                report_problem("counter-unreadable", str(e), severity="warning")
                out.append(driver if driver.state != "healthy" else HealthReport(
                    device=device.id, state="unknown", reasons=[HealthReason(
                        code="acme-counters-unreadable", message="the uncorrectable counts cannot be read")]))
                continue
            if driver.state != "healthy" or not self.counts_as_fatal(channels):
                out.append(driver)
            else:
                out.append(HealthReport(device=device.id, state="unhealthy", reasons=[HealthReason(
                    code="acme-fatal", message=f"{sum(channels)} uncorrectable errors", fatal=True)]))
        return out


for _cls in (FatalCountThresholded, FatalChannelsAveraged):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
