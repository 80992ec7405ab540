"""Corpus mutants whose code classes an event number otherwise than their declared reason table (issue 46, held-out
round 10's ``n1``: NVIDIA's XID 94 added to the application XIDs it ignores, while its table still declares ``xid-94``
unhealthy and fatal). A fixture's fault posting that event catches it only through its ``expected:``, which a vendor
edits with the code; RAC264's ``a-numbered-reason-is-read-by-its-number`` takes the event number a fault fires
``event-17`` by and sets it to each other number the table declares.

ACME's driver posts an event code per card; the table declares ``event-17`` (unhealthy, fatal), ``event-23``
(degraded) and ``event-31`` (unhealthy); each machine's fault posts 17 on card 2. Two shapes: the last event in a
sysfs file per card with 23 added to the codes ignored as informational, and acme-smi's JSON event list read through a
lookup keyed 13 where the row says 31 (its digits swapped). :class:`EventsAsDeclared` is the right reader.
Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each mutant is bound here under
its name (``c-event-ignored-though-declared`` as ``c_event_ignored_though_declared``) so a Ray node loads it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from rayaccel import Device, HealthReason, HealthReport, Host, ReasonCode, malformed
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

EVENTS_JSON = ("acme-smi", "events", "--json")
#: The card the machine's fault posts an event on, and the event.
CARD = 2
POSTED = 17
#: What each declared event code means for the card: (state, fatal, meaning).
EVENTS: dict[int, tuple[str, bool, str]] = {
    17: ("unhealthy", True, "the card's memory controller stopped: it needs a reset"),
    23: ("degraded", False, "the card throttled on a thermal event"),
    31: ("unhealthy", False, "the card's fabric port failed training"),
}
ROWS = ReasonCode.table((
    *((f"event-{code}", state, fatal, f"event {code}: {meaning}") for code, (state, fatal, meaning) in EVENTS.items()),
    ("acme-fatal", "unhealthy", True, "the driver counts fatal errors: the card needs a reset"),
    ("acme-counters-unreadable", "unknown", False, "the card's error counters or events cannot be read"),
    ("acme-lost", "unhealthy", True, "the card fell off the bus")))


def _one_card_less(resources: Mapping[str, float]) -> dict[str, float]:
    """The machine's resources with the faulted card drained (its accelerator type stays)."""
    return {k: v if k.startswith("accelerator_type:") else v - 1 for k, v in resources.items()}


def _add_event_file(plugin: str) -> None:
    """The plugin's acme-4 with each card's last event (0: none) in sysfs, and the fault posting one on card 2."""
    data = read_machine(plugin)
    files = data["host"]["files"]
    if f"{SYSFS}/acme0/last_event" in files:
        return
    files.update({f"{SYSFS}/acme{i}/last_event": "0\n" for i in range(4)})
    card = files[f"{SYSFS}/acme{CARD}/uuid"].strip()
    data["description"] = f"{data['description']}, each card's last event in sysfs"
    data["perturbations"] = []  # a card renamed or removed would leave its event file behind
    data["faults"] = [*(data.get("faults") or []), {
        "name": f"event-{POSTED}", "kind": "fatal-error", "description": f"card {CARD} posts event {POSTED}",
        "patch": {"files": {f"{SYSFS}/acme{CARD}/last_event": f"{POSTED}\n"}},
        "expected": {"health": {card: "unhealthy"}, "reasons": {card: [f"event-{POSTED}"]}, "fatal": True,
                     "resources": _one_card_less(data["expected"]["resources"])}}]
    write_machine(plugin, "acme-4", data)


def _add_event_tool(plugin: str) -> None:
    """The plugin's acme-4 with acme-smi listing the cards' pending events (none), and the fault posting one."""
    data = read_machine(plugin)
    line = " ".join(EVENTS_JSON)
    if line in (data["host"].get("commands") or {}):
        return
    card = data["host"]["files"][f"{SYSFS}/acme{CARD}/uuid"].strip()
    data["description"] = f"{data['description']}, pending events listed by acme-smi"
    data["host"]["commands"] = {**(data["host"].get("commands") or {}),
                                line: {"stdout": json.dumps({"events": []}) + "\n"}}
    data["faults"] = [*(data.get("faults") or []), {
        "name": f"event-{POSTED}", "kind": "fatal-error", "description": f"card {CARD} posts event {POSTED}",
        "patch": {"commands": {line: {"stdout": json.dumps({"events": [{"uuid": card, "code": POSTED}]}) + "\n"}}},
        "expected": {"health": {card: "unhealthy"}, "reasons": {card: [f"event-{POSTED}"]}, "fatal": True,
                     "resources": _one_card_less(data["expected"]["resources"])}}]
    write_machine(plugin, "acme-4", data)


def _file_events(host: Host, devices: list[Device]) -> dict[str, list[int] | None]:
    """Each card's last event from its sysfs file (none for 0), None where it cannot be read."""
    found: dict[str, list[int] | None] = {}
    for device in devices:
        code = acme._number(host, f"{SYSFS}/acme{device.index}/last_event")
        found[device.id] = None if code is None or code < 0 else [code] if code else []
    return found


def _tool_events(host: Host, devices: list[Device]) -> dict[str, list[int] | None]:
    """Each card's pending events from acme-smi's JSON list; every card unreadable where the list cannot be read."""
    stdout = tool_output(host, EVENTS_JSON)
    try:
        events = json.loads(stdout)["events"] if stdout is not None else None
    except (ValueError, KeyError, TypeError):
        events = None
    if not isinstance(events, list):
        malformed(" ".join(EVENTS_JSON), "its output", "JSON with a list of events")
        return {d.id: None for d in devices}
    found: dict[str, list[int] | None] = {d.id: [] for d in devices}
    for event in events:
        code = event.get("code") if isinstance(event, dict) else None
        uuid = event.get("uuid") if isinstance(event, dict) else None
        if not isinstance(uuid, str) or uuid not in found:
            continue
        card = found[uuid]
        if card is not None and isinstance(code, int) and not isinstance(code, bool) and code >= 0:
            card.append(code)
        else:
            found[uuid] = None
    return found


def _health(host: Host, devices: list[Device], events: Mapping[str, list[int] | None],
            meanings: Mapping[int, tuple[str, bool, str]]) -> list[HealthReport]:
    """acme's health, with each card's events as ``meanings`` classes them (a code it does not know: ignored)."""
    reports = []
    for report in acme.rayaccel_health(host, devices):
        codes = events.get(report.device, [])
        if codes is None and report.state == "healthy":
            report = HealthReport(device=report.device, state="unknown", reasons=[
                HealthReason(code="acme-counters-unreadable", message="the card's events cannot be read")])
        elif codes and report.state != "unknown":
            reasons = list(report.reasons) + [HealthReason(code=f"event-{c}", message=f"event {c}: {meanings[c][2]}",
                                                           fatal=meanings[c][1]) for c in codes if c in meanings]
            states = [report.state] + [meanings[c][0] for c in codes if c in meanings]
            worst = max(states, key=lambda s: ("healthy", "degraded", "unhealthy").index(s))
            report = HealthReport(device=report.device, state=worst, reasons=reasons)
        reports.append(report)
    return reports


def _declared(plugin: Healthy) -> None:
    plugin.family = plugin.family.model_copy(update={"health_reasons": ROWS})


class EventsAsDeclared(Healthy):
    """Each card's last event from sysfs, every declared code as its row says (the right reader)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _declared(self)
        _add_event_file(name)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        return _health(host, devices, _file_events(host, devices), EVENTS)


class EventIgnoredThoughDeclared(Healthy):
    DEFECT = ("sysfs's last event read with 23 added to the informational codes it ignores, while the reason table "
              "declares event-23 degraded")
    KILLED_BY = ("RAC264", "invariant a-numbered-reason-is-read-by-its-number")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _declared(self)
        _add_event_file(name)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        informational = {5, 23}  # the defect: 23 is a declared event
        return _health(host, devices, _file_events(host, devices),
                       {c: m for c, m in EVENTS.items() if c not in informational})


class EventLookupDigitsSwapped(Healthy):
    DEFECT = ("acme-smi's JSON events read through a lookup keyed 13 where the reason table declares event-31 (its "
              "digits swapped): event 31 is ignored")
    KILLED_BY = ("RAC264", "invariant a-numbered-reason-is-read-by-its-number")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _declared(self)
        _add_event_tool(name)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        lookup = {17: EVENTS[17], 23: EVENTS[23], 13: EVENTS[31]}  # the defect
        return _health(host, devices, _tool_events(host, devices), lookup)


for _cls in (EventIgnoredThoughDeclared, EventLookupDigitsSwapped):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
