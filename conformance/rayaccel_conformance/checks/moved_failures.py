"""RAC203's ``a-failure-anywhere-is-seen`` (issue 46, held-out round 10's ``a1``: an AMD wrapper reporting a
partitioned GPU's health from its primary partition alone, so a secondary partition that stops answering
amdsmi was named only as "health of 13: expected unhealthy, got absent", an answer the fixture's expectation
alone held: a vendor editing it with the code passed).

A fault writes one unit's record on the host: a library's entry among its siblings (``amdsmi.gpus.'13'``), or a
numbered directory among its siblings (``/sys/class/acme/acme2``, ``.../acme2/die1``). The same change written on a
sibling record is the same vendor signal on another unit. Where the fault as declared changes no unit's health, no
device and no resource, while the same change on a sibling record does, the plugin judges the signal on some
records and not on others: a partition's own failure read only where it is its device's (the first partition), a
die's or a card's counters read on some of them. No expectation is read: the plugin is compared with itself. Only
faults of a health signal's kind are moved (a lost device's or a tool's patch is not one record's), only from a
record that names a discovered unit (its key a partition's id, a field its device's id or PCI address, its number
the device's index), and never a patch whose value names the unit itself.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rayaccel.hosts.fixtures import Fault, Fixture, HostState, merge_patch
from rayaccel.records import Device, FamilyInventory, NodeInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.fatal_counts import SIGNAL_KINDS
from rayaccel_conformance.harness.subject import Subject

#: A path part numbering a record among its siblings: ``acme2``, ``die1``, ``card0``, a bare ``5``.
_NUMBERED = re.compile(r"([A-Za-z_-]*?)(\d+)")
#: Sibling records a declared fault is moved to (each is a build), the ones naming a device first.
MAX_MOVES = 3


@dataclass(frozen=True)
class Move:
    """The fault's patch written on a sibling record: where it was, where it goes, the patch there."""

    record: str  # the record the fault writes, described
    sibling: str  # the sibling record, described
    fields: dict[str, Any]  # the record's scalars as the healthy host has them (what names its unit)
    sibling_fields: dict[str, Any]
    key: str  # the record's own key or numbered part (``13``, ``acme2``)
    sibling_key: str
    patch: dict[str, Any]
    changed: str = ""  # the record's fields the fault changes, where the patch does not say them (a tool's output)


def _leaves(node: Any, keys: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from _leaves(value, (*keys, str(key)))
    else:
        yield keys, node


def _scalars(node: Any) -> dict[str, Any]:
    """A record's scalars by their dotted path (lists and nested objects flattened)."""
    if isinstance(node, list):
        node = {str(i): v for i, v in enumerate(node)}
    if not isinstance(node, dict):
        return {}
    found: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(value, dict | list):
            found.update({f"{key}.{k}": v for k, v in _scalars(value).items()})
        else:
            found[str(key)] = value
    return found


def _alike(one: dict[str, Any], other: dict[str, Any]) -> bool:
    """Whether two objects are records of one kind: most of their keys shared (a secondary partition's record may
    carry an ``errors`` its primary's lacks)."""
    a, b = set(one), set(other)
    return len(a | b) > 1 and len(a & b) * 2 > len(a | b)


def _json_moves(patch: dict[str, Any], host: dict[str, Any]) -> list[Move]:
    """The patch (no ``files``) written on each sibling of the one record all its changes lie in: the deepest
    object whose siblings are objects of its kind."""
    paths = [keys for keys, _ in _leaves(patch)]
    if not paths or any(len(p) < 2 for p in paths):
        return []
    level = None
    for depth in range(1, min(len(p) for p in paths)):
        keys = {p[: depth + 1] for p in paths}
        if len(keys) != 1:
            break
        parent: Any = host
        for key in paths[0][:depth]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        own = paths[0][depth]
        if isinstance(parent, dict) and isinstance(parent.get(own), dict) and any(
                isinstance(v, dict) and k != own and _alike(v, parent[own]) for k, v in parent.items()):
            level = (depth, parent)
    if level is None:
        return []
    depth, parent = level
    own = paths[0][depth]
    where = ".".join(paths[0][2:depth + 1])
    moves = []
    for sibling, value in parent.items():
        if sibling == own or not isinstance(value, dict) or not _alike(value, parent[own]):
            continue
        moved = copy.deepcopy(patch)
        node = moved
        for key in paths[0][:depth]:
            node = node[key]
        node[sibling] = node.pop(own)
        head = paths[0][0]
        what = f"library {paths[0][1]}" if head == "libraries" else head
        moves.append(Move(f"{what} {where}", f"{what} {'.'.join((*paths[0][2:depth], sibling))}",
                          _scalars(parent[own]), _scalars(value), own, sibling, moved))
    return moves


def _file_moves(files: dict[str, Any], host_files: dict[str, Any]) -> list[Move]:
    """The changed files written in each sibling directory of the one numbered directory they all lie in (the
    deepest with siblings on the host): ``acme2/die1`` -> ``acme2/die0``, ``acme2`` -> ``acme0``."""
    split = [path.split("/") for path in files]
    if not split:
        return []
    for depth in range(min(len(p) for p in split) - 2, 0, -1):
        if len({tuple(p[: depth + 1]) for p in split}) != 1:
            continue
        own = split[0][depth]
        m = _NUMBERED.fullmatch(own)
        if m is None:
            continue
        parent = "/".join(split[0][:depth])
        siblings = sorted({parts[depth] for parts in (p.split("/") for p in host_files)
                           if len(parts) > depth + 1 and "/".join(parts[:depth]) == parent
                           and parts[depth] != own and (s := _NUMBERED.fullmatch(parts[depth])) is not None
                           and s.group(1) == m.group(1)})
        if not siblings:
            continue
        record = f"{parent}/{own}"

        def fields(directory: str) -> dict[str, Any]:
            # The directory's own files, and its parents' (a die's directory is named by its card's uuid file).
            parents = ["/".join(directory.split("/")[:n]) for n in range(directory.count("/") + 1, 1, -1)]
            return {f"{d}/{p[len(d) + 1:]}": (v or "").strip() for d in parents for p, v in host_files.items()
                    if p.startswith(d + "/") and "/" not in p[len(d) + 1:]}

        moves = []
        for sibling in siblings:
            there = f"{parent}/{sibling}"
            moved = {f"{there}/{path[len(record) + 1:]}": value for path, value in files.items()}
            if any((path in host_files) != (new in host_files) for path, new in zip(files, moved, strict=True)):
                continue  # the sibling has not the files the record has: no record of the same kind
            moves.append(Move(f"directory {record}", f"directory {there}", fields(record), fields(there), own,
                              sibling, {"files": moved}))
        return moves
    return []


def _json_changes(old: Any, new: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]] | None:
    """The places a JSON value changes from ``old`` to ``new`` (a key added counts); None where its shape does (a
    key removed, a list resized, a type changed)."""
    if isinstance(old, dict) and isinstance(new, dict):
        if set(old) - set(new):
            return None
        found: list[tuple[str | int, ...]] = []
        for key, value in new.items():
            inner = _json_changes(old[key], value, (*path, key)) if key in old else [(*path, key)]
            if inner is None:
                return None
            found += inner
        return found
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return None
        found = []
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            inner = _json_changes(a, b, (*path, i))
            if inner is None:
                return None
            found += inner
        return found
    return [] if old == new else [path]


def _at(data: Any, path: tuple[str | int, ...]) -> Any:
    """The value at ``path`` of a JSON value; None where it has no such place."""
    for step in path:
        if isinstance(data, dict):
            data = data.get(step)
        elif isinstance(data, list) and isinstance(step, int) and step < len(data):
            data = data[step]
        else:
            return None
    return data


def _put(holder: Any, key: str | int, value: Any) -> bool:
    """``value`` set at ``key`` of ``holder``; False where ``holder`` has no such place."""
    if isinstance(holder, dict):
        holder[key] = value
        return True
    if isinstance(holder, list) and isinstance(key, int) and key < len(holder):
        holder[key] = value
        return True
    return False


def _children(node: Any) -> list[tuple[str | int, Any]]:
    return list(node.items()) if isinstance(node, dict) else list(enumerate(node)) if isinstance(node, list) else []


def _output_moves(line: str, old_text: str, new_text: str) -> list[Move]:
    """A tool's JSON output whose change lies in one record among siblings of its kind (a list's entry, an object's
    member), the change written on each sibling instead."""
    try:
        old, new = json.loads(old_text), json.loads(new_text)
    except ValueError:
        return _row_moves(line, old_text, new_text)
    paths = _json_changes(old, new)
    if not paths:
        return []
    level = None
    for depth in range(min(len(p) for p in paths)):
        if len({p[: depth + 1] for p in paths}) != 1:
            break
        parent, own = _at(old, paths[0][:depth]), paths[0][depth]
        record = _at(old, paths[0][: depth + 1])
        if isinstance(record, dict) and any(isinstance(v, dict) and k != own and _alike(v, record)
                                            for k, v in _children(parent)):
            level = depth
    if level is None:
        return []
    parent, own = _at(old, paths[0][:level]), paths[0][level]
    record = _at(old, paths[0][: level + 1])
    where = ".".join(str(p) for p in paths[0][:level])
    moves = []
    for sibling, value in _children(parent):
        if sibling == own or not isinstance(value, dict) or not _alike(value, record):
            continue
        moved = copy.deepcopy(old)
        for path in paths:
            there = (*path[:level], sibling, *path[level + 1:])
            if not _put(_at(moved, there[:-1]), there[-1], copy.deepcopy(_at(new, path))):
                break  # the sibling has not the place the record has: no record of the same kind
        else:
            changed = ", ".join(sorted(".".join(str(p) for p in path[level + 1:]) for path in paths))
            moves.append(Move(f"`{line}` output {where}{'.' if where else ''}{own}",
                              f"`{line}` output {where}{'.' if where else ''}{sibling}", _scalars(record),
                              _scalars(value), "", "", {"commands": {line: {"stdout": json.dumps(moved, indent=1)}}},
                              changed))
    return moves


def _row_moves(line: str, old_text: str, new_text: str) -> list[Move]:
    """A tool's text output with one line changed in some of its cells (a CSV row), the changed cells written on each
    other line of as many cells instead (a header line names no unit, so no move to it is weighed)."""
    old, new = old_text.split("\n"), new_text.split("\n")
    changed = [i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b]
    if len(old) != len(new) or len(changed) != 1:
        return []
    row = changed[0]
    before, after = old[row].split(","), new[row].split(",")
    cells = [j for j, (a, b) in enumerate(zip(before, after, strict=False)) if a != b]
    if len(before) != len(after) or len(before) < 2:
        return []
    moves = []
    for other, text in enumerate(old):
        sibling = text.split(",")
        if other == row or len(sibling) != len(before):
            continue
        lines = list(old)
        lines[other] = ",".join(after[j] if j in cells else cell for j, cell in enumerate(sibling))
        moves.append(Move(f"`{line}` output line {row}", f"`{line}` output line {other}",
                          {str(j): c.strip() for j, c in enumerate(before)},
                          {str(j): c.strip() for j, c in enumerate(sibling)}, "", "",
                          {"commands": {line: {"stdout": "\n".join(lines)}}},
                          ", ".join(f"field {j}" for j in cells)))
    return moves


def sibling_moves(fault: Fault, host: dict[str, Any]) -> list[Move]:
    """The fault's patch moved to each sibling of the one record it writes; none where it writes more than one
    record or a metadata answer (a whole listing is no one unit's record)."""
    patch = fault.patch
    if set(patch) - {"files", "libraries", "commands"} or len(patch) != 1:
        return []
    if "files" in patch:
        return _file_moves(patch["files"], host.get("files") or {})
    if "commands" in patch:
        commands = patch["commands"]
        line, answer = next(iter(commands.items())) if len(commands) == 1 else ("", None)
        before = (host.get("commands") or {}).get(line) or {}
        if not isinstance(answer, dict) or set(answer) != {"stdout"} or "stdout" not in before:
            return []
        return _output_moves(line, before["stdout"] or "", answer["stdout"] or "")
    return _json_moves(patch, host)


def _bus(device: Device) -> str:
    return (device.pci_bus_id or "").lower().removeprefix("0000:")


def unit_of(key: str, fields: dict[str, Any], devices: list[Device]) -> str | None:
    """Which discovered unit a record is: a partition by its key (AMD's logical GPU ``13``) or its id among the
    record's values (a MIG uuid), else a device by its id or PCI address among the values, or by the number its
    key carries (``acme2``). None where it names none."""
    values = {str(v).strip().lower() for v in fields.values() if v is not None}
    for device in devices:
        for i, partition in enumerate(device.partitions):
            if partition.id == key or (not partition.id.isdigit() and partition.id.lower() in values):
                first = " (its first: the device's own record)" if i == 0 else ""
                return f"partition {partition.id} of {device.id}{first}"
    for device in devices:
        if device.id.lower() in values or (_bus(device) and any(v.removeprefix("0000:") == _bus(device)
                                                                for v in values)):
            return f"{device.id}'s record"
    number = _NUMBERED.fullmatch(key)
    for device in devices:
        if number is not None and int(number.group(2)) == device.index:
            return f"{device.id}'s record (index {device.index})"
    return None


def _problems(inventory: NodeInventory, plugin: str) -> set[str]:
    return {p.code for p in inventory.problems if p.plugin == plugin}


def _states(family: FamilyInventory | None) -> dict[str, str]:
    """Each unit's health state: every discovered device (healthy where unreported) and every unit reported."""
    if family is None:
        return {}
    states = {d.id: "healthy" for d in family.devices}
    states.update({r.device: r.state for r in family.health})
    return states


def _changes(healthy: FamilyInventory, after: FamilyInventory | None) -> list[str]:
    """What the build ``after`` answers otherwise than the healthy one: unit states, devices, resources."""
    before, now = _states(healthy), _states(after)
    said = [f"{unit} {now.get(unit, 'left out')}" for unit in sorted(set(before) | set(now))
            if before.get(unit, "healthy") != now.get(unit, "left out")]
    resources = after.resources if after else {}
    return said + [f"resource {name} {healthy.resources.get(name, 0):g} -> {resources.get(name, 0):g}"
                   for name in sorted(set(healthy.resources) | set(resources))
                   if healthy.resources.get(name) != resources.get(name)]


def _failures(healthy: FamilyInventory, after: FamilyInventory | None) -> list[str]:
    """The units healthy before that ``after`` reports not healthy (a device whose id the change alters, found
    anew, is no failure), with their reasons and the resources that change."""
    if after is None:
        return []
    before, new = _states(healthy), {d.id for d in after.devices} - {d.id for d in healthy.devices}
    failed = []
    for report in sorted(after.health, key=lambda r: r.device):
        if report.state != "healthy" and before.get(report.device, "healthy") == "healthy" and report.device not in new:
            codes = ", ".join(c.code for c in report.reasons)
            failed.append(f"{report.device} {report.state}" + (f" [{codes}]" if codes else ""))
    return failed + [c for c in _changes(healthy, after) if failed and c.startswith("resource ")]


def unseen_failure_findings(subject: Subject, fx: Fixture, fault: Fault, base: NodeInventory,
                            faulted: NodeInventory) -> list[str]:
    """``invariant a-failure-anywhere-is-seen`` under one fault: where the fault as declared changes nothing the
    plugin answers about health (unit states, devices, resources, problems), its change written on a sibling
    record must fail no unit either."""
    family = subject.family().name
    healthy, faulty = base.family(family), faulted.family(family)
    if fault.kind not in SIGNAL_KINDS or healthy is None or faulty is None or _changes(healthy, faulty):
        return []
    if _problems(faulted, subject.name) - _problems(base, subject.name):
        return []  # the plugin saw the fault and said so
    host = fx.host.model_dump(mode="json")
    devices = list(healthy.devices)
    moves = sibling_moves(fault, host)
    if not moves:
        return []
    record = unit_of(moves[0].key, moves[0].fields, devices)
    if record is None:
        return []  # a record of no discovered unit: a device the plugin rightly leaves out may fail unseen
    ids = {d.id.lower() for d in devices} | {_bus(d) for d in devices if d.pci_bus_id}
    if any(isinstance(v, str) and v.strip().lower().removeprefix("0000:") in ids for _, v in _leaves(fault.patch)):
        return []
    named = [(m, unit_of(m.sibling_key, m.sibling_fields, devices)) for m in moves]
    owner = next((d.id for d in devices if d.id in record), "")

    def order(pick: tuple[Move, str | None]) -> tuple[bool, bool]:
        # A device's own record first (where a plugin surely reads the signal), the record's own device's first.
        said = pick[1] or ""
        return "its first" not in said and "'s record" not in said, owner not in said

    tried = sorted((x for x in named if x[1] is not None), key=order)[:MAX_MOVES]
    for move, sibling in tried:
        variant = fx.model_copy(update={"host": HostState.model_validate(merge_patch(host, move.patch)),
                                        "faults": []})
        changed = _failures(healthy, subject.build(simulated_host(variant), with_metrics=False).family(family))
        if not changed:
            continue
        if record.startswith("partition") and "its first" not in record:
            cause = ("a partition's own failure goes unreported where its device's is reported: report a "
                     "partition's failure under the partition's id")
        elif owner and owner in (sibling or ""):
            cause = (f"{owner} is judged by one of its records and not by the other: a failure in any part of a "
                     "device (a die, a partition, a sub-record the vendor keeps) is the device's")
        else:
            cause = "the plugin judges this signal on some devices' records only: read every device's by one rule"
        patched = {".".join(keys[2:]) if keys[0] != "files" else keys[1].rsplit("/", 1)[-1]
                   for keys, _ in _leaves(fault.patch)}
        changes = move.changed or ", ".join(sorted(patched))
        return [f"invariant a-failure-anywhere-is-seen, {fx.ref} fault {fault.name}: its change of {move.record} "
                f"({changes}; the record is {record}) changes no unit's health, no device and no resource the "
                f"plugin answers; the same change on {move.sibling} ({sibling}) gives {', '.join(changed)}: "
                f"{cause}"]
    return []
