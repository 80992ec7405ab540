"""Supported tier, robustness (RAC203, RAC204): every declared fault as declared and recovered from, and vendor
tools that hang or print garbage bounded."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from rayaccel.records import NodeInventory
from rayaccel.simulation.expectations import compare_expected, expectation_differences
from rayaccel.simulation.fixtures import Fixture, HostState, merge_patch
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks import CheckFailed, Evidence, NotApplicable, check
from rayaccel_conformance.subject import Subject

GARBAGE = "\x00\ufffd<html>502 Bad Gateway</html>\n{\"truncated\": [1, 2,\n\x1b[31m?? ??\n"


@check("RAC203", scope="fixture")
def faults_and_recovery(subject: Subject, fixture: str | None) -> Evidence:
    """Every declared fault gives the declared health state, and recovery gives healthy again.

    Each fault of the fixture is switched on in a running simulated host (through its fault file, as on a
    live node), the inventory is rebuilt and compared with the fault's ``expected`` (health per device,
    devices, resources, fatal, problem codes); then the fault is switched off on the same host and the
    inventory must equal the fixture's healthy expectation again. Fix: derive health from the vendor's
    signals on every call; never cache a device's state across calls.
    """
    subject.family()
    fx = subject.fixture(fixture)
    if not fx.faults:
        return f"{fx.ref} declares no faults"
    wrong, done = [], []
    fd, fault_file = tempfile.mkstemp(prefix="rayaccel-conformance-", suffix=".faults")
    os.close(fd)
    try:
        host = simulated_host(fx, fault_file=fault_file)
        healthy = fx.expected.model_copy(update={"labels": {}})
        for fault in fx.faults:
            _write(fault_file, fault.name)
            waited = host.skipped_wait_s
            faulty, elapsed = subject.timed_build(host)
            subject.fault_runs[(fx.ref, fault.name)] = (faulty, elapsed + host.skipped_wait_s - waited)
            wrong += [f"fault {fault.name}: {d}" for d in expectation_differences(faulty, subject.name, fault.expected)]
            _write(fault_file, "")
            back = compare_expected(subject.build(host), fx, healthy)
            wrong += [f"after fault {fault.name} is cleared: {d}" for d in back]
            done.append(fault.name)
    finally:
        os.unlink(fault_file)
    if wrong:
        raise CheckFailed(wrong)
    return f"{fx.ref}: {len(done)} faults as declared, each recovers: {', '.join(done)}"


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + ("\n" if text else ""))


def _synthetic_faults(fx: Fixture) -> dict[str, dict[str, Any]]:
    """Merge patches making every vendor tool (command, metadata server) hang, or print garbage."""
    state = fx.host
    scenarios: dict[str, dict[str, Any]] = {}
    if state.commands:
        scenarios["every command hangs"] = {"commands": {c: {"hang": True} for c in state.commands}}
        scenarios["every command prints garbage"] = {
            "commands": {c: {"stdout": GARBAGE, "stderr": "", "returncode": 0} for c in state.commands}}
    if state.http:
        scenarios["the metadata server hangs"] = {"http": {u: {"hang": True} for u in state.http}}
        scenarios["the metadata server answers garbage"] = {"http": {u: {"body": GARBAGE} for u in state.http}}
    return scenarios


@check("RAC204", scope="fixture")
def hang_and_garbage_bounded(subject: Subject, fixture: str | None) -> Evidence:
    """A vendor tool that hangs or prints garbage ends within the timeout as zero devices or a clear problem.

    The fixture's own ``tool-hang`` and ``tool-garbage`` faults run, and so do scenarios the suite makes:
    every command of the fixture hangs, every command prints garbage, the metadata server hangs or answers
    garbage. Each inventory must finish within the SDK's hook timeout without the SDK having to abandon the
    hook (``hook-timeout``), no exception may escape, and the plugin must end with zero devices, a problem
    naming what went wrong, or (for a tool it only reads extra details from) the devices it found without
    it; never devices made up from garbage. A simulated hang lasts the whole timeout the plugin asked for
    (in simulated time: ``SimulatedHost.skipped_wait_s``), so 3 retries of a 120 s call blow the budget as
    they would on a real machine. A fixture on which the plugin reads no vendor tool (no commands, no
    metadata server, no tool faults) has nothing to test: the check is skipped there as not applicable,
    never passed. Fix: bound every call (``host.run(..., timeout=...)``), give up on a timeout instead of
    retrying, and validate what a tool prints before using it.
    """
    subject.family()
    fx = subject.fixture(fixture)
    baseline = {d.id for d in subject.devices(subject.inventory(fixture))}
    limit = float(subject.manager.timeout or 10.0)
    scenarios: list[tuple[str, HostState | None, bool]] = []
    for fault in fx.faults:
        if fault.kind in ("tool-hang", "tool-garbage"):
            cached = (fx.ref, fault.name) in subject.fault_runs  # RAC203 built it already: reuse, not re-wait
            scenarios.append((fault.name, None if cached else _patched(fx, fault.patch), False))
    for name, patch in _synthetic_faults(fx).items():
        scenarios.append((name, _patched(fx, patch), True))
    if not scenarios:
        raise NotApplicable(f"{fx.ref}: the plugin reads no vendor tool here (no commands, no metadata server, "
                            "no tool faults): nothing can hang or print garbage")
    wrong, done = [], []
    for name, state, synthetic in scenarios:
        if state is None:
            inventory, elapsed = subject.fault_runs[(fx.ref, name)]
            name = f"fault {name}"
        else:
            host = simulated_host(fx.model_copy(update={"host": state, "faults": []}))
            inventory, elapsed = subject.timed_build(host)
            elapsed += host.skipped_wait_s  # what the hangs would have cost on a real machine
            name = name if synthetic else f"fault {name}"
        problems = [p for p in inventory.problems if p.plugin == subject.name and p.hook]
        timeouts = [p for p in problems if p.code == "hook-timeout"]
        devices = {d.id for d in subject.devices(inventory)}
        if timeouts:
            wrong.append(f"{name}: {timeouts[0].render()}")
        elif elapsed > limit * 1.5:
            wrong.append(f"{name}: would take {elapsed:.1f}s on a real host (the timeouts the plugin asked for, "
                         f"waited out), over the {limit:g}s hook timeout")
        elif synthetic and devices and not problems and not devices <= baseline:
            wrong.append(f"{name}: reported devices {sorted(devices - baseline)} that are not on the machine")
        elif made_up := facts_from_garbage(subject, inventory, subject.inventory(fixture)):
            wrong.append(f"{name}: {made_up}")
        else:
            outcome = "zero devices" if not devices else f"{len(devices)} devices"
            done.append(f"{name}: {outcome}, {len(problems)} problems, {elapsed:.2f}s")
    if wrong:
        raise CheckFailed(wrong)
    return done


#: Device facts a tool's garbage must never become (a fact the plugin could not read is None instead).
DEVICE_FACTS = ("product_name", "pci_device_id", "memory_mib", "pci_bus_id", "numa_node", "architecture",
                "driver_version", "runtime_version")


def facts_from_garbage(subject: Subject, inventory: NodeInventory, healthy: NodeInventory) -> str | None:
    """A device fact that differs from the healthy machine's and is not simply unknown (None), if any."""
    before = {d.id: d for d in subject.devices(healthy)}
    for device in subject.devices(inventory):
        known = before.get(device.id)
        if known is None:
            continue
        for fact in DEVICE_FACTS:
            value, truth = getattr(device, fact), getattr(known, fact)
            if value is not None and value != truth:
                return (f"reported {fact}={str(value)[:40]!r} for {device.id} from garbage (the machine's is "
                        f"{truth!r}): validate what a tool prints, and leave a fact unknown when it is unreadable")
    return None


def _patched(fx: Fixture, patch: dict[str, Any]) -> HostState:
    return HostState.model_validate(merge_patch(fx.host.model_dump(mode="json"), patch))
