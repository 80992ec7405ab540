"""A health signal a tool leaves out is unread, not a clean reading (RAC203, ``invariant
a-left-out-signal-is-unread``; held-out round 19's ``j2``: a command-json plugin reading a health entry's missing
``fatal_errors`` or ``corrected_errors`` key as 0, "firmware leaves a counter out until it first counts", so under a
declared fatal fault with that key gone the device came out healthy and nothing was reported).

A fault the fixture declares changes numbers in a tool's output (a JSON value, a CSV cell) on a device the plugin's
own faulted build takes off healthy: those numbers are signals its health is decided by. Each is then left out of
the faulted output as a tool leaves a value out (the JSON key gone, the CSV cell empty), and, apart, printed ``N/A``
as a tool prints a value it cannot read. A plugin may read both as "not supported" and keep the device healthy
(amd-smi drops an unsupported key and prints N/A alike; the AMD plugin reads both so). But where the value printed
``N/A`` makes the device other than healthy or the plugin report a problem, the value left out must too: the
plugin knows the signal is needed, and a key it did not get is no more read than one it could not parse. A default
taken in its place (``row.get("fatal_errors", 0)``) turns a lost signal into a clean one and clears the fault
silently. Files and libraries are left alone: a file gone is RAC211's damaged file, a library's value left out is
its NOT_SUPPORTED (RAC211's unreadable signals). No expectation read; the helpers are pure but
:func:`left_out_signal_findings`, which builds (two builds per signal, a few per fixture).
"""

from __future__ import annotations

import json
from typing import Any

from rayaccel.hosts.fixtures import Fault, Fixture, HostState, apply_faults
from rayaccel.records import Device, FamilyInventory, NodeInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.readings import Reading, host_readings, owned_by
from rayaccel_conformance.checks.unreadable_signals import unreadable_host
from rayaccel_conformance.harness.subject import Subject

INVARIANT = "invariant a-left-out-signal-is-unread"
#: The states a fault's signal takes a device to: the plugin read it as a fault.
OFF_HEALTHY = ("unhealthy", "degraded")
#: At most this many signals left out per fault (a fault changes one counter or two on a device).
MAX_SIGNALS = 4


def left_out_host(host: dict[str, Any], reading: Reading) -> dict[str, Any] | None:
    """The host state with one tool output value left out as a tool leaves it out: a JSON object's key gone, a CSV
    cell emptied (its leading space kept). None for a value a JSON list holds (leaving it out would shift the
    list's other values: another damage) or a reading that is no tool output's."""
    if reading.where not in ("command", "table"):
        return None
    state: dict[str, Any] = json.loads(json.dumps(host))  # a few builds per fixture: one copy each is cheap
    command = state["commands"][reading.key]
    if reading.where == "table":
        lines = command["stdout"].split("\n")
        line, field = int(reading.path[0]), int(reading.path[1])
        cells = lines[line].split(",")
        cells[field] = cells[field][:len(cells[field]) - len(cells[field].lstrip())]
        lines[line] = ",".join(cells)
        command["stdout"] = "\n".join(lines)
        return state
    if isinstance(reading.path[-1], int):
        return None
    parsed = json.loads(command["stdout"])
    inner = parsed
    for step in reading.path[:-1]:
        inner = inner[step]
    if not isinstance(inner, dict):
        return None
    del inner[reading.path[-1]]
    command["stdout"] = json.dumps(parsed, indent=1)
    return state


def fault_signals(fx: Fixture, faulted: dict[str, Any], device: Device) -> list[Reading]:
    """The tool output numbers the fault changes (or adds) on the device: its signals under that fault."""
    base = {(r.where, r.key, r.path): r.value for r in host_readings(fx.host.model_dump(mode="json"), zeros=True)}
    return [r for r in host_readings(faulted, zeros=True)
            if r.where in ("command", "table") and owned_by(r, device)
            and base.get((r.where, r.key, r.path)) != r.value][:MAX_SIGNALS]


def _state_of(family: FamilyInventory | None, device: str) -> str | None:
    return next((h.state for h in family.health if h.device == device), None) if family else None


def left_out_signal_findings(subject: Subject, fx: Fixture, fault: Fault, healthy: FamilyInventory | None,
                             faulty: NodeInventory) -> list[str]:
    """``invariant a-left-out-signal-is-unread`` under one declared fault: each tool output signal the fault sets on
    a device the plugin's faulted build takes off healthy (and its healthy build keeps healthy), left out: where
    the same value printed N/A makes the device not healthy or a problem reported, the left-out one does too."""
    family = faulty.family(healthy.family.name) if healthy is not None else None
    if healthy is None or family is None or fault.kind in ("tool-hang", "tool-garbage"):
        return []
    before = {(p.code, p.message) for p in subject.plugin_problems(faulty, severities=("error", "warning"))}
    faulted = apply_faults(fx, [fault.name]).model_dump(mode="json")
    wrong: list[str] = []
    for device in family.devices:
        state = _state_of(family, device.id)
        if state not in OFF_HEALTHY or _state_of(healthy, device.id) != "healthy":
            continue
        for signal in fault_signals(fx, faulted, device):
            left_out = left_out_host(faulted, signal)
            if left_out is None:
                continue
            answers = []
            for host in (left_out, unreadable_host(faulted, [signal])):
                built = subject.build(simulated_host(fx.model_copy(update={
                    "host": HostState.model_validate(host), "faults": []})))
                said = [p for p in subject.plugin_problems(built, severities=("error", "warning"))
                        if (p.code, p.message) not in before]
                answers.append((_state_of(built.family(healthy.family.name), device.id), said))
            (gone_state, gone_said), (na_state, na_said) = answers
            if gone_state != "healthy" or gone_said or (na_state == "healthy" and not na_said):
                continue
            how = "its key left out" if signal.where == "command" else "its cell left empty"
            na = f"{na_state}" + (f", {na_said[0].code}: {na_said[0].message[:100]}" if na_said else "")
            wrong.append(
                f"{INVARIANT}, {fx.ref} fault {fault.name}: {device.id} is {state} under the fault ({signal.describe()}"
                f" = {signal.value:g}); with that value {how}, as a tool leaves out a value it does not give, "
                f"{device.id} is reported healthy and nothing is said, while the same value printed N/A makes it "
                f"{na}: a value left out was read as a clean one (a default such as 0 in its place), which clears "
                "the fault silently. A signal the tool did not give is unread: report the device unknown with a "
                "reason and a problem, as for N/A")
    return wrong
