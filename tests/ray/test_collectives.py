"""Collective backends from plugins, without a Ray cluster: what a bad declaration stops with (naming the plugin),
what a node's workers are told (from the inventory), and how a worker registers them (when it imports
``ray.util.collective``, or at once when it has). A group on a real node: tests/ray/test_ray_plugin_rdt.py."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from rayaccel import CollectiveBackend, hookimpl
from rayaccel.hosts.fixtures import resolve_fixture
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.inventory.builder import collect_inventory
from rayaccel.plugins.manager import PluginManager
from rayaccel.ray.collectives import (
    COLLECTIVES_ENV,
    CollectiveRegistrationError,
    Declared,
    register,
    register_collective_backends,
)
from rayaccel.ray.node import node_config
from rayaccel_testplugins import acme, acme_wired
from rayaccel_testplugins.broken_base import declare

pytest.importorskip("torch", reason="Ray's collective package needs torch: pip install 'rayaccel[rdt]'")

GROUP = "rayaccel_testplugins.acme_collective:AcmeGlooGroup"


class _Declares:
    """ACME's probing under a family of its own (``zeta``), declaring the given backends."""

    def __init__(self, *backends: CollectiveBackend) -> None:
        self.backends = list(backends)
        self.rayaccel_discover = acme.rayaccel_discover

    def __getattr__(self, name: str) -> Any:
        return getattr(acme, name)

    @hookimpl
    def rayaccel_family(self) -> Any:
        return declare("zeta")

    @hookimpl
    def rayaccel_collective_backends(self) -> list[CollectiveBackend]:
        return self.backends


def _manager(**plugins: object) -> PluginManager:
    manager = PluginManager(autoload=False)
    for name, plugin in plugins.items():
        assert manager.register(plugin, name)
    return manager


def test_the_driver_registers_a_plugins_backend_once_and_refuses_bad_declarations_naming_the_plugin() -> None:
    from ray.util.collective.backend_registry import BackendRegistry

    from rayaccel_testplugins.acme_collective import AcmeGlooGroup

    assert register_collective_backends(_manager(acme=acme_wired)) == ["ACME_GLOO"]
    assert register_collective_backends(_manager(acme=acme_wired)) == ["ACME_GLOO"]  # idempotent
    assert BackendRegistry().get("ACME_GLOO") is AcmeGlooGroup  # type: ignore[no-untyped-call]
    gloo = CollectiveBackend(name="GLOO", group_class=GROUP, devices=["cpu"])
    with pytest.raises(CollectiveRegistrationError, match="plugin zeta: collective backend name GLOO is Ray's own"):
        register_collective_backends(_manager(zeta=_Declares(gloo)))
    taken = CollectiveBackend(name="ACME_GLOO", group_class=f"{__name__}:_Declares", devices=["cpu"])
    with pytest.raises(CollectiveRegistrationError, match="plugin zeta: collective backend name ACME_GLOO is already "
                       "declared by plugin acme"):
        register_collective_backends(_manager(acme=acme_wired, zeta=_Declares(taken)))
    with pytest.raises(CollectiveRegistrationError, match=rf"plugin zeta: collective backend ACME_GLOO: {__name__}:"
                       r"_Declares is not a subclass of .*BaseGroup"):
        register_collective_backends(_manager(zeta=_Declares(taken)))
    with pytest.raises(CollectiveRegistrationError, match=r"plugin zeta: collective backend name ACME_GLOO is already "
                       r"registered in this process with rayaccel_testplugins.acme_collective:AcmeGlooGroup; "
                       r"rename the backend"):
        register([Declared("zeta", "ACME_GLOO", "ray.util.collective.collective_group.torch_gloo_collective_group:"
                                                "TorchGLOOGroup")])


def test_rayaccel_ray_init_refuses_a_bad_declaration_before_any_node_starts() -> None:
    import ray

    import rayaccel.ray

    gloo = CollectiveBackend(name="GLOO", group_class=GROUP, devices=["cpu"])
    with pytest.raises(CollectiveRegistrationError, match="plugin zeta: collective backend name GLOO is Ray's own"):
        rayaccel.ray.init(manager=_manager(zeta=_Declares(gloo)), num_cpus=1, include_dashboard=False)
    assert not ray.is_initialized()


def test_a_node_tells_its_workers_every_plugins_backends_from_the_inventory() -> None:
    manager = _manager(acme=acme_wired)
    inventory = collect_inventory(manager, SimulatedHost(resolve_fixture("acme/acme-4", manager)))
    (family,) = inventory.families
    assert [b.name for b in family.worker.collective_backends] == ["ACME_GLOO"]
    env = node_config(inventory).env
    assert json.loads(env[COLLECTIVES_ENV]) == [{"plugin": "acme", "name": "ACME_GLOO", "group_class": GROUP}]
    # A node without such plugins still sets it (empty): a value inherited from the starting process never counts.
    plain = _manager(acme=acme)
    inventory = collect_inventory(plain, SimulatedHost(resolve_fixture("acme/acme-4", plain)))
    assert json.loads(node_config(inventory).env[COLLECTIVES_ENV]) == []


WORKER = """
import json, os, sys
from rayaccel.ray.collectives import register_in_worker
print(json.dumps(register_in_worker()))
print("ray.util.collective" in sys.modules)
from ray.util.collective.backend_registry import BackendRegistry
print(BackendRegistry().is_registered("ACME_GLOO"))
"""


def _worker(declared: list[dict[str, str]], code: str = WORKER) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, COLLECTIVES_ENV: json.dumps(declared)})


def test_a_worker_registers_when_it_imports_ray_util_collective_and_a_bad_class_is_said_loudly() -> None:
    from pathlib import Path

    import rayaccel.ray

    # The preload reads the variable by name before importing the module (a node declaring none imports nothing).
    preload = (Path(rayaccel.ray.__file__).parent / "worker_preload.py").read_text(encoding="utf-8")
    assert f'os.environ.get("{COLLECTIVES_ENV}", "[]")' in preload
    done = _worker([{"plugin": "acme", "name": "ACME_GLOO", "group_class": GROUP}])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ['["ACME_GLOO"]', "False", "True"]
    missing = _worker([{"plugin": "acme", "name": "ACME_GLOO", "group_class": "rayaccel_testplugins.acme:Nope"}])
    assert missing.returncode == 0 and missing.stdout.split() == ['["ACME_GLOO"]', "False", "False"]
    assert ("rayaccel: collective backends NOT registered in this worker: plugin acme: collective backend ACME_GLOO: "
            "group class rayaccel_testplugins.acme:Nope does not import") in missing.stderr
