"""Renumbered entries (RAC224): the same devices enumerated by the driver under other numbers, of another width and
in reverse (``acme0``..``acme3`` as ``acme13``..``acme10``), derived at the host seam by renaming paths alone.

The SDK cannot rewrite a vendor's formats, but a path is a path: where every device of the fixture has an entry
``<prefix><index>`` (a sysfs directory, a device node) and nothing but files name the devices (no command output
or library data lists their ids or PCI addresses, which renaming paths would contradict), the suite renames each
entry and requires every device to keep its id and facts (its record less index and units, health and the
metrics it has; not its links, which may follow a number that is a position). A plugin that counts entries from
0, takes an index from one character or pairs files with devices by position loses or mixes them. Each helper
here is pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from rayaccel.records import Device, FamilyInventory

#: A path segment that numbers an entry: its prefix and number (``acme2``, ``accel0``, ``card1``).
_ENTRY = re.compile(r"([A-Za-z][A-Za-z_-]*?)(\d+)")


def names_devices_outside_files(host: dict[str, Any], devices: list[Device]) -> bool:
    """Whether a command's output, library data or an HTTP answer names a device (its id or PCI address)."""
    names = [n.lower() for d in devices for n in (d.id, (d.pci_bus_id or "").lower().removeprefix("0000:")) if n]
    text = json.dumps([host.get("commands") or {}, host.get("libraries") or {}, host.get("http") or {}]).lower()
    return any(name in text for name in names)
#: Where renumbered entries start: past ten, so the numbers have another width than the fixture's (0-9).
RENUMBER_BASE = 10


def numbered_prefix(files: dict[str, str], devices: list[Device]) -> str | None:
    """The name every device's own entry has with its index (``acme`` for ``/sys/class/acme/acme2/...``): the
    prefix of a path segment ``<prefix><index>`` found for every device; None when the devices have no such
    entry, or share one name with other things."""
    found: dict[str, set[int]] = {}
    for path in files:
        for segment in path.strip("/").split("/"):
            match = _ENTRY.fullmatch(segment)
            if match:
                found.setdefault(match.group(1), set()).add(int(match.group(2)))
    indexes = {d.index for d in devices}
    prefixes = [p for p, numbers in found.items() if indexes and numbers == indexes]
    return prefixes[0] if len(prefixes) == 1 else None


def entry_renamer(prefix: str, indexes: list[int]) -> Callable[[str], str]:
    """The renaming of a path: every ``<prefix><n>`` segment renumbered, in reverse and from
    :data:`RENUMBER_BASE` on (``acme0``..``acme3`` become ``acme13``..``acme10``)."""
    order = sorted(indexes)
    new = {n: RENUMBER_BASE + len(order) - 1 - i for i, n in enumerate(order)}

    def rename(path: str) -> str:
        parts = []
        for segment in path.split("/"):
            match = _ENTRY.fullmatch(segment)
            renamed = match is not None and match.group(1) == prefix and int(match.group(2)) in new
            parts.append(f"{prefix}{new[int(match.group(2))]}" if match is not None and renamed else segment)
        return "/".join(parts)

    return rename


def renumbered_host(host: dict[str, Any], rename: Callable[[str], str]) -> dict[str, Any]:
    """The host with every file renamed: the same entries, enumerated another way."""
    state: dict[str, Any] = json.loads(json.dumps(host))
    state["files"] = {rename(path): text for path, text in (host.get("files") or {}).items()}
    return state


def renamed_paths(value: Any, rename: Callable[[str], str]) -> Any:
    """``value`` with every absolute path in it renamed (a device file the plugin reports moves with its entry)."""
    if isinstance(value, str):
        return ",".join(rename(v) if v.startswith("/") else v for v in value.split(","))
    if isinstance(value, dict):
        return {k: renamed_paths(v, rename) for k, v in value.items()}
    if isinstance(value, list):
        return [renamed_paths(v, rename) for v in value]
    return value


def device_facts(family: FamilyInventory | None) -> dict[str, Any]:
    """Per device id, what renumbering its entry must not change: its record less index and units, its health
    state and the metrics it has. Not its links: where the vendor's number is a position (a TPU chip's place in
    its ICI mesh), another number is another place."""
    if family is None:
        return {}
    state = {r.device: r.state for r in family.health}
    facts = {}
    for d in family.devices:
        facts[d.id] = {
            "record": d.model_dump(mode="json", exclude={"index", "units", "partitions"}),
            "units": len(d.unit_ids), "health": state.get(d.id),
            "metrics": sorted({s.name for s in family.metrics if s.device == d.id})}
    return facts


def renumbering_differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What changed about the devices when their entries were renumbered, one line each, with the values."""
    wrong = []
    gone, new = sorted(set(before) - set(after)), sorted(set(after) - set(before))
    if gone or new:
        wrong.append(f"the devices change: {len(gone)} gone ({', '.join(gone[:2])}), {len(new)} new "
                     f"({', '.join(new[:2])})" + (
                         ": no entry numbered from 10 up is found (their numbers have two digits, none is 0): "
                         "entries listed by a one-digit pattern (a glob `[0-9]`, a regex `\\d$`) or enumerated "
                         "0, 1, 2, ... until the first missing one; list the entries the driver has"
                         if gone and len(gone) == len(before) and not new else ""))
    for dev in sorted(set(before) & set(after)):
        for part in before[dev]:
            if before[dev][part] != after[dev][part]:
                old, now = before[dev][part], after[dev][part]
                if isinstance(old, dict):
                    key = next(k for k in sorted({*old, *now}) if old.get(k) != now.get(k))
                    old, now, part = old.get(key), now.get(key), key
                wrong.append(f"{dev}: its {part} went from {old!r} to {now!r}")
                break
    return wrong
