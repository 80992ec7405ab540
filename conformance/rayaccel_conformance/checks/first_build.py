"""An inventory answers the host it is built on, not a host built before (supported tier, issue 46): RAC269.

A node agent builds its inventory in one long-lived process, and so does the suite: a value a plugin reads once
per process (a driver version, whether the driver is there, the node's accelerator type) is right when the
first host it sees is the node's and wrong after any other. The suite's process builds an empty host first
(RAC102's), then each fixture, so such a plugin fails the fixture's expectations with a symptom ("label
driver-version: expected '3.1.4', got None"). Where the suite's build differs from the fixture's expectations,
this check asks a fresh interpreter for its first build of the same fixture: a difference the fresh build does
not have was kept from a host built before, and the failure says so (RAC240 does the same for health polls).
Where every fixture runs the same driver, a version read once agrees with all of them: the check builds each
fixture again with its versions one release on (``a-new-version-is-read``), then the fixture as recorded.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import yaml

from rayaccel.hosts.expectations import expectation_differences
from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import Device, NodeInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.harness.fresh_process import ProbeFailed, import_target, run_fresh
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, check

#: A version as vendor tools print it: dotted numbers (nvidia-smi's 550.54.15, amd-smi's 6.8.5, neuron-ls's
#: 2.19.64.0, hl-smi's 1.21.0 of 1.21.0-ca4c3bd, a module's /sys/module/<name>/version).
VERSION = re.compile(r"\d+(?:\.\d+)+")
#: The device facts that name a version of the software the host runs.
VERSION_FACTS = ("driver_version", "runtime_version")

# Runs in a fresh interpreter: the plugin's first build ever, of one fixture as recorded.
FIRST_BUILD = r'''
import importlib, sys
from rayaccel.hosts.fixtures import load_fixture
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.plugins.manager import PluginManager
from rayaccel.simulation.host_factory import simulated_host

module_name, attr, plugin_name, fixture_path, *faults = sys.argv[1:]
module = importlib.import_module(module_name)
manager = PluginManager(autoload=False)
manager.register(getattr(module, attr) if attr else module, plugin_name)
inventory = InventoryBuilder(manager, [plugin_name]).build(simulated_host(load_fixture(fixture_path), faults=faults))
print("RAYACCEL-FIRST-BUILD " + inventory.model_dump_json(), flush=True)
'''


def next_release(version: str) -> str:
    """The version one release on, in the same format: the last number up by one, as wide (550.54.15 ->
    550.54.16, 535.104.05 -> 535.104.06)."""
    head, _, last = version.rpartition(".")
    return f"{head}.{str(int(last) + 1).zfill(len(last))}"


def _token(version: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.]){re.escape(version)}(?![\w]|\.\d)")


def _replaced(value: Any, versions: dict[str, str]) -> Any:
    """Every string of ``value`` (not its keys: paths and command lines are where the host answers) with each
    version in ``versions`` replaced by its next release."""
    if isinstance(value, str):
        for old, new in versions.items():
            value = _token(old).sub(new, value)
        return value
    if isinstance(value, dict):
        return {k: _replaced(v, versions) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, versions) for v in value]
    return value


def host_versions(fx: Fixture, devices: list[Device]) -> dict[str, str]:
    """The versions the devices report that the host states somewhere (a file, a tool's output, a library's
    data), each with its next release."""
    said = yaml.safe_dump(fx.host.model_dump(mode="json"), allow_unicode=True)
    found = {m.group(0) for d in devices for fact in VERSION_FACTS if (value := getattr(d, fact))
             for m in [VERSION.search(value)] if m}
    return {v: next_release(v) for v in sorted(found) if _token(v).search(said)}


def _kept_versions(before: list[Device], after: list[Device], versions: dict[str, str],
                   moved: bool) -> list[tuple[str, str, str, str]]:
    """(device, fact, reported, the host's) for each version fact of ``after`` that is not the host's: with
    ``moved``, a fact still the version the host no longer states; else one no longer the recorded build's."""
    was = {d.id: d for d in before}
    kept = []
    for device in after:
        if (old := was.get(device.id)) is None:
            continue
        for fact in VERSION_FACTS:
            recorded, now = getattr(old, fact), getattr(device, fact)
            truth = _replaced(recorded, versions) if moved else recorded
            if recorded and now != truth and (not moved or now == recorded):
                kept.append((device.id, fact, str(now), str(truth)))
    return kept


def versions_read_again(subject: Subject, fixture: str) -> tuple[list[str], str]:
    """The fixture built again with every version its devices report one release on, then as recorded, in the
    suite's process: each build must report the host's own versions (``invariant a-new-version-is-read``).
    A version still the old one is confirmed in a fresh process (its first build of the moved host) before it
    is called kept: a plugin may state a version of its own. (What went wrong, what was tried.)"""
    fx = subject.fixture(fixture)
    devices = subject.devices(subject.inventory(fixture))
    versions = host_versions(fx, devices)
    if not versions:
        return [], "no device version the host states"
    moved_state = HostState.model_validate(_replaced(fx.host.model_dump(mode="json"), versions))
    moved = subject.build(simulated_host(fx.model_copy(update={"host": moved_state, "faults": []})), with_metrics=False)
    again = subject.build(simulated_host(fx), with_metrics=False)
    tried = f"versions {', '.join(f'{a} -> {b}' for a, b in versions.items())} and back"
    wrong = []
    stale = _kept_versions(devices, subject.devices(moved), versions, moved=True)
    if stale:
        fresh = {d.id: d for d in first_build_of(subject, fx, moved_state)}
        stale = [k for k in stale if getattr(fresh.get(k[0]), k[1], None) == k[3]]
        wrong += [f"invariant a-new-version-is-read, {fx.ref} with versions {', '.join(versions)} one release on: "
                  f"{dev} reports {fact} {now!r}, the host states {truth!r} (a fresh process building this host first "
                  "reads it): a version kept from a host built before (read once per process, a module-level cache)"
                  for dev, fact, now, truth in stale[:2]]
    back = _kept_versions(devices, subject.devices(again), {}, moved=False)
    wrong += [f"invariant a-new-version-is-read, {fx.ref} built again after the same host with its versions one "
              f"release on: {dev} reports {fact} {now!r}, the host states {truth!r}: a version kept from the host "
              "built before" for dev, fact, now, truth in back[:2]]
    return wrong, tried


def first_build_of(subject: Subject, fx: Fixture, state: HostState) -> list[Device]:
    """The devices a fresh process's first build finds on ``fx`` with its host ``state`` (none: it could not
    build)."""
    data = yaml.safe_load(Path(subject.fixture_paths()[fx.ref]).read_text(encoding="utf-8"))
    data["host"] = state.model_dump(mode="json", exclude_defaults=True)
    with tempfile.TemporaryDirectory(prefix="rayaccel-rac269-") as tmp:
        path = Path(tmp) / f"{fx.name}.yaml"
        path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
        try:
            return subject.devices(first_build(subject, str(path)))
        except ProbeFailed:
            return []


def first_build(subject: Subject, fixture_path: str, faults: tuple[str, ...] = ()) -> NodeInventory:
    """The inventory a process that never built one before builds of the fixture (under ``faults``)."""
    module, attr = import_target(subject.manager.plugin(subject.name).module)
    answer = run_fresh(FIRST_BUILD, "RAYACCEL-FIRST-BUILD", module, attr, subject.name, fixture_path, *faults)
    return NodeInventory.model_validate_json(answer)


def health_by_device(inventory: NodeInventory, family: str) -> dict[str, str]:
    found = inventory.family(family)
    return {h.device: h.state for h in found.health} if found is not None else {}


def fault_seen_first(subject: Subject, fixture: str) -> tuple[list[str], str]:
    """The fixture's first fault that takes a device off healthy, built as a fresh process's first build: each
    device's health as the suite's process gives it under that fault, after healthy builds (``invariant
    a-fault-built-first-is-seen``: a counter read relative to the first read in the process is 0 there, so a node
    whose agent starts beside a card already failed calls it healthy). One fresh process per fixture with such a
    fault. (What went wrong, what was tried.)"""
    fx = subject.fixture(fixture)
    family = subject.family().name
    fault = next((f for f in fx.faults if f.kind not in ("tool-hang", "tool-garbage")
                  and any(state != "healthy" for state in f.expected.health.values())), None)
    if fault is None:
        return [], ""
    here = health_by_device(subject.build(simulated_host(fx, faults=[fault.name]), with_metrics=False), family)
    try:
        fresh = health_by_device(first_build(subject, str(subject.fixture_paths()[fixture]), (fault.name,)), family)
    except ProbeFailed as e:
        return [f"{fx.ref}: a fresh process could not build it under fault {fault.name}: {e}"], ""
    expected = {d: fault.expected.health.get(d, "healthy") for d in here}
    wrong = [f"invariant a-fault-built-first-is-seen, {fx.ref} under fault {fault.name}: {device} is "
             f"{fresh.get(device)} in a fresh process whose first build is the faulted host, {state} in the suite's "
             f"process after a healthy build (the fault expects {expected[device]}): a fault counted from the "
             "process's first read (a counter's baseline taken when first seen) is missed where a card has failed "
             "before the agent starts"
             for device, state in here.items() if fresh.get(device) != state]
    return wrong[:4], f"fault {fault.name} as a fresh process's first build"


@check("RAC269", scope="fixture")
def inventory_answers_the_host(subject: Subject, fixture: str | None) -> Evidence:
    """A fixture's inventory is the same whether the plugin's process built other hosts before or none: nothing
    is kept from a host built earlier.

    The suite's process builds an empty host (RAC102) and other fixtures before each fixture, as a node agent
    builds again and again in one process. Where the suite's inventory of the fixture differs from the
    fixture's expectations, a fresh interpreter builds the same fixture as its first build: a difference the
    fresh build does not have was kept from an earlier host (a module-level cache, a driver version or a
    driver's presence read once per process, a node's accelerator type computed once), and ``invariant
    inventory-answers-the-host`` names it with both answers. A difference the fresh build has too is the
    plugin's on any build (RAC105's, RAC201's). Passes without starting a process where the inventory agrees
    with the fixture. Where every fixture runs the same driver a version read once agrees with all of them, so
    each fixture is built again with every version its devices report (a driver's, a runtime's, where the host
    states it: a file, a tool's output, a library's data) one release on in the same format (550.54.15 ->
    550.54.16), then as recorded: each build must report the host's own versions (``invariant
    a-new-version-is-read``; a version still the old one is confirmed by a fresh process's first build of the
    moved host, since a plugin may state a version of its own). And the fixture's first fault that takes a
    device off healthy is built as a fresh process's first build: each device's health must be the one the
    suite's process gives under that fault after healthy builds (``invariant a-fault-built-first-is-seen``: a
    counter counted from the process's first read misses a card that failed before the agent started). Fix:
    read what the host says on every build; keep nothing across builds that the host does not decide (or key a
    cache on what identifies the host's answer, and check it every time); a counter since the driver loaded is
    read as it stands, never relative to a first look.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    assert fixture is not None
    inventory = subject.inventory(fixture)
    here = expectation_differences(inventory, family.name, fx.expected)
    moved, tried = versions_read_again(subject, fixture)
    first_faulted, seen = fault_seen_first(subject, fixture)
    broken = moved + first_faulted  # every invariant that breaks is named, not only the first
    tried += f", and {seen}" if seen else ""
    if not here:
        if broken:
            raise CheckFailed(broken)
        return (f"{fx.ref}: the inventory agrees with the fixture, and with its {tried}: nothing kept from the hosts "
                "built before shows")
    try:
        fresh = expectation_differences(first_build(subject, str(subject.fixture_paths()[fixture])), family.name,
                                        fx.expected)
    except ProbeFailed as e:
        raise CheckFailed([*broken, f"{fx.ref}: the inventory differs from the fixture ({here[0]}), and a fresh "
                           "process could not build it to tell whether an earlier host is the cause: "
                           f"{e}"]) from None
    kept = [d for d in here if d not in fresh]
    broken += [f"invariant inventory-answers-the-host, {fx.ref}: built in the suite's process after other hosts "
               f"(RAC102's empty host first), {d}; a fresh process building this fixture first agrees with the "
               "fixture there: a value kept from a host built before (a module-level cache, something read once per "
               "process)" for d in kept[:4]]
    if broken:
        raise CheckFailed(broken)
    return (f"{fx.ref}: the inventory differs from the fixture ({here[0]}), and so does a fresh process's first "
            "build: the plugin's own on any build (RAC105's, RAC201's), not kept from an earlier host")
