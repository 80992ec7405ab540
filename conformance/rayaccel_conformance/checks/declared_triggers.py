"""What a declared reason says fires it, reached through the host seam (RAC264, issue 46, held-out round 10).

``FamilyDeclaration.health_reasons`` is what operators write health policies from, and a row says more than a
state: its meaning may name the threshold the reason fires at ("at least 1000 corrected errors"). A fixture's
fault stands on one side of that threshold, so a comparison made the wrong way round at it (``>`` where the row
says "at least", the round's ``s1``) passes every fault that does not sit exactly on it, and a fixture's
``expected:`` that does is edited as easily as the code. The row is the plugin's own statement: the reading a
fault moves on the device the reason fires on, set at the declared threshold and one step short of it, must fire
the reason at the threshold and not short of it (``invariant a-declared-threshold-is-where-it-fires``).

A row's code may carry the number of the vendor's event it stands for (``xid-79``, ``xid-94``: one row per XID). Where
a fault's number fires such a code on a device, the plugin reads the code's number from that reading, so the same
reading set to the number of another row of the family must fire that row's code on the device, as declared
(``invariant a-numbered-reason-is-read-by-its-number``): an event the table declares and the code classes
otherwise (the round's ``n1``, XID 94 added to the application errors it ignores) is named, whatever the fixture's
``expected:`` says of it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rayaccel.hosts.fixtures import Fault, Fixture, HostState, apply_faults
from rayaccel.records import FamilyInventory, HealthReport, ReasonCode
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.fault_readings import _numbers_only, field_name
from rayaccel_conformance.checks.readings import Reading, host_readings, with_reading
from rayaccel_conformance.harness.subject import Subject

_NUMBER = r"(\d{1,3}(?:,\d{3})+|\d+)"
#: A threshold a meaning states, as the words say it: (pattern, comparison the reading is held to). The longer
#: phrases first ("no more than" before "more than").
_PHRASES: tuple[tuple[str, str], ...] = (
    (rf"\b(?:no more than|not more than|at most)\s+{_NUMBER}\b", "<="),
    (rf"\b{_NUMBER}\s+or (?:fewer|less)\b", "<="),
    (rf"\b(?:no fewer than|no less than|not less than|at least)\s+{_NUMBER}\b", ">="),
    (rf"\b{_NUMBER}\s+or more\b", ">="),
    (rf"\b(?:more than|greater than|above|over|past|exceeds|exceeding)\s+{_NUMBER}\b", ">"),
    (rf"\b(?:fewer than|less than|below|under)\s+{_NUMBER}\b", "<"),
    (rf"(?:>=|\u2265)\s*{_NUMBER}\b", ">="),
    (rf"(?:<=|\u2264)\s*{_NUMBER}\b", "<="),
    (rf"(?<![<>=])>\s*{_NUMBER}\b", ">"),
    (rf"(?<![<>=])<\s*{_NUMBER}\b", "<"),
)
#: Builds spent finding where a reason fires once it fires elsewhere than declared.
_MAX_STEPS = 24
#: A code carrying a number: the family's prefix and the number (``xid-94``).
_NUMBERED = re.compile(r"([a-z][a-z0-9-]*?-)(\d+)")


@dataclass(frozen=True)
class Threshold:
    """A declared row's threshold: the reading fires the reason where ``reading <op> number``."""

    op: str
    number: int
    phrase: str

    def fires(self, value: int) -> bool:
        return {">=": value >= self.number, ">": value > self.number, "<=": value <= self.number,
                "<": value < self.number}[self.op]

    @property
    def rising(self) -> bool:
        return self.op in (">=", ">")

    @property
    def edge(self) -> int:
        """The value the reason fires first at, coming from the side where it does not."""
        return {">=": self.number, ">": self.number + 1, "<=": self.number, "<": self.number - 1}[self.op]


def threshold(meaning: str) -> Threshold | None:
    """The one threshold a row's meaning states, or None (none, or more than one: which reading each bounds is
    not said)."""
    found: list[Threshold] = []
    taken: list[tuple[int, int]] = []
    for pattern, op in _PHRASES:
        for match in re.finditer(pattern, meaning, flags=re.IGNORECASE):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue  # a shorter phrase inside one already read ("more than" in "no more than")
            taken.append(match.span())
            found.append(Threshold(op, int(match.group(1).replace(",", "")), match.group(0)))
    return found[0] if len(found) == 1 else None


def _codes(reports: list[HealthReport], device: str) -> list[str]:
    return [r.code for report in reports if report.device == device for r in report.reasons]


def _state(reports: list[HealthReport], device: str) -> str:
    found = [f"{report.state} ({', '.join(r.code for r in report.reasons) or 'no reason'})"
             for report in reports if report.device == device]
    return found[0] if found else "not reported"


def _first_firing(fires: Callable[[int], bool], quiet: int, firing: int) -> int:
    """Between a value where the reason is quiet and one where it fires, the one it fires first at coming from the
    quiet side (bisected, at most _MAX_STEPS builds; the reason taken to fire on one side of one value)."""
    for _ in range(_MAX_STEPS):
        if abs(firing - quiet) <= 1:
            break
        middle = (quiet + firing) // 2
        if fires(middle):
            firing = middle
        else:
            quiet = middle
    return firing


def _moved(fx: Fixture, fault: Fault) -> tuple[dict[str, Any], list[tuple[Reading, float]]]:
    """The host under ``fault`` and the numbers it changes there, each with its value before."""
    base = {(r.where, r.key, r.path): r.value for r in host_readings(fx.host.model_dump(mode="json"), zeros=True)}
    faulty = apply_faults(fx, [fault.name]).model_dump(mode="json")
    return faulty, [(r, base[(r.where, r.key, r.path)]) for r in host_readings(faulty, zeros=True)
                    if (r.where, r.key, r.path) in base and base[(r.where, r.key, r.path)] != r.value]


def threshold_failures(subject: Subject, fx: Fixture, table: list[ReasonCode], healthy: list[HealthReport],
                       faults: list[tuple[Fault, FamilyInventory]]) -> list[str]:
    """RAC264's ``a-declared-threshold-is-where-it-fires`` on one fixture: ``faults`` are its faults with the
    family's inventory under each, ``healthy`` the health reports without one."""
    rows = {row.code: (row, found) for row in table if "*" not in row.code
            and (found := threshold(row.meaning)) is not None}
    if not rows:
        return []
    host = fx.host.model_dump(mode="json")
    wrong: list[str] = []
    judged: set[str] = set()
    for fault, fam in faults:
        if not _numbers_only(host, apply_faults(fx, [fault.name]).model_dump(mode="json")):
            continue  # a fault adding or removing a record may fire a reason by what it adds
        faulty, moved = _moved(fx, fault)
        for report in fam.health:
            for code in [r.code for r in report.reasons if r.code in rows and r.code not in judged]:
                if code in _codes(healthy, report.device):
                    continue
                device = next((d for d in fam.devices if d.id == report.device), None)
                samples = [s.value for s in fam.metrics if s.device == report.device]
                # The reading the row's number counts: the one number the fault moves that the device reports as it
                # is (a metric of the device carries it), whole numbers both.
                counted = [(r, was) for r, was in moved if r.value.is_integer() and was.is_integer()
                           and any(math.isclose(v, r.value, rel_tol=1e-9) for v in samples)]
                if device is None or len(counted) != 1:
                    continue
                judged.add(code)
                row, declared = rows[code]
                wrong += _judge(subject, fx, fault, faulty, report.device, row, declared, *counted[0])
    return wrong


def _judge(subject: Subject, fx: Fixture, fault: Fault, faulty: dict[str, Any], device: str, row: ReasonCode,
           declared: Threshold, reading: Reading, was: float) -> list[str]:
    """The reason ``row`` fires on ``device`` with ``reading`` moved from ``was``: where does it fire first?"""
    family = subject.family().name
    seen: dict[int, list[HealthReport]] = {}

    def reports(value: int) -> list[HealthReport]:
        if value not in seen:
            state = with_reading(faulty, reading, lambda _old: str(value), lambda _old: value)
            built = subject.build(simulated_host(fx.model_copy(update={
                "host": HostState.model_validate(state), "faults": []})), with_metrics=False).family(family)
            seen[value] = list(built.health) if built else []
        return seen[value]

    def fires(value: int) -> bool:
        return row.code in _codes(reports(value), device)

    quiet, firing = int(was), int(reading.value)
    if declared.rising != (firing > quiet):
        return []  # the fault moves the reading the other way: the threshold bounds it from the other side
    step = 1 if declared.rising else -1
    edge = declared.edge
    # Where the row puts the edge against the two values known: past the fault's value, the reason fires where the
    # row says it does not; short of the healthy one, it is quiet where the row says it fires.
    wrong_at = [v for v in (edge, edge - step) if (v - quiet) * step > 0 and (firing - v) * step > 0
                and fires(v) != declared.fires(v)]
    outside = (edge - firing) * step > 0 or (quiet - edge) * step >= 0
    if not wrong_at and not outside:
        return []
    first = _first_firing(fires, quiet, firing)
    if first == edge:
        return []
    swapped = {">=": ">", ">": ">=", "<=": "<", "<": "<="}[declared.op]
    if first - edge == step * (1 if declared.op in (">=", "<=") else -1):
        cause = (f"the plugin compares with `{swapped}` where the row says '{declared.phrase}' (`{declared.op}`): "
                 "off by one at the threshold")
    else:
        cause = (f"the threshold the plugin applies is not the {declared.number} its row declares (another constant, "
                 "or the reading taken in another unit)")
    at_edge = reports(edge) if (edge - quiet) * step > 0 and (firing - edge) * step >= 0 else None
    shown = (f"; at {edge} it is {_state(at_edge, device)}" if at_edge is not None else "")
    return [f"invariant a-declared-threshold-is-where-it-fires, {fx.ref} under fault {fault.name}: reason "
            f"{row.code!r} is declared '{row.meaning}' ({row.state}), and fires on {device} with "
            f"{reading.describe()} ({field_name(reading) or 'the reading'}) moved from {was:g} to "
            f"{reading.value:g}; set there alone, it fires first at {first}, the row says at {edge}{shown}: "
            f"{cause}. Fire the reason exactly where its row says, or declare the threshold it fires at"]



def _text_of(number: int) -> Callable[[str], str]:
    return lambda _old: str(number)


def _value_of(number: int) -> Callable[[Any], Any]:
    return lambda _old: number


def _new_numbers(fx: Fixture, fault: Fault) -> tuple[dict[str, Any], list[Reading]]:
    """The host under ``fault`` and the whole numbers it adds or changes there (an event's record is new)."""
    base = {(r.where, r.key, r.path): r.value for r in host_readings(fx.host.model_dump(mode="json"), zeros=True)}
    faulty = apply_faults(fx, [fault.name]).model_dump(mode="json")
    return faulty, [r for r in host_readings(faulty, zeros=True) if r.value.is_integer()
                    and base.get((r.where, r.key, r.path)) != r.value]


def numbered_failures(subject: Subject, fx: Fixture, table: list[ReasonCode], healthy: list[HealthReport],
                      faults: list[tuple[Fault, FamilyInventory]],
                      disagreements: Callable[[HealthReport], list[str]]) -> list[str]:
    """RAC264's ``a-numbered-reason-is-read-by-its-number`` on one fixture: under the first fault that fires a
    numbered code of a family whose number is one number the fault writes, that number set to each other number the
    family's rows declare must fire that row's code on the same device, and its report agree with the table
    (``disagreements``: RAC264's own comparison)."""
    family = subject.family().name
    rows: dict[str, dict[int, ReasonCode]] = {}
    for row in table:
        if (numbered := _NUMBERED.fullmatch(row.code)) is not None:
            rows.setdefault(numbered.group(1), {})[int(numbered.group(2))] = row
    wrong: list[str] = []
    judged: set[str] = set()
    for fault, fam in faults:
        if fault.kind in ("tool-hang", "tool-garbage"):
            continue
        faulty, written = _new_numbers(fx, fault)
        for report in fam.health:
            for reason in report.reasons:
                numbered = _NUMBERED.fullmatch(reason.code)
                if numbered is None or numbered.group(1) not in rows or numbered.group(1) in judged \
                        or len(rows[numbered.group(1)]) < 2 or reason.code in _codes(healthy, report.device):
                    continue
                prefix, number = numbered.group(1), int(numbered.group(2))
                carrying = [r for r in written if r.value == number]
                if len(carrying) != 1:
                    continue
                judged.add(prefix)
                reading = carrying[0]
                for other, row in sorted(rows[prefix].items()):
                    if other == number:
                        continue
                    state = with_reading(faulty, reading, _text_of(other), _value_of(other))
                    built = subject.build(simulated_host(fx.model_copy(update={
                        "host": HostState.model_validate(state), "faults": []})), with_metrics=False).family(family)
                    reports = [r for r in (built.health if built else []) if r.device == report.device]
                    where = (f"invariant a-numbered-reason-is-read-by-its-number, {fx.ref} under fault {fault.name} "
                             f"with {reading.describe()} set from {number} to {other} (the number {reason.code!r} "
                             f"fires on {report.device} by)")
                    if row.code not in _codes(reports, report.device):
                        wrong.append(f"{where}: reason {row.code!r} is declared '{row.meaning}' ({row.state}"
                                     f"{', fatal' if row.fatal else ''}), and {report.device} is "
                                     f"{_state(reports, report.device)}: the plugin does not read {other} as its "
                                     f"table declares (the number classed otherwise in its code: ignored, or "
                                     f"another meaning); report {row.code} as declared, or declare what {other} "
                                     "gives")
                    wrong += [f"{where}: {w}" for r in reports for w in disagreements(r)]
    return wrong
