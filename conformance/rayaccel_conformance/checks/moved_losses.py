"""A fixture's recorded device loss moved to another device (RAC210's ``a-loss-anywhere-is-the-same-loss``).

A fixture records a device-lost fault on one device, often the last one listed, and a plugin that gets a loss wrong
only where devices are listed after the lost one (a listing loop left at the lost device, the first n devices kept)
passes on it. Where every change of the fault's patch names the lost device (its id, its PCI address, or its number
in a path or key: ``/sys/class/acme/acme3/state``, ``nvml.devices.'5'``, a peer's ``links/<its id>``) the same
vendor state can be written for any other device of the machine, the two devices' names exchanged, so the suite
moves the loss to the first device and a middle one: the same loss, so the same number of devices found, and every
device not lost keeps its PCI address and health, and its index (and the units that index has) by the rule the
recorded loss follows: each its own, or numbered on without gaps. A patch that changes something not naming the lost
device (a tool's whole listing, another device's renumbering) is not moved, and the evidence says so. Each helper
here is pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rayaccel.records import Device, FamilyInventory, HealthReport, MetricSample

#: A path part or key that numbers a device: ``acme3``, ``accel2``, ``nvidia0``, a bare ``5``.
_NUMBERED = re.compile(r"([A-Za-z_]*?)(\d+)")


def _bus_forms(device: Device) -> list[str]:
    """The device's PCI address as tools print it, lower case: full, and with the 4-digit domain sysfs uses."""
    bus = (device.pci_bus_id or "").lower()
    if not bus:
        return []
    domain, _, rest = bus.partition(":")
    return sorted({bus, f"{domain[-4:]}:{rest}"} if rest else {bus}, key=len, reverse=True)


def _numbers(text: str, device: Device) -> bool:
    return any((m := _NUMBERED.fullmatch(part)) is not None and int(m.group(2)) == device.index
               for part in text.split("/"))


def names(text: str, device: Device, by_number: bool = True) -> bool:
    """Whether ``text`` (a key or path) names ``device``: by its id, its PCI address, or (``by_number``) a part
    numbering it."""
    low = text.lower()
    return (device.id.lower() in low or any(form in low for form in _bus_forms(device))
            or (by_number and _numbers(text, device)))


def _swap(text: str, one: str, other: str) -> str:
    """``one`` and ``other`` exchanged in ``text``, each in the case ``text`` spells it."""
    if not one or not other:
        return text
    for a, b in ((one, other), (one.lower(), other.lower()), (one.upper(), other.upper())):
        if a in text or b in text:
            return b.join(part.replace(b, a) for part in text.split(a))
    return text


def renamed(text: str, lost: Device, target: Device) -> str:
    """``text`` with ``lost`` and ``target`` exchanged: naming ``target`` where it named ``lost`` (and ``lost`` where
    it named ``target``: a peer's link entry to the lost device becomes the lost device's entry to the target)."""
    text = _swap(text, lost.id, target.id)
    for one, other in zip(_bus_forms(lost), _bus_forms(target), strict=False):
        text = _swap(text, one, other)

    def number(part: str) -> str:
        m = _NUMBERED.fullmatch(part)
        swapped = {lost.index: target.index, target.index: lost.index}
        return f"{m.group(1)}{swapped[int(m.group(2))]}" if m and int(m.group(2)) in swapped else part

    return "/".join(number(part) for part in text.split("/"))


def _leaves(node: Any, keys: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(node, dict) and node:
        return [leaf for key, value in node.items() for leaf in _leaves(value, (*keys, str(key)))]
    return [(keys, node)]


def _holds(state: Any, keys: Sequence[str]) -> bool:
    for key in keys:
        if not isinstance(state, dict) or key not in state:
            return False
        state = state[key]
    return True


def moved_patch(patch: dict[str, Any], state: dict[str, Any], lost: Device, target: Device,
                devices: Sequence[Device]) -> tuple[dict[str, Any] | None, str]:
    """The fault's merge ``patch`` written for ``target`` instead of ``lost`` on the host ``state`` (as JSON): each
    change names the lost device, and the two devices' names are exchanged in it (a peer's link entry to the lost
    device is kept for the peer, the target's becomes the lost device's). None and why where it cannot be: a change
    not naming the lost device (a whole listing, another device's renumbering), naming it in its value, or
    touching an entry whose counterpart the host has not (or has, where the lost one's is new)."""
    others = [d for d in devices if d.id != lost.id]
    moved: dict[str, Any] = {}
    for keys, value in _leaves(patch):
        where = "/".join(keys)
        if not any(names(key, lost) for key in keys):
            other = next((d for d in others for key in keys if names(key, d)), None)
            return None, f"its change of {where!r} names {other.id if other else 'no device'}"
        if isinstance(value, str) and names(value, lost, by_number=False):
            return None, f"its change of {where!r} names {lost.id} in its value"
        new = tuple(renamed(key, lost, target) for key in keys)
        depth = max(i for i, key in enumerate(keys) if new[i] != key) + 1
        if _holds(state, keys[:depth]) != _holds(state, new[:depth]):
            return None, (f"{'/'.join(new[:depth])!r} is not to {target.id} what {'/'.join(keys[:depth])!r} is to "
                          f"{lost.id}")
        node = moved
        for key in new[:-1]:
            node = node.setdefault(key, {})
        node[new[-1]] = value
    return moved, ""


def move_targets(devices: Sequence[Device], lost: Device) -> list[tuple[int, Device]]:
    """(position, device) to move a loss to: the first and a middle one, never the device the fixture loses."""
    picks = [0, len(devices) // 2]
    return [(p, devices[p]) for p in dict.fromkeys(picks) if p < len(devices) and devices[p].id != lost.id]


def _closed_up(healthy: FamilyInventory, lost: set[str]) -> dict[str, int | None]:
    """Each device's index once the ``lost`` ones are gone and the rest numbered on without gaps (as Ray numbers the
    TPU chips it finds)."""
    gone = [d.index for d in healthy.devices if d.id in lost and d.index is not None]
    return {d.id: None if d.index is None else d.index - sum(i < d.index for i in gone) for d in healthy.devices}


def index_rules(healthy: FamilyInventory, recorded: FamilyInventory | None, lost: set[str]) -> list[str]:
    """How the recorded loss numbers the devices left: ``kept`` (each its own index), ``closed up`` (numbered on
    without gaps), both where nothing is listed after the lost device, neither where it is some other way."""
    if recorded is None:
        return []
    before = {d.id: d.index for d in healthy.devices}
    after = {d.id: d.index for d in recorded.devices if d.id in before}
    closed = _closed_up(healthy, lost)
    return [rule for rule, index in (("kept", before), ("closed up", closed))
            if all(after[dev] == index[dev] for dev in after)]


def moved_loss_differences(healthy: FamilyInventory, recorded: FamilyInventory | None, recorded_lost: set[str],
                           moved: FamilyInventory | None, target: Device) -> list[str]:
    """What a loss moved to ``target`` gives otherwise than the loss as recorded (losing ``recorded_lost``):
    another number of devices found, ``target`` still found healthy, a device not lost gone, with another PCI
    address or health, or numbered (index, and the units that index had) by a rule the recorded loss does not
    follow."""
    found = {d.id: d for d in moved.devices} if moved else {}
    count = len(recorded.devices) if recorded else 0
    wrong = []
    if len(found) != count:
        wrong.append(f"discovery finds {len(found)} devices, the loss as recorded {count}")
    health = {r.device: r.state for r in moved.health} if moved else {}
    if target.id in found and health.get(target.id) == "healthy":
        wrong.append(f"{target.id}, the device lost, is still found healthy")
    before = {r.device: r.state for r in healthy.health}
    rules = index_rules(healthy, recorded, recorded_lost)
    numbered: dict[str, dict[str, int | None]] = {"kept": {d.id: d.index for d in healthy.devices},
                                                  "closed up": _closed_up(healthy, {target.id})}
    units_at: dict[int | None, list[str]] = {d.index: d.unit_ids for d in healthy.devices}
    for device in healthy.devices:
        if device.id == target.id:
            continue
        now = found.get(device.id)
        if now is None:
            wrong.append(f"{device.id} (index {device.index}), not lost, is no longer found")
            continue
        for fact, old, new in (("PCI address", device.pci_bus_id, now.pci_bus_id),
                               ("health", before.get(device.id), health.get(device.id))):
            if old != new:
                wrong.append(f"{device.id}, not lost, has {fact} {new!r}, not {old!r}")
        followed = [rule for rule in rules if numbered[rule][device.id] == now.index
                    and units_at.get(numbered[rule][device.id]) == now.unit_ids]
        if rules and not followed:
            index = numbered[rules[0]][device.id]
            wrong.append(f"{device.id}, not lost, has index {now.index} and units {now.unit_ids}, not {index} and "
                         f"{units_at.get(index)} (its index {rules[0]}, as under the loss as recorded)")
    return wrong


def stable_readings(first: Sequence[MetricSample], second: Sequence[MetricSample]) -> dict[str, dict[str, float]]:
    """Per device, the readings two polls of the same machine answer alike: a rate worked out between polls (a
    counter's bytes per second) is no fixed answer to compare a later poll with."""
    again = {(s.device, s.name): s.value for s in second}
    stable: dict[str, dict[str, float]] = {}
    for sample in first:
        if again.get((sample.device, sample.name)) == sample.value:
            stable.setdefault(sample.device, {})[sample.name] = sample.value
    return stable


def _readings(samples: Sequence[MetricSample], device: str) -> dict[str, float]:
    return {s.name: s.value for s in samples if s.device == device}


def _touched(healthy: FamilyInventory, fresh: FamilyInventory | None) -> set[str]:
    """Devices a fresh build of the host after the loss finds in another health state than the healthy machine's (a
    chiplet lost with its card): the loss changed them, their readings may change too."""
    if fresh is None:
        return set()
    state = {r.device: r.state for r in healthy.health}
    after = {r.device: r.state for r in fresh.health}
    found = {d.id for d in fresh.devices}
    return {d.id for d in healthy.devices if d.id in found and after.get(d.id) != state.get(d.id)}


def poll_after_loss_differences(healthy: FamilyInventory, fresh: FamilyInventory | None,
                                stable: dict[str, dict[str, float]], health: Sequence[HealthReport],
                                metrics: Sequence[MetricSample], lost: set[str],
                                raised: dict[str, list[str]], unanswered: set[str]) -> list[str]:
    """What a health monitor's poll after a loss (health and metrics asked with the devices discovered before it,
    on the host where ``lost`` are gone) gives otherwise for a device not lost
    (``invariant a-poll-after-a-loss-reads-each-device-by-its-id``): a health state other than a fresh build of
    the same host (``fresh``) gives it, a reading other than the healthy machine's polls give it alike
    (``stable``; not for a device the fresh build shows changed). ``raised``: per hook that raised when asked for
    every device (its whole answer lost), what it raised and for which devices asked alone; ``health`` and
    ``metrics`` are then the answers for each device asked alone, ``unanswered`` the devices it raised for alone
    (said with the raise, not again as readings missing). A reading equal to another device's on the healthy
    machine is named as that device's: the device was read at a number the vendor now gives its neighbour."""
    wrong = [f"{hook} {why[0]}, asked for the {len(healthy.devices)} devices discovered before the loss: its whole "
             f"answer is lost ({'; '.join(why[1:]) or 'it raises for no device asked alone'}); skip a device the "
             "vendor no longer lists (reported) and read the others" for hook, why in raised.items()]
    due = {r.device: r.state for r in (fresh or healthy).health}
    now = {r.device: r.state for r in health}
    touched = _touched(healthy, fresh)
    owners: dict[tuple[str, float], list[str]] = {}
    for owner, readings in stable.items():
        for name, reading in readings.items():
            owners.setdefault((name, reading), []).append(owner)
    for device in healthy.devices:
        if device.id in lost or device.id in unanswered:
            continue
        if device.id in now and now[device.id] != due.get(device.id):
            wrong.append(f"{device.id} (index {device.index}), not lost, is {now[device.id]}, where a fresh build of "
                         f"the same host finds it {due.get(device.id)}")
        if device.id in touched:
            continue
        own, read = stable.get(device.id, {}), _readings(metrics, device.id)
        for name in sorted(own):
            if own[name] == read.get(name):
                continue
            value = read.get(name)
            other = [d for d in owners.get((name, value), []) if d != device.id] if value is not None else []
            whose = f", the value {other[0]} reads on the healthy machine" if other else ""
            wrong.append(f"{device.id} (index {device.index}), not lost, reads {name} {value} (its own is "
                         f"{own[name]}{whose}): read each device by its id in what the vendor lists now, not at "
                         "the number discovery gave it (a library numbers what it finds anew once a card is lost)")
            break
    return wrong
