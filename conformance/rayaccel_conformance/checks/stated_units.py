"""Sizes a vendor tool states with their unit, re-stated in a smaller unit: RAC260's perturbation and verdict.

Tools print a size as a number and its unit (amd-smi's ``{"value": 672, "unit": "MB"}``), and which unit they
print changes with the tool's version and settings. The SDK cannot know a vendor's format, but it knows what a
size is: the same size stated in bytes or in KB is the same size, so the inventory built from it is the same.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from rayaccel.records import FamilyInventory
from rayaccel_conformance.checks.readings import number_leaves

#: The size units tools print, by power of 1024 (MB is 2**20 bytes to most tools and 10**6 to some).
SIZE_POWERS = {"B": 0, "KB": 1, "KIB": 1, "MB": 2, "MIB": 2, "GB": 3, "GIB": 3, "TB": 4, "TIB": 4}
#: How far one size re-stated may move a value: MB read as 10**6 bytes against 2**20 is 4.9% off, a unit taken
#: for another is 1024 times off.
CONVENTION_SLACK = 1.05


def _stated_sizes(data: Any) -> Iterator[dict[str, Any]]:
    """Every ``{"value": <number>, "unit": <size unit>}`` object in a JSON document."""
    if isinstance(data, dict):
        value, unit = data.get("value"), data.get("unit")
        if (isinstance(value, int | float) and not isinstance(value, bool) and isinstance(unit, str)
                and unit.strip().upper() in SIZE_POWERS):
            yield data
        for inner in data.values():
            yield from _stated_sizes(inner)
    elif isinstance(data, list):
        for inner in data:
            yield from _stated_sizes(inner)


def restated_host(host: dict[str, Any], target: str) -> tuple[dict[str, Any], list[str]]:
    """The host state with every size a command's JSON output states in a larger unit than ``target`` ("B" or
    "KB") re-stated in it, written as the tool writes it (a whole number stays whole; "KiB" for an IEC unit);
    and the commands it changed, each with one example (``672 MB -> 704643072 B``)."""
    state: dict[str, Any] = json.loads(json.dumps(host))
    changed: list[str] = []
    for line, answer in (state.get("commands") or {}).items():
        try:
            data = json.loads((answer or {}).get("stdout") or "")
        except (ValueError, TypeError):
            continue
        examples = []
        for stated in _stated_sizes(data):
            unit = stated["unit"].strip()
            steps = SIZE_POWERS[unit.upper()] - SIZE_POWERS[target]
            if steps <= 0:
                continue
            value = stated["value"] * 1024**steps
            new_unit = target if target == "B" else ("KiB" if "I" in unit.upper() else "KB")
            examples.append(f"{stated['value']} {unit} -> {value} {new_unit}")
            stated["value"], stated["unit"] = value, new_unit
        if examples:
            answer["stdout"] = json.dumps(data)
            changed.append(f"`{line}` ({len(examples)} sizes, e.g. {examples[0]})")
    return state, changed


def sized_values(family: FamilyInventory | None) -> dict[str, float]:
    """Every number of the family's device records (by device id and field) and metric samples."""
    if family is None:
        return {}
    found = {f"device {d.id} {'.'.join(map(str, path))}": value for d in family.devices
             for path, value in number_leaves(d.model_dump(mode="json"))}
    found.update({f"metric {s.name} of {s.device}": s.value for s in family.metrics})
    return found


def size_differences(before: dict[str, float], after: dict[str, float]) -> list[str]:
    """Values the re-statement moved by more than the slack of MB's two meanings, or made disappear."""
    wrong = []
    for where, value in before.items():
        now = after.get(where)
        if now is None:
            wrong.append(f"{where} is gone (was {value:g})")
        elif not math.isclose(now, value) and not (value and now and 1 / CONVENTION_SLACK <= now / value
                                                   <= CONVENTION_SLACK):
            wrong.append(f"{where} is {now:g}, was {value:g} (x{now / value:.4g})" if value else
                         f"{where} is {now:g}, was 0")
    return wrong
