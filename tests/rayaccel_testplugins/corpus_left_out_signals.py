"""Corpus mutants reading a health counter the tool left out as 0 (issue 46, held-out round 19's ``j2``: a
command-json plugin taking a health entry's missing ``fatal_errors`` for 0, "firmware leaves a counter out until it
first counts", so a device whose counter the tool did not give was healthy, nothing said). Each machine states a
count per card through a tool and declares a fault raising one card's count; the plugin reads a value printed
``N/A`` as unreadable (the card unknown, a problem), so RAC211's unreadable signals pass, and every fixture and fault
passes as written. RAC203 leaves the fault's value out of the tool's output (``invariant
a-left-out-signal-is-unread``): the card comes out healthy, silent. Two shapes: a tool's JSON records (``acme-smi
health --json``, an uncorrected-error count per card, ``record.get(key, 0)``: the card unhealthy where it counts
one), and a tool's CSV table (``acme-smi pages --csv``, the pages pending retirement per card, an empty cell taken as
``0``: the card degraded where pages wait).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-left-out-count-as-zero`` as ``c_left_out_count_as_zero``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from rayaccel import Device, HealthReason, HealthReport, Host, report_problem
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

JSON_MACHINE = "acme-4-health-json"
CSV_MACHINE = "acme-4-pages-csv"
HEALTH_ARGV = ("acme-smi", "health", "--json")
PAGES_ARGV = ("acme-smi", "pages", "--csv")
#: The card each machine's fault touches.
FAULTED_CARD = 2


def _ids(data: dict[str, Any]) -> list[str]:
    return [data["host"]["files"][f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]


def add_json_machine(plugin: str) -> None:
    """acme-4 with ``acme-smi health --json`` giving each card's uncorrected-error count, and a fault raising
    card 2's."""
    data = read_machine(plugin)
    data["name"], data["description"] = JSON_MACHINE, f"{data['description']}, acme-smi health --json"
    ids = _ids(data)

    def report(counts: list[int]) -> str:
        return json.dumps({"cards": [{"uuid": card, "uncorrected_errors": n} for card, n in zip(ids, counts,
                                                                                                 strict=True)]}) + "\n"

    line = " ".join(HEALTH_ARGV)
    data["host"]["commands"] = {**(data["host"].get("commands") or {}), line: {"stdout": report([0] * 4)}}
    counts = [0] * 4
    counts[FAULTED_CARD] = 2
    data["faults"].append({
        "name": "card2-uncorrected", "kind": "other", "description": "acme-smi counts 2 uncorrected errors on card 2",
        "patch": {"commands": {line: {"stdout": report(counts)}}},
        "expected": {"health": {ids[FAULTED_CARD]: "unhealthy"}, "reasons": {ids[FAULTED_CARD]: ["ecc-uncorrected"]}}})
    write_machine(plugin, JSON_MACHINE, data)


def add_csv_machine(plugin: str) -> None:
    """acme-4 with ``acme-smi pages --csv`` giving each card's pages pending retirement, and a fault where card 2
    has some."""
    data = read_machine(plugin)
    data["name"], data["description"] = CSV_MACHINE, f"{data['description']}, acme-smi pages --csv"
    ids = _ids(data)

    def table(pending: list[int]) -> str:
        return "card, uuid, pending_pages\n" + "".join(f"{i}, {card}, {n}\n" for i, (card, n) in enumerate(
            zip(ids, pending, strict=True)))

    line = " ".join(PAGES_ARGV)
    data["host"]["commands"] = {**(data["host"].get("commands") or {}), line: {"stdout": table([0] * 4)}}
    pending = [0] * 4
    pending[FAULTED_CARD] = 3
    data["faults"].append({
        "name": "card2-pages-pending", "kind": "other",
        "description": "card 2 has 3 memory pages waiting to be retired at the next reset",
        "patch": {"commands": {line: {"stdout": table(pending)}}},
        "expected": {"health": {ids[FAULTED_CARD]: "degraded"}, "reasons": {ids[FAULTED_CARD]: ["pages-pending"]}}})
    write_machine(plugin, CSV_MACHINE, data)


def unreadable(report: HealthReport, what: str) -> HealthReport:
    """The card's report where its count cannot be read: unknown, said."""
    report_problem("unreadable-attribute", f"{what}: read as unknown")
    return report.model_copy(update={"state": "unknown", "reasons": [
        HealthReason(code="no-health-data", message=f"{what}: the card's health is unknown")]})


def _count(value: Any) -> int | None:
    """A whole count as the tool prints it; None for anything else (``N/A``, text, a negative number)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


class LeftOutCountAsZero(Healthy):
    DEFECT = ("a card's uncorrected-error count that acme-smi health --json leaves out of its record read as 0 "
              "('the tool prints a counter once it counts'): a card whose count is not given is healthy, nothing said")
    KILLED_BY = ("RAC203", "invariant a-left-out-signal-is-unread")
    #: What a record without the count reads as: 0 (the defect), or None (unread).
    left_out: Any = 0

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_json_machine(name)

    def records(self, host: Host) -> dict[str, dict[str, Any]]:
        """acme-smi's health record per card id; {} where the tool is not installed or its output unreadable."""
        try:
            return {str(card["uuid"]): card for card in json.loads(tool_output(host, HEALTH_ARGV) or "")["cards"]}
        except (ValueError, KeyError, TypeError):
            return {}

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        records = self.records(host)
        reports = []
        for device, report in zip(devices, super().rayaccel_health(host, devices), strict=True):
            record = records.get(device.id)
            if record is None:
                reports.append(report)
                continue
            count = _count(record.get("uncorrected_errors", self.left_out))  # the defect: a default of 0
            if count is None:
                reports.append(unreadable(report, f"acme-smi health: {device.id}'s uncorrected_errors"))
            elif count:
                reason = HealthReason(code="ecc-uncorrected", message=f"{count} uncorrected errors", fatal=True)
                reports.append(report.model_copy(update={"state": "unhealthy", "reasons": [*report.reasons, reason]}))
            else:
                reports.append(report)
        return reports


class EmptyPagesCellAsZero(Healthy):
    DEFECT = ("a card's pending-retirement page count that acme-smi pages --csv prints empty read as 0 (`cell or "
              "'0'`): a card whose pages waiting to be retired are not given is healthy, nothing said")
    KILLED_BY = ("RAC203", "invariant a-left-out-signal-is-unread")
    #: What an empty cell reads as: "0" (the defect), or "" (unread).
    empty_cell = "0"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_csv_machine(name)

    def pending(self, host: Host) -> dict[str, str]:
        """Each card's pending-pages cell by its id; {} where the tool is not installed or answers no table."""
        stdout = tool_output(host, PAGES_ARGV)
        if not stdout:
            return {}
        rows = csv.DictReader(io.StringIO(stdout), skipinitialspace=True)
        return {str(row["uuid"]).strip(): str(row.get("pending_pages") or "").strip()
                for row in rows if row.get("uuid")}

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        cells = self.pending(host)
        reports = []
        for device, report in zip(devices, super().rayaccel_health(host, devices), strict=True):
            if device.id not in cells:
                reports.append(report)
                continue
            count = _count(cells[device.id] or self.empty_cell)  # the defect: an empty cell is 0
            if count is None:
                reports.append(unreadable(report, f"acme-smi pages: {device.id}'s pending_pages"))
            elif count and report.state == "healthy":
                reason = HealthReason(code="pages-pending", message=f"{count} pages wait to be retired at a reset")
                reports.append(report.model_copy(update={"state": "degraded", "reasons": [*report.reasons, reason]}))
            else:
                reports.append(report)
        return reports


for _cls in (LeftOutCountAsZero, EmptyPagesCellAsZero):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
