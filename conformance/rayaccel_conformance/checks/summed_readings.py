"""A metric the machine states in parts counts every part (RAC223's ``invariant every-part-counts``; held-out round
17's ``e1`` and ``e2``: Neuron wrappers reading a device's memory in use from NeuronCore 0's stats only, or from the
``tensors`` category only, where the driver states it per core and per category).

A vendor states some quantities of a device in like parts: the Neuron driver writes the memory the runtime holds on
each NeuronCore of a device in each of its categories
(``neuron_core<k>/stats/memory_usage/device_mem/<category>/total``, the Neuron sysfs user guide), neuron-monitor
reports ``memory_used`` broken down per NeuronCore and per category (``usage_breakdown.neuroncore_memory_usage``:
constants, model_code, model_shared_scratchpad, runtime_memory, tensors), a multi-die card states each die's count in a
directory of its own. The suite groups the device's own readings into parts of one kind: the same field (a file's
name, a data key) at the same place, where the places differ only in numbered steps (``neuron_core0`` and
``neuron_core1``, a die's number) and in the record holding the field (a category's directory or object). Where a
summed metric of the device (memory in use, the ECC counters) is, times its unit's factor, the sum of a proper share
of such a group (one core's parts, one category's) and either that share holds two parts or more, or the parts left
out differ from it in numbered steps alone (die 0 read, die 1 not), and every part together fits the device's memory
(a group summing past it is no breakdown of the memory in use: a size beside its used and free), the share is
confirmed by moving one of its parts at the host seam (the metric must move by exactly that part) and then one part
left out is moved alone: the metric must move by that part too. A metric summed from one core's parts or one
category's is wrong as soon as another core or category holds memory. No expectation is read.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import Device, FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.readings import (
    MATCH_TOLERANCE,
    UNIT_FACTORS,
    Reading,
    host_readings,
    owned_by,
    samples_by_device,
    scaled_host,
)
from rayaccel_conformance.harness.subject import Subject

INVARIANT = "every-part-counts"
#: The metrics a vendor may state as a sum of like parts (bytes held per core or category, errors per block or die).
SUMMED_METRICS = ("memory_used", "ecc_errors_corrected", "ecc_errors_uncorrected")
#: Groups larger than this are listings of something else (every file of a tree), not a device's parts.
MAX_PARTS = 256
#: Places that differ in more steps than this are not parts of one kind.
MAX_DIMENSIONS = 3
#: Shares tried per group and metric (each costs a build): the first that the plugin is seen to read is used.
MAX_SHARES = 4
_DIGITS = re.compile(r"\d+")

Place = tuple[str, ...]


def _steps(reading: Reading) -> Place | None:
    """A reading's place as steps, its field last; None for a table's cell (a row is one record, not a part)."""
    if reading.where == "file":
        return tuple(reading.key.strip("/").split("/"))
    if reading.where == "table" or not reading.path:
        return None
    return (reading.where, reading.key, *(str(step) for step in reading.path))


def _kind(steps: Place) -> Place:
    """Parts of one kind share this: their numbers left out, and the record holding the field (the step before it)."""
    return (*(_DIGITS.sub("#", step) for step in steps[:-2]), "*", steps[-1])


def _numbered_only(a: Place, b: Place, positions: Sequence[int]) -> bool:
    """Whether ``a`` and ``b`` differ at ``positions`` in their numbers alone (``neuron_core0``, ``neuron_core1``)."""
    return all(_DIGITS.sub("#", a[p]) == _DIGITS.sub("#", b[p]) for p in positions)


def part_groups(host: dict[str, Any], device: Device) -> list[list[tuple[Place, Reading]]]:
    """The device's own readings (0 included) grouped into parts of one kind, each group of two or more."""
    groups: dict[Place, list[tuple[Place, Reading]]] = {}
    for reading in host_readings(host, zeros=True):
        steps = _steps(reading)
        if steps is None or len(steps) < 2 or not owned_by(reading, device):
            continue
        groups.setdefault(_kind(steps), []).append((steps, reading))
    return [g for g in groups.values() if 2 <= len(g) <= MAX_PARTS]


def shares(group: list[tuple[Place, Reading]]) -> Iterator[tuple[list[tuple[Place, Reading]], tuple[int, ...]]]:
    """Each proper share of a group: its parts alike at some of the steps the group's places differ in (one core's,
    one category's, one part alone), with those steps; the largest first."""
    differing = [p for p in range(len(group[0][0])) if len({steps[p] for steps, _ in group}) > 1]
    if not differing or len(differing) > MAX_DIMENSIONS:
        return
    found = []
    for size in range(1, len(differing) + 1):
        for fixed in itertools.combinations(differing, size):
            by_value: dict[tuple[str, ...], list[tuple[Place, Reading]]] = {}
            for steps, reading in group:
                by_value.setdefault(tuple(steps[p] for p in fixed), []).append((steps, reading))
            found += [(share, fixed) for share in by_value.values() if len(share) < len(group)]
    yield from sorted(found, key=lambda item: -len(item[0]))


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=MATCH_TOLERANCE)


def part_failures(subject: Subject, fx: Fixture, fam: FamilyInventory) -> list[str]:
    """RAC223's ``every-part-counts`` over each summed metric of the fixture's middle device reporting it."""
    host = fx.host.model_dump(mode="json")
    before = samples_by_device(fam)
    wrong: list[str] = []
    for metric in SUMMED_METRICS:
        devices = [d for d in fam.devices if before.get((d.id, metric))]
        if not devices:
            continue
        device = devices[len(devices) // 2]
        wrong += _metric_failures(subject, fx, host, device, metric, before)
    return wrong


def _metric_failures(subject: Subject, fx: Fixture, host: dict[str, Any], device: Device, metric: str,
                     before: dict[tuple[str, str], float]) -> list[str]:
    value = before[(device.id, metric)]
    capacity = before.get((device.id, "memory_total"))
    for group in part_groups(host, device):
        for factor in UNIT_FACTORS[metric]:
            whole = sum(r.value for _, r in group) * factor
            if _close(whole, value) or (metric == "memory_used" and capacity and whole > capacity):
                continue  # every part counted, or no breakdown of the memory in use
            tried = 0
            for share, fixed in shares(group):
                if not _close(sum(r.value for _, r in share) * factor, value):
                    continue
                left = [(s, r) for s, r in group if (s, r) not in share and r.value != 0]
                read = next(((s, r) for s, r in share if r.value != 0), None)
                if read is None or not left:
                    continue
                if len(share) == 1 and not all(_numbered_only(read[0], s, fixed) for s, _ in left):
                    continue  # one field chosen among records of other things (used beside free), not a part
                tried += 1
                if tried > MAX_SHARES:
                    break
                now = _with_part_doubled(subject, fx, host, device, metric, read[1])
                if now is None or not _close(now, value + read[1].value * factor):
                    continue  # the plugin does not read this share: another with the same sum, or another source
                nearest = min(left, key=lambda item: sum(a != b for a, b in zip(item[0], read[0], strict=True)))
                now = _with_part_doubled(subject, fx, host, device, metric, nearest[1])
                due = value + nearest[1].value * factor
                if now is not None and _close(now, due):
                    continue
                shown = "is gone" if now is None else f"is {now:g}"
                return [f"invariant {INVARIANT}, {fx.ref}: {metric} of {device.id} is {value:g}, the sum of "
                        f"{len(share)} of the {len(group)} like parts the machine states for it "
                        f"({_pattern(group)}){_in_unit(factor)}; with {nearest[1].describe()} moved alone "
                        f"({nearest[1].value:g} -> {nearest[1].value * 2:g}), {metric} {shown}, expected "
                        f"{due:g}: every part counts; sum the field over every "
                        "record the vendor lists for the device (every core's, every die's, every category's)"]
    return []


def _with_part_doubled(subject: Subject, fx: Fixture, host: dict[str, Any], device: Device, metric: str,
                       part: Reading) -> float | None:
    """The device's ``metric`` with ``part`` doubled at the host seam (None where it is gone)."""
    variant = fx.model_copy(update={"host": HostState.model_validate(scaled_host(host, part, 2.0)), "faults": []})
    family = subject.build(simulated_host(variant)).family(subject.family().name)
    return samples_by_device(family).get((device.id, metric))


def _in_unit(factor: float) -> str:
    """How the parts are read: in MiB (times 2**20), in mW (times 1e-3), ..."""
    units = {2.0**10: "KiB", 2.0**20: "MiB", 2.0**30: "GiB", 1e3: "kB", 1e6: "MB", 1e9: "GB"}
    return f", read in {units[factor]}" if factor in units else "" if factor == 1 else f", times {factor:g}"


def _pattern(group: list[tuple[Place, Reading]]) -> str:
    """The group's place with the steps its parts differ in shown as ``*``."""
    first = group[0][0]
    steps = ["*" if len({s[p] for s, _ in group}) > 1 else step for p, step in enumerate(first)]
    reading = group[0][1]
    if reading.where == "file":
        return "/" + "/".join(steps)
    return f"{reading.where} {reading.key} " + ".".join(steps[2:])
