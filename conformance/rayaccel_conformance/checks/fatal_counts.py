"""RAC203's ``one-fatal-error-is-enough`` (issue 46, held-out round 9's ``s2``: fewer than 8 fatal errors only
degraded the device, and its fixture's fault raised to 8 errors so the fixture passed).

An uncorrectable error is one event that already lost data: NVIDIA's health checks drain a GPU on one XID 48 (a
double-bit ECC error: ``48 in xid_counts``), amdgpu resets the GPU on an uncorrectable error, and every reference
plugin here calls a device unhealthy from the first fatal or uncorrectable count. A counter of them is no score to
weigh: a fault that raises a device's fatal-error count from 0 to N must give that device the same answer when it
raises it by one. The suite only builds the counts its fixtures state, so a plugin that thresholds the count (``>=
8``, ``> 4``, an average over channels) passes wherever its own fault states enough errors. Here each such count a
fault raises by two or more is raised by one instead (every other reading as the fault leaves it) and the device
must keep its state and its fatal flag. Counts a plugin may threshold are left alone: corrected, deferred or
repairable errors, and lifetime totals (retired pages too: amdgpu's ``bad_page_threshold``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rayaccel.hosts.fixtures import Fault, Fixture, HostState, apply_faults
from rayaccel.records import Device, FamilyInventory, NodeInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.fault_readings import field_name
from rayaccel_conformance.checks.readings import Reading, host_readings, owned_by, with_reading
from rayaccel_conformance.harness.subject import Subject

#: Words naming an error no hardware corrects: one is the fault (a field's or a file's name).
FATAL_WORDS = frozenset({"fatal", "uncorrectable", "uncorrected", "uncorr", "unrecoverable"})
#: Words naming counts a plugin may weigh: errors corrected, deferred or repaired, or a device's lifetime total.
WEIGHED_WORDS = frozenset({"corrected", "correctable", "deferred", "repairable", "recoverable", "retired",
                           "remapped", "aggregate", "lifetime", "history", "threshold", "limit", "max"})
#: The metric whose samples are a device's uncorrectable errors: a reading feeding it is such a count.
UNCORRECTED_METRIC = "ecc_errors_uncorrected"
#: Fault kinds whose patch is a device's health signal (a lost device, a hung or garbled tool are others').
SIGNAL_KINDS = ("fatal-error", "ecc", "degraded", "other")
#: Counts stepped down per fault (each is a build).
MAX_STEPS = 4


def _words(name: str) -> frozenset[str]:
    """A name's words, counters' common ones kept (``aggregate`` and ``volatile`` tell a lifetime total apart)."""
    return frozenset(re.findall(r"[a-z]+", name.lower()))


def names_a_fatal_count(reading: Reading) -> bool:
    """Whether the reading's own name says it counts errors no hardware corrects (and no count a plugin weighs)."""
    field = field_name(reading)
    if field is None:
        return False
    said = _words(field)
    return bool(said & FATAL_WORDS) and not said & WEIGHED_WORDS


def _health(family: FamilyInventory | None, device: str) -> tuple[str, bool] | None:
    """The device's state and whether a reason of it is fatal; None where it is left out."""
    if family is None or all(d.id != device for d in family.devices):
        return None
    report = next((r for r in family.health if r.device == device), None)
    if report is None:
        return "unknown", False
    return report.state, any(r.fatal for r in report.reasons)


def _said(health: tuple[str, bool] | None, reasons: Sequence[str]) -> str:
    if health is None:
        return "left out"
    state, fatal = health
    return f"{state}{' (fatal)' if fatal else ''}" + (f" [{', '.join(reasons)}]" if reasons else "")


def _reasons(family: FamilyInventory | None, device: str) -> list[str]:
    report = next((r for r in (family.health if family else []) if r.device == device), None)
    return [r.code for r in report.reasons] if report else []


def stepped_counts(fx: Fixture, fault: Fault, family: FamilyInventory) -> list[tuple[Reading, float, Device]]:
    """The fatal-error counts ``fault`` raises by two or more on a device it leaves not healthy: (reading under
    the fault, the count before it, the device). A count is one by its name or by feeding the device's
    uncorrectable-errors metric under the fault."""
    base = {(r.where, r.key, r.path): r.value for r in host_readings(fx.host.model_dump(mode="json"), zeros=True)}
    uncorrected = {s.device: s.value for s in family.metrics if s.name == UNCORRECTED_METRIC}
    found = []
    for reading in host_readings(apply_faults(fx, [fault.name]).model_dump(mode="json"), zeros=True):
        was = base.get((reading.where, reading.key, reading.path))
        if was is None or not was.is_integer() or not reading.value.is_integer() or reading.value < was + 2:
            continue
        for device in family.devices:
            health = _health(family, device.id)
            if health is None or health[0] == "healthy" or not owned_by(reading, device):
                continue
            if names_a_fatal_count(reading) or (uncorrected.get(device.id) == reading.value
                                                and not _words(field_name(reading) or "") & WEIGHED_WORDS):
                found.append((reading, was, device))
    return found[:MAX_STEPS]


def with_count(host: dict[str, Any], reading: Reading, count: int) -> dict[str, Any]:
    """The host state with the count ``reading`` is written as ``count``, where and as the vendor wrote it."""
    return with_reading(host, reading, lambda _old: str(count), lambda _old: count)


def one_fatal_error_findings(subject: Subject, fx: Fixture, fault: Fault, faulty: NodeInventory,
                             ) -> tuple[list[str], int]:
    """``invariant one-fatal-error-is-enough`` under one fault: each fatal-error count it raises by two or more,
    raised by one instead, gives the device it counts for the same state and fatal flag. (What went wrong, how
    many counts were stepped.)"""
    family_name = subject.family().name
    family = faulty.family(family_name)
    if fault.kind not in SIGNAL_KINDS or family is None:
        return [], 0
    steps = stepped_counts(fx, fault, family)
    if not steps:
        return [], 0
    host = apply_faults(fx, [fault.name]).model_dump(mode="json")
    wrong = []
    for reading, was, device in steps:
        one = was + 1
        variant = fx.model_copy(update={"host": HostState.model_validate(with_count(host, reading, int(one))),
                                        "faults": []})
        after = subject.build(simulated_host(variant), with_metrics=False).family(family_name)
        expected, got = _health(family, device.id), _health(after, device.id)
        if got == expected:
            continue
        wrong.append(f"invariant one-fatal-error-is-enough, {fx.ref} under fault {fault.name}: "
                     f"{reading.describe()} of {device.id} ({field_name(reading) or 'its uncorrectable errors'}) "
                     f"went from {was:g} to {reading.value:g} and {device.id} is "
                     f"{_said(expected, _reasons(family, device.id))}; at {one:g}, one event more, it is "
                     f"{_said(got, _reasons(after, device.id))}: an uncorrectable error is one event that already "
                     "lost data, not a score (NVIDIA drains a GPU on one XID 48, amdgpu resets on one); judge the "
                     "count as any above what it was, and weigh only corrected errors")
    return wrong, len(steps)
