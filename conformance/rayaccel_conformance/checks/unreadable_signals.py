"""RAC211's ``one-unreadable-device-keeps-the-others`` (issue 46, held-out round 7: health counters read without
per-device containment, so one device's unreadable counter failed every device's answer).

A fixture's faults say where the vendor writes a device's health signals: the numbers a fault changes on a device
its expectation names (an error counter in a library's data, a field of a tool's JSON, a cell of its CSV row). On
the fixture every device reads those signals fine, so a loop that reads them all at once, raising or giving up on
the first it cannot read, passes. Here the same signals of one device, the first listed and then the last, are made
unreadable as the vendor's interface makes them: a library's value left out (NVML's and the template's
NOT_SUPPORTED: the binding raises for that call on that handle), a tool's value printed ``N/A`` (as amd-smi,
rocm-smi and hl-smi print a field they cannot read; nvidia-smi ``[N/A]``). Files are damaged one by one by RAC211
already. Each helper is pure but :func:`unreadable_signal_findings`, which builds.
"""

from __future__ import annotations

import json
from typing import Any

from rayaccel.hosts.fixtures import Fixture, HostState, apply_faults
from rayaccel.records import Device, FamilyInventory, Problem
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.perturbations import one_device_fault_leaks
from rayaccel_conformance.checks.readings import Reading, host_readings, owned_by
from rayaccel_conformance.harness.subject import Subject

#: What a vendor tool prints for a field it cannot read (amd-smi, rocm-smi, hl-smi; nvidia-smi brackets it).
UNREADABLE_TEXT = "N/A"
#: A shape: where a signal is, with the device's own key left open (None) or, in a table, its field.
Shape = tuple[str, str, tuple[str | int | None, ...]]


def _device_key(reading: Reading) -> int | None:
    """Where in a library or JSON reading's path the device's index keys it (as :func:`owned_by` finds it)."""
    return next((i for i, p in enumerate(reading.path) if isinstance(p, int) or str(p).isdigit()), None)


def shape_of(reading: Reading) -> Shape | None:
    """The reading's place with its device left open: the same signal of another device has the same shape."""
    if reading.where == "table":
        return reading.where, reading.key, (None, reading.path[1])
    if reading.where not in ("library", "command"):
        return None  # a file: RAC211 damages each of a device's files itself
    at = _device_key(reading)
    if at is None or at == len(reading.path) - 1:
        return None
    return reading.where, reading.key, tuple(None if i == at else p for i, p in enumerate(reading.path))


def signal_shapes(fx: Fixture, devices: list[Device]) -> list[Shape]:
    """The shapes of the numbers each fault of the fixture changes on a device its expectation names."""
    return [shape for shape, _ in fault_signals(fx, devices)]


def deciding_shapes(fx: Fixture, devices: list[Device]) -> list[Shape]:
    """The shapes a fault changes that take a device it names off healthy: signals its health is decided by (a
    counter whose faults all leave the device healthy, corrected errors say, decides nothing)."""
    return [shape for shape, decides in fault_signals(fx, devices) if decides]


def fault_signals(fx: Fixture, devices: list[Device]) -> list[tuple[Shape, bool]]:
    """Each shape a fault changes on a device its expectation names, and whether a fault changing it expects that
    device other than healthy."""
    base = {(r.where, r.key, r.path): r.value for r in host_readings(fx.host.model_dump(mode="json"), zeros=True)}
    by_id = {d.id: d for d in devices}
    shapes: dict[Shape, bool] = {}
    for fault in fx.faults:
        touched = [by_id[d] for d in fault.expected.health if d in by_id]
        if not touched or fault.kind in ("tool-hang", "tool-garbage"):
            continue
        faulted = host_readings(apply_faults(fx, [fault.name]).model_dump(mode="json"), zeros=True)
        for reading in faulted:
            was = base.get((reading.where, reading.key, reading.path))
            owners = [d for d in touched if owned_by(reading, d)]
            if was is None or was == reading.value or not owners:
                continue
            shape = shape_of(reading)
            if shape is not None:
                decides = any(fault.expected.health[d.id] != "healthy" for d in owners)
                shapes[shape] = shapes.get(shape, False) or decides
    return list(shapes.items())


def _shape(reading: Reading) -> Shape | None:
    if reading.where == "table":
        return reading.where, reading.key, (None, reading.path[1])
    return shape_of(reading)


def still_healthy(after: FamilyInventory | None, device: Device, deciding: list[Reading], said: list[Problem],
                  where: str) -> list[str]:
    """``invariant an-unreadable-device-is-not-healthy``: a device whose signals deciding its health (those a fault
    takes it off healthy by) cannot be read, and whose plugin says so (a problem this build alone reports), is not
    healthy: unknown, with a reason. A plugin saying nothing may keep it healthy: a library's NOT_SUPPORTED, a tool's
    N/A also mean a card without that counter (NVML's ECC counts on a GPU without ECC), whose other signals decide."""
    if after is None or not deciding or not said:
        return []
    report = next((h for h in after.health if h.device == device.id), None)
    if report is None or report.state != "healthy":
        return []  # left out or not healthy: RAC210 and the leak check above judge those answers
    return [f"invariant an-unreadable-device-is-not-healthy, {where.split(', ', 1)[1]}: {device.id} reported "
            f"healthy, though {deciding[0].describe()}, a signal its health is decided by, could not be read and the "
            f"plugin said so ({said[0].code}: {said[0].message[:120]}): a device whose health cannot be read is "
            "unknown (state unknown, a reason saying which), never healthy"]


def readings_of(shapes: list[Shape], device: Device, readings: list[Reading]) -> list[Reading]:
    """The device's own readings of those shapes."""
    found = []
    for reading in readings:
        if not owned_by(reading, device):
            continue
        if _shape(reading) in shapes and reading not in found:
            found.append(reading)
    return found


def unreadable_host(host: dict[str, Any], readings: list[Reading]) -> dict[str, Any]:
    """The host state with each reading unreadable as its interface makes it: a library's value left out, a tool's
    JSON value or CSV cell ``N/A``."""
    state: dict[str, Any] = json.loads(json.dumps(host))  # a few builds per fixture: one copy each is cheap
    for reading in readings:
        if reading.where == "library":
            inner = state["libraries"][reading.key]
            path = list(reading.path)
            own = (_device_key(reading) or 0) + 1  # the device's own entry: never dropped whole (a loss, not this)
            while isinstance(path[-1], int) and len(path) > own + 1:  # a list's element: the call answering it fails
                path.pop()
            if len(path) <= own or isinstance(path[-1], int):
                continue
            for step in path[:-1]:
                inner = inner[step]
            inner.pop(path[-1], None)
        elif reading.where == "command":
            command = state["commands"][reading.key]
            parsed = json.loads(command["stdout"])
            inner = parsed
            for step in reading.path[:-1]:
                inner = inner[step]
            inner[reading.path[-1]] = UNREADABLE_TEXT
            command["stdout"] = json.dumps(parsed, indent=1)
        elif reading.where == "table":
            command = state["commands"][reading.key]
            lines = command["stdout"].split("\n")
            line, field = int(reading.path[0]), int(reading.path[1])
            cells = lines[line].split(",")
            cell = cells[field]
            cells[field] = cell[:len(cell) - len(cell.lstrip())] + UNREADABLE_TEXT
            lines[line] = ",".join(cells)
            command["stdout"] = "\n".join(lines)
    return state


def unreadable_signal_findings(subject: Subject, fx: Fixture, healthy: FamilyInventory,
                               devices: list[Device]) -> tuple[list[str], list[str]]:
    """RAC211's ``one-unreadable-device-keeps-the-others``: the health signals the fixture's faults change, made
    unreadable on the first device listed and then the last; no hook may raise and every other device keeps its
    health and facts. (What went wrong, what was tried.)"""
    signals = fault_signals(fx, devices)
    shapes = [shape for shape, _ in signals]
    deciding = [shape for shape, decides in signals if decides]
    if not shapes:
        return [], []
    host = fx.host.model_dump(mode="json")
    readings = host_readings(host, zeros=True)
    before = {(p.code, p.message) for p in subject.plugin_problems(subject.build(simulated_host(fx)),
                                                                   severities=("error", "warning"))}
    wrong: list[str] = []
    tried = []
    for device in devices[:1] + devices[1:][-1:]:
        mine = readings_of(shapes, device, readings)
        if not mine:
            continue
        variant = fx.model_copy(update={"host": HostState.model_validate(unreadable_host(host, mine)), "faults": []})
        built = subject.build(simulated_host(variant))
        shown = ", ".join(r.describe() for r in mine[:3]) + (f" and {len(mine) - 3} more" if len(mine) > 3 else "")
        where = (f"invariant one-unreadable-device-keeps-the-others, {fx.ref} with {device.id}'s health signals "
                 f"unreadable ({shown})")
        wrong += [f"{where}: {p.hook or 'a hook'} raised instead of reporting it: {p.message[:200]}"
                  for p in subject.plugin_problems(built, severities=("error", "warning")) if p.code == "hook-raised"]
        after = built.family(healthy.family.name)
        leaks = one_device_fault_leaks(healthy, after, {device.id}) if after is not None else []
        if leaks:
            wrong.append(f"{where}: {leaks[0]}" + (f" ({len(leaks)} in all)" if len(leaks) > 1 else "")
                         + ": one device's unreadable reading makes that device's answer unknown, never the others'")
        said = [p for p in subject.plugin_problems(built, severities=("error", "warning"))
                if (p.code, p.message) not in before]
        wrong += still_healthy(after, device, [r for r in mine if _shape(r) in deciding], said, where)
        tried.append(device.id)
    return wrong, ([f"the fault signals of {' and '.join(tried)} unreadable"] if tried else [])
