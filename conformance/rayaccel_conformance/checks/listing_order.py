"""The vendor's own listing reordered (RAC226): every command whose answer lists the devices, answered with its rows in
reverse, derived at the host seam from the fixture's own answers.

Every vendor tool we simulate lists its devices in index order, and so does every fixture, so a plugin that takes a
device's index from its row's position (``enumerate`` over a JSON list, a CSV row number) instead of the row's own
index field passes on all of them. Where a command's stdout is a JSON document holding lists of records (the
document itself, or a list value of its top-level object) or a table (lines of as many
comma- or tab-separated fields), the suite answers it with those records or rows in reverse (a table's header, a
first line without a digit, stays first) and requires the inventory to stay as it was: the same device ids, each
with its index, units and PCI address, and the same links. A list whose records carry no index or id field (its
position is the only thing that names its device) is left as it is, and the evidence says so. Each helper here is
pure.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rayaccel.hosts.fixtures import HostState
from rayaccel.records import FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: A record field that names its device by itself, so the record's position need not (``index``, ``gpu``,
#: ``neuron_device``, ``uuid``, ``bus_id``, ``module_id``, ...).
_NAMING_FIELD = re.compile(r"(?i)(index|idx|id|uuid|gpu|device|bus|bdf|serial|module|card|minor|a|b|src|dst|peer)"
                           r"(_.*)?|.*_(index|id|device|uuid|bus_id)")
#: A table's field separators, in the order they are tried.
_SEPARATORS = (",", "\t")


def _names_itself(record: dict[str, Any]) -> bool:
    return any(_NAMING_FIELD.fullmatch(str(key)) for key in record)


def _reversible(value: Any) -> bool:
    return isinstance(value, list) and len(value) > 1 and all(isinstance(v, dict) for v in value)


def reversed_json(text: str) -> tuple[str | None, list[str]]:
    """``text`` (JSON) with its lists of records reversed, and the lists left as they were because their records
    carry no field naming their device; (None, ...) when it is not JSON or nothing was reversed."""
    try:
        document = json.loads(text)
    except ValueError:
        return None, []
    kept: list[str] = []

    def reverse(value: Any, where: str) -> Any:
        if not _reversible(value):
            return value
        if not all(_names_itself(record) for record in value):
            kept.append(where)
            return value
        return list(reversed(value))

    if isinstance(document, list):
        changed = reverse(document, "the document's list")
    elif isinstance(document, dict):
        changed = {key: reverse(value, f"its {key!r} list") for key, value in document.items()}
    else:
        return None, []
    if changed == document:
        return None, kept
    return json.dumps(changed, indent=1) + ("\n" if text.endswith("\n") else ""), kept


def reversed_table(text: str) -> str | None:
    """``text`` as a table (at least three lines of as many comma- or tab-separated fields) with its rows in
    reverse, its header (a first line without a digit) staying first; None when it is not one."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 3:
        return None
    for separator in _SEPARATORS:
        widths = {len(line.split(separator)) for line in lines}
        if len(widths) == 1 and widths.pop() > 1:
            head = lines[:1] if not any(c.isdigit() for c in lines[0]) else []  # a header names, never numbers
            return "\n".join([*head, *reversed(lines[len(head):])]) + ("\n" if text.endswith("\n") else "")
    return None


def reordered_commands(commands: dict[str, Any]) -> tuple[dict[str, Any], list[str], list[str]]:
    """The host's command answers with every listing reversed: the new answers, the command lines changed, and
    the lists left in order (their records carry no index or id), each named with its command."""
    answers = json.loads(json.dumps(commands))
    changed, kept = [], []
    for line, answer in answers.items():
        stdout = answer.get("stdout") or ""
        if not stdout.strip() or answer.get("returncode", 0) != 0:
            continue
        if stdout.lstrip()[:1] in "[{":
            new, left = reversed_json(stdout)
            kept += [f"{line}: {where}" for where in left]
        else:
            new = reversed_table(stdout)
        if new is not None and new != stdout:
            answer["stdout"] = new
            changed.append(line)
    return answers, changed, kept


def listing_facts(family: FamilyInventory | None) -> dict[str, Any]:
    """What the order of the vendor's listing must not change: per device id, its index, units and PCI address;
    the links."""
    if family is None:
        return {"devices": {}, "links": []}
    return {"devices": {d.id: {"index": d.index, "units": d.unit_ids, "pci_bus_id": d.pci_bus_id}
                        for d in family.devices},
            "links": sorted((min(ln.a, ln.b), max(ln.a, ln.b), ln.kind, ln.bandwidth_gbps)
                            for ln in family.topology.links)}


def listing_differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What changed when the listing was reversed, one line each, with both values."""
    wrong = []
    old, new = before["devices"], after["devices"]
    gone, added = sorted(set(old) - set(new)), sorted(set(new) - set(old))
    if gone or added:
        # The last device by index is listed first once reversed: losing it and finding the one that was first
        # means whichever device comes first is lost.
        first_lost = (len(gone) == len(added) == 1 and old[gone[0]]["index"] is not None
                      and old[gone[0]]["index"] == max(v["index"] for v in old.values() if v["index"] is not None))
        wrong.append(f"the devices change: {len(gone)} gone ({', '.join(gone[:2])}), {len(added)} new "
                     f"({', '.join(added[:2])})" + (": the row listed first is lost whichever device it is: a first "
                                                    "line skipped as a header the tool does not print?"
                                                    if first_lost else ""))
    for part in ("index", "units", "pci_bus_id"):
        moved = [dev for dev in sorted(set(old) & set(new)) if old[dev][part] != new[dev][part]]
        if moved:
            dev = moved[0]
            wrong.append(f"{len(moved)} devices' {part} changed, such as {dev}'s from {old[dev][part]!r} to "
                         f"{new[dev][part]!r}" + (": an index taken from the row's position, not its own field?"
                                                  if part == "index" else ""))
    links = [set(before["links"]), set(after["links"])]
    if links[0] != links[1]:
        lost, more = sorted(links[0] - links[1]), sorted(links[1] - links[0])
        wrong.append(f"the links change: {len(lost)} lost (such as {lost[0][:2] if lost else None}), {len(more)} "
                     f"new (such as {more[0][:2] if more else None})")
    return wrong


@check("RAC226", scope="fixture")
def reordered_listing_keeps_the_devices(subject: Subject, fixture: str | None) -> Evidence:
    """Devices the vendor's tool lists in another order keep their index, units, PCI address and links.

    Every vendor tool lists its devices in index order, and so does every fixture, so a plugin that takes a
    device's index from its row's position (a JSON list enumerated, a CSV row number) passes on all of them. For
    every command of the fixture whose answer is a JSON document holding lists of records (the document itself,
    or a list value of its top-level object) or a table (lines of as many comma- or tab-separated fields: a
    tool's CSV, one record a line), the suite answers with the records or rows in reverse (a header, a first
    line without a digit, stays first) and builds the inventory again: the same device ids, each with the same
    index, units and PCI bus id, and the same links (``invariant reordered-listing-keeps-the-devices``). A list
    whose records carry no index or id field is left in order (its position is all that names its device), and
    the evidence says so. Not applicable where no command answers with a listing (a library's data, files). Fix:
    take each device's index from its row's own index field, never from the row's position, and pair rows of
    several commands by that field or the device's id.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    host = fx.host.model_dump(mode="json")
    answers, changed, kept = reordered_commands(host.get("commands") or {})
    left = f" (left in order, their records naming no device: {'; '.join(kept[:3])})" if kept else ""
    if not changed:
        raise NotApplicable(f"{fx.ref}: no command answers with a listing of records or rows{left}")
    fam = subject.inventory(fixture).family(family.name)
    variant = fx.model_copy(update={"host": HostState.model_validate({**host, "commands": answers}), "faults": []})
    built = subject.build(simulated_host(variant))
    named = ", ".join(repr(line if len(line) <= 48 else line[:45] + "...") for line in changed[:3])
    what = f"the listing of {named}{f' (+{len(changed) - 3} more)' if len(changed) > 3 else ''} reversed"
    differences = listing_differences(listing_facts(fam), listing_facts(built.family(family.name)))
    wrong = subject.blamed(built, differences, f"invariant reordered-listing-keeps-the-devices, {fx.ref} with "
                                               f"{what}: ")
    if wrong:
        raise CheckFailed(wrong[:4])
    count = len(fam.devices) if fam is not None else 0
    return f"{fx.ref}: with {what}, the {count} devices keep their index, units, PCI address and links{left}"
