"""A node that found devices of a family but offers none of them says why (issue 39: a TPU7x host that
offered ``TPU: 0`` with no problem at all)."""

from __future__ import annotations

from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.inventory.builder import collect_inventory
from rayaccel.plugins.manager import default_manager
from rayaccel.simulation.host_factory import simulated_fixture


def test_a_family_whose_every_device_is_unhealthy_is_one_problem_naming_the_reasons() -> None:
    manager = default_manager()
    fixture = simulated_fixture("tpu/tpu7x-8", [], manager)
    # Every chip's second chiplet gone: each chip is unhealthy (tpu-chiplet-lost), the node offers no TPU.
    files = {path: text for path, text in fixture.host.files.items() if path not in
             ("/dev/vfio/1", "/dev/vfio/3", "/dev/vfio/5", "/dev/vfio/7")}
    broken = fixture.model_copy(update={"host": fixture.host.model_copy(update={"files": files})})
    inventory = collect_inventory(manager, SimulatedHost(broken), plugins=["tpu"])

    assert inventory.resources.get("TPU", 0) == 0
    [problem] = [p for p in inventory.problems if p.code == "nothing-offered"]
    assert problem.plugin == "tpu" and problem.severity == "error"
    assert "found 4 device(s) but offers no TPU" in problem.message
    assert "tpu-chiplet-lost on 4" in problem.message


def test_a_family_that_offers_its_devices_says_nothing_of_the_kind() -> None:
    manager = default_manager()
    inventory = collect_inventory(manager, SimulatedHost(simulated_fixture("tpu/tpu7x-8-accel", [], manager)),
                                  plugins=["tpu"])
    assert inventory.resources["TPU"] == 4
    assert not [p for p in inventory.problems if p.code == "nothing-offered"]
