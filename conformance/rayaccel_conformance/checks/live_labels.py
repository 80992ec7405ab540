"""A label says what the node is, never what its devices are doing (``invariant a-label-is-no-live-reading``,
RAC201; issue 46, held-out round 12's ``l1``).

A Ray node's labels are set once, when it starts (``ray start --labels``, which ``rayaccel start`` passes them
to; Ray 2.60 has no call that changes a running node's labels), and Ray's docs call them what "describe the
underlying compute". A label built from a reading that moves while the node runs (utilization, memory in use,
power, temperature, an error counter) is right when the node starts and wrong a minute later, and a label
selector on it sends work to a node that is busy by then. Such a value is a metric.

The suite finds each device's readings of those metrics among the numbers on the host as RAC223 finds them (a
number of the device's own that gives its sample times a unit factor) and moves them on every device at once to
both ends a running device reaches: utilization 0 and 100 %, memory in use 0 and all of it (RAC223's idle and
full-scale readings), power, temperature and the counters halved and doubled (RAC223's scaling, within the metric's
range); every metric together first, then, where a label or what the node is moved, one metric at a time. Where the
metric follows on some device while the devices, their health, links and resources stay as they were, the family's
labels must be exactly what they were. Each helper is pure but the one that builds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import FamilyInventory, MetricSample
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.readings import (
    MAX_CANDIDATES,
    METRIC_CEILINGS,
    Reading,
    candidates,
    host_readings,
    owned_by,
    samples_by_device,
    with_reading,
)

if TYPE_CHECKING:
    from rayaccel_conformance.harness.subject import Subject

#: The metrics whose readings move while a node runs, in the order they are moved.
LIVE_METRICS = ("utilization", "memory_used", "power", "temperature", "ecc_errors_corrected",
                "ecc_errors_uncorrected")
#: The two ends each live reading is moved to, one build each.
ENDS = ("idle", "loaded")


@dataclass(frozen=True)
class Move:
    """One device's reading of ``metric`` moved to ``value`` (in the reading's unit), due to read ``due``."""

    device: str
    reading: Reading
    value: float
    due: float

    def describe(self) -> str:
        return f"{self.reading.describe()} {self.reading.value:g} -> {self.value:g}"


def due_value(sample: MetricSample, end: str, memory_total: float | None) -> float | None:
    """What ``sample``'s metric reads at ``end`` ("idle" or "loaded"); None where the suite cannot tell (memory in
    use of a device whose size is not a sample) or the value would leave the metric's range."""
    if sample.name == "utilization":
        return 0.0 if end == "idle" else 100.0
    if sample.name == "memory_used":
        return 0.0 if end == "idle" else memory_total
    if sample.name.startswith("ecc_errors_"):
        return 0.0 if end == "idle" else max(2.0 * sample.value, 1.0)
    value = sample.value / 2 if end == "idle" else sample.value * 2
    return value if value <= METRIC_CEILINGS.get(sample.name, math.inf) else None


def shape(reading: Reading) -> tuple[str, str]:
    """Where a reading sits for every device alike: its field, the device's index or name left out (a library's
    ``devices.#.utilization.gpu``, a file's name, a table's column)."""
    if reading.where == "file":
        return reading.where, reading.key.rsplit("/", 1)[-1]
    if reading.where == "table":
        return reading.where, f"{reading.key} field {reading.path[1]}"
    return reading.where, f"{reading.key} " + ".".join(
        "#" if isinstance(p, int) or str(p).isdigit() else str(p) for p in reading.path)


def planned_moves(fam: FamilyInventory, host: dict[str, Any], metric: str, end: str) -> list[list[Move]]:
    """Every device's reading of ``metric`` moved to ``end``, one plan per place the reading may sit (the device's
    own numbers that give its sample, as RAC223 attributes them, grouped by :func:`shape`, at most
    ``MAX_CANDIDATES``): the new value in the reading's unit (a whole number stays whole). A device reading 0,
    which any field of 0 gives, is moved at the place its siblings' readings sit."""
    readings = host_readings(host)
    samples = {(s.device, s.name): s for s in fam.metrics}
    plans: dict[tuple[str, str], list[Move]] = {}
    factors: dict[tuple[str, str], float] = {}
    zeros = []
    for device in fam.devices:
        sample = samples.get((device.id, metric))
        total = samples.get((device.id, "memory_total"))
        due = None if sample is None else due_value(sample, end, total.value if total else None)
        if sample is None or due is None:
            continue
        if sample.value == 0:
            zeros.append((device, due))
            continue
        for reading, factor in candidates(sample, device, readings):
            plan = plans.setdefault(shape(reading), [])
            factors.setdefault(shape(reading), factor)
            if all(m.device != device.id for m in plan):
                plan.append(_move(device.id, reading, due, factor))
    every = host_readings(host, zeros=True) if zeros else []
    for where, plan in plans.items():
        for device, due in zeros:
            own = next((r for r in every if r.value == 0 and shape(r) == where and owned_by(r, device)), None)
            if own is not None:
                plan.append(_move(device.id, own, due, factors[where]))
    return [kept for plan in plans.values() if (kept := [m for m in plan if m.value != m.reading.value])
            ][:MAX_CANDIDATES]


def _move(device: str, reading: Reading, due: float, factor: float) -> Move:
    value = due / factor
    if reading.value.is_integer():
        value = float(round(value))
    return Move(device, reading, value, value * factor)


def moved_host(host: dict[str, Any], moves: list[Move]) -> dict[str, Any]:
    """The host state with every move's reading rewritten where the vendor wrote it."""
    state = host
    for move in moves:
        state = with_reading(state, move.reading, _text(move.value), _value(move.value))
    return state


def _text(value: float) -> Callable[[str], str]:
    return lambda _old: str(int(value)) if value.is_integer() else repr(value)


def _value(value: float) -> Callable[[Any], Any]:
    return lambda old: int(value) if isinstance(old, int) and value.is_integer() else float(value)


def what_the_node_is(fam: FamilyInventory | None) -> Any:
    """The parts of a family's inventory a label may follow: its devices, links, health, resources and units."""
    if fam is None:
        return None
    health = sorted((h.device, h.state, sorted(r.code for r in h.reasons)) for h in fam.health)
    return (fam.model_dump(mode="json", include={"devices", "topology", "resources", "schedulable_units",
                                                 "partition_units", "accelerator_type", "sku_known"}), health)


def end_phrase(metric: str, end: str, moves: list[Move]) -> str:
    """``utilization at 100``, ``memory_used at 0``; ``power doubled``, ``temperature halved``."""
    dues = {m.due for m in moves}
    if metric in ("utilization", "memory_used") and len(dues) == 1:
        return f"{metric} at {dues.pop():g}"
    return f"{metric} {'halved' if end == 'idle' else 'doubled'}" if not metric.startswith("ecc_") else (
        f"{metric} at 0" if end == "idle" else f"{metric} raised")


def _built(subject: Subject, fx: Fixture, host: dict[str, Any], moves: list[Move],
           family: str) -> FamilyInventory | None:
    """The family's inventory of ``fx``'s machine with ``moves`` made (its faults left out)."""
    variant = fx.model_copy(update={"host": HostState.model_validate(moved_host(host, moves)), "faults": []})
    return subject.build(simulated_host(variant)).family(family)


def followed_moves(built: FamilyInventory | None, moves: list[Move], metric: str) -> list[Move]:
    """The moves whose device's ``metric`` now reads what the move makes it read."""
    after = samples_by_device(built)
    return [m for m in moves if (now := after.get((m.device, metric))) is not None
            and math.isclose(now, m.due, rel_tol=1e-4, abs_tol=1e-9)]


def label_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Each label that differs: ``key 'old' -> 'new'`` (``(none)`` where it is absent)."""
    return [f"{key} {before.get(key, '(none)')!r} -> {after.get(key, '(none)')!r}"
            for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]


def live_label_failures(subject: Subject, fx: Fixture, fam: FamilyInventory) -> tuple[list[str], list[str]]:
    """RAC201's ``a-label-is-no-live-reading`` on fixture ``fx`` (its inventory ``fam``): (failures, the metric
    moves that were tried and followed, for the evidence)."""
    host = fx.host.model_dump(mode="json")
    node = what_the_node_is(fam)
    wrong: list[str] = []
    tried: list[str] = []
    named: set[str] = set()
    plans = {(metric, end): planned_moves(fam, host, metric, end) for metric in LIVE_METRICS for end in ENDS}
    settled: set[tuple[str, str]] = set()
    for end in ENDS:  # every metric at once first: one build for each end where no label moves
        firsts = {metric: plans[(metric, end)][0] for metric in LIVE_METRICS if plans[(metric, end)]}
        if not firsts:
            continue
        built = _built(subject, fx, host, [m for moves in firsts.values() for m in moves], fam.family.name)
        if built is not None and what_the_node_is(built) == node and built.labels == fam.labels \
                and all(followed_moves(built, moves, metric) for metric, moves in firsts.items()):
            settled |= {(metric, end) for metric in firsts}
    for metric in LIVE_METRICS:
        for end in ENDS:
            if (metric, end) in settled:
                tried.append(f"{metric} {end}")
                continue
            for moves in plans[(metric, end)]:  # one metric alone: which one moves a label, or the node
                built = _built(subject, fx, host, moves, fam.family.name)
                followed = followed_moves(built, moves, metric)
                if followed:
                    break  # the metric's own readings: no other place is tried
            else:
                continue
            if built is None or what_the_node_is(built) != node:
                continue  # they move what the node is too (its health, a size): not a live reading alone
            tried.append(f"{metric} {end}")
            changed = [c for c in label_changes(fam.labels, built.labels) if c.split()[0] not in named]
            if not changed:
                continue
            named |= {c.split()[0] for c in changed}
            more = f" and {len(followed) - 1} more" if len(followed) > 1 else ""
            wrong.append(
                f"invariant a-label-is-no-live-reading, {fx.ref} with every device's "
                f"{end_phrase(metric, end, followed)} ({followed[0].describe()}{more}; the metric follows): "
                f"label {changed[0]}"
                + (f" ({len(changed) - 1} more: {'; '.join(changed[1:3])})" if len(changed) > 1 else "")
                + ", while the devices, their health, links and resources stay as they were: the label is a live "
                "reading, and a Ray node's labels are set once, when it starts, so it is wrong as soon as the "
                f"devices' {metric} moves and a label selector on it sends work by a stale reading. Fix: publish "
                "it as a metric (rayaccel_metrics); label only what the node is")
    return wrong, tried
