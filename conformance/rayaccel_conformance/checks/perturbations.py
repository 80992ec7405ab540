"""Perturbations: variants the suite derives from a fixture, and what the inventory must do under each.

A check written for one fixture tests what that fixture happens to exercise. These invariants hold on any
fixture, so the suite derives the variants itself (RAC210-RAC212): the downstream hooks given the
discovered devices with one left out (the last, the first, one whose position is not its index) or in
another order; the fixture's own device-lost and single-device faults; the same host asked twice, and
another host (the empty machine, a fault's machine) asked in between. Each helper here is pure: it takes
answers and says what is wrong with them, one sentence each, quoting the offending value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from rayaccel import hookspec
from rayaccel.hosts.seam import Host
from rayaccel.records import ID_FALLBACK, Device, FamilyInventory, HealthReport, MetricSample, Problem, Topology

#: Standard metrics that count events since the device started: polled twice, they never go down.
COUNTER_METRICS = ("ecc_errors_corrected", "ecc_errors_uncorrected")


def removal_choices(devices: Sequence[Device]) -> list[tuple[int, Device]]:
    """(position, device) pairs to leave out: the last, the first, and one whose position is not its index."""
    if not devices:
        return []
    chosen = [(len(devices) - 1, devices[-1])]
    if len(devices) > 1:
        chosen.append((0, devices[0]))
    moved = next(((i, d) for i, d in enumerate(devices) if d.index != i and (i, d) not in chosen), None)
    if moved is None and len(devices) > 2:
        moved = (len(devices) // 2, devices[len(devices) // 2])
    if moved is not None and moved not in chosen:
        chosen.append(moved)
    return chosen


def reorderings(devices: Sequence[Device]) -> list[tuple[str, list[Device]]]:
    """The discovered devices in other orders: reversed, and rotated by one."""
    if len(devices) < 2:
        return []
    orders = [("reversed", list(reversed(devices))), ("rotated by one", [*devices[1:], devices[0]])]
    return [(name, order) for name, order in orders if order != list(devices)]


class DownstreamAnswers:
    """What the per-device hooks answer for one list of devices on one host, as returned (validated)."""

    def __init__(self, subject: Any, host: Host, devices: Sequence[Device]) -> None:
        manager, name = subject.manager, subject.name
        self.problems: list[Problem] = []
        self.topology: Topology = manager.answer(name, hookspec.TOPOLOGY, self.problems, host=host,
                                                 devices=list(devices))
        self.health: list[HealthReport] = manager.answer(name, hookspec.HEALTH, self.problems, host=host,
                                                         devices=list(devices)) or []
        self.metrics: list[MetricSample] = manager.answer(name, hookspec.METRICS, self.problems, host=host,
                                                          devices=list(devices))

    def traces_of(self, gone: str) -> list[str]:
        """Where the answers still name device ``gone``."""
        found = [f"rayaccel_topology reports link {ln.a}<->{ln.b} ({ln.kind})" for ln in self.topology.links
                 if gone in (ln.a, ln.b)]
        found += [f"rayaccel_topology lists it in domain {dm.kind} {dm.id}" for dm in self.topology.domains
                  if gone in dm.members]
        found += ["rayaccel_topology gives it a CPU/NIC affinity" for af in self.topology.affinities
                  if af.device == gone]
        found += [f"rayaccel_health reports it {r.state}" for r in self.health if r.device == gone]
        names = sorted({s.name for s in self.metrics if s.device == gone})
        if names:
            found.append(f"rayaccel_metrics gives samples for it ({', '.join(names)})")
        return found

    def by_device(self) -> dict[str, Any]:
        """The answers keyed by what they are about, so two device orders compare equal when they agree."""
        return {
            "links": sorted((min(ln.a, ln.b), max(ln.a, ln.b), ln.kind, ln.bandwidth_gbps, ln.lanes)
                            for ln in self.topology.links),
            "domains": sorted((dm.kind, dm.id, dm.size, tuple(sorted(dm.members))) for dm in self.topology.domains),
            "affinities": sorted((af.device, af.numa_node, af.cpus or "") for af in self.topology.affinities),
            "health": sorted((r.device, r.state) for r in self.health),
            "metrics": sorted((s.device, s.name, s.value) for s in self.metrics),
        }


def order_differences(base: dict[str, Any], other: dict[str, Any], how: str) -> list[str]:
    """What changed when the same devices were given in another order (``how``)."""
    wrong = []
    for part in base:
        gained = [x for x in other[part] if x not in base[part]]
        lost = [x for x in base[part] if x not in other[part]]
        if gained or lost:
            sample = (gained or lost)[0]
            wrong.append(f"with the devices {how}, the {part} answer changes: {'gains' if gained else 'loses'} "
                         f"{sample!r} ({len(gained)} gained, {len(lost)} lost): an answer must depend on which "
                         "devices it is given, not on their order")
    return wrong


def inventory_traces(family: FamilyInventory | None, gone: Iterable[str]) -> list[str]:
    """Where a built inventory still names devices that discovery no longer reports."""
    if family is None:
        return []
    wrong = []
    for dev in gone:
        if any(d.id == dev for d in family.devices):
            continue
        where = [f"link {ln.a}<->{ln.b}" for ln in family.topology.links if dev in (ln.a, ln.b)]
        where += [f"domain {dm.kind} {dm.id}" for dm in family.topology.domains if dev in dm.members]
        where += [f"health ({r.state})" for r in family.health if r.device == dev]
        where += [f"metric {s.name}" for s in family.metrics if s.device == dev]
        where += [f"schedulable unit {u}" for u in family.schedulable_units if u == dev]
        where += [f"label {k}={v}" for k, v in family.labels.items() if dev in v]
        if where:
            wrong.append(f"{dev} is no longer discovered, yet the inventory still names it: {', '.join(where[:4])}")
    return wrong


def one_device_fault_leaks(healthy: FamilyInventory, faulty: FamilyInventory, touched: set[str]) -> list[str]:
    """Devices a fault did not touch whose facts (health state, device record) changed anyway."""
    before = {d.id: d for d in healthy.devices}
    state_before = {r.device: r.state for r in healthy.health}
    state_after = {r.device: r.state for r in faulty.health}
    wrong = []
    for device in faulty.devices:
        if device.id in touched or device.id not in before:
            continue
        if state_after.get(device.id) != state_before.get(device.id):
            wrong.append(f"{device.id} was not touched, yet its health went from {state_before.get(device.id)} to "
                         f"{state_after.get(device.id)}")
        old = before[device.id].model_dump(exclude={"index", "sku"})
        new = device.model_dump(exclude={"index", "sku"})
        changed = sorted(k for k in old if old[k] != new[k])
        if changed:
            wrong.append(f"{device.id} was not touched, yet its {changed[0]} went from {old[changed[0]]!r} to "
                         f"{new[changed[0]]!r}")
    return wrong


def family_facts(family: FamilyInventory | None) -> dict[str, Any]:
    """What must be identical when the same host is asked twice (metrics apart: they are live readings)."""
    if family is None:
        return {"devices": []}
    return {
        "devices": [d.model_dump(mode="json") for d in family.devices],
        "links": sorted((min(ln.a, ln.b), max(ln.a, ln.b), ln.kind, ln.bandwidth_gbps) for ln in
                        family.topology.links),
        "domains": sorted((dm.kind, dm.id, tuple(sorted(dm.members))) for dm in family.topology.domains),
        "health": sorted((r.device, r.state) for r in family.health),
        "resources": dict(family.resources), "units": list(family.schedulable_units),
        "labels": dict(family.labels), "accelerator_type": family.accelerator_type,
    }


def fact_differences(first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    """Which facts differ between two answers that must be identical, each with both values (shortened)."""
    wrong = []
    for key in first:
        if first[key] != second.get(key):
            wrong.append(f"{key}: {_short(first[key])} the first time, {_short(second.get(key))} the second")
    return wrong


def counter_decreases(first: Sequence[MetricSample], second: Sequence[MetricSample]) -> list[str]:
    """Counter samples that went down between two polls of the same host."""
    before = {(s.device, s.name): s.value for s in first if s.name in COUNTER_METRICS}
    return [f"counter {s.name} of {s.device} went down from {before[(s.device, s.name)]:g} to {s.value:g} between "
            "two polls" for s in second if (s.device, s.name) in before and s.value < before[(s.device, s.name)]]


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def reorder_differences(healthy: FamilyInventory, reordered: FamilyInventory | None) -> list[str]:
    """What changed when the vendor listed the same devices in another order: the ids, each id's SKU, health
    and number of units, the node's set of units, and the links must not. (Which unit a device has may: a
    unit is what the runtime's visible-devices variable names, often the vendor's enumeration index.)"""
    if reordered is None:
        return ["no devices at all"]

    def per_device(family: FamilyInventory) -> dict[str, tuple[Any, ...]]:
        state = {r.device: r.state for r in family.health}
        return {d.id: (len(d.unit_ids), d.sku, state.get(d.id)) for d in family.devices}

    before, after = per_device(healthy), per_device(reordered)
    wrong = []
    units = [sorted(u for d in f.devices for u in d.unit_ids) for f in (healthy, reordered)]
    if units[0] != units[1]:
        wrong.append(f"the node's units {units[0][:6]} become {units[1][:6]}")
    if set(before) != set(after):
        wrong.append(f"device ids {sorted(set(before) ^ set(after))[:3]} appear or vanish")
    for dev in sorted(set(before) & set(after)):
        if before[dev] != after[dev]:
            wrong.append(f"{dev}: (units, SKU, health) {before[dev]} become {after[dev]}")
    links = [sorted((min(ln.a, ln.b), max(ln.a, ln.b), ln.kind) for ln in f.topology.links)
             for f in (healthy, reordered)]
    if links[0] != links[1]:
        wrong.append(f"the links change ({len(links[0])} -> {len(links[1])})")
    return wrong[:4]


def others_changed(base: DownstreamAnswers, rest: DownstreamAnswers, gone: str) -> list[str]:
    """What the per-device hooks stopped saying about the devices still given when ``gone`` was left out: the
    links between them and their health must stay as they were (a loop that stops at the first link to a device
    it was not given drops the rest)."""
    def links(answers: DownstreamAnswers) -> set[tuple[str, str, str]]:
        return {(min(ln.a, ln.b), max(ln.a, ln.b), ln.kind) for ln in answers.topology.links
                if gone not in (ln.a, ln.b)}

    wrong = []
    dropped = sorted(links(base) - links(rest))
    if dropped:
        a, b, kind = dropped[0]
        wrong.append(f"rayaccel_topology drops {len(dropped)} links between the other devices, such as {a}<->{b} "
                     f"({kind}): leaving one device out may only take its own links")
    before = {r.device: r.state for r in base.health if r.device != gone}
    after = {r.device: r.state for r in rest.health}
    changed = [dev for dev in sorted(before) if after.get(dev) != before[dev]]
    if changed:
        wrong.append(f"rayaccel_health changes {changed[0]} from {before[changed[0]]} to "
                     f"{after.get(changed[0], 'absent')} ({len(changed)} devices): only the device left out may change")
    return wrong


#: What a per-device vendor file may read as when the driver misbehaves: gone, empty, or not a value.
FILE_DAMAGE: tuple[tuple[str, str | None], ...] = (("missing", None), ("empty", ""), ("garbage", "\u00bf#?\n"))
#: At most this many of a device's files are damaged per fixture (each damage is a fresh build).
MAX_DAMAGED_FILES = 24
#: A path segment that numbers a device entry: ``card3``, ``accel0``, ``example1``.
_NUMBERED = re.compile(r"([A-Za-z][A-Za-z_-]*?)(\d+)")


def device_files(read: Iterable[str], device: Device) -> list[str]:
    """The files read (on a simulated host) that are this device's own: a path naming its PCI address, or with
    a segment that numbers it (``.../example1/uuid`` for index 1). Shared files (a driver version) are not."""
    mine = []
    for path in sorted(read):
        segments = path.strip("/").split("/")[:-1]
        numbered = [m for m in (_NUMBERED.fullmatch(s) for s in segments) if m]
        if (device.pci_bus_id and device.pci_bus_id.lower() in path.lower()) or \
                (numbered and int(numbered[0].group(2)) == device.index):
            mine.append(path)
    return mine


def device_view(family: FamilyInventory | None, device_id: str) -> dict[str, Any] | None:
    """One device's facts in a built inventory (its record, health state, links); None when it is not there."""
    if family is None:
        return None
    device = next((d for d in family.devices if d.id == device_id), None)
    if device is None:
        return None
    return {"device": device.model_dump(mode="json", exclude={"sku"}),
            "health": next((r.state for r in family.health if r.device == device_id), None),
            "links": sorted((min(ln.a, ln.b), max(ln.a, ln.b), ln.kind, ln.bandwidth_gbps)
                            for ln in family.topology.links if device_id in (ln.a, ln.b))}


def damaged_file_findings(healthy: FamilyInventory, damaged: FamilyInventory | None, problems: Sequence[Problem],
                          device: Device, where: str, damage: str = "garbage", path: str | None = None) -> list[str]:
    """What is wrong with a build whose one device file (``path``) was damaged: a hook that raised, another
    device's facts changed, or the device kept with a fact that is another value now, unreported. Unknown
    (``None``) at any depth (a partition's ``memory_mib``), an optional nested entry dropped (an attribute), a
    link fewer, a health report other than healthy, or a problem naming the device or the file say so honestly;
    left out, it names nothing wrong."""
    garbage = damage == "garbage"
    wrong = [f"{where}: {p.hook or 'a hook'} raised instead of reporting it: {p.message}"
             for p in problems if p.code == "hook-raised"]
    if damaged is not None:
        wrong += [f"{where}: {leak}" for leak in one_device_fault_leaks(healthy, damaged, {device.id})]
    before, after = device_view(healthy, device.id), device_view(damaged, device.id)
    if before is None:
        return wrong
    if after is None and garbage and damaged is not None:  # garbage in its id file: the same entry, renamed
        known = {d.id for d in healthy.devices}
        renamed = next((d.id for d in damaged.devices if d.index == device.index and d.id not in known), None)
        after = device_view(damaged, renamed) if renamed else None
        before = {**before, "device": {**before["device"], "id": renamed},
                  "links": [(*sorted(renamed or "" if x == device.id else x for x in ln[:2]), *ln[2:])
                            for ln in before["links"]]}
    if after is None:
        # Left out is not failed: an unreadable file may be what makes the entry a device at all (a PCI
        # function's vendor id, TPU), and a device left out names nothing wrong; the node just has one fewer.
        return wrong
    if after["health"] not in (None, "healthy"):
        return wrong  # its health report says something is wrong with it
    reported = any(p.code != "hook-raised" and _names_device(p.message, device, path) for p in problems)
    attributes = after["device"].get("attributes") or {}
    if ID_FALLBACK in attributes:  # the entry says its id is a fallback: the honest answer to an unreadable id
        after = {**after, "device": {**after["device"],
                                     "attributes": {k: v for k, v in attributes.items() if k != ID_FALLBACK}}}
    # A reported problem naming the device or the file makes a stand-in text honest ('unknown' for a board
    # revision); a number never: a size or count the plugin could not read is None, or a scheduler uses it.
    changed = [f"its {field} went from {_short(old)} to {_short(new)}"
               for field, old, new in silent_changes(before["device"], after["device"], garbage)
               if not reported or _is_number(new)]
    if not reported and not set(map(tuple, after["links"])) <= set(map(tuple, before["links"])):
        changed.append(f"its links went from {_short(before['links'])} to {_short(after['links'])}")
    if reported:
        wrong += [f"{where}: {device.id} is kept, wrong: {what}; a problem names it, but a number that cannot be "
                  "read is unknown (None), never a stand-in" for what in changed[:1]]
    else:
        wrong += [f"{where}: {device.id} is kept, silently wrong: {what} (report the value unknown, or a problem)"
                  for what in changed[:1]]
    return wrong


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _names_device(message: str, device: Device, path: str | None) -> bool:
    """Whether a problem's message names the device (its id or PCI address) or the damaged file (or its entry)."""
    names = [device.id, device.pci_bus_id, path, path.rsplit("/", 1)[0] if path else None]
    return any(name and name.lower() in message.lower() for name in names)


def silent_changes(before: Any, after: Any, garbage: bool, field: str = "") -> list[tuple[str, Any, Any]]:
    """(field path, before, after) for each known value that became another known value, at any depth.

    Unknown is honest anywhere: a value now ``None``, an optional mapping entry dropped (an attribute), a list
    entry with an ``id`` left out (a partition). Garbage text in a text fact (a product name) is the vendor's
    text passed through as data: only a value that is not text (a number, a size, a node) can be told wrong
    from the damaged file alone."""
    if after is None or before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        return [change for key, value in before.items() if key in after
                for change in silent_changes(value, after[key], garbage, f"{field}.{key}" if field else str(key))]
    if isinstance(before, list) and isinstance(after, list):
        keyed = all(isinstance(x, dict) and "id" in x for x in [*before, *after])
        if keyed:
            now = {x["id"]: x for x in after}
            return [change for x in before if x["id"] in now
                    for change in silent_changes(x, now[x["id"]], garbage, f"{field}[{x['id']}]")]
        if len(before) == len(after):
            return [change for i, (x, y) in enumerate(zip(before, after, strict=True))
                    for change in silent_changes(x, y, garbage, f"{field}[{i}]")]
    if garbage and isinstance(after, str):
        return []
    return [(field, before, after)]
