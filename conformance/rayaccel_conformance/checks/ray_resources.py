"""The extra resources Ray's own manager adds to a node, against the plugin's on the same machine (RAC270's
``resources-as-ray-adds-them``; issue 46, held-out round 11's ``p1``: a TPU wrapper offering the slice's name as the
host's chip count, 4, where Ray's TPU manager adds it as 1 on every host of the slice; RAC108 saw it on a real Ray
node, "expected 4, Ray shows 1.0", but no check without Ray did, so the tier gate hid it behind RAC105's diff).

Ray's manager for a family it knows adds its own resources to the node (``get_current_node_additional_resources``:
TPU's slice name and ``TPU-<pod type>-head``), so a resource of the same name the plugin offers is one a real node
holds at Ray's quantity: a job sized by the plugin's never schedules. The manager is asked wired to the simulated
machine at its vendor interface (``ray_labels.wired``); one that reads hardware the suite cannot wire answers
nothing here, and nothing is compared.

Ray's manager adds some of them on one host alone (TPU's ``TPU-<pod type>-head`` on worker 0 of the slice, so a job's
driver asking for it lands there; round 12's ``p2`` offered it on every host, and on worker 1 Ray adds only the
slice's name, so comparing Ray's own names here saw nothing). What Ray adds on the slice's other hosts is asked of
the same manager with each variable it reads (of those its module names) set to 0 and 1 beside the machine, as on
the group's first and second hosts (the worker's index, ``TPU_WORKER_ID``, which it reads before the metadata
server's ``agent-worker-number``): a name it adds there, which it does not add here, the plugin must not offer here.

A name Ray's manager adds here the plugin must offer here too (round 14's ``p2``: the slice's name offered on worker 0
alone, where Ray adds it on every host of the slice): Ray's manager stays the node's for a family Ray knows and adds
it to the node whatever the plugin says (``ResourceAndLabelSpec._resolve_accelerator_resources``), so an inventory
without it misstates the node, and what is exported from it (an autoscaler node type) promises less than the node
publishes.
"""

from __future__ import annotations

import sys
from typing import Any

from rayaccel.hosts.fixtures import Fixture
from rayaccel.records import FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.ray_environment import RAY_PREFIX
from rayaccel_conformance.checks.ray_labels import wired

INVARIANT = "invariant resources-as-ray-adds-them"


#: Whole numbers a variable Ray's manager reads is set to, to ask what it adds on the group's other hosts (its first
#: and second: every multi-host TPU slice has a worker 0 and a worker 1).
OTHER_HOSTS = ("0", "1")


def ray_additional_resources(manager: Any, fx: Fixture, beside: dict[str, str] | None = None
                             ) -> tuple[dict[str, float], set[str]]:
    """The resources Ray's manager adds for the fixture's machine (with the variables ``beside`` set there too), and
    the variables it read to add them; empty where it cannot read the machine here."""
    ask = getattr(manager, "get_current_node_additional_resources", None)
    if not callable(ask):
        return {}, set()
    with wired(manager, simulated_host(fx), {**fx.host.env, **(beside or {})}, set()) as seen:
        try:
            answer = ask()
        except Exception:  # Ray's manager failing on this machine says nothing of the plugin
            answer = None
        read = set(seen)
    if not isinstance(answer, dict):
        return {}, read
    return {str(k): float(v) for k, v in answer.items() if isinstance(v, (int, float))}, read


def added_elsewhere(manager: Any, fx: Fixture, read: set[str]) -> dict[str, str]:
    """Each resource Ray's manager adds on this machine with a variable it read (of those its module names) set to
    another host's whole number, with that setting."""
    named = {value for value in vars(sys.modules[manager.__module__]).values() if isinstance(value, str)}
    found: dict[str, str] = {}
    for var in sorted(v for v in read & named if not v.startswith(RAY_PREFIX)):
        for value in OTHER_HOSTS:
            for name in ray_additional_resources(manager, fx, {var: value})[0]:
                found.setdefault(name, f"{var}={value}")
    return found


def resource_disagreements(manager: Any, fx: Fixture, fam: FamilyInventory) -> list[str]:
    """Each resource Ray's manager adds that the family offers at another quantity, and each it adds on another
    host of the group alone that the family offers here; and each it adds here that the family does not offer."""
    healthy = fx.model_copy(update={"faults": []})
    theirs, read = ray_additional_resources(manager, healthy)
    wrong = [f"{INVARIANT}, {fx.ref}: the plugin offers {name} {fam.resources[name]:g}; Ray's {manager.__name__} adds "
             f"{name} {quantity:g} to this node itself (get_current_node_additional_resources), so a real node holds "
             f"{quantity:g} and a task asking for the plugin's {fam.resources[name]:g} never schedules: offer Ray's "
             "quantity (a slice's name is 1 on each of its hosts)"
             for name, quantity in sorted(theirs.items()) if name in fam.resources and fam.resources[name] != quantity]
    wrong += [f"{INVARIANT}, {fx.ref}: the plugin offers no {name}; Ray's {manager.__name__} adds {name} "
              f"{quantity:g} to this node itself (get_current_node_additional_resources), so the node publishes it "
              "while the plugin's resources, the inventory rayaccel inspects and exports (an autoscaler node type "
              "promises what its nodes publish), leave it out: offer every resource Ray's manager adds, on every "
              "host it adds it (a slice's name on each host of the slice)"
              for name, quantity in sorted(theirs.items()) if name not in fam.resources]
    if not read:
        return wrong
    here = ", ".join(f"{name} {quantity:g}" for name, quantity in sorted(theirs.items())) or "nothing"
    elsewhere = added_elsewhere(manager, healthy, read)
    wrong += [f"{INVARIANT}, {fx.ref}: the plugin offers {name} {fam.resources[name]:g} on this host, where Ray's "
              f"{manager.__name__} adds {here} (get_current_node_additional_resources); Ray adds {name} only on "
              f"another host of the group, as with {setting} beside this machine, so a task asking for {name} (a "
              "slice's head resource places a job's driver on worker 0) may land here: offer it only where Ray's "
              "manager adds it"
              for name, setting in sorted(elsewhere.items()) if name in fam.resources and name not in theirs]
    return wrong
