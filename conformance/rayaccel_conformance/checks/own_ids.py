"""A device's own id names that device (RAC114, ``invariant an-id-names-its-device``; issue 46, held-out round 16's
``l2``).

RAC114's ``an-entry-is-kept-or-refused`` (``checks/kept_entries.py``) hands the parser each device's own id, as
the runtimes take it beside an index (CUDA_VISIBLE_DEVICES ``GPU-<uuid>``, HIP_VISIBLE_DEVICES a UUID), and asks
only that it is not dropped. A parser that reads a unit out of the id (its last group as a number) passes there
whenever the fixture's ids happen to end in their index. A UUID is an identifier assigned to the device, not its
place: ``nvidia-smi --help-query-gpu`` says of ``uuid`` "globally unique immutable alphanumeric identifier of the
GPU. It does not correspond to any physical label on the board", and of ``index`` "Zero based index of the GPU. Can
change at each boot". So the suite
gives the fixture's devices each other's ids at the host seam (each id moved to the next device, everywhere the host
states it) and asks each device's own id again: where the parser keeps it without a problem, it must answer the id
as written (``rayaccel start`` places or refuses it) or that device's own units, never another device's unit or one
the node lacks: the operator who names a device would be given another one, or refused, without a word.
"""

from __future__ import annotations

import json
import re

from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import Device, FamilyInventory, Problem
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.harness.subject import Subject

INVARIANT = "an-id-names-its-device"


def _own_ids(family: FamilyInventory | None) -> list[Device]:
    """The devices whose own id is no unit of the node and one entry of the variable (no comma)."""
    devices = family.devices if family else []
    units = {u for d in devices for u in d.unit_ids}
    return [d for d in devices if d.id and d.id not in units and "," not in d.id and d.id.strip() == d.id]


def moved_ids_host(fx: Fixture, devices: list[Device]) -> Fixture | None:
    """The fixture with each device's id given to the next device (by index) wherever the host states it, as a
    whole word; None when fewer than two ids are stated."""
    ordered = sorted(devices, key=lambda d: d.index)
    text = json.dumps(fx.host.model_dump(mode="json"))
    stated = [d.id for d in ordered if re.search(rf"(?<![\w-]){re.escape(d.id)}(?![\w-])", text)]
    if len(stated) < 2:
        return None
    moved = {old: stated[(i + 1) % len(stated)] for i, old in enumerate(stated)}
    longest_first = sorted(stated, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, longest_first)) + r")(?![\w-])")
    state = json.loads(pattern.sub(lambda m: moved[m.group(1)], text))
    return fx.model_copy(update={"host": HostState.model_validate(state), "faults": []})


def misplaced_id_failures(subject: Subject, fx: Fixture, family: FamilyInventory | None) -> list[str]:
    """Each device's own id, on the fixture as it is and with the devices' ids moved among them, parsed to units
    that are not that device's without a problem (the first such device named)."""
    var = subject.family().visible_devices_env_var
    name = subject.family().name

    def misplaced(fam: FamilyInventory | None, how: str) -> str | None:
        devices = fam.devices if fam else []
        for device in _own_ids(fam):
            said: list[Problem] = []
            back = list(subject.manager.answer(subject.name, "rayaccel_parse_visible", problems=said,
                                               value=device.id))
            if said or not back or back == [device.id] or back == list(device.unit_ids):
                continue  # refused with a word, dropped (an-entry-is-kept-or-refused's), kept as written, or placed
            owners = {u: d.id for d in devices for u in d.unit_ids}
            named = [f"{u!r} ({owners[u]}'s)" if u in owners else f"{u!r} (a unit the node lacks)" for u in back]
            return (f"invariant {INVARIANT}, {fx.ref}{how}: {var}={device.id!r}, device {device.index}'s own id, "
                    f"parses as {back}: {', '.join(named)}, not its own units {list(device.unit_ids)}; a device's "
                    "id is assigned to it, not its place (nvidia-smi: 'globally unique immutable alphanumeric "
                    "identifier ... does not correspond to any physical label'), so never read a unit out of it: "
                    "keep the entry as written, place it by the device that has the id, or refuse it with "
                    "rayaccel.report_problem")
        return None

    if failure := misplaced(family, ""):
        return [failure]
    moved = moved_ids_host(fx, _own_ids(family))
    if moved is None:
        return []
    after = subject.build(simulated_host(moved), with_metrics=False).family(name)
    failure = misplaced(after, " with the devices' ids moved to the next device at the host seam")
    return [failure] if failure else []
