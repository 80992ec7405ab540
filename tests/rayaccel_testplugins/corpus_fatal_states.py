"""Corpus mutants whose health reason is declared and reported fatal while the card stays usable (issue 46, held-out
round 14's ``s3``: a sysfs bake declaring its corrected-errors reason ``degraded`` with ``fatal=True`` "to drain a
device wearing out"). The table and the reports agree, so RAC264's reported-reason-as-declared passes; but the SDK
drains only an unhealthy device, so the card is published as drained and keeps taking work: RAC264's
``a-fatal-reason-is-unhealthy`` names the row and the reports.

Each machine is acme-4 with ``acme-smi`` listing each card's ECC counters (all 0) and the fault ``corrected-2`` raising
card 2's corrected count past the threshold (corpus_declared_thresholds' machine), its expectation written with the
code's state. Two shapes: a JSON record's count making the card ``degraded`` with a fatal reason, and a CSV row's count
making it ``unknown`` with one. Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``);
each mutant is bound here under its name (``c-fatal-while-degraded`` as ``c_fatal_while_degraded``) so a Ray node
loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

from rayaccel import Device, HealthReason, HealthReport, HealthState, Host, MetricSample, ReasonCode
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import Healthy, add_import_defect, read_machine, write_machine
from rayaccel_testplugins.corpus_declared_thresholds import (
    CODE,
    ECC_CSV,
    ECC_JSON,
    THRESHOLD,
    _add_ecc_tool,
    _counts,
    _csv_output,
    _json_output,
    _metrics,
)


def _set_up(plugin: Healthy, command: tuple[str, ...], state: HealthState, meaning: str) -> None:
    """The plugin's family declaring the corrected-errors row ``state`` and fatal, and its machine with the tool and the
    fault, whose expectation is the code's state."""
    plugin.family = plugin.family.model_copy(update={"health_reasons": ReasonCode.table((
        ("acme-fatal", "unhealthy", True, "the driver counts fatal errors: the card needs a reset"),
        ("acme-counters-unreadable", "unknown", False, "the card's error counters cannot be read"),
        ("acme-lost", "unhealthy", True, "the card fell off the bus"),
        (CODE, state, True, f"at least {THRESHOLD} corrected memory errors: {meaning}")))})
    _add_ecc_tool(plugin.name, command, _json_output if command == ECC_JSON else _csv_output)
    data = read_machine(plugin.name)
    fault = next(f for f in data["faults"] if f["name"] == "corrected-2")
    if state not in fault["expected"]["health"].values():
        fault["expected"]["health"] = dict.fromkeys(fault["expected"]["health"], state)
        write_machine(plugin.name, "acme-4", data)


def _health(host: Host, devices: list[Device], command: tuple[str, ...], state: HealthState) -> list[HealthReport]:
    """acme's health, a card whose counters the tool does not give unknown, one at the threshold ``state`` with the
    corrected-errors reason fatal (the defect)."""
    counts = _counts(host, command)
    reports = []
    for report in acme.rayaccel_health(host, devices):
        if report.state == "healthy" and report.device not in counts:
            report = HealthReport(device=report.device, state="unknown", reasons=[
                HealthReason(code="acme-counters-unreadable", message="acme-smi gave no ECC counters for it")])
        elif report.state == "healthy" and counts[report.device][0] >= THRESHOLD:
            report = HealthReport(device=report.device, state=state, reasons=[
                HealthReason(code=CODE, message=f"{counts[report.device][0]} corrected memory errors", fatal=True)])
        reports.append(report)
    return reports


class FatalWhileDegraded(Healthy):
    DEFECT = ("a card past the corrected-error threshold is reported degraded with its reason fatal, as its declared "
              "row says ('drained before its errors become uncorrectable'): the SDK drains only an unhealthy card, so "
              "it is published as drained and keeps taking work")
    KILLED_BY = ("RAC264", "invariant a-fatal-reason-is-unhealthy")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _set_up(self, ECC_JSON, "degraded", "the card is wearing out, drained before its errors become uncorrectable")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        return _health(host, devices, ECC_JSON, "degraded")

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        return _metrics(self, host, devices, ECC_JSON)


class FatalWhileUnknown(Healthy):
    DEFECT = ("a card past the corrected-error threshold is reported unknown with its reason fatal, as its declared "
              "row says ('its memory can no longer be vouched for'): the SDK drains only an unhealthy card, so it is "
              "published as drained and keeps taking work")
    KILLED_BY = ("RAC264", "invariant a-fatal-reason-is-unhealthy")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _set_up(self, ECC_CSV, "unknown", "its memory can no longer be vouched for, drained until a reset")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        return _health(host, devices, ECC_CSV, "unknown")

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        return _metrics(self, host, devices, ECC_CSV)


for _cls in (FatalWhileDegraded, FatalWhileUnknown):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
