"""RAC223's ``a-fault-moves-its-own-metric`` (issue 46, held-out round 8's ``j2``): a number a fixture's fault
changes on a device must show up, under that fault, in the metric named for the number's field, never in a
sibling's. The fixtures' counters are 0 and the scaling doubles readings (0 stays 0), so two counters read from
each other's fields (corrected and uncorrected ECC errors swapped) pass every other path; a fault raising one of
them is the only state where they differ.

A field names a metric when their names share more words, counters' common words (errors, count, total) aside,
than the field shares with any other metric of the family, and at least one (``corrected_errors`` names
``ecc_errors_corrected``; ``fatal_errors`` names neither ECC metric: it shares only ``errors`` with each).

RAC203's cause beside its symptom, from the same readings (held-out round 9's ``n2``): a device a fault states
healthy, reported otherwise, is named with the readings that fault changes on it (:func:`readings_taken_for_a_fault`).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from rayaccel.hosts.fixtures import Fault, Fixture, apply_faults
from rayaccel.records import FamilyInventory, NodeInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.readings import Reading, host_readings, owned_by
from rayaccel_conformance.harness.subject import Subject

_WORD = re.compile(r"[a-z0-9]+")
#: Words every counter's name has: sharing them says nothing about which counter.
_COMMON = frozenset({"errors", "error", "count", "total", "num", "aggregate", "volatile"})


def words(name: str) -> frozenset[str]:
    return frozenset(_WORD.findall(name.lower())) - _COMMON


def field_name(reading: Reading) -> str | None:
    """The name of the field ``reading`` is: a JSON or library key, a file's name, or a CSV cell's column as the
    command line lists its columns (``--query-x=a,b,c``, ``-Q a,b,c``)."""
    if reading.where == "file":
        return reading.key.rsplit("/", 1)[-1]
    if reading.where in ("library", "command"):
        return next((p for p in reversed(reading.path) if isinstance(p, str)), None)
    cells = len(reading.row.split(","))
    for word in reading.key.split():
        columns = word.split("=", 1)[-1].split(",")
        if len(columns) == cells:
            return columns[int(reading.path[1])]
    return None


def named_metric(field: str, metrics: set[str]) -> str | None:
    """The one metric ``field`` names (see the module's docstring), or None."""
    scores = sorted(((len(words(field) & words(m)), m) for m in metrics), reverse=True)
    if not scores or scores[0][0] < 1 or (len(scores) > 1 and scores[1][0] == scores[0][0]):
        return None
    return scores[0][1]


def fault_moves_its_own_metric(subject: Subject, fx: Fixture, fam: FamilyInventory) -> list[str]:
    """Under each fault of ``fx``, each number it changes on a device that names one metric of the family: the new
    number must not show up in another metric of that device while the named one does not carry it."""
    family = subject.family().name
    metrics = {s.name for s in fam.metrics}
    before = {(s.device, s.name): s.value for s in fam.metrics}
    base = {(r.where, r.key, r.path): r.value for r in host_readings(fx.host.model_dump(mode="json"), zeros=True)}
    wrong: list[str] = []
    for fault in fx.faults:
        if fault.kind in ("tool-hang", "tool-garbage"):
            continue
        changed = []
        for reading in host_readings(apply_faults(fx, [fault.name]).model_dump(mode="json"), zeros=True):
            was = base.get((reading.where, reading.key, reading.path))
            field = field_name(reading)
            named = named_metric(field, metrics) if field else None
            if was is not None and was != reading.value and named is not None:
                changed += [(reading, was, named, d) for d in fam.devices if owned_by(reading, d)]
        if not changed:
            continue
        built = subject.build(simulated_host(fx, [fault.name])).family(family)
        after = {(s.device, s.name): s.value for s in (built.metrics if built else [])}
        for reading, was, named, device in changed:
            own = after.get((device.id, named))
            if own is not None and math.isclose(own, reading.value, rel_tol=1e-6):
                continue
            # Another metric that moved to the new number carries it (one that read it before may by chance).
            others = sorted(name for (dev, name), value in after.items() if dev == device.id and name != named
                            and math.isclose(value, reading.value, rel_tol=1e-6)
                            and not math.isclose(before.get((dev, name), math.nan), value, rel_tol=1e-6))
            if others:
                wrong.append(f"invariant a-fault-moves-its-own-metric, {fx.ref} under fault {fault.name}: "
                             f"{reading.describe()} of {device.id} ({field_name(reading)}) went from {was:g} to "
                             f"{reading.value:g}, and {', '.join(others)} reads {reading.value:g} while {named} "
                             f"reads {'nothing' if own is None else f'{own:g}'}: the metrics are read from each "
                             f"other's fields (swapped?); read {named} from {field_name(reading)}")
    return wrong


def readings_taken_for_a_fault(subject: Subject, fx: Fixture, fault: Fault, faulty: NodeInventory) -> list[str]:
    """RAC203's cause beside its symptom (issue 46, held-out round 9's ``n2``): a device a fault states healthy,
    reported otherwise, took one of the readings that fault changes on it for a fault (NVML's lifetime ECC counter
    for the since-boot one). Names those readings, each from and to, and the reasons reported."""
    family = faulty.family(subject.family().name)
    if family is None:
        return []
    states = {h.device: h for h in family.health}
    base = {(r.where, r.key, r.path): r.value for r in host_readings(fx.host.model_dump(mode="json"), zeros=True)}
    under = host_readings(apply_faults(fx, [fault.name]).model_dump(mode="json"), zeros=True)
    wrong = []
    for device in family.devices:
        report = states.get(device.id)
        if fault.expected.health.get(device.id) != "healthy" or report is None or report.state == "healthy":
            continue
        moved = [f"{r.describe()}{f' ({field_name(r)})' if r.where == 'table' else ''} "
                 f"{base[(r.where, r.key, r.path)]:g} -> {r.value:g}" for r in under
                 if (r.where, r.key, r.path) in base and base[(r.where, r.key, r.path)] != r.value
                 and owned_by(r, device)]
        if not moved:
            continue
        reasons = "; ".join(f"{r.code}: {r.message}" for r in report.reasons) or "no reason"
        wrong.append(f"fault {fault.name}: {device.id} is reported {report.state} ({reasons}), but this fault changes "
                     f"on it only {', '.join(moved)}, and states it healthy ({fault.description}): one of these "
                     "readings is taken for a fault it is not; take health from the reading that says the device is "
                     "faulty now")
    return wrong


def _converts(sample: float, reading: float) -> bool:
    """Whether ``sample`` is ``reading`` in another unit: the same number times a power of 10 or of 2 (MiB to
    bytes, milliwatts to watts, a fraction to percent)."""
    if reading == 0 or sample == 0:
        return reading == sample
    ratio = abs(sample / reading)
    return any(math.isclose(ratio, base**power, rel_tol=1e-6) for base in (10, 2) for power in range(-30, 31))


_DIGITS = re.compile(r"\d+(?:\.\d+)?")


def _numbers_only(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether a host state differs from another in numbers alone: the same files, keys, rows and words, some
    number in them another (a fault adding a library's error code or a file, or writing text, takes away more)."""
    def shape(host: dict[str, Any]) -> str:
        return _DIGITS.sub("0", json.dumps(host, sort_keys=True))
    return shape(before) == shape(after)


def fault_takes_only_its_readings(subject: Subject, fx: Fixture, fam: FamilyInventory) -> list[str]:
    """RAC223's ``a-fault-takes-only-its-readings`` (issue 46, held-out round 10's ``c3``): under each fault of
    ``fx``, a device still discovered keeps each metric whose reading the fault leaves as it was (the reading whose
    field names the metric and whose number the metric carried before, in some unit). A fault takes away only what
    it changes: a GPU with an uncorrectable error still prints its temperature and memory in use, and a drained
    device's metrics are what an operator reads to find out why. Only faults that change numbers alone are weighed
    (one adding a library's error code or a file, or writing text, may take away what it governs)."""
    family = subject.family().name
    metrics = {s.name for s in fam.metrics}
    before = {(s.device, s.name): s.value for s in fam.metrics}
    host = fx.host.model_dump(mode="json")
    base = {(r.where, r.key, r.path): r.value for r in host_readings(host, zeros=True)}
    wrong: list[str] = []
    for fault in fx.faults:
        faulty = apply_faults(fx, [fault.name]).model_dump(mode="json")
        if not _numbers_only(host, faulty):
            continue
        kept: dict[tuple[str, str], Reading] = {}
        for reading in host_readings(faulty, zeros=True):
            if base.get((reading.where, reading.key, reading.path)) != reading.value:
                continue
            field = field_name(reading)
            named = named_metric(field, metrics) if field else None
            for device in fam.devices:
                had = before.get((device.id, named or ""))
                if had is not None and owned_by(reading, device) and _converts(had, reading.value):
                    kept.setdefault((device.id, named or ""), reading)
        if not kept:
            continue
        built = subject.build(simulated_host(fx, [fault.name])).family(family)
        if built is None:
            continue
        present = {d.id for d in built.devices}
        after = {(s.device, s.name) for s in built.metrics}
        lost: dict[str, list[str]] = {}
        for (device_id, name), reading in kept.items():
            if device_id in present and (device_id, name) not in after:
                lost.setdefault(device_id, []).append(f"{name} ({reading.describe()}, {reading.value:g})")
        changed = sorted({field_name(r) or r.describe() for r in host_readings(faulty, zeros=True)
                          if base.get((r.where, r.key, r.path)) not in (None, r.value)})
        for device_id, gone in lost.items():
            wrong.append(f"invariant a-fault-takes-only-its-readings, {fx.ref} under fault {fault.name}: "
                         f"{device_id} is still discovered but has no {', '.join(gone)}, though the fault leaves "
                         f"these readings as they were (it changes {', '.join(changed) or 'no number'}): a fault "
                         "takes away only the readings it changes; keep publishing the device's other metrics, "
                         "also while it is unhealthy")
    return wrong
