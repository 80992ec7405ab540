"""Where a fault's change lands on another device than the one it touches, the key the plugin joined the changed
record by (issue 46, held-out round 9's ``g2``: Gaudi's driver status read by ``accel<N>`` = hl-smi index N while
the driver probes modules asynchronously; RAC203 and RAC211 said only that the fault landed on another module).

A fault changes a record on the host (a sysfs directory's file, a library's or a tool's JSON object, a CSV row).
Where that record names the device the fault touches (another field of it holds the device's PCI address or id)
and the device the change landed on has as its index the number the record's place carries (``accel2``, the 2nd
entry of a list, the 2nd row), the plugin joined the record to a device by that number, an enumeration order, and
not by the address the record itself gives. Pure over the fixture's host states: no build.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from rayaccel.hosts.fixtures import Fault, Fixture, apply_faults
from rayaccel.records import Device, FamilyInventory

#: A place's first numbered step (``accel2``, ``card0``, ``hl3``): the number an enumeration gives it.
_NUMBERED = re.compile(r"[A-Za-z][A-Za-z_-]*?(\d+)")

Place = tuple[str, str, tuple[str | int, ...]]


def _leaves(data: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Every scalar of a JSON-shaped value as text, with the keys and indexes that lead to it."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, (*path, str(key)))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _leaves(value, (*path, i))
    elif data is not None:
        yield path, str(data).strip()


def records(state: dict[str, Any]) -> dict[Place, dict[str, str]]:
    """A host state's records, each its fields as text: a directory's files, a JSON object's (or list's) scalars,
    a CSV line's cells."""
    found: dict[Place, dict[str, str]] = {}
    for path, text in (state.get("files") or {}).items():
        directory, _, name = path.rpartition("/")
        found.setdefault(("file", directory, ()), {})[name] = (text or "").strip()
    sources = [("library", name, data) for name, data in (state.get("libraries") or {}).items()]
    for line, answer in (state.get("commands") or {}).items():
        stdout = (answer or {}).get("stdout") or ""
        try:
            sources.append(("command", line, json.loads(stdout)))
        except ValueError:
            rows = [row for row in stdout.splitlines() if row.strip()]
            for i, row in enumerate(rows):
                found[("table", line, (i,))] = {str(j): cell.strip() for j, cell in enumerate(row.split(","))}
    for where, key, data in sources:
        for path, text in _leaves(data):
            if path:
                found.setdefault((where, key, path[:-1]), {})[str(path[-1])] = text
    return found


def _number(place: Place) -> int | None:
    """The number a record's place carries: its first numbered directory, list index or row."""
    where, key, path = place
    if where == "file":
        numbered = [m for m in (_NUMBERED.fullmatch(s) for s in key.strip("/").split("/")) if m]
        return int(numbered[0].group(1)) if numbered else None
    numbers = [int(p) for p in path if isinstance(p, int) or p.isdigit()]
    return numbers[0] if numbers else None


def _describe(place: Place) -> str:
    where, key, path = place
    inner = ".".join(str(p) for p in path)
    return {"file": f"directory {key}", "library": f"library {key} {inner}", "command": f"`{key}` output {inner}",
            "table": f"`{key}` output line {inner}"}[where]


def _naming(fields: dict[str, str], device: Device) -> tuple[str, str, str] | None:
    """The field of a record that names ``device``, what it holds (its PCI address or id) and its text; None if
    none does."""
    bus = (device.pci_bus_id or "").lower().removeprefix("0000:")
    for name, text in sorted(fields.items()):
        value = text.lower()
        if bus and value.removeprefix("0000:") == bus:
            return name, "PCI address", text
        if value == device.id.lower():
            return name, "id", text
    return None


def landed_elsewhere(fx: Fixture, fault: Fault, healthy: FamilyInventory | None,
                     faulty: FamilyInventory | None) -> list[str]:
    """Under ``fault``, each device it touches left as it was while an untouched device's health changed, with the
    record the fault changes that names the touched device and the number that record's place gives the other:
    the join by enumeration order. Empty where the evidence shows no such record."""
    if healthy is None or faulty is None:
        return []
    before = {r.device: r.state for r in healthy.health}
    after = {r.device: r.state for r in faulty.health}
    devices = {d.id: d for d in healthy.devices}
    missed = [devices[d] for d, state in sorted(fault.expected.health.items())
              if d in devices and state != before.get(d) and after.get(d) == before.get(d)]
    landed = [d for d in healthy.devices if d.id not in fault.expected.health and after.get(d.id) != before.get(d.id)]
    if not missed or not landed:
        return []
    old = records(fx.host.model_dump(mode="json"))
    new = records(apply_faults(fx, [fault.name]).model_dump(mode="json"))
    changed = {place: [f for f, text in fields.items() if old.get(place, {}).get(f) != text]
               for place, fields in new.items()}
    wrong = []
    for touched in missed:
        for place, fields in ((p, f) for p, f in changed.items() if f):
            naming = _naming(new[place], touched)
            if naming is None:
                continue
            number = _number(place)
            to = next((d for d in landed if d.index == number), None)
            if to is None:
                continue
            field, kind, text = naming
            wrong.append(
                f"fault {fault.name}: {_describe(place)} is {touched.id}'s record (its {field} holds its {kind} "
                f"{text}); the fault changes its {', '.join(sorted(fields))}, yet {touched.id} stays "
                f"{after.get(touched.id)} and {to.id} goes from {before.get(to.id)} to {after.get(to.id)}: {to.id}'s "
                f"index is {number}, the number the record's place carries: the plugin joins the record to a device "
                f"by that number (an enumeration order the driver need not keep) instead of by the {kind} the record "
                "gives")
    return wrong
