"""RAC203's ``one-port-down-is-enough`` (issue 46, held-out round 16's ``g2``: a Gaudi module degraded only once
three of its internal ports were DOWN, "one peer's worth", and every port fault of the fixtures took down three
ports or all of them, so the tolerance passed).

A vendor tool lists a device's ports or links one record each, with its state: ``hl-smi -n link`` prints ``port
N: UP`` or ``DOWN`` per port, NVML answers ``nvmlDeviceGetNvLinkState`` per NVLink, ``/sys/class/infiniband/<hca>/
ports/<n>/state`` holds one port's state. Each record is one port's answer: a port DOWN is a lane the device has
lost, and the vendors' own health checks fire on the first one (DCGM's ``DCGM_FR_NVLINK_DOWN``, "GPU %u's NvLink
link %d is currently down", is per link: NVIDIA/DCGM dcgmlib/dcgm_errors.h; Azure's node health checks fail a GPU
on any one ``<inactive>`` line of ``nvidia-smi nvlink -s``, FaultCode NHC2016: Azure/azurehpc-health-checks
customTests/azure_gpu_nvlink.nhc). A plugin that weighs how many are down (``>= 3``, "one peer's
worth", a share of the ports) is right wherever its fixture's fault takes down enough of them. Here each fault
that switches two or more like records of one listing from the same on word to the same off word (``UP`` ->
``DOWN``, ``1`` -> ``0``, ``active`` -> ``inactive``), leaving a device not healthy, is applied with only one of
them switched (the first, then the last; every other reading as the fault leaves it), and of the devices the whole
fault takes out of health (healthy on the fixture) one at least must stay not healthy (a peer of the port's device
may recover with one lane lost, the device itself not). Only a state's on and off words are taken, never a count (a
count a plugin may weigh is :mod:`.fatal_counts`' concern). Each helper here but the last is pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rayaccel.hosts.fixtures import Fault, Fixture, HostState, apply_faults, merge_patch
from rayaccel.records import FamilyInventory, NodeInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.harness.subject import Subject

#: A state's on word -> its off word (compared case-free; the vendor's case is kept).
OFF_WORDS = {"up": "down", "active": "inactive", "enabled": "disabled", "online": "offline", "connected":
             "disconnected", "linkup": "linkdown"}
#: A JSON state field's on value -> its off value (NVML's ``nvmlDeviceGetNvLinkState``: 1 active, 0 inactive),
#: taken only under a key naming a state.
OFF_VALUES = {"1": "0", "true": "false"}
_STATE_KEY = re.compile(r"(?i)(link_?|port_?)?(state|status|active|is_active|up|enabled)")
#: Fault kinds whose patch is a device's health signal (a lost device, a hung or garbled tool are others').
SIGNAL_KINDS = ("fatal-error", "ecc", "degraded", "other")
_TOKEN = re.compile(r"[A-Za-z0-9_]+|[^A-Za-z0-9_]+")
_DIGITS = re.compile(r"\d+")


def switched_off(before: str, after: str) -> bool:
    """Whether ``after`` is ``before``'s off word (``UP`` -> ``DOWN``)."""
    return OFF_WORDS.get(before.lower()) == after.lower()


@dataclass(frozen=True)
class Record:
    """One record a fault switches off: where it is, how it reads before and under the fault."""

    section: str  # "commands" (one line of its output), "files" (one file) or "libraries" (one JSON leaf)
    key: str  # the command line, the file's path or the library's name
    at: tuple[str | int, ...]  # the line's number, or the path to the JSON leaf; () for a file
    before: Any
    after: Any

    def group(self) -> tuple[str, str, tuple[str | int, ...]]:
        """Records of one listing share this: a command's lines, files whose paths differ in numbers only, a
        collection's leaves whose paths differ in one key."""
        if self.section == "commands" and all(isinstance(p, int) for p in self.at):
            return self.section, self.key, ()
        if self.section == "files":
            return self.section, _DIGITS.sub("#", self.key), ()
        return self.section, self.key, tuple("#" if str(p).isdigit() else p for p in self.at)

    def describe(self) -> str:
        if self.section == "files":
            return f"file {self.key} ({str(self.before).strip()!r} -> {str(self.after).strip()!r})"
        if self.section == "commands" and len(self.at) == 1 and isinstance(self.at[0], int):
            return f"`{self.key}` line {self.at[0] + 1} ({str(self.before).strip()!r} -> {str(self.after).strip()!r})"
        where = f"library {self.key}" if self.section == "libraries" else f"`{self.key}` output"
        return f"{where} {'.'.join(map(str, self.at))} ({self.before!r} -> {self.after!r})"


def _line_switch(before: str, after: str) -> tuple[str, str] | None:
    """The one word a line switches from an on to an off word, the rest of the line kept; None otherwise."""
    old, new = _TOKEN.findall(before), _TOKEN.findall(after)
    if len(old) != len(new):
        return None
    changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
    if len(changed) != 1 or not switched_off(*changed[0]):
        return None
    return changed[0][0].lower(), changed[0][1].lower()


def _leaves(data: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, (*path, str(key)))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _leaves(value, (*path, i))
    else:
        yield path, data


def _at(data: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        if isinstance(data, dict) and str(step) in data:
            data = data[str(step)]
        elif isinstance(data, list) and isinstance(step, int) and step < len(data):
            data = data[step]
        else:
            return None
    return data


def _json_switches(section: str, key: str, before: Any, after: Any) -> list[tuple[Record, tuple[str, str]]]:
    """The state fields ``after`` (the whole answer, or only a fault's patch of it) switches off from ``before``."""
    found = []
    for path, value in _leaves(after):
        old = _at(before, path)
        if old is None or old == value or isinstance(old, dict | list) or type(old) is not type(value):
            continue
        if isinstance(old, float) or isinstance(value, float):
            continue
        pair = (str(old).lower(), str(value).lower())
        if switched_off(*pair) or (OFF_VALUES.get(pair[0]) == pair[1] and path
                                   and _STATE_KEY.fullmatch(str(path[-1]))):
            found.append((Record(section, key, path, old, value), pair))
    return found


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def switched_records(base: dict[str, Any], faulty: dict[str, Any],
                     patch: dict[str, Any] | None = None) -> list[tuple[Record, tuple[str, str]]]:
    """Each record the fault switches from an on to an off word, with that pair of words; only where the fault's
    ``patch`` writes, when it is given (a host's other answers are the same before and under it)."""
    found: list[tuple[Record, tuple[str, str]]] = []
    written = patch if patch is not None else faulty
    for line in (written.get("commands") or {}):
        answer = (faulty.get("commands") or {}).get(line)
        was = (base.get("commands") or {}).get(line)
        if not was or not answer or was.get("stdout") == answer.get("stdout"):
            continue
        old, new = str(was.get("stdout") or ""), str(answer.get("stdout") or "")
        if (old_data := _json(old)) is not None and (new_data := _json(new)) is not None:
            found += _json_switches("commands", line, old_data, new_data)
            continue
        old_lines, new_lines = old.splitlines(), new.splitlines()
        if len(old_lines) != len(new_lines):
            continue
        for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)):
            if a != b and (pair := _line_switch(a, b)):
                found.append((Record("commands", line, (i,), a, b), pair))
    for path in (written.get("files") or {}):
        was_file, file = (base.get("files") or {}).get(path), (faulty.get("files") or {}).get(path)
        if isinstance(was_file, str) and isinstance(file, str) and "\n" not in was_file.strip() \
                and switched_off(was_file.strip(), file.strip()):
            found.append((Record("files", path, (), was_file, file), (was_file.strip().lower(), file.strip().lower())))
    for name, data in (written.get("libraries") or {}).items():
        was = (base.get("libraries") or {}).get(name)
        if was is not None and data is not None:
            found += _json_switches("libraries", name, was, data)
    return found


def like_groups(base: dict[str, Any], faulty: dict[str, Any],
                patch: dict[str, Any] | None = None) -> list[list[Record]]:
    """The fault's switched records by listing, where two or more of one listing switch the same way."""
    groups: dict[tuple[Any, ...], list[Record]] = {}
    for record, pair in switched_records(base, faulty, patch):
        groups.setdefault((*record.group(), pair), []).append(record)
    return [records for records in groups.values() if len(records) > 1]


def with_only(base: dict[str, Any], faulty: dict[str, Any], group: list[Record], kept: Record) -> dict[str, Any]:
    """The host under the fault with every record of ``group`` but ``kept`` as it was before the fault."""
    state: dict[str, Any] = json.loads(json.dumps(faulty))
    for record in group:
        if record is kept:
            continue
        if record.section == "files":
            state["files"][record.key] = record.before
            continue
        if record.section == "commands" and len(record.at) == 1 and isinstance(record.at[0], int):
            answer = state["commands"][record.key]
            lines = str(answer["stdout"]).split("\n")
            lines[record.at[0]] = record.before
            answer["stdout"] = "\n".join(lines)
            continue
        if record.section == "commands":
            parsed = json.loads(state["commands"][record.key]["stdout"])
            _set(parsed, record.at, record.before)
            state["commands"][record.key]["stdout"] = json.dumps(parsed, indent=1)
        else:
            _set(state["libraries"][record.key], record.at, record.before)
    return state


def _set(data: Any, path: tuple[str | int, ...], value: Any) -> None:
    for step in path[:-1]:
        data = data[step]
    data[path[-1]] = value


def _not_healthy(family: FamilyInventory | None) -> dict[str, str]:
    """Each listed device the family reports degraded or worse: id -> its state and reason codes."""
    if family is None:
        return {}
    reports = {r.device: r for r in family.health}
    found = {}
    for device in family.devices:
        report = reports.get(device.id)
        if report is not None and report.state != "healthy":
            codes = ", ".join(r.code for r in report.reasons)
            found[device.id] = f"{report.state}" + (f" [{codes}]" if codes else "")
    return found


def _state_of(family: FamilyInventory | None, device: str) -> str:
    if family is None or all(d.id != device for d in family.devices):
        return "left out"
    report = next((r for r in family.health if r.device == device), None)
    return "reported without a health record" if report is None else report.state


def _written(fx: Fixture, fault: Fault) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The host's answers ``fault`` writes, before and under it, and its patch."""
    host, patch = fx.host, fault.patch
    before: dict[str, Any] = {
        "commands": {c: host.commands[c].model_dump(mode="json") for c in patch.get("commands") or {}
                     if c in host.commands},
        "files": {f: host.files[f] for f in patch.get("files") or {} if f in host.files},
        "libraries": {n: host.libraries[n] for n in patch.get("libraries") or {} if n in host.libraries}}
    return before, merge_patch(before, patch), patch


def one_port_down_findings(subject: Subject, fx: Fixture, fault: Fault, faulty: NodeInventory) -> list[str]:
    """``invariant one-port-down-is-enough`` under one fault: each listing of which it switches two or more like
    records off, switched for its first record only and for its last only, leaves a device the whole fault takes out
    of health (healthy on the fixture) still not healthy."""
    family_name = subject.family().name
    if fault.kind not in SIGNAL_KINDS:
        return []
    # The devices the fault takes out of health (one already out on the fixture says nothing of the fault).
    before = _not_healthy(subject.inventory(fx.ref).family(family_name))
    down = {device: said for device, said in _not_healthy(faulty.family(family_name)).items() if device not in before}
    if not down:
        return []
    # Only what the patch writes can switch: compare those answers first, the whole host only for a variant.
    if not like_groups(*_written(fx, fault)):
        return []
    base = fx.host.model_dump(mode="json")
    under = apply_faults(fx, [fault.name]).model_dump(mode="json")
    wrong = []
    for group in like_groups(base, under, fault.patch):
        for kept in dict.fromkeys((group[0], group[-1])):
            variant = fx.model_copy(update={"host": HostState.model_validate(with_only(base, under, group, kept)),
                                            "faults": []})
            after = subject.build(simulated_host(variant), with_metrics=False).family(family_name)
            if set(down) & set(_not_healthy(after)):
                continue  # a peer of the port's device may recover with one lane lost; the device keeps its state
            for device, said in down.items():
                wrong.append(f"invariant one-port-down-is-enough, {fx.ref} under fault {fault.name}: it switches "
                             f"{len(group)} records off ({', '.join(r.describe() for r in group[:4])}"
                             f"{', ...' if len(group) > 4 else ''}) and {device} is {said}; with only "
                             f"{kept.describe()} switched, {device} is {_state_of(after, device)}: each port or "
                             "link the vendor's tool reports down is a lane the device lost (DCGM's NVLINK_DOWN "
                             "and Azure's NHC2016 fire on one link); report it from the first one, never from a "
                             "count of them")
            if wrong:
                return wrong
    return wrong


def _lanes_at(family: FamilyInventory | None) -> dict[tuple[str, str], int]:
    """Each link of the family's topology (its two ends, sorted) -> the lanes it states."""
    if family is None:
        return {}
    found: dict[tuple[str, str], int] = {}
    for link in family.topology.links:
        ends = (link.a, link.b) if link.a <= link.b else (link.b, link.a)
        found[ends] = found.get(ends, 0) + link.lanes
    return found


def one_lane_down_findings(subject: Subject, fx: Fixture, fault: Fault, faulty: NodeInventory) -> list[str]:
    """``invariant one-port-down-is-a-lane-less`` under one fault: where it switches two or more like records of one
    listing off and the node's links lose lanes by it, switched for its first record only and for its last only, the
    links still lose a lane (in all; a link gone loses all its lanes). Only where the plugin counts lanes: a link the
    whole fault takes lanes from had two or more."""
    family_name = subject.family().name
    healthy = _lanes_at(subject.inventory(fx.ref).family(family_name))
    under = _lanes_at(faulty.family(family_name))
    lost = {ends: lanes for ends, lanes in healthy.items() if under.get(ends, 0) < lanes}
    if not lost or max(lost.values()) < 2 or sum(under.values()) >= sum(healthy.values()):
        return []
    if not like_groups(*_written(fx, fault)):
        return []
    base = fx.host.model_dump(mode="json")
    whole = apply_faults(fx, [fault.name]).model_dump(mode="json")
    for group in like_groups(base, whole, fault.patch):
        for kept in dict.fromkeys((group[0], group[-1])):
            variant = fx.model_copy(update={"host": HostState.model_validate(with_only(base, whole, group, kept)),
                                            "faults": []})
            after = _lanes_at(subject.build(simulated_host(variant), with_metrics=False).family(family_name))
            if sum(after.values()) < sum(healthy.values()):
                continue
            (a, b), lanes = sorted(lost.items())[0]
            return [f"invariant one-port-down-is-a-lane-less, {fx.ref} under fault {fault.name}: it switches "
                    f"{len(group)} records off ({', '.join(r.describe() for r in group[:4])}"
                    f"{', ...' if len(group) > 4 else ''}) and the links lose lanes ({a} - {b}: {lanes} -> "
                    f"{under.get((a, b), 0)}; {sum(healthy.values())} lanes in all -> {sum(under.values())}); with "
                    f"only {kept.describe()} switched, the links keep every lane ({sum(after.values())} in all): "
                    "each port the vendor's tool reports down is a lane the device lost (hl-smi -n link prints one "
                    "port a line, NVML one NVLink's state a call). Count a link's lanes from the ports or links the "
                    "tool states up between its two devices (where it names no peer, a device's up ports spread "
                    "over its peers), so one port down is one lane less"]
    return []
