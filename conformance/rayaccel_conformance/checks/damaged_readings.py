"""RAC233 (supported tier): a reading one device's metric comes from, made garbage in a vendor library's data or
a command's output (JSON or CSV), is reported, never raised, never another number, and changes no other device.

RAC211 damages a device's own files; a plugin that reads a library (NVML, amdsmi) or a tool's output (hl-smi's
CSV, amd-smi's JSON, neuron-ls) met no damaged reading at all, so its error path (the message it builds, the
value it falls back to) ran on no fixture: ``make mutation`` found error paths that raise a ``TypeError``
while building the message, and checks for "not a number" that let garbage through. The readings are the ones
RAC223 finds (:mod:`rayaccel_conformance.checks.readings`): the numbers on the host that are one device's own.
"""

from __future__ import annotations

import json
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

GARBAGE = "garbage!"
#: Readings damaged per fixture: those feeding the device's metrics first, then its other numbers.
MAX_DAMAGED_READINGS = 8


def garbled_host(host: dict[str, Any], reading: Reading) -> dict[str, Any]:
    """The host state with one reading (not a file's: RAC211 damages those) replaced by garbage text."""
    return with_reading(host, reading, lambda _old: GARBAGE, lambda _old: GARBAGE)


def key_drops(reading: Reading) -> list[tuple[str | int, ...]]:
    """Where a command's JSON reading can lose its key: its own, and its object's under a named key (the number of
    ``{"value": 3000, "unit": "MiB"}`` as the whole ``memory_used``), as a tool of another version leaves a field
    out; none for a library's data (a value left out there is RAC271's not supported) or a table's cell."""
    if reading.where != "command" or not reading.path or isinstance(reading.path[-1], int):
        return []
    drops = [reading.path]
    if len(reading.path) > 1 and isinstance(reading.path[-2], str):
        drops.append(reading.path[:-1])
    return drops


def without_key(host: dict[str, Any], reading: Reading, path: tuple[str | int, ...]) -> dict[str, Any]:
    """The host state with the key at ``path`` of the reading's command's JSON output left out."""
    return _without_json_key(host, reading.key, path)


def _without_json_key(host: dict[str, Any], command_line: str, path: tuple[str | int, ...]) -> dict[str, Any]:
    commands = dict(host["commands"])
    command = commands[command_line] = dict(commands[command_line])
    parsed = json.loads(command["stdout"])
    inner = parsed
    for step in path[:-1]:
        inner = inner[step]
    del inner[path[-1]]
    command["stdout"] = json.dumps(parsed, indent=1)
    return {**host, "commands": commands}


def _metric_findings(before: FamilyInventory, after: FamilyInventory | None, device: Device, where: str,
                     reported: bool) -> list[str]:
    """A sample of the damaged device that became another number, or another device's sample that moved."""
    old, new = samples_by_device(before), samples_by_device(after)
    wrong = [f"{where}: {name} of {other} went from {value:g} to {new.get((other, name))}: a reading feeds only its "
             "own device" for (other, name), value in old.items()
             if other != device.id and (other, name) in new and new[(other, name)] != value]
    for (owner, name), value in old.items():
        now = new.get((owner, name))
        if owner == device.id and now is not None and now != value:
            wrong.append(f"{where}: {name} of {device.id} went from {value:g} to {now:g}"
                         + ("" if reported else ", unreported") + ": a reading that cannot be read gives no sample")
    return wrong


@check("RAC233", scope="fixture")
def damaged_metric_readings(subject: Subject, fixture: str | None) -> Evidence:
    """A reading a device's metric comes from, made garbage in a library's data or a tool's output, is
    reported, never raised, never another number, and changes no other device.

    The suite takes the readings one device's metric samples come from (the middle device's: a value in a
    library's data or a command's JSON keyed by its index, a cell of a command's CSV row naming it, found as
    RAC223 finds them, up to eight) and makes each, in turn, garbage text, as a driver answering nonsense
    does. No hook may raise; every other device's samples stay as they were; the device's sample is gone or,
    if another reading gives it, the same; another number fails, reported or not (a sample left out without a
    problem is not failed yet: AMD's amd-smi path does so). Then each such reading in a command's JSON output
    loses its key, and its object's named key, in turn, as a tool of another version leaves a field out
    (amd-smi 26 leaves ``partition`` out of ``static``; ``invariant a-missing-key-is-an-unknown-reading``): no
    hook raises, the samples it fed are gone or the same, the device is still found with its other samples,
    and every other device's stay. And each tool record those readings sit in that names the device (a JSON object
    holding its id or PCI address, a CSV row) is left out whole, in turn, as a tool answers for the devices it could
    query (``invariant a-missing-record-keeps-the-rest``): where the device is still found, no hook raises, every
    other device's samples stay, and the device's samples no reading of that record gives stay (``memory_total``,
    its own memory). Files are RAC211's. Fix: parse every vendor value defensively
    (``rayaccel.malformed`` names the value and where it was read) and leave the sample out, a missing key as
    much as a garbled value, for that device and that reading alone, and never hang a metric read elsewhere
    on a record of another answer; build the message from text, never by arithmetic on what failed to parse.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    healthy = subject.build(simulated_host(fx))
    fam, device = device_with_samples(fx.ref, healthy.family(family.name))
    host = fx.host.model_dump(mode="json")
    own = [r for r in host_readings(host) if r.where != "file" and owned_by(r, device)]
    chosen = list(dict.fromkeys(r for s in fam.metrics if s.device == device.id
                                for r, _ in candidates(s, device, own)))[:MAX_DAMAGED_READINGS]
    if not chosen:
        raise NotApplicable(f"{fx.ref}: no metric of {device.id} read from a library's data or a tool's output "
                            "(files are RAC211's)")
    wrong, dropped = [], []
    for reading in chosen:
        variant = fx.model_copy(update={"host": HostState.model_validate(garbled_host(host, reading)), "faults": []})
        built = subject.build(simulated_host(variant))
        problems = subject.plugin_problems(built, severities=("error", "warning"))
        where = f"invariant 'a damaged reading is reported, never another value', {fx.ref} with {reading.describe()}"
        where += f" of {device.id} made {GARBAGE!r} (was {reading.value:g})"
        wrong += [f"{where}: {p.hook or 'a hook'} raised instead of reporting it: {p.message}"
                  for p in problems if p.code == "hook-raised"]
        reported = any(p.code != "hook-raised" for p in problems)
        wrong += _metric_findings(fam, built.family(family.name), device, where, reported)
        for path in key_drops(reading):
            wrong += _dropped_key_findings(subject, fx, fam, device, own, reading, path)
            dropped.append(".".join(str(p) for p in path))
    records = list(dict.fromkeys(r for r in (device_record(reading, device, host) for reading in chosen) if r))
    for record in records:
        wrong += _dropped_record_findings(subject, fx, fam, device, own, record)
    if wrong:
        raise CheckFailed(sorted(set(wrong), key=wrong.index)[:6])
    keys = f"; {len(dropped)} of their JSON keys left out in turn: unknown, nothing else moved" if dropped else ""
    left = f"; {len(records)} of its records left out in turn: the rest kept" if records else ""
    return (f"{fx.ref}: {len(chosen)} metric readings of {device.id} made garbage in turn: reported, nothing else "
            f"moved{keys}{left}")


def _dropped_key_findings(subject: Subject, fx: Any, fam: FamilyInventory, device: Device, own: list[Reading],
                          reading: Reading, path: tuple[str | int, ...]) -> list[str]:
    """``invariant a-missing-key-is-an-unknown-reading``: the reading's key left out of its command's JSON output.
    No hook raises; the samples it fed are gone (or the same, given by another reading); the device's other samples
    and every other device's stay; the device is still found."""
    host = fx.host.model_dump(mode="json")
    variant = fx.model_copy(update={"host": HostState.model_validate(without_key(host, reading, path)), "faults": []})
    built = subject.build(simulated_host(variant))
    after = built.family(fam.family.name)
    where = (f"invariant a-missing-key-is-an-unknown-reading, {fx.ref} with `{reading.key}` output "
             f"{'.'.join(str(p) for p in path)} of {device.id} left out")
    problems = subject.plugin_problems(built, severities=("error", "warning"))
    wrong = [f"{where}: {p.hook or 'a hook'} raised instead of reading it as unknown: {p.message}"
             for p in problems if p.code == "hook-raised"]
    wrong += _metric_findings(fam, after, device, where, reported=bool(problems))
    if after is None or device.id not in {d.id for d in after.devices}:
        return [*wrong, subject.consequence(built, f"{where}: {device.id} is no longer found", None)]
    fed = {s.name for s in fam.metrics if s.device == device.id
           and any(r.key == reading.key and r.path[:len(path)] == path for r, _ in candidates(s, device, own))}
    now = samples_by_device(after)
    wrong += [f"{where}: {device.id}'s {s.name} ({s.value:g}), read elsewhere, is gone: one missing key makes one "
              "reading unknown, not the device's others" for s in fam.metrics
              if s.device == device.id and s.name not in fed and (device.id, s.name) not in now]
    return wrong


#: A device's record in one tool's answer: ("command", its command, the path of its JSON object) or ("table", its
#: command, (the line of its CSV row,)).
Record = tuple[str, str, tuple[str | int, ...]]


def _names(value: Any, device: Device) -> bool:
    """Whether a JSON value holds the device's id or PCI address as a text of its own."""
    names = {device.id.lower(), (device.pci_bus_id or "").lower().removeprefix("0000:")} - {""}
    if isinstance(value, str):
        return value.strip().lower().removeprefix("0000:") in names
    if isinstance(value, dict):
        return any(_names(v, device) for v in value.values())
    if isinstance(value, list):
        return any(_names(v, device) for v in value)
    return False


def device_record(reading: Reading, device: Device, host: dict[str, Any]) -> Record | None:
    """The record of a tool's answer the reading sits in, where that record names the device (its id or PCI
    address): a JSON object in a list or under the device's index, or a CSV row. None for a file's or a library's
    reading, or a record that does not say whose it is (leaving it out would shift the records after it)."""
    if reading.where == "table":
        return "table", reading.key, reading.path[:1]
    if reading.where != "command":
        return None
    at = next((i for i, p in enumerate(reading.path) if isinstance(p, int) or str(p).isdigit()), None)
    if at is None or at == len(reading.path) - 1:
        return None
    inner: Any = json.loads(host["commands"][reading.key]["stdout"])
    for step in reading.path[:at + 1]:
        inner = inner[step]
    return ("command", reading.key, reading.path[:at + 1]) if isinstance(inner, dict) and _names(inner, device) \
        else None


def without_record(host: dict[str, Any], record: Record) -> dict[str, Any]:
    """The host state with one device's record left out of a tool's answer (as nvidia-smi prints an error line
    instead of the row of a GPU it cannot query, and a tool's JSON lists the devices it could read)."""
    where, command_line, path = record
    if where != "table":
        return _without_json_key(host, command_line, path)
    commands = dict(host["commands"])
    command = commands[command_line] = dict(commands[command_line])
    lines = command["stdout"].split("\n")
    del lines[int(path[0])]
    command["stdout"] = "\n".join(lines)
    return {**host, "commands": commands}


def _dropped_record_findings(subject: Subject, fx: Any, fam: FamilyInventory, device: Device, own: list[Reading],
                             record: Record) -> list[str]:
    """``invariant a-missing-record-keeps-the-rest``: the device's whole record left out of one tool's answer (not
    its listing: where the device is then not found, nothing is judged). No hook raises; every other device's samples
    stay; and the device's samples no reading of that record gives stay: a metric read elsewhere, or restating the
    device's own facts (``memory_total``, its memory), does not hang on a record that gives none of it."""
    where_kind, command_line, path = record
    host = fx.host.model_dump(mode="json")
    variant = fx.model_copy(update={"host": HostState.model_validate(without_record(host, record)), "faults": []})
    built = subject.build(simulated_host(variant))
    after = built.family(fam.family.name)
    shown = f"line {int(path[0]) + 1}" if where_kind == "table" else ".".join(str(p) for p in path)
    where = (f"invariant a-missing-record-keeps-the-rest, {fx.ref} with `{command_line}` output {shown} "
             f"({device.id}'s record) left out")
    problems = subject.plugin_problems(built, severities=("error", "warning"))
    wrong = [f"{where}: {p.hook or 'a hook'} raised instead of reading it as unknown: {p.message}"
             for p in problems if p.code == "hook-raised"]
    if after is None or device.id not in {d.id for d in after.devices}:
        return wrong  # the record was (part of) the listing: a device left out with it is another check's
    wrong += _metric_findings(fam, after, device, where, reported=bool(problems))
    fed = {s.name for s in fam.metrics if s.device == device.id
           and any(r.where == where_kind and r.key == command_line and r.path[:len(path)] == path
                   for r, _ in candidates(s, device, own))}
    now = samples_by_device(after)
    wrong += [f"{where}: {device.id}'s {s.name} ({s.value:g}), which that record does not give, is gone: a device "
              "missing from one answer loses what that answer gives, never what is read elsewhere or stated by its "
              "own record (memory_total is its memory)" for s in fam.metrics
              if s.device == device.id and s.name not in fed and (device.id, s.name) not in now]
    return wrong
