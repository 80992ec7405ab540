"""A gauge is the reading now, never its high-water mark (RAC223's ``a-gauge-is-no-high-water-mark``, held-out
round 19's ``e2``: a Neuron wrapper summing each memory category's ``peak`` where the driver's ``total`` beside it is
the memory the runtime holds now).

Vendors state a quantity's running maximum beside the quantity: the Neuron driver writes ``total``, ``present`` and
``peak`` for every memory category of every NeuronCore (``.../stats/memory_usage/device_mem/<category>/``, the Neuron
sysfs user guide), a tool prints a peak power or the highest temperature since boot next to the current one. On a
machine recorded once both can hold the same number, and a loaded device's peak is close to its use, so a gauge
read from the mark passes any comparison of values; but a peak never drops: after a model is unloaded the device
still shows its high-water mark as memory in use, and placement sees a full device. The suite doubles every reading
of the device whose own name says a high-water mark (``peak``, ``highest``, ``hwm``, ``watermark``; ``max`` is left
alone: it names limits and ranges more often than maxima seen) at the host seam, all at once, in one more build:
memory in use, utilization, power and temperature must stay as they were. Nothing is expected: the plugin's own
samples are compared with themselves.
"""

from __future__ import annotations

from typing import Any

from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import Device, FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.readings import (
    MATCH_TOLERANCE,
    Reading,
    host_readings,
    owned_by,
    samples_by_device,
    scaled_host,
)
from rayaccel_conformance.checks.signals_seen import _words
from rayaccel_conformance.harness.subject import Subject

INVARIANT = "a-gauge-is-no-high-water-mark"
#: Words a vendor names a running maximum by (a field's or file's own name).
HIGH_WATER_WORDS = frozenset({"peak", "highest", "hwm", "watermark"})
#: Metrics that read the device now (counters and sizes are not gauges).
GAUGES = ("memory_used", "utilization", "power", "temperature")


def _record(reading: Reading) -> tuple[str, str, tuple[str | int, ...]]:
    """The record holding a reading: a file's directory, the object around a library's or JSON field."""
    if reading.where == "file":
        return reading.where, reading.key.rsplit("/", 1)[0], ()
    return reading.where, reading.key, reading.path[:-1]


def _leaf(reading: Reading) -> str:
    return reading.key.rsplit("/", 1)[-1] if reading.where == "file" else str(reading.path[-1])


def _beside(reading: Reading, mark: Reading) -> bool:
    """Whether ``reading``, in ``mark``'s record, is the quantity the mark is the maximum of: not a mark itself, and
    holding the mark's other words (``mem_used_mib`` for ``mem_used_peak_mib``; any, for a bare ``peak``)."""
    words = _words(reading)
    return not words & HIGH_WATER_WORDS and (_words(mark) - HIGH_WATER_WORDS) <= words


def high_water_marks(host: dict[str, Any], device: Device) -> list[Reading]:
    """The device's own readings (not 0) whose name says a high-water mark."""
    return [r for r in host_readings(host) if owned_by(r, device) and _words(r) & HIGH_WATER_WORDS]


def high_water_findings(subject: Subject, fx: Fixture, fam: FamilyInventory) -> list[str]:
    """RAC223's ``a-gauge-is-no-high-water-mark`` on fixture ``fx`` (its inventory ``fam``): on the middle one of
    the devices reporting a gauge whose own readings include a high-water mark (one build)."""
    before = samples_by_device(fam)
    host = fx.host.model_dump(mode="json")
    marked = [(d, marks) for d in fam.devices if any((d.id, name) in before for name in GAUGES)
              and (marks := high_water_marks(host, d))]
    if not marked:
        return []
    device, marks = marked[len(marked) // 2]
    gauges = {name: before[(device.id, name)] for name in GAUGES if (device.id, name) in before}
    moved = host
    for mark in marks:
        moved = scaled_host(moved, mark, 2.0)
    variant = fx.model_copy(update={"host": HostState.model_validate(moved), "faults": []})
    after = samples_by_device(subject.build(simulated_host(variant)).family(subject.family().name))
    beside = sorted({_leaf(r) for r in host_readings(host, zeros=True) for m in marks
                     if _record(r) == _record(m) and _beside(r, m)})
    plural = len(marks) > 1
    doubled = (f"{len(marks)} reading{'s' if plural else ''} named for a high-water mark doubled "
               f"({marks[0].describe()}" + (f" and {len(marks) - 1} like it)" if plural else ")"))
    kept = f", {', '.join(beside)} beside {'them' if plural else 'it'} as they were" if beside else ""
    wrong = []
    for name, value in gauges.items():
        now = after.get((device.id, name))
        if now is not None and abs(now - value) <= MATCH_TOLERANCE * max(abs(value), 1e-12):
            continue
        shown = "is gone" if now is None else f"moved to {now:g}"
        wrong.append(f"invariant {INVARIANT}, {fx.ref}: {name} of {device.id} ({value:g}) {shown} with only the "
                     f"{doubled}{kept}: a peak never drops, so a freed device would show its high-water mark as "
                     f"{name}; read the reading now" + (f" ({' or '.join(beside)})" if beside else ""))
    return wrong
