"""One link of a device switched off at the host seam (RAC211's ``one-link-down-keeps-the-others``).

A device's links are often listed as records numbered 0, 1, 2, ... each with its state (NVML's
``nvmlDeviceGetNvLinkState`` per link, recorded as ``nvlink: {'0': {state: 1, ...}, ...}``), and a plugin that
walks them until the first one that is off (``break`` where ``continue`` was meant) is right on every fixture whose
links are all up, or all down. A link down ahead of active ones is a real state (``nvidia-smi nvlink -s`` printing
``Link 3: <inactive>`` between active links of a V100: Azure/azhpc-diagnostics#73), so the suite switches the
first active record of one device off, in the value the vendor's own off state has (1 -> 0, true -> false,
``up`` -> ``down``), and requires every peer the device is still linked to by another record to stay linked. Each
helper here is pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from rayaccel.records import Device, FamilyInventory
from rayaccel_conformance.checks.moved_losses import names

#: A record's field that says whether its link is up.
_STATE = re.compile(r"(?i)(link_?)?(state|status|active|is_active|up|enabled)")
#: Each "on" word a state field takes, and the "off" word of the same kind (a number 1 is off as 0, true as false).
_OFF_WORDS = {"up": "down", "active": "inactive", "enabled": "disabled"}


def _off(value: Any) -> Any:
    """The off value of the kind ``value`` is, where ``value`` is on; None where it is not."""
    if isinstance(value, bool):
        return False if value else None
    if isinstance(value, int):
        return 0 if value == 1 else None
    if isinstance(value, str) and value.lower() in _OFF_WORDS:
        word = _OFF_WORDS[value.lower()]
        return word.upper() if value.isupper() else word.capitalize() if value[:1].isupper() else word
    return None


@dataclass(frozen=True)
class LinkRecord:
    """One link record of a device in the host state: where it is, its state field and its values."""

    section: str  # "libraries" or "commands"
    key: str  # the library's name, or the command line
    path: tuple[str, ...]  # to the record, inside the library's data or the command's JSON output
    field: str
    on: Any
    others_up: int  # the device's other records of the collection that are up
    record: Any

    def describe(self) -> str:
        where = f"library {self.key}" if self.section == "libraries" else f"`{self.key}` output"
        return f"{where} {'.'.join(self.path)} ({self.field} {self.on!r} -> {_off(self.on)!r})"


def _state(record: Any) -> tuple[str, Any] | None:
    if not isinstance(record, dict):
        return None
    for field, value in record.items():
        if _STATE.fullmatch(str(field)) and not isinstance(value, dict | list):
            return str(field), value if _off(value) is not None else None  # None: a state, off
    return None


def _collections(data: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Dicts under a key naming links whose entries are records numbered 0, 1, ...: (path, the dict)."""
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        here = (*path, str(key))
        if isinstance(value, dict) and "link" in str(key).lower() and len(value) > 1 \
                and all(str(k).isdigit() and _state(v) for k, v in value.items()):
            yield here, value
        else:
            yield from _collections(value, here)


def first_link_down(host: dict[str, Any], device: Device) -> LinkRecord | None:
    """The device's first link record that is up, in a collection where another is up too; None where the host
    keeps no such collection keyed by the device's index."""
    sources = [("libraries", name, data) for name, data in (host.get("libraries") or {}).items()]
    for line, answer in (host.get("commands") or {}).items():
        try:
            sources.append(("commands", line, json.loads((answer or {}).get("stdout") or "")))
        except (ValueError, TypeError):
            continue
    for section, key, data in sources:
        for path, records in _collections(data):
            if str(device.index) not in path[:-1]:
                continue
            up = sorted((int(n), n) for n, r in records.items() if (_state(r) or ("", None))[1] is not None)
            if len(up) < 2:
                continue
            first = up[0][1]
            field, on = _state(records[first]) or ("", None)
            return LinkRecord(section, key, (*path, first), field, on, len(up) - 1, records[first])
    return None


def with_link_down(host: dict[str, Any], link: LinkRecord) -> dict[str, Any]:
    """The host state with the link record's state switched to the vendor's off value (nothing else changed)."""
    state: dict[str, Any] = json.loads(json.dumps(host))
    if link.section == "libraries":
        node = state["libraries"][link.key]
    else:
        parsed = json.loads(state["commands"][link.key]["stdout"])
        node = parsed
    for step in link.path:
        node = node[step]
    node[link.field] = _off(link.on)
    if link.section == "commands":
        state["commands"][link.key]["stdout"] = json.dumps(parsed, indent=1)
    return state


def peers_dropped(before: FamilyInventory, after: FamilyInventory | None, device: Device, link: LinkRecord,
                  devices: Sequence[Device]) -> list[str]:
    """The device's peers no longer linked once one link record is off, less the one that record alone names."""
    def peers(family: FamilyInventory | None) -> set[str]:
        return {ln.b if ln.a == device.id else ln.a for ln in (family.topology.links if family else [])
                if device.id in (ln.a, ln.b)}

    text = json.dumps(link.record)
    named = {d.id for d in devices if d.id != device.id and names(text, d, by_number=False)}
    gone = sorted(peers(before) - peers(after) - named)
    return [f"{peer} is no longer linked to {device.id}, though {link.others_up} other links of {device.id} are "
            "up: links counted until the first one down?" for peer in gone]
