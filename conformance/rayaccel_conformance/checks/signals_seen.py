"""What the vendor says about one device reaches that device's answers (supported tier, issue 46): RAC250-RAC251,
and a metric is the quantity its name says, not the complement the vendor reports beside it: RAC253.

A fixture states which host readings carry a device's signals: a fault's patch names the files whose values make
a device unhealthy, a ``change`` perturbation the answers that make a device report other values. A plugin that
answers from somewhere else (a counter it cannot read taken as zero, a size read from another file, the catalog
or a cache) is right on the fixture as recorded and passes every check that compares with it; these checks
change exactly what the fixture says carries the signal and require the device's answer to follow.
"""

from __future__ import annotations

import re
from typing import Any

from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import Device, FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.perturbations import FILE_DAMAGE, device_files, device_view
from rayaccel_conformance.checks.readings import (
    Reading,
    candidates,
    device_with_samples,
    host_readings,
    samples_by_device,
    scale_of,
    scaled_host,
    verdict,
)
from rayaccel_conformance.checks.supported import perturbed
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: Faults whose patch is a health signal of a device that stays on the bus (a lost device's files are gone on
#: purpose; a hung or garbled tool is RAC204's).
SIGNAL_FAULT_KINDS = ("fatal-error", "ecc", "degraded", "other")
#: What a garbled signal file reads (RAC211's garbage).
GARBAGE = dict(FILE_DAMAGE)["garbage"]
#: At most this many signal files per fixture are garbled (each is a fresh build).
MAX_SIGNAL_FILES = 8


def _short(value: Any) -> str:
    text = repr(value.strip() if isinstance(value, str) else value)
    return text if len(text) <= 40 else text[:37] + "..."


def _health(family: FamilyInventory | None, device_id: str) -> str | None:
    """The device's reported health; None when the device is left out (honest: one device fewer)."""
    if family is None or all(d.id != device_id for d in family.devices):
        return None
    return next((r.state for r in family.health if r.device == device_id), "unknown")


def signal_files(fx: Fixture) -> list[tuple[str, str, list[str]]]:
    """(fault, file path as the fixture keys it, devices the fault makes non-healthy) for every file a fault of a
    signal kind changes to another value and the healthy host has."""
    found = []
    for fault in fx.faults:
        touched = sorted(d for d, state in fault.expected.health.items() if state != "healthy")
        if fault.kind not in SIGNAL_FAULT_KINDS or not touched:
            continue
        files = fault.patch.get("files") or {}
        for path, value in sorted(files.items()):
            if value is not None and path in fx.host.files and fx.host.files[path] != value:
                found.append((fault.name, path, touched))
    return found[:MAX_SIGNAL_FILES]


@check("RAC250", scope="fixture")
def unreadable_health_signal_is_not_healthy(subject: Subject, fixture: str | None) -> Evidence:
    """A device whose health signal reads as garbage is not reported healthy: a file a declared fault changes,
    garbled, leaves that device unknown, degraded, unhealthy or left out.

    A fault of the fixture (kind ``fatal-error``, ``ecc``, ``degraded`` or ``other``) names the files whose
    values make a device unhealthy: they are its health signal. Each such file, on the fixture without the
    fault, is garbled (what a flaky read or a driver mid-reset gives) and the inventory is built again: the
    device the fault makes unhealthy whose own file it is (its PCI address or numbered entry in the path) must
    not be reported ``healthy``. A health hook that takes an unreadable
    counter as zero (``if count:`` on a None, ``int(text or 0)``, an exception swallowed into "healthy")
    passes every fixture as recorded, and on the node calls a device healthy whose errors it cannot see. A
    problem reported alongside does not make "healthy" true. A missing or empty file is left to RAC211: a
    driver may not publish an optional signal at all, and the device's other signals then speak for it. The
    failure names the fault, the file and the device (``invariant unreadable-health-signal-is-not-healthy``).
    Not applicable where no fault changes a file the healthy host has (faults through a library or a
    command). Fix: a signal that cannot be read makes the device ``unknown`` (still scheduled, flagged),
    never ``healthy``.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    signals = signal_files(fx)
    if not signals:
        raise NotApplicable(f"{fx.ref}: no fault of the fixture changes a file the healthy host has")
    base = subject.inventory(fixture).family(family.name)
    records = {d.id: d for d in (base.devices if base is not None else [])}
    wrong, tried = [], 0
    for fault, path, touched in signals:
        # The devices the fault touches whose own file this is (its PCI address or its numbered entry in the path).
        healthy_before = [d for d in touched if _health(base, d) == "healthy" and d in records
                          and device_files([path], records[d])]
        if not healthy_before:
            continue
        built = subject.build(simulated_host(perturbed(fx, {"files": {path: GARBAGE}})), with_metrics=False)
        tried += 1
        for device in healthy_before:
            if _health(built.family(family.name), device) == "healthy":
                wrong.append(f"invariant unreadable-health-signal-is-not-healthy, {fx.ref}: {path} (the signal "
                             f"fault {fault} changes to make {device} unhealthy) garbled to {GARBAGE!r}: {device} "
                             "is still reported healthy, though its signal cannot be read (report it unknown)")
    if wrong:
        raise CheckFailed(wrong[:8] + ([f"... and {len(wrong) - 8} more"] if len(wrong) > 8 else []))
    if not tried:
        raise NotApplicable(f"{fx.ref}: no file a fault changes is the own file of a device it makes unhealthy")
    return (f"{fx.ref}: {tried} fault signal files garbled: no device with an unreadable signal is called "
            "healthy")


def _changed_answers(fx: Fixture, patch: dict[str, Any], device: Device) -> list[str]:
    """The patch's files that are this device's own (its PCI address or its numbered entry), before -> after."""
    files = patch.get("files") or {}
    return [f"{path}: {_short(fx.host.files.get(path))} -> {_short(files[path])}"
            for path in device_files(files, device) if fx.host.files.get(path) != files[path]]


@check("RAC251", scope="fixture")
def declared_change_is_seen(subject: Subject, fixture: str | None) -> Evidence:
    """A device the fixture's ``change`` perturbation makes report other values has other answers: its record,
    health or links move.

    A ``change`` perturbation (docs/fixtures.md) says in the vendor's own format that some devices report other
    values (a card with half its memory, another firmware). RAC211 holds every other device to its facts; this
    check holds the changed devices to theirs: built on the perturbed host, each changed device must be left
    out or differ from the unperturbed one in its device record, its health or its links. A plugin whose
    answer for the device stays put reads it from somewhere the vendor does not report it (the PCI BAR size
    for the memory, the catalog, another card's entry, a cache from an earlier call): right on the recorded
    machine, wrong on the next one. The failure names the perturbation, the device and the answers that
    changed (``invariant change-is-seen``). Not applicable where the fixture declares no ``change``
    perturbation. Fix: read each value from the device's own entry where the vendor reports it.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    changes = [p for p in fx.perturbations if p.kind == "change" and p.devices]
    if not changes:
        raise NotApplicable(f"{fx.ref}: the fixture declares no change perturbation")
    healthy = subject.inventory(fixture).family(family.name)
    if healthy is None:
        raise NotApplicable(f"{fx.ref}: the plugin reports no devices here (RAC105's)")
    wrong, seen = [], []
    for variant in changes:
        fam = subject.build(simulated_host(perturbed(fx, variant.patch)), with_metrics=False).family(family.name)
        for device_id in variant.devices:
            before = device_view(healthy, device_id)
            after = device_view(fam, device_id)
            if before is None or after is None or after != before:
                seen.append(device_id)
                continue
            device = next(d for d in healthy.devices if d.id == device_id)
            answers = _changed_answers(fx, variant.patch, device)
            wrong.append(f"invariant change-is-seen, {fx.ref} perturbation {variant.name} ({variant.description}): "
                         f"{device_id} reports other values"
                         + (f" ({'; '.join(answers[:3])})" if answers else "")
                         + ", yet its record, health and links are exactly as before: the plugin answers for it "
                         "from somewhere the vendor does not report it (another file, the catalog, a cache)")
    if wrong:
        raise CheckFailed(wrong)
    return f"{fx.ref}: every changed device's answers move ({', '.join(sorted(set(seen)))})"


#: Words that name the complement of a metric's quantity in a vendor's field or file name: memory in use is not
#: the memory free, a busy share is not the idle one.
COMPLEMENTS = {"memory_used": frozenset({"free", "available", "avail", "unused", "remaining"}),
               "utilization": frozenset({"idle", "free", "available", "unused"})}


def _words(reading: Reading) -> set[str]:
    """The words of a reading's own name (a file's name, a field's key); a table cell has none."""
    if reading.where == "table":
        return set()
    leaf = reading.key.rsplit("/", 1)[-1] if reading.where == "file" else str(reading.path[-1])
    return set(re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", leaf).lower()))


@check("RAC253", scope="fixture")
def metric_is_not_its_complement(subject: Subject, fixture: str | None) -> Evidence:
    """A used or busy metric does not follow a reading named for its complement: ``memory_used`` never moves with
    a ``free`` or ``available`` field, ``utilization`` never with an ``idle`` one.

    Vendors report both halves (NVML's ``memory.used`` and ``memory.free``, a driver's ``busy`` and ``idle``
    percentages) side by side, and on an idle machine the wrong half is as plausible as the right one: within
    the capacity, within 0-100. For one device of the fixture (the middle one), each ``memory_used`` and
    ``utilization`` sample that equals, times a unit factor, one of the device's own readings whose name says
    the complement (``free``, ``available``, ``unused``, ``remaining``; ``idle`` for utilization) has that
    reading scaled (x2, or /2 where twice would leave the range) and the inventory built again: if the sample
    moves by exactly that factor, it is the complement (``invariant metric-is-not-its-complement``, naming the
    reading and both values). Not applicable where no such sample equals such a reading. Fix: read the field
    that names the quantity (``used``, ``busy``), or compute it from the total and the complement.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    fam, device = device_with_samples(fx.ref, subject.inventory(fixture).family(family.name))
    host = fx.host.model_dump(mode="json")
    readings = host_readings(host)
    before = samples_by_device(fam)
    wrong, tried = [], []
    for sample in (s for s in fam.metrics if s.device == device.id and s.name in COMPLEMENTS):
        for reading, _ in candidates(sample, device, readings):
            named = _words(reading) & COMPLEMENTS[sample.name]
            k = scale_of(sample, reading) if named else None
            if k is None:
                continue
            built = subject.build(simulated_host(fx.model_copy(update={
                "host": HostState.model_validate(scaled_host(host, reading, k)), "faults": []})))
            how, _ = verdict(sample, k, before, samples_by_device(built.family(family.name)))
            tried.append(f"{sample.name} against {reading.describe()}")
            if how == "moved":
                wrong.append(f"invariant metric-is-not-its-complement, {fx.ref}: {sample.name} of {device.id} "
                             f"({sample.value:g}) moves with {reading.describe()}, which is named "
                             f"'{sorted(named)[0]}' ({reading.value:g} x{k:g} moved it x{k:g}): the quantity "
                             f"read is the complement of {sample.name}")
    if wrong:
        raise CheckFailed(wrong)
    if not tried:
        raise NotApplicable(f"{fx.ref}: no used or busy metric of {device.id} equals a reading named for its "
                            "complement")
    return f"{fx.ref}: {'; '.join(tried)}: each stayed with its own quantity"
