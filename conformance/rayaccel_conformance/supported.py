"""Supported tier (RAC2xx): labels, topology, health under faults, robustness, catalog, metrics, speed."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from rayaccel.fixtures import Fault, FaultExpectation, Fixture, HostState, compare_expected, merge_patch
from rayaccel.labels import VOCABULARY, VOCABULARY_PREFIX, label_errors
from rayaccel.records import LINK_KINDS, STANDARD_METRICS, NodeInventory, Problem
from rayaccel.simulated import SimulatedHost
from rayaccel.topology import topology_errors
from rayaccel_conformance.checks import CheckFailed, Evidence, check
from rayaccel_conformance.subject import Subject

#: Discovery of one fixture must take less than this (seconds), best of a few runs.
DISCOVERY_BUDGET_S = 1.0

GARBAGE = "\x00\ufffd<html>502 Bad Gateway</html>\n{\"truncated\": [1, 2,\n\x1b[31m?? ??\n"


@check("RAC201", scope="fixture")
def labels(subject: Subject, fixture: str | None) -> Evidence:
    """Labels use the vocabulary, pass Ray's label syntax and equal the fixture's expected labels.

    Every ``rayaccel.io/`` key must be one of the vocabulary (docs/labels.md); the plugin's own labels
    (``rayaccel_labels``) need the vendor's DNS prefix; keys and values must pass Ray's label syntax, and
    none may be dropped as invalid; the node's labels must equal ``expected.labels`` of the fixture exactly.
    Fix: the keys quoted are wrong or missing; values must be <= 63 characters of ``[A-Za-z0-9_.-]``.
    """
    subject.family()
    fx = subject.fixture(fixture)
    inventory = subject.inventory(fixture)
    wrong = [f"{k} is not in the rayaccel.io vocabulary" for k in inventory.labels
             if k.startswith(VOCABULARY_PREFIX) and k not in VOCABULARY]
    wrong += label_errors(inventory.labels)
    wrong += [p.render() for p in subject.plugin_problems(inventory, ("rayaccel_labels",), ("error", "warning"))]
    if not fx.expected.labels:
        wrong.append(f"{fx.ref} states no expected labels: add expected.labels to the fixture")
    else:
        exp = fx.expected.model_copy(update={"devices": len(_devices(subject, inventory)), "device_ids": [],
                                             "accelerator_type": None, "resources": {}, "health": {}, "skus": {},
                                             "links": None})
        wrong += compare_expected(inventory, fx, exp)
    if wrong:
        raise CheckFailed(wrong)
    return f"{fx.ref}: {len(inventory.labels)} labels, all in the vocabulary or vendor-prefixed, as expected"


def _devices(subject: Subject, inventory: NodeInventory) -> list[Any]:
    family = inventory.family(subject.family().name)
    return family.devices if family else []


@check("RAC202", scope="fixture")
def topology(subject: Subject, fixture: str | None) -> Evidence:
    """The topology is consistent: symmetric links between known devices, vocabulary kinds, sound domains.

    The plugin's ``rayaccel_topology`` result, as returned, must name only discovered device ids, never link
    a device to itself, report each pair once per kind with one bandwidth (links are undirected: a->b and
    b->a with different numbers is asymmetric), use link kinds from the vocabulary, and describe domains
    whose members are known devices and whose size covers them; the link count must equal the fixture's
    ``expected.links``. Fix: build links from the discovered ``devices`` argument, once per unordered pair.
    """
    subject.family()
    fx = subject.fixture(fixture)
    inventory = subject.inventory(fixture)
    devices = _devices(subject, inventory)
    problems: list[Problem] = []
    raw = subject.manager.topology(subject.name, SimulatedHost(fx), devices, problems)
    wrong = [p.render() for p in problems]
    wrong += topology_errors(devices, raw)
    by_pair: dict[tuple[str, str, str], tuple[float | None, int]] = {}
    for link in raw.links:
        key = (min(link.a, link.b), max(link.a, link.b), link.kind)
        seen = by_pair.setdefault(key, (link.bandwidth_gbps, link.lanes))
        if seen != (link.bandwidth_gbps, link.lanes):
            wrong.append(f"link {key[0]}<->{key[1]} ({link.kind}) is asymmetric: {seen} one way, "
                         f"{(link.bandwidth_gbps, link.lanes)} the other")
    wrong += [f"link kind {ln.kind!r} is not in the vocabulary" for ln in raw.links if ln.kind not in LINK_KINDS]
    if fx.expected.links is not None and len(raw.links) != fx.expected.links:
        wrong.append(f"{fx.ref}: expected {fx.expected.links} links, the plugin reports {len(raw.links)}")
    if wrong:
        raise CheckFailed(sorted(set(wrong), key=wrong.index))
    return (f"{fx.ref}: {len(raw.links)} links ({', '.join(sorted({ln.kind for ln in raw.links})) or 'none'}), "
            f"{len(raw.domains)} domains, consistent")


def compare_fault(inventory: NodeInventory, subject: Subject, fault: Fault) -> list[str]:
    """Differences between an inventory built under a fault and the fault's declared expectation."""
    exp: FaultExpectation = fault.expected
    family = inventory.family(subject.family().name)
    diffs = []
    devices = family.devices if family else []
    states = {h.device: h.state for h in family.health} if family else {}
    for device_id, state in exp.health.items():
        if states.get(device_id) != state and not (state == "unhealthy" and device_id not in states
                                                   and exp.devices is not None):
            diffs.append(f"fault {fault.name}: {device_id} should be {state}, is {states.get(device_id, 'absent')}")
    if exp.devices is not None and len(devices) != exp.devices:
        diffs.append(f"fault {fault.name}: expected {exp.devices} devices, discovered {len(devices)}")
    if exp.resources is not None and inventory.resources != exp.resources:
        diffs.append(f"fault {fault.name}: expected resources {exp.resources}, got {inventory.resources}")
    if exp.fatal is not None:
        fatal = any(r.fatal for h in (family.health if family else []) for r in h.reasons)
        if fatal != exp.fatal:
            diffs.append(f"fault {fault.name}: expected fatal={exp.fatal}, got fatal={fatal}")
    codes = {p.code for p in inventory.problems if p.plugin == subject.name}
    missing = [c for c in exp.problem_codes if c not in codes]
    if missing:
        diffs.append(f"fault {fault.name}: expected problems {missing}, got {sorted(codes) or 'none'}")
    return diffs


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
        host = SimulatedHost(fx, fault_file=fault_file)
        healthy = fx.expected.model_copy(update={"labels": {}})
        for fault in fx.faults:
            _write(fault_file, fault.name)
            faulty, elapsed = subject.timed_build(host)
            subject.fault_runs[(fx.ref, fault.name)] = (faulty, elapsed)
            wrong += compare_fault(faulty, subject, fault)
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
    it; never devices made up from garbage. Fix: bound every call (``host.run(..., timeout=...)``), give up
    on a timeout instead of retrying, and validate what a tool prints before using it.
    """
    subject.family()
    fx = subject.fixture(fixture)
    baseline = {d.id for d in _devices(subject, subject.inventory(fixture))}
    limit = float(subject.manager.timeout or 10.0)
    scenarios: list[tuple[str, HostState | None, bool]] = []
    for fault in fx.faults:
        if fault.kind in ("tool-hang", "tool-garbage"):
            cached = (fx.ref, fault.name) in subject.fault_runs  # RAC203 built it already: reuse, not re-wait
            scenarios.append((fault.name, None if cached else _patched(fx, fault.patch), False))
    for name, patch in _synthetic_faults(fx).items():
        scenarios.append((name, _patched(fx, patch), True))
    if not scenarios:
        return f"{fx.ref}: the plugin reads no vendor tool here (no commands, no metadata server, no tool faults)"
    wrong, done = [], []
    for name, state, synthetic in scenarios:
        if state is None:
            inventory, elapsed = subject.fault_runs[(fx.ref, name)]
            name = f"fault {name}"
        else:
            host = SimulatedHost(fx.model_copy(update={"host": state, "faults": []}))
            inventory, elapsed = subject.timed_build(host)
            name = name if synthetic else f"fault {name}"
        problems = [p for p in inventory.problems if p.plugin == subject.name and p.hook]
        timeouts = [p for p in problems if p.code == "hook-timeout"]
        devices = {d.id for d in _devices(subject, inventory)}
        if timeouts:
            wrong.append(f"{name}: {timeouts[0].render()}")
        elif elapsed > limit * 1.5:
            wrong.append(f"{name}: took {elapsed:.1f}s, over the {limit:g}s hook timeout")
        elif synthetic and devices and not problems and not devices <= baseline:
            wrong.append(f"{name}: reported devices {sorted(devices - baseline)} that are not on the machine")
        else:
            outcome = "zero devices" if not devices else f"{len(devices)} devices"
            done.append(f"{name}: {outcome}, {len(problems)} problems, {elapsed:.2f}s")
    if wrong:
        raise CheckFailed(wrong)
    return done


def _patched(fx: Fixture, patch: dict[str, Any]) -> HostState:
    return HostState.model_validate(merge_patch(fx.host.model_dump(mode="json"), patch))


@check("RAC205", scope="fixture")
def sku_catalog(subject: Subject, fixture: str | None) -> Evidence:
    """The SKU catalog validates and every fixture device resolves to a known SKU.

    ``rayaccel_sku_catalog`` must return a catalog that passes the shipped JSON Schema
    (``sku-catalog.schema.json``) and the record's own checks, and each device the fixture discovers must
    match one of its SKUs (by PCI device id or product name). A fixture may test the unknown-SKU path on
    purpose by stating ``rayaccel.io/sku-known: 'false'`` in its expected labels. Fix: add the SKU with the
    ``rayaccel sku add`` command the inventory's warning prints.
    """
    import jsonschema

    from rayaccel.schemas import load_schema

    subject.family()
    fx = subject.fixture(fixture)
    problems: list[Problem] = []
    catalog = subject.manager.sku_catalog(subject.name, problems)
    if catalog is None:
        raise CheckFailed([p.render() for p in problems] or ["the plugin has no rayaccel_sku_catalog hook"])
    errors = list(jsonschema.Draft202012Validator(load_schema("sku-catalog")).iter_errors(
        catalog.model_dump(mode="json", by_alias=True, exclude_none=True)))
    if errors:
        raise CheckFailed([f"catalog fails its JSON Schema: {e.message}" for e in errors[:3]])
    devices = _devices(subject, subject.inventory(fixture))
    unknown = [f"{d.id} ({d.product_name!r})" for d in devices if d.sku is None]
    on_purpose = fx.expected.labels.get("rayaccel.io/sku-known") == "false"
    if unknown and not on_purpose:
        raise CheckFailed(f"{fx.ref}: devices with no SKU in the catalog: {', '.join(unknown[:4])}")
    skus = sorted({str(d.sku) for d in devices if d.sku})
    note = f"; {len(unknown)} unknown on purpose (fixture expects sku-known=false)" if unknown else ""
    return f"{fx.ref}: catalog of {len(catalog.skus)} SKUs validates; devices resolve to {skus}{note}"


@check("RAC206", scope="fixture")
def metrics(subject: Subject, fixture: str | None) -> Evidence:
    """Metric samples have the standard names and units, for discovered devices.

    The plugin must implement ``rayaccel_metrics``; every sample's name must be standard (``utilization`` in
    percent, ``memory_used`` in bytes, ...) or prefixed ``vendor.``, in its one unit, and name a discovered
    device (a fixture whose vendor interface offers no metric may give none). One malformed sample drops
    all of them. Fix: use ``rayaccel.records.STANDARD_METRICS`` for names and units; convert MiB to bytes,
    mW to watts.
    """
    subject.family()
    fx = subject.fixture(fixture)
    devices = _devices(subject, subject.inventory(fixture))
    problems: list[Problem] = []
    samples = subject.manager.metrics(subject.name, SimulatedHost(fx), devices, problems)
    wrong = [p.render() for p in problems]
    ids = {d.id for d in devices}
    wrong += [f"sample {s.name} names unknown device {s.device!r}" for s in samples if s.device not in ids]
    if not subject.manager.implements(subject.name, "rayaccel_metrics"):
        names = ", ".join(sorted(STANDARD_METRICS))
        wrong.append(f"the plugin implements no rayaccel_metrics hook (standard metrics: {names})")
    if wrong:
        raise CheckFailed(wrong)
    standard = sorted({s.name for s in samples if s.name in STANDARD_METRICS})
    if not samples:
        return f"{fx.ref}: no samples (the recorded vendor interface offers none here)"
    return f"{fx.ref}: {len(samples)} samples; standard metrics {', '.join(standard) or 'none'}"


@check("RAC207", scope="fixture")
def discovery_speed(subject: Subject, fixture: str | None) -> Evidence:
    """Discovery of one fixture takes under 1 s.

    The whole inventory of the fixture (discovery, SKU resolution, topology, health, resources, labels,
    metrics) is built three times on a fresh simulated host; the fastest must take less than 1 s. Slow
    discovery delays every node start and every health poll. Fix: read each vendor answer once per call,
    and do not sleep or retry on a healthy machine.
    """
    subject.family()
    fx = subject.fixture(fixture)
    times = [subject.timed_build(SimulatedHost(fx))[1] for _ in range(3)]
    best = min(times)
    if best >= DISCOVERY_BUDGET_S:
        raise CheckFailed(f"{fx.ref}: the fastest of 3 inventories took {best:.2f}s (budget {DISCOVERY_BUDGET_S:g}s)")
    return f"{fx.ref}: {best * 1000:.0f} ms (best of 3)"


@check("RAC208", scope="fixture", uses_ray=True)
def ray_label_selector(subject: Subject, fixture: str | None) -> Evidence:
    """On a real multi-node Ray cluster, a task selecting the plugin's accelerator type lands on the node
    that has it and on no other.

    The run's shared ``ray.cluster_utils.Cluster`` has a head node without the family and one node per
    fixture, each started with ``rayaccel.ray.add_node``. Tasks with
    ``label_selector={"ray.io/accelerator-type": <type>}`` must all run on nodes labelled with that type, and
    the fixture's node must carry it. Fix: the node labels come from the inventory; check
    ``ray.io/accelerator-type`` in ``rayaccel inspect --simulate <fixture>``.
    """
    from rayaccel_conformance.raycluster import shared_cluster

    subject.family()
    inventory = subject.inventory(fixture)
    fam = inventory.family(subject.family().name)
    if fam is None or not fam.accelerator_type:
        raise CheckFailed(f"{fixture}: no accelerator type to select (see RAC105)")
    assert fixture is not None
    return shared_cluster().label_selector_check(subject, fixture, inventory)
