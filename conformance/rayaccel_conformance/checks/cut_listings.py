"""A vendor tool's listing cut off mid-line: reported, never the part read taken for the whole (RAC204's
``a-cut-listing-is-reported``).

A tool killed by its timeout, or whose pipe closed, leaves its output cut short in the middle of a line (hl-smi's
``-n link`` stopping at ``port 11:<tab>U``). Every fixture records whole answers, so a parser that skips a line it
cannot read and goes on with the rest passed: the ports after the cut are simply not there, and the topology of
what was read looks like a machine with fewer links. The suite cuts each command's output of two lines or more
in the middle of the line after its first half (one command at a time); the inventory must then be the machine's
own or come with a problem the whole answer did not give.
"""

from __future__ import annotations

from typing import Any

from rayaccel.hosts.fixtures import Fixture
from rayaccel.records import FamilyInventory, Problem

SCENARIO = "`{command}` cut off mid-line"


def cut_mid_line(text: str) -> str | None:
    """``text`` up to the middle of the line after its first half of lines (None: fewer than two lines)."""
    lines = text.splitlines(keepends=True)
    if len([line for line in lines if line.strip()]) < 2:
        return None
    kept = len(lines) // 2
    cut = lines[kept].rstrip("\r\n")
    return "".join(lines[:kept]) + cut[: max(1, len(cut) // 2)]


def cut_listing_patches(fx: Fixture) -> dict[str, dict[str, Any]]:
    """Merge patches cutting one command's output mid-line each."""
    patches = {}
    for command, answer in fx.host.commands.items():
        cut = cut_mid_line(answer.stdout) if not answer.hang and answer.returncode == 0 else None
        if cut is not None:
            patches[SCENARIO.format(command=command)] = {"commands": {command: {"stdout": cut}}}
    return patches


def facts(family: FamilyInventory | None) -> dict[str, Any]:
    """What a cut listing could lose or change: the devices, their health, links and lanes, domains, resources."""
    if family is None:
        return {}
    return {"devices": sorted(d.id for d in family.devices),
            "health": sorted((h.device, h.state) for h in family.health),
            "links": sorted((*sorted((ln.a, ln.b)), ln.kind, ln.lanes, ln.bandwidth_gbps)
                            for ln in family.topology.links),
            "domains": sorted((d.kind, d.id, d.size) for d in family.topology.domains),
            "resources": sorted(family.resources.items())}


def cut_listing_differences(scenario: str, now: FamilyInventory | None, healthy: FamilyInventory | None,
                            problems: list[Problem], healthy_problems: list[Problem]) -> list[str]:
    """The facts a cut listing changed with no problem the whole answer did not give."""
    before, after = facts(healthy), facts(now)
    changed = [key for key in before if before[key] != after.get(key)]
    known = {(p.code, p.message) for p in healthy_problems}
    if not changed or any((p.code, p.message) not in known for p in problems):
        return []
    return [f"{scenario}: invariant a-cut-listing-is-reported: the {', '.join(changed)} differ from the whole "
            "answer's and no problem says the listing was cut (a line the parser cannot read ends the listing it is "
            "in: report it, and take nothing after it for the whole)"]
