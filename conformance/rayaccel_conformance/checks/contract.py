"""The contract of the pure hooks and of the readings, over inputs no fixture holds (supported tier, issue 46):
labels and resources free of the devices' order (RAC221), cloud hints free of how an instance type is spelled
(RAC222), and metrics that move exactly as their readings do when the suite scales one at the host seam
(RAC223). Each failure names the property or invariant, the fixture and the perturbation, with the values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rayaccel import hookspec
from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import Device, FamilyInventory, NodeInventory, Problem
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.invariants import memory_source, raw_memory
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

if TYPE_CHECKING:
    from rayaccel_conformance.checks.readings import TextReading

# RAC221 ---------------------------------------------------------------------------------------------------------


@check("RAC221", scope="fixture")
def labels_and_resources_free_of_device_order(subject: Subject, fixture: str | None) -> Evidence:
    """Labels and resources depend on which devices the node has, never on the order they are listed in.

    A fixture lists its devices in one order, so a label built from the first device listed, or from the
    devices joined as given, passes on it. Hypothesis draws permutations of the fixture's devices
    (``rayaccel_conformance.checks.properties``): ``rayaccel_resources`` given them in that order, and
    ``rayaccel_labels`` given the family's inventory with its devices in that order, must answer exactly what
    they answer for the discovered order. A failure quotes the smallest order hypothesis shrank it to.
    Derandomized, 10 orders. Fix: sort, count or take the set of what the devices say, or read the value
    from the device it belongs to (by index or id), never from a position in the list.
    """
    from rayaccel_conformance.checks.properties import order_failures

    family = subject.family()
    fx = subject.fixture(fixture)
    fam = subject.inventory(fixture).family(family.name)
    if fam is None or len(fam.devices) < 2:
        raise NotApplicable(f"{fx.ref}: fewer than two devices, one order")
    wrong = order_failures(subject, simulated_host(fx), fam)
    if wrong:
        raise CheckFailed([f"{fx.ref}: {w}" for w in wrong])
    return f"{fx.ref}: labels and resources the same for every order of the {len(fam.devices)} devices drawn"


# RAC222 ---------------------------------------------------------------------------------------------------------


@check("RAC222")
def cloud_hints_free_of_spelling(subject: Subject) -> Evidence:
    """Cloud hints answer an instance type however its case is written, and every listed hint round-trips.

    Cloud APIs spell one instance type several ways (Azure's ``Standard_ND96isr_H100_v5`` comes back as
    ``standard_nd96isr_h100_v5``; people type ``P5.48XLARGE``). For every instance type the plugin hints
    (those it lists with ``rayaccel_cloud_instance_types`` and those RAC209 asks about), hypothesis draws
    spellings of the name (upper, lower, mixed case, and surrounding whitespace): a spelling in another case
    must get the same hint (its instance type compared without regard to case), one with whitespace the same
    hint or none, never another. Every hint ``rayaccel_cloud_instance_types`` lists must be exactly what
    ``rayaccel_cloud_hints`` answers for its provider and instance type. A failure quotes the smallest
    spelling hypothesis shrank it to. And a hint is its own entry's (``invariant a-hint-is-its-own-entry``):
    each entry of an instance-type table the plugin reads through the SDK (``load_instance_types``) left out
    in turn, as the table stood before the cloud added that size, the plugin must answer that instance type
    with no hint or as it did with the entry, never with another (a family's first entry for an unlisted
    size). And a hint is its provider's (``invariant a-hint-is-its-providers``, ``checks/provider_hints.py``):
    each name hinted is asked under every other provider the SDK knows that the plugin neither lists nor was
    asked it under, and must get no hint (``gcp:hop1.12xlarge`` is no AWS machine). Fix: look instance types up
    without regard to case (the SDK's ``instance-types.yaml`` does), strip what is typed around them, under the
    provider asked, answer both hooks from one table, and give no hint for a type it does not list.
    """
    from rayaccel_conformance.checks.hint_listing import unread_listing_failures
    from rayaccel_conformance.checks.instance_entries import hints_from_other_entries
    from rayaccel_conformance.checks.properties import listed_hint_failures, spelling_failure
    from rayaccel_conformance.checks.provider_hints import other_provider_hints
    from rayaccel_conformance.checks.supported import CLOUD_INSTANCE_TYPES

    subject.family()
    if not subject.manager.implements(subject.name, "rayaccel_cloud_hints"):
        raise NotApplicable("the plugin implements no rayaccel_cloud_hints hook")
    listing_said: list[Problem] = []
    listed = subject.manager.answer(subject.name, hookspec.CLOUD_INSTANCE_TYPES, listing_said) or []
    asked: set[tuple[str, str]] = {(h.provider, h.instance_type) for h in listed}
    asked |= {(provider, t) for provider, names in CLOUD_INSTANCE_TYPES.items() for t in names}
    asked |= {("other", subject.fixture(ref).host.hostname or "") for ref in subject.fixture_paths()} - {("other", "")}
    hinted: dict[tuple[str, str], Any] = {}
    for provider, instance_type in sorted(asked):
        hint = subject.manager.answer(subject.name, hookspec.CLOUD_HINTS, [], provider=provider,
                                      instance_type=instance_type)
        if hint is not None:
            hinted[(provider, instance_type)] = hint
    wrong = [*unread_listing_failures(listing_said), *listed_hint_failures(subject, listed)]
    if hinted:
        found = spelling_failure(subject, hinted)
        wrong += [found] if found else []
    borrowed, left_out = hints_from_other_entries(
        lambda provider, instance_type: subject.manager.answer(subject.name, hookspec.CLOUD_HINTS, [],
                                                               provider=provider, instance_type=instance_type),
        sorted(asked))
    wrong += borrowed[:4]
    wrong += other_provider_hints(
        lambda provider, instance_type: subject.manager.answer(subject.name, hookspec.CLOUD_HINTS, [],
                                                               provider=provider, instance_type=instance_type),
        hinted, listed, subject.family().resource_name)[:4]
    if wrong:
        raise CheckFailed(wrong)
    if not hinted:
        raise NotApplicable(f"the plugin hints none of the {len(asked)} instance types asked")
    return (f"{len(hinted)} hinted instance types answered alike in every case drawn; {len(listed)} listed hints "
            f"round-trip; {left_out} entries of the instance-type tables it reads each left out in turn, none "
            "answered from another entry; no name hinted under a provider that does not list it")


# RAC223 ---------------------------------------------------------------------------------------------------------


@check("RAC223", scope="fixture")
def metrics_move_with_their_readings(subject: Subject, fixture: str | None) -> Evidence:
    """A device's reading scaled at the host seam moves the metric it feeds by exactly that factor, and moves
    no other device's.

    The suite finds, for one device of the fixture (the middle one), each standard metric's reading among
    the numbers on the host that are the device's own (a file under a path naming its PCI address or its
    index, a number in a library's data or a command's JSON output keyed by its index, a cell of a command's
    CSV row naming its id or PCI address) and that give the sample times its unit's factor (bytes from MiB,
    watts from milliwatts, ...). It multiplies that reading by 2 (by 1/2 where 2 would
    leave the metric's range) and builds the inventory again: the sample must be multiplied by exactly the
    same factor, and every other device's sample of that metric must stay as it was. A metric that stays
    put is answered from a cache or a default (or, for ``memory_total``, from a size the SDK filled in from
    the catalog: the failure says so); one that moves by another factor is clamped or offset; another
    device's that moves is read from the wrong device. A metric no reading of the device gives is not
    attributed (named in the evidence). The device's byte metrics must also be converted in one unit family
    (``invariant one-device-one-byte-unit``): one sample that is its reading times a decimal factor (kB, MB,
    GB) beside another that is its reading times a binary one (KiB, MiB, GiB) is a MiB reading taken for MB
    (or the reverse), self-consistent on every fixture and off by 5% to 7%. And a reading of 0 is a reading
    (``invariant zero-is-a-reading``): every number of the device's own that is 0 made 1, in one more build,
    no standard metric may appear that the device did not report before (an idle device's utilization, an
    empty device's memory_used dropped by a truthiness test). And a reading at the top of its range is a reading
    (``invariant full-scale-is-a-reading``): the device's utilization reading the scaling attributed set to 100 %
    (in its own unit: 1 for a ratio) and its memory-used reading set to its memory-total reading (where both are
    attributed in one unit), in one more build, utilization must be exactly 100 and memory_used exactly
    memory_total: never refused (a range check `<` its limit) or clamped below it. And an idle device's reading is a
    reading (``invariant an-idle-reading-is-zero``): the readings the scaling attributed to a quantity an idle device
    reads as 0 (utilization, memory used, the ECC counters) set to 0, in one more build, each metric must be present
    and 0 (a truthiness test, `value or None`, drops it where no fixture reads 0). And each metric has a reading of
    its own (``invariant one-reading-one-metric``): the reading scaled for one metric moves no other metric of the
    device by the same factor (memory in use read from the size's reading, or taken from the discovered size,
    moves with the size; on a fixture stating no memory in use nothing else shows it). Where the fixture states a
    metric's value and the sample is another, the reading giving the stated value is found and, beside it in its
    record (one library or JSON object, one CSV row, one directory), the reading giving the sample (NVML's memory
    controller utilization beside the GPU's, a power limit beside the draw): that sibling alone set to another
    value in one more build, the metric must not follow it. And a fault moves its own metric (``invariant
    a-fault-moves-its-own-metric``): under each fault of the fixture, a number it changes on a device whose field
    names one metric of the family (more words shared than with any other: ``corrected_errors`` names
    ``ecc_errors_corrected``) must not show up in another metric of the device while the named one does not carry
    it (two counters read from each other's fields: every fixture's counters are 0). And a fault takes away only
    the readings it changes (``invariant a-fault-takes-only-its-readings``): under each fault changing numbers
    alone, a device still discovered keeps every metric whose reading the fault leaves as it was. And an error is
    counted once (``invariant an-error-is-counted-once``): under each fault only raising numbers, the ECC counters
    together rise by no more than the machine's numbers rose (corrected published as corrected plus uncorrected
    counts each uncorrectable error in both classes). And every part of a sum counts (``invariant
    every-part-counts``): where the device's memory in use or an ECC counter is the sum of a proper share of like
    parts the machine states for it (one field per core, die or category: the Neuron driver's
    ``neuron_core<k>/stats/memory_usage/device_mem/<category>/total``), one core's or one category's alone, a part
    the share leaves out, moved alone at the host seam, must move the metric by that part (checks/summed_readings.py).
    And a gauge is the reading now (``invariant a-gauge-is-no-high-water-mark``, checks/high_water_marks.py): every
    reading of the device whose own name says a high-water mark (``peak``, ``highest``, ``hwm``, ``watermark``: the
    Neuron driver's ``device_mem/<category>/peak`` beside ``total``) doubled at the host seam in one more build, memory
    in use, utilization, power and temperature must stay as they were (a peak never drops once memory is freed).
    Fix: read every
    sample from the device's own entry at every poll, each from its own field, and convert it by its unit's factor
    alone; a range check includes its limits; keep a faulty device's metrics.
    """
    from rayaccel_conformance.checks.counted_errors import errors_counted_twice
    from rayaccel_conformance.checks.fault_readings import fault_moves_its_own_metric, fault_takes_only_its_readings
    from rayaccel_conformance.checks.high_water_marks import high_water_findings
    from rayaccel_conformance.checks.readings import device_with_samples
    from rayaccel_conformance.checks.summed_readings import part_failures

    family = subject.family()
    fx = subject.fixture(fixture)
    fam, device = device_with_samples(fx.ref, subject.inventory(fixture).family(family.name))
    attributed: dict[str, tuple[Any, float]] = {}
    wrong, moved, unattributed = scaled_reading_failures(subject, fx, fam, device, raw_memory(subject, fx.ref),
                                                         attributed)
    wrong += mixed_byte_units(fx.ref, fam, device, fx.host.model_dump(mode="json"))
    wrong += zero_readings_dropped(subject, fx, fam, device)
    wrong += sibling_readings_taken(subject, fx, fam, device)
    wrong += full_scale_refused(subject, fx, fam, device, attributed)
    wrong += idle_readings_dropped(subject, fx, fam, device, attributed)
    wrong += fault_moves_its_own_metric(subject, fx, fam)
    wrong += fault_takes_only_its_readings(subject, fx, fam)
    wrong += errors_counted_twice(subject, fx, fam)
    wrong += part_failures(subject, fx, fam)
    wrong += high_water_findings(subject, fx, fam)
    if wrong:
        unique = sorted(set(wrong), key=wrong.index)
        raise CheckFailed(unique[:6])
    if not moved:
        raise NotApplicable(f"{fx.ref}: no metric of {device.id} is attributed to one of its own readings"
                            + (f" ({', '.join(unattributed)})" if unattributed else ""))
    return (f"{fx.ref}: {device.id}'s {', '.join(moved)} moved exactly with their readings, no other device's"
            + (f"; not attributed to one reading: {', '.join(unattributed)}" if unattributed else ""))


#: Byte factors of the two families: a vendor's sizes are in one or the other (1, bytes, is in both).
_BINARY_BYTES, _DECIMAL_BYTES = (2.0**10, 2.0**20, 2.0**30), (1e3, 1e6, 1e9)
_BYTE_UNIT = {2.0**10: "KiB", 2.0**20: "MiB", 2.0**30: "GiB", 1e3: "kB", 1e6: "MB", 1e9: "GB"}
_FACTOR_TEXT = {2.0**10: "1024", 2.0**20: "2**20", 2.0**30: "2**30", 1e3: "1000", 1e6: "10**6", 1e9: "10**9"}
_BINARY_OF = {1e3: "KiB", 1e6: "MiB", 1e9: "GiB"}
_BINARY_OF_VALUE = {1e3: 2.0**10, 1e6: 2.0**20, 1e9: 2.0**30}


def mixed_byte_units(ref: str, fam: FamilyInventory, device: Device, host: dict[str, Any]) -> list[str]:
    """RAC223's ``one-device-one-byte-unit``: ``device``'s byte samples each attributed to one of its readings
    (a binary factor preferred where both fit); a decimal conversion beside a binary one is a failure."""
    from rayaccel_conformance.checks.readings import candidates, host_readings

    readings = host_readings(host)
    factors = {}
    for sample in (s for s in fam.metrics if s.device == device.id and s.unit == "bytes" and s.value > 0):
        found = candidates(sample, device, readings)
        plain = [(r, f) for r, f in found if f == 1.0]
        binary = [(r, f) for r, f in found if f in _BINARY_BYTES]
        decimal = [(r, f) for r, f in found if f in _DECIMAL_BYTES]
        if plain or not found or (binary and decimal):
            continue  # in bytes already, not attributed, or either family fits: nothing says which
        factors[sample.name] = (binary or decimal)[0]
    binary_ones = {n: rf for n, rf in factors.items() if rf[1] in _BINARY_BYTES}
    decimal_ones = {n: rf for n, rf in factors.items() if rf[1] in _DECIMAL_BYTES}
    if not binary_ones or not decimal_ones:
        return []
    (dname, (dread, dfac)), (bname, (bread, bfac)) = sorted(decimal_ones.items())[0], sorted(binary_ones.items())[0]
    return [f"invariant one-device-one-byte-unit, {ref}, {device.id}: {dname} is {dread.describe()} "
            f"({dread.value:g}) x{_FACTOR_TEXT[dfac]} (read as {_BYTE_UNIT[dfac]}) while {bname} is "
            f"{bread.describe()} ({bread.value:g}) x{_FACTOR_TEXT[bfac]} (read as {_BYTE_UNIT[bfac]}): one device's "
            f"sizes converted in two unit families: a size read as {_BYTE_UNIT[dfac]} where the vendor writes "
            f"{_BINARY_OF[dfac]} (or the reverse) is off by {1 - dfac / _BINARY_OF_VALUE[dfac]:.1%}; convert each "
            "reading by the unit its interface writes"]


def zero_readings_dropped(subject: Subject, fx: Fixture, fam: FamilyInventory, device: Device) -> list[str]:
    """RAC223's ``zero-is-a-reading``: every number of ``device``'s own that is 0 made 1, in one build; a standard
    metric the device did not report before and reports now was dropped for its reading of 0."""
    from rayaccel_conformance.checks.readings import SCALED_METRICS, host_readings, owned_by, with_reading

    host = fx.host.model_dump(mode="json")
    zeros = [r for r in host_readings(host, zeros=True) if r.value == 0 and owned_by(r, device)]
    if not zeros:
        return []
    state = host
    for reading in zeros:
        state = with_reading(state, reading, lambda old: "1", lambda old: 1 if isinstance(old, int) else 1.0)
    variant = fx.model_copy(update={"host": HostState.model_validate(state), "faults": []})
    rebuilt = subject.build(simulated_host(variant))
    after = rebuilt.family(subject.family().name)
    before_names = {s.name for s in fam.metrics if s.device == device.id}
    after_names = {s.name for s in (after.metrics if after else []) if s.device == device.id}
    added = sorted((after_names - before_names) & set(SCALED_METRICS))
    if not added:
        return []
    shown = ", ".join(r.describe() for r in zeros[:3]) + (f" and {len(zeros) - 3} more" if len(zeros) > 3 else "")
    return [f"invariant zero-is-a-reading, {fx.ref} with {device.id}'s readings of 0 made 1 ({shown}): "
            f"{', '.join(added)} of {device.id} reported only now: a reading of 0 (an idle device, no errors yet) "
            "gave no sample; report 0 as 0 (a truthiness test such as `if value:` drops it)"]


def same_record(a: Any, b: Any) -> bool:
    """Whether two readings sit side by side in one record: one library or JSON object (NVML's utilization
    ``{gpu, memory}``), one CSV row, one directory of files."""
    if a.where != b.where or a == b:
        return False
    if a.where == "file":
        return bool(a.key.rsplit("/", 1)[0] == b.key.rsplit("/", 1)[0])
    if a.key != b.key:
        return False
    if a.where == "table":
        return bool(a.path[0] == b.path[0])
    return len(a.path) == len(b.path) and a.path[:-1] == b.path[:-1]


def sibling_readings_taken(subject: Subject, fx: Fixture, fam: FamilyInventory, device: Device) -> list[str]:
    """RAC223's ``one-reading-one-metric`` where the fixture states what a metric of ``device`` reads and the sample
    is another value: the reading giving the stated value (times a unit factor) has a sibling in its record (the
    memory controller's utilization beside the GPU's, the memory's temperature beside the core's, the power limit
    beside the draw) giving the sample; the sibling alone set to another value (half the stated reading's) in one
    more build, the sample follows it: the metric is read from the sibling. Not a failure where it does not follow
    (RAC206 shows the value)."""
    from rayaccel_conformance.checks.readings import (
        MAX_CANDIDATES,
        candidates,
        host_readings,
        owned_by,
        samples_by_device,
        with_reading,
    )

    stated = fx.expected.metric_values.get(device.id) or {}
    mine = {s.name: s for s in fam.metrics if s.device == device.id}
    host = fx.host.model_dump(mode="json")
    own = [r for r in host_readings(host, zeros=True) if owned_by(r, device)]
    wrong = []
    for name, want in sorted(stated.items()):
        sample = mine.get(name)
        if sample is None or not want or math.isclose(sample.value, want, rel_tol=1e-6):
            continue
        for reading, factor in candidates(sample.model_copy(update={"value": want}), device, own)[:MAX_CANDIDATES]:
            sibling = next((r for r in own if same_record(r, reading)
                            and math.isclose(r.value * factor, sample.value, rel_tol=1e-6, abs_tol=1e-9)), None)
            if sibling is None:
                continue
            new = reading.value / 2 if reading.value.is_integer() and reading.value % 2 == 0 else reading.value + 1
            if math.isclose(new, sibling.value):
                continue  # the sibling already reads that: nothing to tell apart
            state = with_reading(host, sibling, _full_text(new), _full_value(new))
            variant = fx.model_copy(update={"host": HostState.model_validate(state), "faults": []})
            after = samples_by_device(subject.build(simulated_host(variant)).family(subject.family().name))
            now = after.get((device.id, name))
            if now is None or not math.isclose(now, new * factor, rel_tol=1e-6):
                continue
            wrong.append(f"invariant one-reading-one-metric, {fx.ref} with {sibling.describe()} of {device.id} alone "
                         f"set to {new:g} (was {sibling.value:g}): {name} followed it ({sample.value:g} -> {now:g}), "
                         f"while the fixture states {want:g}, which {reading.describe()} ({reading.value:g}) beside it "
                         f"gives: {name} read from a sibling reading of its record? each metric has a reading of its "
                         "own")
            break
    return wrong


def _full_text(value: float) -> Callable[[str], str]:
    """A number's new text where the vendor wrote text (a file, a CSV cell): an integer stays one."""
    return lambda _old: str(int(value)) if value.is_integer() else repr(value)


def _full_value(value: float) -> Callable[[Any], Any]:
    """A number's new value in data (a library's, a tool's JSON): of the kind the old one was."""
    return lambda old: int(value) if isinstance(old, int) and value.is_integer() else float(value)


def full_scale_refused(subject: Subject, fx: Fixture, fam: FamilyInventory, device: Device,
                       attributed: dict[str, tuple[Any, float]]) -> list[str]:
    """RAC223's ``full-scale-is-a-reading``: ``device``'s utilization reading set to 100 % (in its own unit) and its
    memory-used reading set to its memory-total reading (same unit), in one more build; each metric must then read
    exactly full scale, never be refused or clamped below it. The readings are those the scaling attributed
    (``attributed``: metric -> (reading, unit factor))."""
    from rayaccel_conformance.checks.readings import samples_by_device, with_reading

    host = fx.host.model_dump(mode="json")
    mine = {s.name: s for s in fam.metrics if s.device == device.id}
    changes: list[tuple[Any, float, str, float]] = []  # (reading, new value, metric, the metric's expected value)
    busy = attributed.get("utilization")
    if busy is not None and busy[0].value * busy[1] < 100:
        changes.append((busy[0], 100 / busy[1], "utilization", 100.0))
    used, total = attributed.get("memory_used"), attributed.get("memory_total")
    if used is not None and total is not None and used[1] == total[1] and used[0] != total[0] \
            and used[0].value < total[0].value:
        changes.append((used[0], total[0].value, "memory_used", mine["memory_total"].value))
    if not changes:
        return []
    state = host
    for reading, value, _, _ in changes:
        state = with_reading(state, reading, _full_text(value), _full_value(value))
    variant = fx.model_copy(update={"host": HostState.model_validate(state), "faults": []})
    after = samples_by_device(subject.build(simulated_host(variant)).family(subject.family().name))
    wrong = []
    for reading, value, name, expected in changes:
        now, was = after.get((device.id, name)), mine[name].value
        if now is not None and abs(now - expected) <= 1e-6 * expected:
            continue
        if now is not None and abs(now - was) <= 1e-9 * max(abs(was), 1.0):
            continue  # it did not follow the reading at all: not attributed after all (RAC223's to judge)
        shown = "is gone" if now is None else f"is {now:g}"
        wrong.append(f"invariant full-scale-is-a-reading, {fx.ref} with {reading.describe()} of {device.id} at full "
                     f"scale ({reading.value:g} -> {value:g}): {name} {shown}, expected {expected:g}: a reading at "
                     "the top of its range (a fully busy device, memory used to capacity) is a reading; a range "
                     "check must include its limit (<=, not <), and nothing may clamp below it")
    return wrong


#: Quantities a real idle device reads as 0, so a 0 there is a reading: an idle H100's ``nvidia-smi`` prints
#: ``0MiB / 81559MiB`` and ``0%`` beside ``29C`` and ``73W`` (digitalocean/do-dcgm-exporter's README), ``amdgpu_top``
#: ``0%`` GFX activity for an idle AMD GPU, and a healthy device's ECC counts are 0. Temperature and power are left
#: out: a running device's sensors never read 0 (a tool prints N/A where it has no reading).
IDLE_ZERO_METRICS = ("utilization", "memory_used", "ecc_errors_corrected", "ecc_errors_uncorrected")


def idle_readings_dropped(subject: Subject, fx: Fixture, fam: FamilyInventory, device: Device,
                          attributed: dict[str, tuple[Any, float]]) -> list[str]:
    """RAC223's ``an-idle-reading-is-zero``: ``device``'s readings the scaling attributed to a quantity an idle device
    reads as 0 (``IDLE_ZERO_METRICS``) set to 0, in one more build; each metric must then be present and 0, never
    dropped (a truthiness test: ``value or None``, ``if value:``) nor given another value. ``zero-is-a-reading``
    needs a fixture that already reads 0; this makes the 0 where none does. A reading that also feeds a metric
    outside the set (a size) is left alone."""
    from rayaccel_conformance.checks.readings import samples_by_device, with_reading

    kept = {reading for name, (reading, _) in attributed.items() if name not in IDLE_ZERO_METRICS}
    zeroed = [(name, attributed[name][0]) for name in IDLE_ZERO_METRICS
              if name in attributed and attributed[name][0] not in kept and attributed[name][0].value != 0]
    if not zeroed:
        return []
    state = fx.host.model_dump(mode="json")
    for reading in dict.fromkeys(reading for _, reading in zeroed):
        state = with_reading(state, reading, _full_text(0.0), _full_value(0.0))
    variant = fx.model_copy(update={"host": HostState.model_validate(state), "faults": []})
    after = samples_by_device(subject.build(simulated_host(variant)).family(subject.family().name))
    mine = {s.name: s.value for s in fam.metrics if s.device == device.id}
    wrong = []
    for name, reading in zeroed:
        now = after.get((device.id, name))
        if now == 0:
            continue
        if now is not None and math.isclose(now, mine[name], rel_tol=1e-9):
            continue  # it did not follow the reading at all: not attributed after all (RAC223's to judge)
        shown = "is gone: no sample" if now is None else f"is {now:g}"
        wrong.append(f"invariant an-idle-reading-is-zero, {fx.ref} with {reading.describe()} of {device.id} at 0 "
                     f"({reading.value:g} -> 0, as an idle device reads it): {name} {shown}, expected 0: a reading "
                     "of 0 is a reading, not a missing one; test for None (`is None`), never for truth "
                     "(`value or None`, `if value:` drop an idle device's 0)")
    return wrong


def scaled_reading_failures(subject: Subject, fx: Fixture, fam: FamilyInventory, device: Device,
                            raw: Any, attributed: dict[str, tuple[Any, float]] | None = None,
                            ) -> tuple[list[str], list[str], list[str]]:
    """RAC223's invariant on one layout of a fixture (``fx``, its inventory ``fam``): each metric of ``device``
    scaled at one of its readings. Returns (failures, metrics that moved, metrics no reading gives)."""
    from rayaccel_conformance.checks.readings import (
        MAX_CANDIDATES,
        SCALED_METRICS,
        candidates,
        host_readings,
        samples_by_device,
        scale_of,
        scaled_host,
        verdict,
    )

    family = subject.family()
    host = fx.host.model_dump(mode="json")
    readings = host_readings(host)
    before = samples_by_device(fam)
    wrong, moved, unattributed = [], [], []
    for sample in sorted((s for s in fam.metrics if s.device == device.id and s.name in SCALED_METRICS
                          and s.value != 0), key=lambda s: s.name):
        found = candidates(sample, device, readings)
        if not found:
            unattributed.append(sample.name)
            continue
        tried: list[str] = []
        for reading, _factor in found[:MAX_CANDIDATES]:
            k = scale_of(sample, reading)
            if k is None:
                continue
            variant = fx.model_copy(update={"host": HostState.model_validate(scaled_host(host, reading, k)),
                                            "faults": []})
            built = subject.build(simulated_host(variant))
            after = samples_by_device(built.family(family.name))
            how, others = verdict(sample, k, before, after)
            where = (f"invariant metric-moves-with-its-reading, {fx.ref} with {reading.describe()} of {device.id} "
                     f"x{k:g} ({reading.value:g} -> {reading.value * k:g})")
            if how != "moved" or others:
                # Discovery failing in that build (on a later call) is the cause to quote, not the samples it took;
                # a warning the fixture declares (expected.problems: a fallback its machine forces) is no failure.
                blamed = subject.blamed(built, ["its samples change"], f"{where}: ", fx.expected.problems)
                if "a consequence of discovery failing" in blamed[0]:
                    wrong += blamed
                    break
            if others:
                wrong.append(f"{where}: another device's {others[0]} ({len(others)} in all): a reading feeds only "
                             "its own device's metric")
            if how == "moved":
                scaled = where.replace("metric-moves-with-its-reading", "one-reading-one-metric", 1)
                wrong += [f"{scaled}: {line}" for line in same_reading_metrics(sample, k, before, after)]
                moved.append(f"{sample.name} x{k:g}")
                if attributed is not None:
                    attributed[sample.name] = (reading, _factor)
                tried = []
                break
            now = after.get((sample.device, sample.name))
            shown = "is gone" if now is None else f"is {now:g}"
            tried.append(f"{where}: {sample.name} of {device.id} {shown}, expected {sample.value * k:g} "
                         f"(was {sample.value:g}): " + ("it stayed put: a cached or default value?"
                                                        if how == "stayed" else "moved by another factor: clamped or "
                                                        "offset?"))
            if sample.name == "memory_total":
                source = memory_source(device, raw)
                tried[-1] += source
        wrong += tried[:1]
    return wrong, moved, unattributed


def same_reading_metrics(sample: Any, k: float, before: dict[tuple[str, str], float],
                         after: dict[tuple[str, str], float]) -> list[str]:
    """RAC223's ``one-reading-one-metric``: the device's other standard metrics that moved by exactly the factor its
    ``sample``'s reading was scaled by: each metric has a reading of its own (memory in use is not the memory size),
    so one that moves with another's reading is read from it. A metric derived from several readings (used as total
    less free) moves by another factor and is not named."""
    from rayaccel_conformance.checks.readings import MATCH_TOLERANCE, SCALED_METRICS

    return [f"{name} of {dev} moved with it too ({value:g} -> {after[(dev, name)]:g}): one reading feeds two "
            f"metrics, {sample.name} and {name}: {name} read from {sample.name}'s reading?"
            for (dev, name), value in sorted(before.items())
            if dev == sample.device and name != sample.name and name in SCALED_METRICS and value != 0
            and (dev, name) in after and math.isclose(after[(dev, name)], value * k, rel_tol=MATCH_TOLERANCE)]


# RAC224 ---------------------------------------------------------------------------------------------------------


@check("RAC224", scope="fixture")
def renumbered_entries_keep_their_devices(subject: Subject, fixture: str | None) -> Evidence:
    """Devices whose entries the driver numbers otherwise (another width, another order) keep their ids and facts.

    A fixture numbers its devices' entries one way (``acme0``..``acme3``), so a plugin that counts entries from
    0, takes an index from the last character or pairs files with devices by their position passes on it. Where
    every device of the fixture has an entry ``<prefix><index>`` in the host's paths and no command output,
    library data or HTTP answer names the devices (renaming paths would contradict them), the suite renames
    every such entry, in reverse and from 10 on (``acme0``..``acme3`` become ``acme13``..``acme10``), and
    builds the inventory again: the same device ids, and for each its record (less index and units, a device
    file it reports under its entry's new name), number of units, health and the metrics it has, exactly as
    before (not its links: a number may be a position, as a TPU chip's in its ICI mesh). A failure names the
    invariant, the fixture, the renumbering and the first differences. Fix: list the entries that exist (glob,
    list_dir), take each device's index from its entry's whole number, and read its files under its own entry.
    """
    from rayaccel_conformance.checks.renumbering import (
        device_facts,
        entry_renamer,
        names_devices_outside_files,
        numbered_prefix,
        renamed_paths,
        renumbered_host,
        renumbering_differences,
    )

    family = subject.family()
    fx = subject.fixture(fixture)
    fam = subject.inventory(fixture).family(family.name)
    devices = list(fam.devices) if fam is not None else []
    host = fx.host.model_dump(mode="json")
    prefix = numbered_prefix(host.get("files") or {}, devices)
    if prefix is None:
        raise NotApplicable(f"{fx.ref}: the devices have no entries numbered by their index in the host's paths")
    if names_devices_outside_files(host, devices):
        raise NotApplicable(f"{fx.ref}: a command's output, library data or an HTTP answer names the devices, "
                            "which renaming paths alone would contradict")
    indexes = sorted(d.index for d in devices)
    rename = entry_renamer(prefix, indexes)
    variant = fx.model_copy(update={"host": HostState.model_validate(renumbered_host(host, rename)), "faults": []})
    built = subject.build(simulated_host(variant))
    what = (f"{prefix}{indexes[0]}..{prefix}{indexes[-1]} renumbered {prefix}{10 + len(indexes) - 1}.."
            f"{prefix}10")
    # What must follow: the same facts, with any path the plugin reported (a device file) under its new name.
    expected = renamed_paths(device_facts(fam), rename)
    differences = renumbering_differences(expected, device_facts(built.family(family.name)))
    wrong = subject.blamed(built, differences, f"invariant renumbering-keeps-the-devices, {fx.ref} with {what}: ")
    if wrong:
        raise CheckFailed(wrong[:4])
    return f"{fx.ref}: with {what}, the {len(devices)} devices keep their ids and facts"


# RAC225 ---------------------------------------------------------------------------------------------------------

#: Paddings drawn per fixture: each builds the inventory again.
PADDING_EXAMPLES = 6


@check("RAC225", scope="fixture")
def sku_free_of_the_names_padding(subject: Subject, fixture: str | None) -> Evidence:
    """A device's product name padded with whitespace, as tools pad columns, keeps its name, SKU and type.

    The SDK matches a device to its catalog SKU by the product name exactly, and a fixture writes each name
    one way (``ACME Roadrunner R1\\n``), so a plugin that keeps a tool's padding, or strips only the newline,
    passes on it and loses the SKU on a machine whose tool pads its columns. For one device of the fixture
    (the middle one), the suite finds where its product name is written as text on the host (a file of its
    own holding the name alone, or a cell of a CSV row naming the device) and hypothesis draws paddings of
    spaces and tabs on either side: the device must keep its product name, its SKU and the node its
    accelerator type (6 paddings, derandomized; each is a build). A failure quotes the smallest padding
    hypothesis shrank it to. Where the name is a cell of a ``--format=csv`` command, it is then written with a
    comma in it, quoted as RFC 4180 quotes such a cell, against the same words written plain: the quoted text must
    be the product name and nothing else may differ (``invariant quoted-cell-keeps-the-row``). A name only a
    library or a JSON answer gives is data no tool pads (not padded). And a product the catalog does not list is
    still a device: each product name the devices have, written as a newer product's wherever the host states it
    (a file, a library's or a tool's string, a CSV cell), must leave every device found with its id
    (``invariant an-unknown-product-is-a-device``: a device left out by its product's name, an allow-list of
    products, is named). Fix: strip every text field a tool or a file gives before using it, and read CSV with a
    CSV reader, never by splitting lines on commas; discover every device the driver lists, whatever its product.
    """
    from hypothesis import strategies as st

    from rayaccel_conformance.checks.properties import shrunk_failure
    from rayaccel_conformance.checks.readings import name_readings, padded_host, quotes_cells
    from rayaccel_conformance.checks.unknown_products import unknown_product_findings

    family = subject.family()
    fx = subject.fixture(fixture)
    fam = subject.inventory(fixture).family(family.name)
    devices = list(fam.devices) if fam is not None else []
    device = devices[len(devices) // 2] if devices else None
    host = fx.host.model_dump(mode="json")
    unknown, renamed = unknown_product_findings(subject, fx, fam) if fam is not None else ([], [])
    readings = name_readings(host, device) if device is not None else []
    if fam is None or device is None or not readings:
        if unknown:
            raise CheckFailed(unknown)
        if renamed:
            return (f"{fx.ref}: every device found with its product written as a newer one's "
                    f"({', '.join(repr(n) for n in renamed)}); no device's product name is written as text of its "
                    "own on the host to pad")
        raise NotApplicable(f"{fx.ref}: no device's product name is written as text of its own on the host")
    reading = readings[0]

    def same_device(padding: tuple[str, str]) -> str | None:
        variant = fx.model_copy(update={"host": HostState.model_validate(padded_host(host, reading, *padding)),
                                        "faults": []})
        inventory = subject.build(simulated_host(variant))
        built = inventory.family(family.name)
        now = next((d for d in built.devices if d.id == device.id), None) if built is not None else None
        shown = f"{padding[0]!r} + name + {padding[1]!r}"
        where = f"property name-padding-keeps-the-sku, {fx.ref} with {reading.describe()} written {shown}: "
        if now is None:
            found = f"{device.id} is gone"
        elif (now.product_name, now.sku) != (device.product_name, device.sku):
            found = (f"{device.id} has product_name {now.product_name!r} and SKU {now.sku!r}, not "
                     f"{device.product_name!r} and {device.sku!r} (the SDK matches catalog names exactly)")
        elif built is not None and built.accelerator_type != fam.accelerator_type:
            found = f"the accelerator type is {built.accelerator_type!r}, not {fam.accelerator_type!r}"
        else:
            return None
        # Discovery failing in that build (on a later call) is the cause to quote, not the device it took.
        return subject.blamed(inventory, [found], where)[0]

    pads = st.sampled_from(["", " ", "  ", "\t"])
    found = shrunk_failure(st.tuples(pads, pads).filter(lambda p: p != ("", "")), same_device, PADDING_EXAMPLES)
    if found:
        raise CheckFailed([found, *unknown])
    quoted = quoted_cell_differences(subject, fx, fam, device, reading)
    if quoted or unknown:
        raise CheckFailed([*quoted, *unknown])
    return (f"{fx.ref}: {device.id}'s name padded in {reading.describe()} keeps its name, SKU {device.sku}, type"
            + ("; written quoted with a comma in it, the new text is its name and nothing else moves"
               if reading.where == "table" and quotes_cells(reading.key) else "")
            + ("; every device found with its product written as a newer one's" if renamed else ""))


def quoted_cell_differences(subject: Subject, fx: Fixture, fam: FamilyInventory, device: Device,
                            reading: TextReading) -> list[str]:
    """Where the name is a cell of a CSV the tool quotes (RFC 4180), the name written quoted with a comma in it
    must read as the same words written plain without the comma (neither is a catalog name, so both lose the
    SKU alike): the quoted text is the device's product name and nothing else differs on any device. A row split
    on every comma loses the device or shifts its cells."""
    from rayaccel_conformance.checks.readings import COMMA_SUFFIX, PLAIN_SUFFIX, quoted_host, quotes_cells
    from rayaccel_conformance.checks.renumbering import device_facts, renumbering_differences

    if reading.where != "table" or not quotes_cells(reading.key):
        return []
    host, family = fx.host.model_dump(mode="json"), subject.family().name

    def built(text: str, quote: bool) -> NodeInventory:
        state = HostState.model_validate(quoted_host(host, reading, text, quote))
        return subject.build(simulated_host(fx.model_copy(update={"host": state, "faults": []})))

    plain, text = f"{device.product_name}{PLAIN_SUFFIX}", f"{device.product_name}{COMMA_SUFFIX}"
    expected = device_facts(built(plain, quote=False).family(family))
    inventory = built(text, quote=True)
    if device.id in expected:
        expected[device.id]["record"]["product_name"] = text
    where = (f"invariant quoted-cell-keeps-the-row, {fx.ref} with {reading.describe()} written "
             f"'\"{text}\"' (RFC 4180 quotes a cell holding a comma), against '{plain}' written plain: ")
    found = device_facts(inventory.family(family))
    name = found.get(device.id, {}).get("record", {}).get("product_name", text)
    # The name first: it is what the quoted cell carries (the catalog fields a cut name finds follow from it).
    differences = ([f"{device.id}: its product_name is {name!r}, not {text!r} (the quoted cell's text)"]
                   if name != text else renumbering_differences(expected, found))
    return subject.blamed(inventory, differences, where)[:4]


# RAC260 ---------------------------------------------------------------------------------------------------------


@check("RAC260", scope="fixture")
def sizes_read_in_the_unit_stated(subject: Subject, fixture: str | None) -> Evidence:
    """A size a vendor tool states with its unit, re-stated in bytes or KB, gives the same inventory.

    Tools print a size as a number and its unit (amd-smi's ``{"value": 672, "unit": "MB"}``), and which unit
    they print changes with the tool's version and settings, so a plugin right on the fixture's unit alone is
    right by chance. Where a command's JSON output states sizes so, the suite re-states every one of them in
    bytes, then in KB (the number times 1024 per step, written as the tool writes it) and builds the inventory
    again: every number of the device records and every metric must be the same size as before (within 5%: MB
    is 2**20 bytes to most tools and 10**6 to some). A size 1024 or 2**20 times off, or one gone (refused as out
    of range, say), fails, naming the fixture, the re-statement, the value and both figures, and quoting the
    plugin's problem if it reported one. Fix: convert every size by the unit printed beside it, with a table of
    every size unit (B, KB/KiB, MB/MiB, GB/GiB, TB/TiB), before any range check.
    """
    from rayaccel_conformance.checks.stated_units import restated_host, size_differences, sized_values

    family = subject.family()
    fx = subject.fixture(fixture)
    host = fx.host.model_dump(mode="json")
    before = sized_values(subject.inventory(fixture).family(family.name))
    done: list[str] = []
    for target in ("B", "KB"):
        state, changed = restated_host(host, target)
        if not changed:
            continue
        built = subject.build(simulated_host(fx.model_copy(update={"host": HostState.model_validate(state),
                                                                   "faults": []})))
        where = f"invariant size-in-the-unit-stated, {fx.ref} with every size re-stated in {target}: {changed[0]}"
        wrong = size_differences(before, sized_values(built.family(family.name)))
        if wrong:
            said = [p.render().splitlines()[0] for p in subject.plugin_problems(built, severities=("error", "warning"))]
            raise CheckFailed(subject.blamed(built, [f"{w}: a size is converted by the unit printed beside it"
                                                     + (f" (the plugin said: {said[0]})" if said else "")
                                                     for w in wrong[:4]], f"{where}: "))
        done.append(f"in {target}: the same sizes")
    if not done:
        raise NotApplicable(f"{fx.ref}: no command's JSON output states a size with its unit")
    return f"{fx.ref}: every size re-stated " + "; ".join(done)


# RAC261 ---------------------------------------------------------------------------------------------------------


@check("RAC261", scope="fixture")
def more_in_an_answer_changes_nothing(subject: Subject, fixture: str | None) -> Evidence:
    """A vendor answer carrying more than the plugin reads gives the same inventory: a field a newer tool adds
    to each JSON record, an exporter's own series in a Prometheus scrape.

    A tool's next version adds fields to the records it prints, and every Prometheus exporter serves its own
    process and runtime series beside the devices' (``process_cpu_seconds_total``, ``go_goroutines``, with no
    device label), so a plugin that walks every field or every series as a device's passes on a fixture that
    has none. Where a command prints JSON, the suite adds a field (``"rayaccel_added_field": "N/A"``) to every
    record of it (an object none of whose keys holds a digit: a map keyed by device index or id is not a
    record); where an HTTP answer or a command prints Prometheus text, it appends those two series; and it
    builds the inventory again for each: every device record, health report, metric, link, resource and label
    must be as before, and no new problem reported (`invariant more-in-an-answer-changes-nothing`, naming the
    fixture, the answers changed and the first differences). A loaded module's directory as the kernel writes
    it: wherever the host states ``/sys/module/<name>/version`` without ``srcversion``, the suite adds the
    source checksum the kernel writes beside the MODULE_VERSION of a module loaded at run time
    (Documentation/ABI/stable/sysfs-module), and the
    inventory must again be the same; a checksum that shows up in it is named as a version read from srcversion
    (invariant a-module-directory-as-the-kernel-writes-it). Not applicable where the host has none of these.
    Fix: read the fields and series you need by name (a series by its name and its device label) and skip the
    rest; read a driver's version from ``/sys/module/<name>/version``.
    """
    from rayaccel_conformance.checks.extra_content import (
        answer_differences,
        answers,
        checksum_taken_for_a_version,
        with_added_fields,
        with_exporter_series,
        with_module_checksums,
    )

    family = subject.family()
    fx = subject.fixture(fixture)
    host = fx.host.model_dump(mode="json")
    inventory = subject.inventory(fixture)
    before = answers(inventory.family(family.name))
    known = {p.render() for p in subject.plugin_problems(inventory, severities=("error", "warning"))}
    done: list[str] = []
    for what, perturb, invariant in (
            ("a field added to every JSON record", with_added_fields, "more-in-an-answer-changes-nothing"),
            ("an exporter's own series after the Prometheus text", with_exporter_series,
             "more-in-an-answer-changes-nothing"),
            ("the kernel's srcversion beside a module's version", with_module_checksums,
             "a-module-directory-as-the-kernel-writes-it")):
        state, changed = perturb(host)
        if not changed:
            continue
        built = subject.build(simulated_host(fx.model_copy(update={"host": HostState.model_validate(state),
                                                                   "faults": []})))
        where = f"invariant {invariant}, {fx.ref} with {what} of {', '.join(changed[:3])}"
        new = [p.render().splitlines()[0] for p in subject.plugin_problems(built, severities=("error", "warning"))
               if p.render() not in known]
        wrong = answer_differences(before, answers(built.family(family.name)))
        if wrong or new:
            said = f" (the plugin said: {new[0]})" if new else ""
            causes = [f"{where}: {c}" for c in checksum_taken_for_a_version(state, wrong)]
            raise CheckFailed(causes + (subject.blamed(built, [f"{where}: {w}{said}" for w in wrong[:4]], "")
                                        or [f"{where}: a new problem: {new[0]}"]))
        done.append(f"{what}: {len(changed)} answers, the same inventory")
    if not done:
        raise NotApplicable(f"{fx.ref}: no command prints JSON, no answer is Prometheus text and no module states "
                            "its version")
    return f"{fx.ref}: " + "; ".join(done)
