"""Corpus mutants whose health answer is all or nothing (issue 46, held-out round 7: health counters read without
per-device containment): one card's error counter that cannot be read fails every card's health. RAC211 makes the
counters the fixture's faults change unreadable on one card (``invariant one-unreadable-device-keeps-the-others``).
Two shapes: a library's counters read in one comprehension (the binding raises NOT_SUPPORTED for one card, and the
hook raises), and a tool's CSV rows parsed all at once (one card's ``N/A`` makes every card unknown).

Each mutant reads its counters on a machine of its own beside acme-4 (``acme-4-errlib``: a counter library;
``acme-4-errsmi``: ``acme-smi --query-errors``), whose fault ``fatal-2`` counts card 2's fatal error there; on acme-4
(neither installed) it reads the driver's files as the healthy plugin does. Imported by
tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its name
(``c-counters-all-or-nothing`` as ``c_counters_all_or_nothing``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rayaccel import Device, HealthReport, Host, LibraryAdapter, LibraryUnavailable, report_problem
from rayaccel_testplugins.acme import health_from_count
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

ERRORS = ("acme-smi", "--query-errors", "--format=csv,noheader")
LIBRARY = "acmeerr"


class CounterNotSupported(Exception):
    """What the counter library raises for a counter a card does not give (NVML's NOT_SUPPORTED)."""


class ErrorCounters:
    """ACME's error counter library, simulated: per card, its fatal and corrected error counts; a count the card
    does not give is left out, and reading it raises, as a binding does."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.cards = data.get("cards") or {}

    def count(self, index: int, name: str) -> int:
        card = self.cards.get(str(index)) or {}
        if name not in card:
            raise CounterNotSupported(f"card {index}: {name} is not supported")
        return int(card[name])


def _no_real_library() -> Any:
    raise LibraryUnavailable(f"{LIBRARY}: simulated only")


ERROR_LIBRARY = LibraryAdapter(LIBRARY, _no_real_library, ErrorCounters)


def add_counter_machine(plugin: str, name: str, library: bool) -> None:
    """The plugin's acme-4 with its error counters in the counter library (``library``) or acme-smi's CSV rows, and
    fault ``fatal-2`` counting card 2's fatal error there instead of in the driver's file."""
    data = read_machine(plugin)
    data["name"], data["description"] = name, f"{data['description']}, error counters read through acme's tools"
    fatal = next(f for f in data["faults"] if f["name"] == "fatal-2")
    ids = [data["host"]["files"][f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]
    if library:  # a card's record names it, as NVML's does (its uuid), by the library's index
        data["host"]["libraries"] = {LIBRARY: {"cards": {str(i): {"uuid": ids[i], "fatal": 0, "corrected": 0}
                                                         for i in range(4)}}}
        fatal["patch"] = {"libraries": {LIBRARY: {"cards": {"2": {"fatal": 1}}}}}
    else:
        def rows(fatal_card: int | None) -> str:  # index, uuid, fatal errors, corrected errors
            return "".join(f"{i}, {ids[i]}, {int(i == fatal_card)}, 0\n" for i in range(4))

        data["host"]["commands"][" ".join(ERRORS)] = {"stdout": rows(None)}
        fatal["patch"] = {"commands": {" ".join(ERRORS): {"stdout": rows(2)}}}
    write_machine(plugin, name, data)


def counter_library(host: Host) -> ErrorCounters | None:
    """The counter library where the machine has it; None on acme-4, whose driver's files the healthy plugin reads."""
    try:
        counters: ErrorCounters = host.library(ERROR_LIBRARY)
    except LibraryUnavailable:
        return None
    return counters


def reports(plugin: Healthy, host: Host, devices: list[Device], fatal: Mapping[int, int | None]) -> list[HealthReport]:
    """Each card's health from its fatal-error count (None: unreadable, so unknown); a card the driver reports lost
    stays so, whatever its counters say."""
    out = []
    for device, driver in zip(devices, Healthy.rayaccel_health(plugin, host, devices), strict=True):
        count = fatal.get(device.index)
        lost = driver.state == "unhealthy" and any(r.code == "acme-lost" for r in driver.reasons)
        out.append(driver if lost else health_from_count(device.id, count))
    return out


class CountersAllOrNothing(Healthy):
    DEFECT = ("every card's error counters read from the counter library in one comprehension: one card's counter "
              "the library does not give (NOT_SUPPORTED) raises out of the health hook, and every card goes unknown")
    KILLED_BY = ("RAC211", "invariant one-unreadable-device-keeps-the-others")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_counter_machine(name, "acme-4-errlib", library=True)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        if (counters := counter_library(host)) is None:
            return super().rayaccel_health(host, devices)
        # the defect: no per-card containment, one card's CounterNotSupported fails the whole answer
        fatal: dict[int, int | None] = {d.index: counters.count(d.index, "fatal") for d in devices}
        return reports(self, host, devices, fatal)


class ErrorRowsAllOrNothing(Healthy):
    DEFECT = ("acme-smi's error rows parsed all at once: one card's N/A (a counter the tool cannot read) is a "
              "ValueError for the whole listing, and every card is reported unknown")
    KILLED_BY = ("RAC211", "invariant one-unreadable-device-keeps-the-others")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_counter_machine(name, "acme-4-errsmi", library=False)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        if (rows := tool_output(host, ERRORS)) is None:
            return super().rayaccel_health(host, devices)
        try:  # the defect: one row that does not parse refuses every row
            fatal: dict[int, int | None] = {int(row.split(",")[0]): int(row.split(",")[2])
                                            for row in rows.splitlines() if row.strip()}
        except (ValueError, IndexError):
            report_problem("malformed-output", f"{' '.join(ERRORS)}: a row is no index and counts; health unknown")
            fatal = {}
        return reports(self, host, devices, fatal)


class UnreadableCardLeftOut(Healthy):
    DEFECT = ("a card whose fatal-error counter the library does not give (NOT_SUPPORTED) left out of the counters "
              "read, contained per card, then reported healthy as a card with nothing to report instead of unknown")
    KILLED_BY = ("RAC211", "invariant an-unreadable-device-is-not-healthy")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_counter_machine(name, "acme-4-errlib", library=True)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        if (counters := counter_library(host)) is None:
            return super().rayaccel_health(host, devices)
        fatal: dict[int, int | None] = {}
        for device in devices:
            try:
                fatal[device.index] = counters.count(device.index, "fatal")
            except CounterNotSupported:
                report_problem("counter-unreadable", f"card {device.index}: the fatal-error counter is not supported")
                continue
        answered = {r.device: r for r in reports(self, host, [d for d in devices if d.index in fatal], fatal)}
        # the defect: a card without counters taken for one with nothing to report, not one that cannot be read
        return [answered.get(d.id, HealthReport(device=d.id, state="healthy")) for d in devices]


class UnreadableRowCountedZero(Healthy):
    DEFECT = ("acme-smi's error rows read row by row, a cell that is no number (the tool's N/A) reported and then "
              "counted as no errors: a card whose counter cannot be read is reported healthy instead of unknown")
    KILLED_BY = ("RAC211", "invariant an-unreadable-device-is-not-healthy")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_counter_machine(name, "acme-4-errsmi", library=False)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        if (rows := tool_output(host, ERRORS)) is None:
            return super().rayaccel_health(host, devices)
        fatal: dict[int, int | None] = {}
        for row in filter(str.strip, rows.splitlines()):
            cells = [c.strip() for c in row.split(",")]
            if len(cells) < 4 or not cells[0].isdigit():
                report_problem("malformed-output", f"{' '.join(ERRORS)}: a row is no index and counts: {row[:40]!r}",
                               severity="warning")
                continue
            if not cells[2].isdigit():  # the defect: said, then taken for no errors
                report_problem("malformed-output", f"card {cells[0]}: fatal errors {cells[2]!r}; counted as none",
                               severity="warning")
            fatal[int(cells[0])] = int(cells[2]) if cells[2].isdigit() else 0
        return reports(self, host, devices, {d.index: fatal.get(d.index) for d in devices})


for _cls in (CountersAllOrNothing, ErrorRowsAllOrNothing, UnreadableCardLeftOut, UnreadableRowCountedZero):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin

