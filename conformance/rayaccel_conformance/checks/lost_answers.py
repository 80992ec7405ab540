"""A fault that only takes answers away makes no fact another value (RAC203, ``invariant
a-lost-answer-is-no-other-answer``; held-out round 18's ``a1``: an AMD wrapper naming a partitioned GPU whose compute
partition amd-smi does not state CPX whatever its partition count, so when ``amd-smi partition --current`` fails a DPX
GPU's two partitions became ``cpx.4xcd.96gb`` and Ray's resource ``GPU_COMPUTE_PARTITION_cpx...``; only the fault's
expected resources named it).

A fault whose patch only takes answers away (a command exiting non-zero with nothing on stdout, or hanging; a file
gone; a library raising on every call; an endpoint unreachable, hanging or answering an error status) leaves the
plugin less to read, never other readings. What it still states must then be what the machine's full answers gave:
a partition keeping its id keeps its profile, no resource appears that the fixture's machine does not give, and a
device's or partition's text attribute keeps its value (or drops some of its comma-separated items: a chiplet's node
gone leaves the others listed). A fact the plugin cannot read on such a poll is left out or unknown; a default taken
in its place is a guess that turns a failed query into a wrong one (Ray schedules on the resource, an operator reads
the profile). Pure over the two inventories RAC203 built already: no build.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rayaccel.records import FamilyInventory

INVARIANT = "invariant a-lost-answer-is-no-other-answer"
#: At most this many findings said per fault (one wrong default repeats on every partition).
MAX_FINDINGS = 4
_ITEMS = re.compile(r"[,\s]+")


def _answer_taken_away(where: str, answer: Any) -> bool:
    """Whether one patched entry of a host state only removes what the machine answers."""
    if where == "files":
        return answer is None
    if not isinstance(answer, Mapping):
        return answer is None
    if where == "commands":
        # stdout left out of the patch keeps the machine's: only an emptied one is taken away
        return bool(answer.get("hang")) or ("stdout" in answer and not answer["stdout"]
                                             and answer.get("returncode", 0) != 0)
    if where == "libraries":
        return set(answer) == {"rayaccel_fault"}
    if where == "http":
        return bool(answer.get("unreachable") or answer.get("hang") or answer.get("status", 200) >= 400)
    return False


def takes_answers_away(patch: Mapping[str, Any]) -> bool:
    """Whether a merge patch over a host state only takes answers away: every entry it patches is one of those
    above."""
    if not patch or not all(isinstance(patched, Mapping) and patched for patched in patch.values()):
        return False
    return all(_answer_taken_away(where, answer) for where, patched in patch.items() for answer in patched.values())


def _text_facts(family: FamilyInventory) -> dict[tuple[str, str, str], str]:
    """Each device's and partition's text attributes and each partition's profile, keyed by whose and what."""
    facts: dict[tuple[str, str, str], str] = {}
    for device in family.devices:
        facts.update({("device", device.id, k): v for k, v in device.attributes.items() if isinstance(v, str)})
        for part in device.partitions:
            facts[("partition", f"{part.id} of {device.id}", "profile")] = part.profile
            facts.update({("partition", f"{part.id} of {device.id}", k): v for k, v in part.attributes.items()
                          if isinstance(v, str)})
    return facts


def _items(value: str) -> set[str]:
    return {item for item in _ITEMS.split(value.strip()) if item}


def lost_answer_findings(scenario: str, patch: Mapping[str, Any], healthy: FamilyInventory | None,
                         faulty: FamilyInventory | None) -> list[str]:
    """What ``patch`` (a fault's, or a scenario RAC204 makes), where it only takes answers away, made another value:
    a profile, a text attribute, a new resource; ``scenario`` says where (the fixture and the fault)."""
    if healthy is None or faulty is None or not takes_answers_away(patch):
        return []
    before, after = _text_facts(healthy), _text_facts(faulty)
    offered = ", ".join(sorted(healthy.resources))
    changed = [f"resource {name!r}, which the machine's full answers do not give ({offered})"
               for name in sorted(set(faulty.resources) - set(healthy.resources))]
    changed += [f"{key[0]} {key[1]} {key[2]} {after[key]!r} (the machine's full answers give {before[key]!r})"
                for key in after if key in before and not _items(after[key]) <= _items(before[key])]
    if not changed:
        return []
    more = f" and {len(changed) - MAX_FINDINGS} more" if len(changed) > MAX_FINDINGS else ""
    return [f"{INVARIANT}, {scenario} (it only takes answers away): "
            f"the plugin states {'; '.join(changed[:MAX_FINDINGS])}{more}: a query that fails gives less, never "
            "another value; leave what it would have said out or unknown instead of assuming a default"]
