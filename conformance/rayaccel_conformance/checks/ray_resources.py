"""The extra resources Ray's own manager adds to a node, against the plugin's on the same machine (RAC270's
``resources-as-ray-adds-them``; issue 46, held-out round 11's ``p1``: a TPU wrapper offering the slice's name as the
host's chip count, 4, where Ray's TPU manager adds it as 1 on every host of the slice; RAC108 saw it on a real Ray
node, "expected 4, Ray shows 1.0", but no check without Ray did, so the tier gate hid it behind RAC105's diff).

Ray's manager for a family it knows adds its own resources to the node (``get_current_node_additional_resources``:
TPU's slice name and ``TPU-<pod type>-head``), so a resource of the same name the plugin offers is one a real node
holds at Ray's quantity: a job sized by the plugin's never schedules. The manager is asked wired to the simulated
machine at its vendor interface (``ray_labels.wired``); one that reads hardware the suite cannot wire answers
nothing here, and nothing is compared.
"""

from __future__ import annotations

from typing import Any

from rayaccel.hosts.fixtures import Fixture
from rayaccel.records import FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.ray_labels import wired

INVARIANT = "invariant resources-as-ray-adds-them"


def ray_additional_resources(manager: Any, fx: Fixture) -> dict[str, float]:
    """The resources Ray's manager adds for the fixture's machine; empty where it cannot read it here."""
    ask = getattr(manager, "get_current_node_additional_resources", None)
    if not callable(ask):
        return {}
    with wired(manager, simulated_host(fx), dict(fx.host.env), set()):
        try:
            answer = ask()
        except Exception:  # Ray's manager failing on this machine says nothing of the plugin
            return {}
    if not isinstance(answer, dict):
        return {}
    return {str(k): float(v) for k, v in answer.items() if isinstance(v, (int, float))}


def resource_disagreements(manager: Any, fx: Fixture, fam: FamilyInventory) -> list[str]:
    """Each resource Ray's manager adds that the family offers at another quantity."""
    theirs = ray_additional_resources(manager, fx.model_copy(update={"faults": []}))
    return [f"{INVARIANT}, {fx.ref}: the plugin offers {name} {fam.resources[name]:g}; Ray's {manager.__name__} adds "
            f"{name} {quantity:g} to this node itself (get_current_node_additional_resources), so a real node holds "
            f"{quantity:g} and a task asking for the plugin's {fam.resources[name]:g} never schedules: offer Ray's "
            "quantity (a slice's name is 1 on each of its hosts)"
            for name, quantity in sorted(theirs.items()) if name in fam.resources and fam.resources[name] != quantity]
