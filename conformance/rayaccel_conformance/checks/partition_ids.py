"""A partitioned device is named by none of its partitions' ids (RAC113,
``invariant a-device-is-none-of-its-partitions``; issue 46, held-out round 16's ``a2``: an AMD wrapper naming a
partitioned GPU whose amdsmi uuid is not in amdsmi's form by its first partition's uuid, where the plugin names it
``<uuid>-gpu``).

A partitioned device and each of its partitions are different things on the node: the device's health drains all
of its partitions, a partition's only itself (docs/partitions.md), and the DRA export publishes a partition with its
own ``uuid`` beside its device's as ``parentUuid``. RAC113 already refuses a partition id that is a device's. The
uuid the vendor gives a partition (``Partition.attributes['uuid']``, docs/partitions.md) names it too: a device
whose id is that uuid is published as its own partition's parent with the partition's uuid, and an operator or a
claim that names the partition by its uuid names the device, or the other way round.

Every fixture states its partitions' uuids in the vendor's usual form, so a plugin that falls back to a partition's
uuid where it cannot read the device's own id in that form is never asked. Real tools do answer a logical GPU
without its uuid: the AMD fixture ``mi300x-cpx-nps4``'s fault ``gpu9-pci-id-only`` is amdsmi answering
``AMDSMI_STATUS_NOT_SUPPORTED`` for one partition's uuid and PCI address. So each fault of a fixture with
partitioned devices is also written on a partitioned device's own record, its first partition's (the logical unit
that answers for the device; the same change on a sibling record, as RAC203's ``a-failure-anywhere-is-seen`` moves
it: ``checks/moved_failures.py``), and on that machine too no device's id may be one of its partitions' uuids.
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel.hosts.fixtures import Fixture, HostState, merge_patch
from rayaccel.records import Device, FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.moved_failures import sibling_moves, unit_of
from rayaccel_conformance.harness.subject import Subject

INVARIANT = "invariant a-device-is-none-of-its-partitions"
#: The partition attribute holding the uuid the vendor gives a partition (docs/partitions.md; DRA's ``uuid``).
UUID_ATTRIBUTE = "uuid"
#: Faults written on a device's own record per fixture (each is one build).
MAX_MOVED_FAULTS = 3


def partition_uuids(devices: Sequence[Device]) -> dict[str, str]:
    """Each partition's uuid on the node -> the partition, described."""
    found: dict[str, str] = {}
    for device in devices:
        for partition in device.partitions:
            uuid = partition.attributes.get(UUID_ATTRIBUTE)
            if isinstance(uuid, str) and uuid:
                found.setdefault(uuid, f"partition {partition.id} of device {device.id}")
    return found


def devices_named_as_partitions(devices: Sequence[Device]) -> list[str]:
    """Each device whose id is the uuid of a partition on the node, described."""
    uuids = partition_uuids(devices)
    return [f"device {device.id!r} has the uuid of {uuids[device.id]}: the device and the partition are published "
            "under one id (DRA: the partition's uuid is its parentUuid), so whatever names one names the other; name "
            "the device by its own id (where the tool gives it none, one no partition has)"
            for device in devices if device.id in uuids]


def _first_partition_moves(fx: Fixture, devices: list[Device]) -> list[tuple[str, str, dict[str, object]]]:
    """Each fault's change written on a partitioned device's own record (its first partition's): the fault's name,
    where it was written and the host patch; at most one per fault, MAX_MOVED_FAULTS in all."""
    firsts = [f"partition {d.partitions[0].id} of {d.id} (its first" for d in devices if d.partitions]
    host = fx.host.model_dump(mode="json")
    chosen: list[tuple[str, str, dict[str, object]]] = []
    for fault in fx.faults:
        for move in sibling_moves(fault, host):
            said = unit_of(move.sibling_key, move.sibling_fields, devices) or ""
            if any(said.startswith(first) for first in firsts):
                chosen.append((fault.name, f"{move.sibling}, {said}", move.patch))
                break
        if len(chosen) >= MAX_MOVED_FAULTS:
            break
    return chosen


def partition_id_findings(subject: Subject, fx: Fixture, family: FamilyInventory) -> list[str]:
    """``invariant a-device-is-none-of-its-partitions`` on the fixture's build and with each of its faults written on a
    partitioned device's own record."""
    wrong = [f"{INVARIANT}, {fx.ref}: {w}" for w in devices_named_as_partitions(family.devices)]
    devices = list(family.devices)
    if not any(d.partitions for d in devices):
        return wrong
    host = fx.host.model_dump(mode="json")
    for fault, where, patch in _first_partition_moves(fx, devices):
        variant = fx.model_copy(update={"host": HostState.model_validate(merge_patch(host, patch)), "faults": []})
        built = subject.build(simulated_host(variant), with_metrics=False).family(subject.family().name)
        if built is None:
            continue
        wrong += [f"{INVARIANT}, {fx.ref} with fault {fault}'s change written on a partitioned device's own record, "
                  f"{where}: {w}" for w in devices_named_as_partitions(built.devices)]
    return wrong
