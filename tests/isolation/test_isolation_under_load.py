"""A plugin that hangs (at import, or in every hook) never costs another plugin its devices, and polling it
leaves no thread or child behind per poll (issue 39: "did not answer within 0s" for the healthy plugin; the
in-process builder gained a thread per poll)."""

from __future__ import annotations

import os
import threading

import pytest

from rayaccel.inventory.builder import collect_inventory
from rayaccel.isolation.pool import WorkerPool
from rayaccel.plugins.configuration import HOOK_TIMEOUT_ENV, INVENTORY_TIMEOUT_ENV, PLUGINS_ENV
from rayaccel.plugins.manager import PluginManager
from rayaccel.simulation.host_factory import make_host

ACME_DEVICES = 4


def acme_host(manager: PluginManager):  # type: ignore[no-untyped-def]
    host = make_host("acme/acme-4", fault_file=os.devnull, manager=manager)
    return host


@pytest.mark.parametrize("hostile", ["import-hang", "hang"])
def test_a_hanging_plugin_read_first_never_costs_the_next_one_its_devices(
        monkeypatch: pytest.MonkeyPatch, hostile: str) -> None:
    # The hanging plugin's worker is read first and uses up the command's whole budget (hook timeout = budget):
    # the healthy plugin's answer, waiting in its pipe, must still be taken.
    monkeypatch.setenv(PLUGINS_ENV, f"hostile-{hostile}=rayaccel_testplugins.hostile_{hostile.replace('-', '_')},"
                                    "acme=rayaccel_testplugins.acme")
    monkeypatch.setenv(HOOK_TIMEOUT_ENV, "3")
    monkeypatch.setenv(INVENTORY_TIMEOUT_ENV, "3")
    with WorkerPool.load(fork=False) as pool:
        inventory = pool.build(acme_host(pool.manager))
    found = {f.plugin: len(f.devices) for f in inventory.families}
    assert found.get("acme") == ACME_DEVICES, inventory.problems
    assert not [p for p in inventory.problems if p.plugin == "acme"], inventory.problems
    assert [p for p in inventory.problems if p.plugin == f"hostile-{hostile}"]


def test_plugins_sharing_a_worker_behind_a_hanging_one_get_their_own_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PLUGINS_ENV, "hostile-hang=rayaccel_testplugins.hostile_hang,acme=rayaccel_testplugins.acme")
    manager = PluginManager(autoload=False, timeout=2)
    with WorkerPool(manager, workers=1) as pool:
        pool.budget = 2.0  # the hang uses it all
        inventory = pool.build(acme_host(manager))
    assert {f.plugin: len(f.devices) for f in inventory.families}.get("acme") == ACME_DEVICES, inventory.problems


def test_in_process_polls_of_a_plugin_hanging_in_every_hook_add_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PLUGINS_ENV, "hostile-hang=rayaccel_testplugins.hostile_hang,acme=rayaccel_testplugins.acme")
    manager = PluginManager(autoload=False, timeout=1)
    host = acme_host(manager)
    stuck = []
    for _ in range(5):
        inventory = collect_inventory(manager, host)
        assert {f.plugin: len(f.devices) for f in inventory.families} == {"acme": ACME_DEVICES}
        assert {p.code for p in inventory.problems if p.plugin == "hostile-hang"} & {"hook-timeout", "hook-skipped"}
        stuck.append(sum(1 for t in threading.enumerate() if t.name.startswith("rayaccel-hostile-hang")))
    assert stuck == [1] * 5, stuck  # the one call that hangs, never a second beside it
