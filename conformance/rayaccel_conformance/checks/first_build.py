"""An inventory answers the host it is built on, not a host built before (supported tier, issue 46): RAC269.

A node agent builds its inventory in one long-lived process, and so does the suite: a value a plugin reads once
per process (a driver version, whether the driver is there, the node's accelerator type) is right when the
first host it sees is the node's and wrong after any other. The suite's process builds an empty host first
(RAC102's), then each fixture, so such a plugin fails the fixture's expectations with a symptom ("label
driver-version: expected '3.1.4', got None"). Where the suite's build differs from the fixture's expectations,
this check asks a fresh interpreter for its first build of the same fixture: a difference the fresh build does
not have was kept from a host built before, and the failure says so (RAC240 does the same for health polls).
"""

from __future__ import annotations

from rayaccel.hosts.expectations import expectation_differences
from rayaccel.records import NodeInventory
from rayaccel_conformance.harness.fresh_process import ProbeFailed, import_target, run_fresh
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, check

# Runs in a fresh interpreter: the plugin's first build ever, of one fixture as recorded.
FIRST_BUILD = r'''
import importlib, sys
from rayaccel.hosts.fixtures import load_fixture
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.plugins.manager import PluginManager
from rayaccel.simulation.host_factory import simulated_host

module_name, attr, plugin_name, fixture_path = sys.argv[1:5]
module = importlib.import_module(module_name)
manager = PluginManager(autoload=False)
manager.register(getattr(module, attr) if attr else module, plugin_name)
inventory = InventoryBuilder(manager, [plugin_name]).build(simulated_host(load_fixture(fixture_path)))
print("RAYACCEL-FIRST-BUILD " + inventory.model_dump_json(), flush=True)
'''


def first_build(subject: Subject, fixture_path: str) -> NodeInventory:
    """The inventory a process that never built one before builds of the fixture."""
    module, attr = import_target(subject.manager.plugin(subject.name).module)
    answer = run_fresh(FIRST_BUILD, "RAYACCEL-FIRST-BUILD", module, attr, subject.name, fixture_path)
    return NodeInventory.model_validate_json(answer)


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
    with the fixture. Fix: read what the host says on every build; keep nothing across builds that the host
    does not decide (or key a cache on what identifies the host's answer, and check it every time).
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    assert fixture is not None
    inventory = subject.inventory(fixture)
    here = expectation_differences(inventory, family.name, fx.expected)
    if not here:
        return f"{fx.ref}: the inventory agrees with the fixture: nothing kept from the hosts built before shows"
    try:
        fresh = expectation_differences(first_build(subject, str(subject.fixture_paths()[fixture])), family.name,
                                        fx.expected)
    except ProbeFailed as e:
        raise CheckFailed(f"{fx.ref}: the inventory differs from the fixture ({here[0]}), and a fresh process could "
                          f"not build it to tell whether an earlier host is the cause: {e}") from None
    kept = [d for d in here if d not in fresh]
    if kept:
        raise CheckFailed([f"invariant inventory-answers-the-host, {fx.ref}: built in the suite's process after other "
                           f"hosts (RAC102's empty host first), {d}; a fresh process building this fixture first "
                           "agrees with the fixture there: a value kept from a host built before (a module-level "
                           "cache, something read once per process)" for d in kept[:4]])
    return (f"{fx.ref}: the inventory differs from the fixture ({here[0]}), and so does a fresh process's first "
            "build: the plugin's own on any build (RAC105's, RAC201's), not kept from an earlier host")
