"""RAC203's ``resources-count-the-devices-given`` (issue 46, held-out round 11's ``s3``: a sysfs bake offering
device memory as a resource of its own, summed over every device the driver lists rather than the devices the
hook is given, so an unhealthy device's memory is still offered; only the fixture's ``expected.resources`` caught
it, and a vendor edits those with the code).

``rayaccel_resources`` is given the healthy devices: the SDK offers the family's resource for them alone, and an
extra resource the plugin counts per device must count them too. Where a fault takes a device off the host (its
discovery no longer finds it) and an extra resource changes with it, the resource follows the devices; the same
hook on the same host with that device still there, given the same devices (as the SDK gives them when the device
is unhealthy), must answer the same. A resource that answers as if the device were given counts the devices the
host lists, not the ones it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rayaccel import hookspec
from rayaccel.hosts.fixtures import Fixture
from rayaccel.records import Device, FamilyInventory, Topology
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.harness.subject import Subject


def _extra(subject: Subject, host: Any, devices: Sequence[Device], topology: Topology) -> dict[str, float]:
    answer = subject.manager.answer(subject.name, hookspec.RESOURCES, [], host=host, devices=list(devices),
                                    topology=topology)
    return dict(answer.extra)


def _healthy(family: FamilyInventory) -> list[Device]:
    down = {h.device for h in family.health if h.state == "unhealthy"}
    return [d for d in family.devices if d.id not in down]


def withheld_devices_counted(subject: Subject, fx: Fixture, fault: str, fixture_family: FamilyInventory | None,
                             faulty_family: FamilyInventory | None, fault_host: Any) -> list[str]:
    """Each extra resource that changes when the fault takes a device off the host but not when the device is on
    the host and withheld from ``rayaccel_resources`` (the topology the same in both calls); empty when none."""
    if fixture_family is None or faulty_family is None:
        return []
    present = {d.id for d in faulty_family.devices}
    gone = [d.id for d in fixture_family.devices if d.id not in present]
    if not gone:
        return []
    given = {d.id for d in _healthy(faulty_family)}
    listed_host = simulated_host(fx)
    whole = _extra(subject, listed_host, _healthy(fixture_family), faulty_family.topology)
    lost = _extra(subject, fault_host, _healthy(faulty_family), faulty_family.topology)
    withheld = _extra(subject, listed_host, [d for d in _healthy(fixture_family) if d.id in given],
                      faulty_family.topology)
    wrong = []
    for name in sorted({*lost, *withheld}):
        if lost.get(name) == withheld.get(name):
            continue
        how = ("as when they are given: the devices given make no difference to it, the devices the host lists do"
               if withheld.get(name) == whole.get(name) else "another quantity")
        wrong.append(
            f"fault {fault}: rayaccel_resources gives {name} {lost.get(name)!r} with {', '.join(gone)} gone from "
            f"the host, but {withheld.get(name)!r} with {'them' if len(gone) > 1 else 'it'} on the host and not "
            f"among the devices given ({how}): the resource counts the devices the host lists, not the healthy "
            f"devices it is given, so an unhealthy device's share is still offered (invariant "
            f"resources-count-the-devices-given; count from the devices argument)")
    return wrong
