"""Vendor text that is no number is unknown (supported tier, issue 46): RAC256.

RAC233 makes a reading ``garbage!`` (eight letters, no digit) and RAC271 answers it as not supported; a parser
that pulls the digits out of whatever the tool printed, takes the number a line begins with, or calls ``float()``
(which takes ``nan``, ``inf`` and ``1e309``) passes both, and reports a number the device never gave on the next
machine whose tool prints a garbled field, an error message or a counter past its type. The SDK cannot read a
vendor's format, but it finds the numbers one device's metrics come from (as RAC223 finds them) and can write
in their place what a tool prints when it goes wrong, each form where and as the vendor writes that reading. Each
helper here is pure.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rayaccel.hosts.fixtures import HostState
from rayaccel.records import Device, FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.readings import (
    Reading,
    candidates,
    device_with_samples,
    host_readings,
    owned_by,
    samples_by_device,
    with_reading,
)
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: Readings damaged per fixture (all at once in each build): those feeding the device's metrics.
MAX_READINGS = 8
#: Metrics whose readings may rightly be negative (a sensor below 0 degC): not given the negative form.
SIGNED_METRICS = ("temperature",)


def _garbled(old: str) -> str:
    # A digit the old value does not begin with, a replacement character, then the old number: whatever a lenient
    # parser keeps (the leading number, the digits) is another number.
    return ("7" if old.lstrip("-").startswith("1") else "1") + "\ufffd" + old


@dataclass(frozen=True)
class Form:
    """One way a tool prints a value that is no number: its text, and its value in a library's or JSON's data
    (None: the same text as a string)."""

    name: str
    text: Callable[[str], str]
    data: Callable[[Any], Any] | None = None
    signed: bool = True  # given to readings of every metric (False: not to SIGNED_METRICS')
    in_library: bool = True  # False: a binding's typed value cannot hold it (23 digits, a negative unsigned)


#: What a tool prints for a query that failed, past 80 characters (a message that quotes it must cut it, not
#: fail), with numbers in it (a parser pulling digits out gets one), and no comma (a CSV cell holds it whole).
ERROR_TEXT = "[Error 15: Unknown Error] query failed: the device has fallen off the bus (Xid 79); reset it"
#: A number past 2**64: no counter, size or reading of any vendor's type holds it.
LONG_DIGITS = "12345678901234567890123"
FORMS = (
    Form("a garbled field", _garbled),
    Form("an error string", lambda _old: ERROR_TEXT),
    Form("a truncated line", lambda _old: ""),  # a file cut at 0 bytes, a CSV row cut before the cell (data: none)
    Form("a number of 23 digits", lambda _old: LONG_DIGITS, lambda _old: int(LONG_DIGITS), in_library=False),
    Form("1e309 (past a double)", lambda _old: "1e309"),
    Form("nan", lambda _old: "nan"),
    Form("inf", lambda _old: "inf"),
    Form("a negative value", lambda old: f"-{old.lstrip('-')}", lambda old: -abs(old) or -1, signed=False,
         in_library=False),
)


def applies(form: Form, reading: Reading, metrics: set[str]) -> bool:
    """Whether the form can be written where the reading is (a truncated line has no place in a library's data or
    a JSON document; a binding's typed value holds no 23 digits or negative unsigned) and suits what it feeds."""
    if form.name == "a truncated line" and reading.where in ("library", "command"):
        return False
    return (form.in_library or reading.where != "library") and (form.signed or not metrics & set(SIGNED_METRICS))


Plan = list[tuple[Reading, Form]]


def build_plans(fed: dict[Reading, set[str]]) -> list[Plan]:
    """The builds: one per form, every reading it can be written to printed in it. (Readings given different
    forms in one build mask each other: a library call reading two of them fails on the first, so a second
    reading's error string of 92 characters was never parsed.)"""
    plans = [[(r, form) for r, metrics in fed.items() if applies(form, r, metrics)] for form in FORMS]
    return [plan for plan in plans if plan]


def damaged_host(host: dict[str, Any], plan: Plan) -> dict[str, Any]:
    """The host state with each reading of the plan printed in its form, where and as the vendor wrote it."""
    state = host
    for reading, form in plan:
        if form.name == "a truncated line" and reading.where == "table":
            state = _cut_row(state, reading)
        else:
            state = with_reading(state, reading, form.text, form.data or _as_text(form))
    return state


def _as_text(form: Form) -> Callable[[Any], Any]:
    """The form's text, as a string, in place of a value of a library's data or a JSON document."""
    return lambda old: form.text(str(old))


def _cut_row(host: dict[str, Any], reading: Reading) -> dict[str, Any]:
    """The host with the reading's CSV row ending just before its cell (the tool's output cut mid-line)."""
    state: dict[str, Any] = json.loads(json.dumps(host))
    lines = state["commands"][reading.key]["stdout"].split("\n")
    cells = lines[int(reading.path[0])].split(",")
    lines[int(reading.path[0])] = ",".join(cells[:int(reading.path[1])]) + ","
    state["commands"][reading.key]["stdout"] = "\n".join(lines)
    return state


def fed_readings(family: FamilyInventory, device: Device, host: dict[str, Any]) -> dict[Reading, set[str]]:
    """The device's own readings its non-zero metric samples come from, each with the metrics it feeds."""
    own = [r for r in host_readings(host) if owned_by(r, device)]
    fed: dict[Reading, set[str]] = {}
    for sample in family.metrics:
        if sample.device == device.id and sample.value != 0:
            for reading, _ in candidates(sample, device, own):
                fed.setdefault(reading, set()).add(sample.name)
    return dict(list(fed.items())[:MAX_READINGS])


def _shown(value: float | None) -> str:
    return "none" if value is None else f"{value:g}"


def number_findings(before: FamilyInventory, after: FamilyInventory | None, device: Device,
                    names: set[str]) -> list[str]:
    """What the build made of the damaged readings that is a number: a sample of the device they feed that moved,
    another device's sample that moved."""
    old, new = samples_by_device(before), samples_by_device(after)
    wrong = [f"{name} of {device.id} is {_shown(now)} (was {_shown(old.get((device.id, name)))})"
             for name in sorted(names) if (now := new.get((device.id, name))) is not None
             and now != old.get((device.id, name))]
    moved = [f"{name} of {other} from {value:g} to {_shown(new.get((other, name)))}"
             for (other, name), value in old.items() if other != device.id and (other, name) in new
             and new[(other, name)] != value]
    if moved:
        wrong.append(f"another device's {moved[0]} ({len(moved)} in all): a reading feeds only its own device")
    return wrong


@check("RAC256", scope="fixture")
def vendor_text_that_is_no_number_is_unknown(subject: Subject, fixture: str | None) -> Evidence:
    """A reading the vendor prints as text that is no number (a garbled field, an error string, a truncated line,
    23 digits, 1e309, nan, inf, a negative counter) is unknown: never a number, never a raise.

    The suite takes the readings the middle device's non-zero metric samples come from (its own numbers in files,
    a library's data, a command's JSON or CSV, found as RAC223 finds them, up to eight) and prints all of them,
    in one build per form, as a tool that went wrong does: a garbled field (a digit, U+FFFD, then the old number,
    so a parser keeping the leading number or the digits gets another one); an error string in the number's place
    (92 characters with numbers in it: a message quoting it must cut it, not fail); a truncated line (a file cut
    at 0 bytes, the CSV row cut before the cell; a library's data or a JSON document has no line to cut); a number
    of 23 digits (past 2**64); ``1e309`` (past a double: ``float()`` makes it inf); ``nan``; ``inf``; the value
    negated (not a temperature's, which may be). Text goes where the vendor wrote text and is a string in a
    library's data or a JSON document; the 23 digits and the negative value are numbers in a JSON document and
    not given to a library (a binding's typed value cannot hold them). Each form not applied is said in the
    evidence. No hook may raise; each sample the readings feed must be gone or as it was, and no other device's
    sample may move (``invariant text-that-is-no-number-is-unknown``, naming the fixture, the form, the readings
    and the value); a sample left out needs a warning or error the fixture's own build does not report
    (``invariant a-value-left-out-is-reported``). Not applicable where no metric of the device is attributed to
    one of its readings. Fix: parse each vendor value whole and strictly (an ASCII decimal of the field's type:
    ``rayaccel.vendor_int``; a finite float in the unit's range), and leave anything else out, reported
    (``rayaccel.malformed``).
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    fam, device = device_with_samples(fx.ref, subject.inventory(fixture).family(family.name))
    host = fx.host.model_dump(mode="json")
    fed = fed_readings(fam, device, host)
    if not fed:
        raise NotApplicable(f"{fx.ref}: no metric of {device.id} is attributed to one of its readings")
    wrong: list[str] = []
    plans = build_plans(fed)
    known = {(p.code, p.message) for p in subject.plugin_problems(subject.inventory(fixture),
                                                                   severities=("error", "warning"))}
    for plan in plans:
        variant = fx.model_copy(update={"host": HostState.model_validate(damaged_host(host, plan)), "faults": []})
        built = subject.build(simulated_host(variant))
        place = (f"{fx.ref} with {device.id}'s " + ", ".join(f"{r.describe()} printed as {form.name}"
                                                             for r, form in plan[:3])
                 + (f" and {len(plan) - 3} more" if len(plan) > 3 else ""))
        where = f"invariant text-that-is-no-number-is-unknown, {place}"
        wrong += [f"{where}: {p.hook or 'a hook'} raised instead of reporting it: {p.message[:200]}"
                  for p in subject.plugin_problems(built, severities=("error", "warning")) if p.code == "hook-raised"]
        names = set().union(*(fed[r] for r, _ in plan))
        wrong += [f"{where}: {finding}: text that is no number gives no value"
                  for finding in number_findings(fam, built.family(family.name), device, names)]
        reported = {(p.code, p.message) for p in subject.plugin_problems(built, severities=("error", "warning"))}
        gone = sorted(n for n in names if (device.id, n) not in samples_by_device(built.family(family.name)))
        if gone and not reported - known:
            wrong.append(f"invariant a-value-left-out-is-reported, {place}: {', '.join(gone)} of {device.id} left "
                         "out with no problem reported: an operator sees a sensor go quiet, not why")
    if wrong:
        raise CheckFailed(sorted(set(wrong), key=wrong.index)[:6])
    printed = {form.name for plan in plans for _, form in plan}
    skipped = [form.name for form in FORMS if form.name not in printed]
    return (f"{fx.ref}: {len(fed)} readings of {device.id} printed in {len(printed)} forms that are no number, "
            f"{len(plans)} builds: each value went unknown, nothing else moved"
            + (f" ({', '.join(skipped)}: not applied, no reading is where the form can be written)" if skipped else ""))
