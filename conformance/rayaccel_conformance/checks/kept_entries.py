"""Every entry of a visible-devices value is kept or refused, never dropped (RAC114, ``invariant
an-entry-is-kept-or-refused``; issue 46, held-out round 15's ``c1``).

RAC107 and RAC114 hand the parser what ``rayaccel_visible_env`` writes: for a family Ray does not know, the plugin's
own unit ids, numbers on most nodes, so a parser keeping only the entries that are numbers passes every round trip.
Operators and launchers write more: the runtimes take a device's own id beside its index (CUDA_VISIBLE_DEVICES
"GPU-<uuid>", docs.nvidia.com/deploy/topics/topic_5_2_1.html; HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES "either a
list of ints or a list of UUIDs", pytorch/pytorch#142292), and Ray's managers keep every entry as it is written
(``NvidiaGPUAcceleratorManager.get_current_process_visible_accelerator_ids`` splits on commas). ``rayaccel start``
with ``<VAR>=<uuid>,1`` offers what the parser answers: an entry it drops leaves a device out without a word, where
one it keeps and the node lacks is refused with a message (``inventory/visible_units.py``).
"""

from __future__ import annotations

from rayaccel.records import FamilyInventory, Problem
from rayaccel_conformance.harness.subject import Subject

#: Per plugin (its subject), the garbage's failure or None: hypothesis draws the same values on every fixture.
_GARBAGE: dict[int, tuple[Subject, str | None]] = {}


def _entries(value: str) -> list[str]:
    return [e.strip() for e in value.split(",") if e.strip()]


def dropped_entry_failures(subject: Subject, family: FamilyInventory | None, units: list[str]) -> list[str]:
    """Values of the family's visible-devices variable whose parse drops an entry without a problem: a value naming a
    device by its own id beside another device's unit (each device whose id is no unit of the node), then garbage
    hypothesis draws; each failure names the value, the entry and what the value parses as with and without it."""
    from rayaccel_conformance.checks.properties import GARBAGE, shrunk_failure

    var = subject.family().visible_devices_env_var

    def parse(value: str) -> tuple[list[str], list[Problem]]:
        said: list[Problem] = []
        back = list(subject.manager.answer(subject.name, "rayaccel_parse_visible", problems=said, value=value))
        return back, said

    def dropped(value: str) -> str | None:
        back, said = parse(value)
        if said:
            return None  # refused (or normalised) with a word: the operator is told
        entries = _entries(value)
        for entry in (e for e in entries if entries.count(e) == 1):
            rest = ",".join(e for e in entries if e != entry)
            without, said_without = parse(rest)
            if without == back and not said_without:
                return (f"invariant an-entry-is-kept-or-refused: {var}={value!r} parses as {back}, as {var}={rest!r} "
                        f"does: the entry {entry!r} is dropped without a word; keep every entry (Ray's managers keep "
                        "each as it is written), normalise it to the unit it names, or refuse the value with a "
                        "problem (rayaccel.report_problem) naming it, so an operator never gets fewer devices than "
                        "named")
        return None

    found: list[str] = []
    devices = family.devices if family else []
    own_ids = [d.id for d in devices if d.id not in units and _entries(d.id) == [d.id]]
    for own in own_ids[:2]:
        another = [u for d in devices if d.id != own for u in d.unit_ids][:1]
        for value in (",".join([*another, own]), own):
            if failure := dropped(value):
                found.append(f"{failure} (the device's own id, as the runtimes take it beside an index)")
                break
        if found:
            break
    # The garbage is the same on every fixture: drawn once per plugin, as RAC114's other properties are.
    if id(subject) not in _GARBAGE or _GARBAGE[id(subject)][0] is not subject:
        _GARBAGE[id(subject)] = (subject, shrunk_failure(GARBAGE, dropped))
    garbage = _GARBAGE[id(subject)][1]
    return [*found, *([garbage] if garbage else [])]
