"""Every partition of a device fits in it at once, each counted at its own size (RAC113's invariant
``partitions-fit-their-device``, issue 46, held-out round 14's ``n1``: an NVIDIA wrapper giving a MIG compute
instance, profile ``<c>c.<g>g.<memory>gb``, its GPU instance's compute slices, ``1c.3g.40gb`` -> 3 instead of 1).

The partitions a machine lists exist all at once, so their slices, each partition's own, add up to no more than the
device has (``partition_capacity``); the SDK refuses a device whose partitions do not (``Device``'s validator).
Where a plugin counts a share of something its partitions share (the compute instances of one GPU instance run on
that instance's slices: NVIDIA's MIG user guide, MIG Device Names, splits a 3g.20gb device into 2c.3g.20gb and
1c.3g.20gb) and the device is full, that refusal happens inside the plugin, which reports the device unreadable:
nothing in the inventory says why. So on a fixture whose own build leaves a device not healthy, or offers one whole
while discovery reports a problem (at any severity), the suite takes one record at a time away at the host seam (a
record the machine lists among others of its kind, naming something of its own: a library's or a tool's JSON record,
or a directory of files beside others), as a partition destroyed or not given to a pod is left out of its listing,
builds the inventory again and gathers each partition the plugin reports, at the smallest size it is given. The
partitions of one device, together, must fit its capacity. No expectation is read. Limits: an overcount that still
fits the device (free slices left) is not seen, as no record says which partitions share a parent; and a plugin that
offers such a device otherwise silently, saying nothing and reporting every device healthy, is not searched.
"""

from __future__ import annotations

import json
import posixpath
from collections import Counter
from collections.abc import Iterator
from typing import Any

from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import FamilyInventory, Partition
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed

INVARIANT = "partitions-fit-their-device"
#: The most records taken away on one fixture (one inventory build each).
MAX_BUILDS = 24

#: A place on the host: ("library", name, path), ("command", line, path) or ("folder", directory, ()).
Place = tuple[str, str, tuple[str | int, ...]]


def _strings(data: Any) -> Iterator[str]:
    if isinstance(data, dict):
        for item in data.values():
            yield from _strings(item)
    elif isinstance(data, list):
        for item in data:
            yield from _strings(item)
    elif isinstance(data, str) and data.strip():
        yield data.strip()


def _json(stdout: str) -> Any:
    try:
        return json.loads(stdout)
    except ValueError:
        return None


def _listed(data: Any, path: tuple[str | int, ...], once: set[str]) -> Iterator[tuple[str | int, ...]]:
    """Paths of the mappings in ``data`` that sit beside at least one other mapping in a list or mapping and hold a
    string stated once on the whole machine (a record naming something of its own)."""
    items: list[tuple[str | int, Any]] = (list(data.items()) if isinstance(data, dict)
                                          else list(enumerate(data)) if isinstance(data, list) else [])
    records = [(key, item) for key, item in items if isinstance(item, dict)]
    if len(records) >= 2:
        for key, item in records:
            if any(text in once for text in _strings(item)):
                yield (*path, key)
    for key, item in items:
        yield from _listed(item, (*path, key), once)


def record_places(host: dict[str, Any]) -> list[Place]:
    """Where the machine lists records among others of their kind, each naming something of its own."""
    files: dict[str, str] = {p: t or "" for p, t in (host.get("files") or {}).items()}
    libraries: dict[str, Any] = host.get("libraries") or {}
    outputs = {line: _json(str((answer or {}).get("stdout") or ""))
               for line, answer in (host.get("commands") or {}).items()}
    counts = Counter([*_strings(libraries), *_strings([o for o in outputs.values() if o is not None]),
                      *(t.strip() for t in files.values() if t.strip())])
    once = {text for text, n in counts.items() if n == 1}
    places: list[Place] = [("library", name, path) for name, data in sorted(libraries.items())
                           for path in _listed(data, (), once)]
    places += [("command", line, path) for line, data in sorted(outputs.items()) if data is not None
               for path in _listed(data, (), once)]
    # A directory beside another in one parent, holding a file that states something of its own.
    owning = {posixpath.dirname(p) for p, t in files.items() if t.strip() in once}
    parents = Counter(posixpath.dirname(d) for d in owning)
    places += [("folder", d, ()) for d in sorted(owning) if parents[posixpath.dirname(d)] >= 2]
    # The innermost first: a partition's record sits inside its device's.
    return sorted(places, key=lambda place: -(len(place[2]) if place[0] != "folder" else place[1].count("/")))


def without_place(host: dict[str, Any], place: Place) -> dict[str, Any]:
    """The host state with the record at ``place`` gone (its mapping, or every file of its directory)."""
    state: dict[str, Any] = json.loads(json.dumps(host))
    where, key, path = place
    if where == "folder":
        state["files"] = {p: t for p, t in state["files"].items() if not p.startswith(key + "/")}
        return state
    data = state["libraries"][key] if where == "library" else json.loads(state["commands"][key]["stdout"])
    inner = data
    for step in path[:-1]:
        inner = inner[step]
    del inner[path[-1]]
    if where == "command":
        state["commands"][key]["stdout"] = json.dumps(data)
    return state


def describe(place: Place) -> str:
    where, key, path = place
    if where == "folder":
        return f"directory {key}"
    inner = ".".join(str(p) for p in path)
    return f"library {key} {inner}" if where == "library" else f"`{key}` output {inner}"


def _not_healthy(family: FamilyInventory | None) -> list[str]:
    return [f"device {h.device} {h.state}" for h in (family.health if family else []) if h.state != "healthy"]


def partition_fit_errors(subject: Subject, fx: Fixture, name: str) -> list[str]:
    """Devices whose partitions, each as the plugin reports it with one other record of the machine taken away,
    add up to more slices than the device has; searched only where the fixture's own build leaves a device not
    healthy, or offers one whole while its discovery reports a problem (at any severity)."""
    inventory = subject.inventory(fx.ref)
    family = inventory.family(name)
    unwell = _not_healthy(family)
    if family is not None and any(not d.partitions for d in family.devices):  # a device offered whole, and why
        unwell += [f"'{p.message}'" for p in subject.plugin_problems(inventory, ("rayaccel_discover",),
                                                                      ("info", "warning", "error"))]
    if not unwell:
        return []
    host: dict[str, Any] = fx.host.model_dump(mode="json")
    # device id -> its capacity (compute, memory slices), its partitions (smallest sizes seen) and where seen
    capacity: dict[str, tuple[int, int]] = {}
    seen: dict[str, dict[str, Partition]] = {}
    sources: dict[str, str] = {}
    for place in record_places(host)[:MAX_BUILDS]:
        variant = fx.model_copy(update={"host": HostState.model_validate(without_place(host, place)), "faults": []})
        try:
            after = subject.build(simulated_host(variant)).family(name)
        except CheckFailed:  # a state the SDK cannot build says nothing about sizes
            continue
        for device in after.devices if after else []:
            if not device.partitions or device.partition_capacity is None:
                continue
            cap = device.partition_capacity
            capacity.setdefault(device.id, (cap.compute_slices, cap.memory_slices))
            mine = seen.setdefault(device.id, {})
            for p in device.partitions:
                known = mine.get(p.id)
                if known is None or (p.compute_slices or 0) < (known.compute_slices or 0):
                    mine[p.id] = p
                    sources.setdefault(p.id, describe(place))
    wrong = []
    for device_id, parts in sorted(seen.items()):
        for n, field in enumerate(("compute_slices", "memory_slices")):
            total = sum(getattr(p, field) or 0 for p in parts.values())
            if total <= capacity[device_id][n]:
                continue
            each = ", ".join(f"{p.id} '{p.profile}' {getattr(p, field)}" for p in parts.values()
                             if getattr(p, field))
            wrong.append(
                f"invariant {INVARIANT}, {fx.ref}: the machine lists {len(parts)} partitions of device {device_id} at "
                f"once, and as the plugin reports each (built with one other record taken away, e.g. "
                f"{sources[next(iter(parts))]}) they take {total} {field}, more than the device's "
                f"{capacity[device_id][n]} ({each}); on the machine as it is the plugin reports "
                f"{', '.join(unwell)}. Each partition's slices are its own: partitions that share a parent's slices "
                "(NVIDIA's compute instances of one GPU instance, '1c.3g.40gb' and '2c.3g.40gb' taking 1 and 2 of its "
                "3) count their own share, not the parent's. Fix: read each partition's own size (the compute "
                "instance's '<c>c', not its GPU instance's '<g>g')")
    return wrong
