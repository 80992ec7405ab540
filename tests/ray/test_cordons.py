"""The monitor's cordons kept poll after poll (rayaccel.ray.cordons.Cordons), outside Ray: what Ray is asked to hold
and let go is recorded at the keeper's seam (``_hold``, ``_let_go``); holding them in Ray is
tests/ray/test_ray_lifecycle.py's."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from rayaccel.inventory.builder import collect_inventory
from rayaccel.inventory.health_findings import HealthFinding
from rayaccel.plugins.manager import PluginManager
from rayaccel.ray import cordons as cordons_module
from rayaccel.ray.claims import PLACEMENT_ENV, placement_table
from rayaccel.ray.cordons import Cordons
from rayaccel.simulation.host_factory import make_host
from rayaccel_testplugins import acme

FATAL = "ACME-0002-5e1f-4c2a-9d3b-000000000002"
RESOURCES = {"acme": "ACME", "acme-twin": "ACMETWIN"}


@pytest.fixture
def node(monkeypatch: pytest.MonkeyPatch) -> None:
    """The node's placement table (the monitor's worker inherits it from the raylet) for acme-4 under two
    families reporting the same device ids, each under its own resource."""
    manager = PluginManager(autoload=False)
    manager.register(acme, "acme")
    inventory = collect_inventory(manager, make_host("acme/acme-4", manager=manager), with_metrics=False)
    (family,) = inventory.families
    twin = family.model_copy(update={"family": family.family.model_copy(
        update={"name": "acme-twin", "resource_name": "ACMETWIN"}), "plugin": "acme-twin"})
    table = placement_table(inventory.model_copy(update={"families": [family, twin]}))
    monkeypatch.setenv(PLACEMENT_ENV, json.dumps(table))
    # Whether Ray holds a group is asked of Ray (placement_group_table), which would start a Ray instance in
    # this test process and leave it for the next file's ray.init (stop 57's CI: 17 setup errors): here, outside
    # Ray, no recorded group is ever held.
    monkeypatch.setattr(cordons_module, "_held", lambda groups: 0)


class Recorded(Cordons):
    """The real keeper, with what it asks of Ray recorded: the group it makes (a name standing for it) and the
    tag task; ``refuse`` ("group" or "tag") is refused by Ray ``refusals`` times first."""

    def __init__(self, node_id: str, refuse: str = "", refusals: int = 0) -> None:
        super().__init__(node_id)
        self.held: list[tuple[str, str, str, tuple[str, ...]]] = []
        self.let_go: list[tuple[str, str, Any]] = []
        self.refuse, self.refusals = refuse, refusals

    def adopt(self, failing: set[tuple[str, str]], family_resources: Mapping[str, str]) -> None:
        pass  # no earlier monitor

    def _refused(self, step: str) -> None:
        if self.refuse == step and self.refusals:
            self.refusals -= 1
            raise TimeoutError("the GCS did not answer in time")

    def _group(self, family: str, resource: str, device: str, units: list[str]) -> Any:
        self._refused("group")
        if (family, resource, device, tuple(units)) not in self.held:  # a retry finds the group by its name
            self.held.append((family, resource, device, tuple(units)))
        return f"group {family} {device}"

    def _tag(self, group: Any, resource: str, device: str, units: list[str]) -> Any:
        self._refused("tag")
        return None

    def _let_go(self, resource: str, device: str, group: Any, tag: Any) -> None:
        self.let_go.append((resource, device, group))


def failing(*families: str) -> dict[str, list[HealthFinding]]:
    return {FATAL: [HealthFinding(f, FATAL, "acme-fatal", "1 fatal errors") for f in families]} if families else {}


def test_each_family_finding_a_device_failing_cordons_it_whichever_poll_it_first_does(node: None) -> None:
    """The lifecycle node's miss (a0b5e26's fresh-clone run): hostile-noisy's worker saw device 2 fail a poll
    before acme's did; the cordon, kept by device id alone, went to hostile-noisy and acme's unit was never held."""
    cordons = Recorded("node-1")
    assert cordons.reconcile(failing("acme-twin"), RESOURCES, first=True) == ([], [])
    assert cordons.reconcile(failing("acme", "acme-twin"), RESOURCES, first=False) == ([], [])
    assert cordons.reconcile(failing("acme", "acme-twin"), RESOURCES, first=False) == ([], [])  # nothing twice
    assert cordons.held == [("acme-twin", "ACMETWIN", FATAL, ("2",)), ("acme", "ACME", FATAL, ("2",))]
    assert {f: list(c["devices"]) for f, c in cordons.by_family().items()} == {"acme-twin": [FATAL], "acme": [FATAL]}
    # One family's worker sees the fault clear first: that family's cordon alone is released.
    errors, recovered = cordons.reconcile(failing("acme-twin"), RESOURCES, first=False)
    assert errors == [] and [(r["family"], r["device"]) for r in recovered] == [("acme", FATAL)]
    assert cordons.let_go == [("ACME", FATAL, f"group acme {FATAL}")] and list(cordons.by_family()) == ["acme-twin"]


@pytest.mark.parametrize("refused", ["group", "tag"])
def test_a_cordon_ray_refused_is_tried_again_every_poll_and_said_until_it_holds(node: None, refused: str) -> None:
    cordons = Recorded("node-1", refuse=refused, refusals=2)
    said = f"could not cordon acme device {FATAL}: TimeoutError: the GCS did not answer in time"
    for first in (True, False):  # said at every poll while it fails, not once and then forgotten
        assert cordons.reconcile(failing("acme"), RESOURCES, first=first) == ([said], [])
        assert cordons.by_family()["acme"]["devices"][FATAL]["error"] == said
    assert cordons.reconcile(failing("acme"), RESOURCES, first=False) == ([], [])
    assert cordons.reconcile(failing("acme"), RESOURCES, first=False) == ([], [])
    assert cordons.held == [("acme", "ACME", FATAL, ("2",))]  # one group, made by the first try that got that far
    assert cordons.by_family()["acme"]["devices"][FATAL]["error"] is None
    cordons.reconcile({}, RESOURCES, first=False)
    assert cordons.let_go == [("ACME", FATAL, f"group acme {FATAL}")]  # the group released, however it was made


def test_a_group_made_before_its_tag_was_refused_is_released_when_the_device_recovers(node: None) -> None:
    """A GPU family's tag task was refused every time (Ray takes GPU by num_gpus only): its group, made
    before, held the unit, and the cordon must keep it to give it back."""
    cordons = Recorded("node-1", refuse="tag", refusals=10)
    assert cordons.reconcile(failing("acme"), RESOURCES, first=True)[0]
    assert cordons.reconcile({}, RESOURCES, first=False)[1][0]["device"] == FATAL
    assert cordons.let_go == [("ACME", FATAL, f"group acme {FATAL}")]


def test_a_cordon_asks_ray_for_a_gpu_familys_units_by_num_gpus() -> None:
    from rayaccel.support.raycompat import unit_request

    assert unit_request("GPU", 2.0) == {"num_gpus": 2.0}
    assert unit_request("ACME", 1.0) == {"resources": {"ACME": 1.0}}
