"""A health report agrees with the reason table the plugin declares (supported tier, issue 46): RAC264.

``FamilyDeclaration.health_reasons`` is the table operators write health policies from: each code, the state
it puts the device in and whether it drains it. The health hook builds its reports on its own, so the two can
drift apart (a row copied wrong, a code added to the hook and not to the table) while every fixture's expected
health still matches the hook. This check holds every report the faults of a fixture give to the table.
"""

from __future__ import annotations

import fnmatch

from rayaccel import hookspec
from rayaccel.hosts.fixtures import Fault
from rayaccel.records import HEALTH_ORDER, FamilyInventory, HealthReport, NodeInventory, ReasonCode
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.declared_triggers import numbered_failures, threshold_failures
from rayaccel_conformance.checks.fatal_states import fatal_state_failures
from rayaccel_conformance.checks.supported import _patched
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check


def _health(inventory: NodeInventory, family: str) -> list[HealthReport]:
    found = inventory.family(family)
    return list(found.health) if found else []


def declared_row(table: list[ReasonCode], code: str) -> ReasonCode | None:
    """The table's row for a reported code: its own row, else a pattern row (``xid-*``) that matches it."""
    exact = next((row for row in table if row.code == code), None)
    return exact or next((row for row in table if "*" in row.code and fnmatch.fnmatchcase(code, row.code)), None)


def disagreements(table: list[ReasonCode], report: HealthReport) -> list[str]:
    """What in one report the table says otherwise (a code it lacks, a fatal flag, the report's state)."""
    wrong, states = [], []
    for reason in report.reasons:
        row = declared_row(table, reason.code)
        if row is None:
            wrong.append(f"{report.device} reports reason {reason.code!r}, which health_reasons does not declare")
            continue
        if reason.fatal != row.fatal:
            wrong.append(f"{report.device}'s reason {reason.code!r} has fatal={reason.fatal}, health_reasons "
                         f"declares fatal={row.fatal}")
        states.append(row.state)
    if states and len(states) == len(report.reasons):
        worst = max(states, key=lambda s: HEALTH_ORDER[s])
        if report.state != worst:
            wrong.append(f"{report.device} is {report.state} with reasons {[r.code for r in report.reasons]}, "
                         f"which health_reasons declares {worst} at worst")
    return wrong


@check("RAC264", scope="fixture")
def health_reports_agree_with_the_declared_reasons(subject: Subject, fixture: str | None) -> Evidence:
    """Every health reason a fault gives is in the plugin's declared reason table, with the same fatal flag and
    state.

    A plugin that declares ``health_reasons`` (``FamilyDeclaration``) tells operators, per reason code, which
    state it puts the device in and whether it drains it; health policies are written from that table. On the
    fixture and under each of its faults (the inventories RAC203 built, or built again here), every reason of
    every health report must have a row in the table (its own code, or a pattern such as ``xid-*``), the same
    ``fatal`` flag as the row, and the report's state must be the worst state its reasons' rows declare. A
    code the hook reports and the table lacks, a row whose fatal flag or state was copied wrong, fails, naming
    the fixture, the fault, the device, the code and both values (invariant reported-reason-as-declared). A row
    whose meaning states one threshold ("at least 1000 corrected errors", "more than 10", "fewer than 8") is held to
    it where a fault that changes numbers alone fires the reason on a device by moving one whole number the device
    reports as a metric: that reading, set alone at the threshold and one step short of it, must fire the reason
    at the threshold and not short of it; otherwise the value it fires first at is found and named, with the
    comparison made instead (``>`` for "at least") (invariant a-declared-threshold-is-where-it-fires). Rows
    whose codes carry an event's number (``xid-79``, ``xid-94``) are held to it too: where a fault fires one of
    them by one number it writes, that number set to each other number the rows declare must fire that row's
    code on the device, as declared (invariant a-numbered-reason-is-read-by-its-number). A fatal reason drains the
    device, so a row declared fatal is declared ``unhealthy`` and a report with a fatal reason is ``unhealthy``: the
    SDK drains only an unhealthy device, so a ``degraded`` or ``unknown`` one with a fatal reason is published as
    drained and keeps taking work (invariant a-fatal-reason-is-unhealthy). Fix:
    build the reports from the same table the family declares (``ReasonCode.table(REASONS)`` beside the code
    that reports them), add a row for every code the hook can report, fire each reason exactly where its row
    says, for every number its code carries, and make a reason fatal only where the device is unhealthy.
    """
    family = subject.family()
    table = list(family.health_reasons)
    if not table:
        raise NotApplicable(f"{subject.name} declares no health_reasons: no table to hold its reports to")
    fx = subject.fixture(fixture)
    healthy = subject.inventory(fixture)
    runs: list[tuple[str, list[HealthReport]]] = [("the healthy fixture", _health(healthy, family.name))]
    under: list[tuple[Fault, FamilyInventory]] = []
    for fault in fx.faults:
        if fault.kind in ("tool-hang", "tool-garbage") and (fx.ref, fault.name) not in subject.fault_runs:
            continue  # a hung tool gives no reason to compare, only a wait (RAC204's)
        cached = subject.fault_runs.get((fx.ref, fault.name))
        built = cached[0] if cached else subject.build(simulated_host(
            fx.model_copy(update={"host": _patched(fx, fault.patch), "faults": []})))
        runs.append((f"fault {fault.name}", _health(built, family.name)))
        if (found := built.family(family.name)) is not None:
            under.append((fault, found))
        if fault.kind == "device-lost":  # a monitor polls with the devices it knew: the lost ones' reasons too
            polled = subject.manager.answer(subject.name, hookspec.HEALTH, [], host=simulated_host(
                fx, faults=[fault.name]), devices=list(subject.devices(healthy))) or []
            runs.append((f"fault {fault.name}, health polled with the devices discovered before", list(polled)))
    wrong: list[str] = []
    codes: set[str] = set()
    for where, reports in runs:
        for report in reports:
            codes.update(r.code for r in report.reasons)
            wrong += [f"invariant reported-reason-as-declared, {fx.ref}, {where}: {w}"
                      for w in disagreements(table, report)]
    wrong += fatal_state_failures(fx.ref, table, runs)
    wrong += threshold_failures(subject, fx, table, runs[0][1], under)
    wrong += numbered_failures(subject, fx, table, runs[0][1], under, lambda report: disagreements(table, report))
    if wrong:
        raise CheckFailed(wrong[:6])
    return (f"{fx.ref}: {len(runs)} health answers (healthy, faults, lost devices polled), reasons "
            f"{sorted(codes) or 'none'} as health_reasons declares them")
