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
taken for a count). Constant resources (a slice's head, its name) and counts of pairs or domains do not drop that
way, and pass.

The same withholding finds ``a-device-quantity-is-not-pooled`` (held-out round 14's ``l2``: a python-library bake
offering ``LAIDON_MEMORY_MIB``, the devices' memory summed): a resource that drops by the withheld device's own
amount (its memory in MiB, GiB, MB, GB, KiB or bytes, its partition capacity, a number among its attributes: its
cores, its ports) for each device that changes it, and is the sum of those amounts, pools a per-device quantity into
one node quantity. Ray ties only the family's resource to devices (per-unit ids, the visible-devices variable), so
a task asking 150000 of it is placed on a node of 98304 MiB devices, and tasks sharing one device each draw their
share from the pool, not from that device (Ray keeps a resource outside ``RAY_custom_unit_instance_resources`` as
one node total). The GPU-memory request Ray's maintainers proposed asks it "from a single gpu" and turns it into a
fraction of one (ray-project/enhancements#47, prototype ray-project/ray#41147); the SDK publishes one device's memory
as the ``rayaccel.io/memory-mib`` label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rayaccel import hookspec
from rayaccel.hosts.fixtures import Fixture
from rayaccel.records import Device, FamilyInventory, Problem
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.harness.subject import Subject

#: A device's memory (``Device.memory_mib``) in each unit a resource may state it in: name -> factor from MiB.
MEMORY_UNITS = {"MiB": 1.0, "GiB": 1 / 1024, "KiB": 1024.0, "bytes": float(2**20), "MB": 2**20 / 10**6,
                "GB": 2**20 / 10**9}


def _counts(device: Device) -> set[float]:
    """What one device given adds to a resource counting the family's devices: itself, or each of its units."""
    return {1.0, float(len(device.unit_ids))}


def device_quantities(device: Device) -> dict[str, float]:
    """The amounts one device states of itself, by what they are: its memory in each unit, its partition capacity
    and the numbers among its attributes (its cores, its ports)."""
    amounts: dict[str, float] = {}
    if device.memory_mib:
        amounts |= {f"memory in {unit}": device.memory_mib * factor for unit, factor in MEMORY_UNITS.items()}
    if device.partition_capacity is not None:
        amounts |= {f"partition_capacity.{field}": float(getattr(device.partition_capacity, field))
                    for field in ("compute_slices", "memory_slices")}
    amounts |= {f"attributes[{key!r}]": float(value) for key, value in device.attributes.items()
                if isinstance(value, int | float) and not isinstance(value, bool)}
    return {what: amount for what, amount in amounts.items() if amount > 0}


def _close(a: float, b: float, roundings: int = 1) -> bool:
    """Equal but for ``roundings`` roundings to the resource's unit (a 81559 MiB device's memory in whole GiB: 79
    or 80); amounts under 8 are held exact, so a small number is never taken for another."""
    exact = abs(a - b) <= 1e-9 * max(abs(a), abs(b))
    return exact or (min(a, b) >= 8 and abs(a - b) < roundings)


def _amount(value: float) -> str:
    """A quantity as written in a resource request: whole numbers in full (137438953472 bytes, not 1.37e+11)."""
    return f"{value:.12g}"


def _pooled_errors(name: str, value: float, drops: Mapping[str, float], given: Sequence[Device],
                   family: FamilyInventory) -> list[str]:
    """``name`` named when each device that changes it drops it by one amount of its own, the same kind of amount for
    each (two devices at least), and ``value`` is the sum of those amounts; empty otherwise."""
    by_id = {device.id: device for device in given}
    if len(drops) < 2:
        return []
    common: set[str] | None = None
    for device_id, drop in drops.items():
        matching = {what for what, amount in device_quantities(by_id[device_id]).items() if _close(drop, amount)}
        common = matching if common is None else common & matching
    if not common:
        return []
    what = sorted(common)[0]
    amounts = {device_id: device_quantities(by_id[device_id])[what] for device_id in drops}
    if not _close(value, sum(amounts.values()), roundings=len(amounts)):
        return []
    shown = [f"{device} ({_amount(drop)})" for device, drop in drops.items()]
    counted = ", ".join(shown[:4]) + (f" and {len(shown) - 4} more" if len(shown) > 4 else "")
    largest = max(amounts.values())
    resource, var = family.family.resource_name, family.family.visible_devices_env_var
    asked, most = _amount(largest * 1.5), _amount(largest)
    return [
        f"rayaccel_resources offers {name} {_amount(value)} for the {len(given)} devices given, and withholding each "
        f"device drops it by that device's own {what}: {counted}; it pools {len(drops)} devices' {what} into one "
        f"node quantity that Ray never ties to a device (per-unit ids, and {var}, are {resource}'s alone), so a task "
        f"asking {name} {asked} is placed here though no device has more than {most}, and tasks sharing one device "
        f"each draw their share from the pool, not from that device (invariant a-device-quantity-is-not-pooled; the "
        f"memory request Ray's maintainers proposed asks it of a single device (ray-project/enhancements#47); "
        f"publish the amount of one device as a node label (the SDK's rayaccel.io/memory-mib for memory) and let a "
        f"task ask for the devices it needs as {resource})"]


def recounted_device_errors(subject: Subject, fx: Fixture, family: FamilyInventory, given: Sequence[Device],
                            extra: Mapping[str, float]) -> list[str]:
    """Each extra resource (of ``extra``, the hook's answer for ``given``) that counts the devices given one for one,
    or pools an amount of each, found by withholding each in turn (the fixture's host and topology the same); empty
    when none does."""
    candidates = {name: value for name, value in extra.items() if value >= 1 and float(value).is_integer()}
    amounts = {name: value for name, value in extra.items() if value > 0}
    if len(given) < 2 or not amounts:
        return []
    host = simulated_host(fx)
    dropped_by: dict[str, dict[str, float]] = {name: {} for name in candidates}
    amount_drops: dict[str, dict[str, float]] = {name: {} for name in amounts}
    for device in given:
        problems: list[Problem] = []
        answer = subject.manager.answer(subject.name, hookspec.RESOURCES, problems, host=host,
                                        devices=[d for d in given if d.id != device.id], topology=family.topology)
        if problems:  # a hook failing on fewer devices is another check's finding, not a count
            return []
        for name in list(amounts):
            drop = amounts[name] - answer.extra.get(name, 0.0)
            if drop != 0:
                amount_drops[name][device.id] = drop
        for name in list(candidates):
            drop = candidates[name] - answer.extra.get(name, 0.0)
            if drop == 0:
                continue
            if drop not in _counts(device):
                del candidates[name]  # an amount per device (memory, streams), not a count of devices
                continue
            dropped_by[name][device.id] = drop
    wrong = []
    for name, value in amounts.items():
        if name not in candidates:  # a count of devices is the path below's; an amount of each device is this one's
            wrong += _pooled_errors(name, value, amount_drops[name], given, family)
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
