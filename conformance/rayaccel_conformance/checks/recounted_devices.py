"""RAC111's ``devices-are-counted-once`` (issue 46, held-out round 12's ``c1``: a command-csv bake offering a resource
per model, ``FOXHOLLOW_X1``, counting the devices it is given beside the family's ``FOXHOLLOW``; only the fixture's
``expected.resources`` caught it, and with that expectation edited to the code's answer it passed ``supported``).

The family's resource is the one name Ray hands out per-unit instance ids for (``RAY_custom_unit_instance_resources``,
:mod:`rayaccel.ray.node`) and the one whose assigned ids become the visible-devices variable
(``ray/_private/worker.py`` ``get_accelerator_ids_for_accelerator_resource`` looks up the family's resource name).
An extra resource that counts the same devices again, one for each device given (or each of its units), is a second
name for them that neither sees: a task asking for it gets no device in the variable, and the node offers each
device twice, so a task holding it by one name and a task holding it by the other run on it at once.

Found by withholding each device in turn from ``rayaccel_resources``, as the SDK withholds an unhealthy one: a
resource that drops by exactly one device (or its units) for each device whose withholding changes it, and whose
quantity is the sum of those drops, counts devices (two at least: a resource one device's presence brings is not
taken for a count). Constant resources (a slice's head, its name), memory and other amounts per device, and counts
of pairs or domains do not drop that way, and pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rayaccel import hookspec
from rayaccel.hosts.fixtures import Fixture
from rayaccel.records import Device, FamilyInventory, Problem
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.harness.subject import Subject


def _counts(device: Device) -> set[float]:
    """What one device given adds to a resource counting the family's devices: itself, or each of its units."""
    return {1.0, float(len(device.unit_ids))}


def recounted_device_errors(subject: Subject, fx: Fixture, family: FamilyInventory, given: Sequence[Device],
                            extra: Mapping[str, float]) -> list[str]:
    """Each extra resource (of ``extra``, the hook's answer for ``given``) that counts the devices given one for one,
    found by withholding each in turn (the fixture's host and topology the same); empty when none does."""
    candidates = {name: value for name, value in extra.items() if value >= 1 and float(value).is_integer()}
    if len(given) < 2 or not candidates:
        return []
    host = simulated_host(fx)
    dropped_by: dict[str, dict[str, float]] = {name: {} for name in candidates}
    for device in given:
        problems: list[Problem] = []
        answer = subject.manager.answer(subject.name, hookspec.RESOURCES, problems, host=host,
                                        devices=[d for d in given if d.id != device.id], topology=family.topology)
        if problems:  # a hook failing on fewer devices is another check's finding, not a count
            return []
        for name in list(candidates):
            drop = candidates[name] - answer.extra.get(name, 0.0)
            if drop == 0:
                continue
            if drop not in _counts(device):
                del candidates[name]  # an amount per device (memory, streams), not a count of devices
                continue
            dropped_by[name][device.id] = drop
    wrong = []
    for name, value in candidates.items():
        drops = dropped_by[name]
        if len(drops) < 2 or sum(drops.values()) != value:
            continue  # a resource one device's presence brings (a head on card 0) is no count of devices
        shown = [f"{device} ({drop:g})" for device, drop in drops.items()]
        counted = ", ".join(shown[:4]) + (f" and {len(shown) - 4} more" if len(shown) > 4 else "")
        whole = "every device given" if len(drops) == len(given) else f"{len(drops)} of the {len(given)} devices given"
        resource, var = family.family.resource_name, family.family.visible_devices_env_var
        wrong.append(
            f"rayaccel_resources offers {name} {value:g} for the {len(given)} devices given, and withholding each "
            f"device drops it by that device's count: {counted}; it counts {whole} again beside {resource}, the one "
            f"resource Ray gives per-unit ids for and sets {var} from, so a task asking for {name} gets no device "
            f"in {var}, and each device is offered twice, to a task holding it as {resource} and to one holding it "
            f"as {name} at once (invariant devices-are-counted-once; offer a model, size or subset as the "
            f"accelerator type (accelerator_type:<type>, which the SDK adds) or a node label beside {resource}, "
            f"never as a resource counting the devices again)")
    return wrong
