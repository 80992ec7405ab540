"""A node's life as an operator sees it, on one real Ray node started with ``rayaccel start``:

- the operator's ``ACME_VISIBLE_DEVICES=0,1,2`` is honoured (3 of 4 ACME units offered);
- a plugin that prints and changes its environment does so in its worker process, not in the CLI's output;
- the health monitor keeps its plugin workers warm;
- a fatal fault cordons the failed device alone (running work finishes, new work runs on the other
  devices, never on it); clearing it offers the device again;
- ``rayaccel stop --address`` stops the node but neither a driver that merely connected nor its caller.

Bad ``--monitor-interval`` values and a visible-devices value naming missing units fail before Ray starts.
"""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest
import ray
from ports import free_ports
from rendezvous import rendezvous

import rayaccel.ray
from rayaccel.ray.monitor import monitor_status
from rayaccel.ray.processes import cluster_processes
from rayaccel.ray.registry import uninstall
from rayaccel.support.polling import wait_for

PLUGINS = "acme=rayaccel_testplugins.acme,hostile-noisy=rayaccel_testplugins.hostile_noisy"
ENV = {"RAYACCEL_PLUGINS": PLUGINS, "RAY_AUTH_MODE": "disabled", "ACME_VISIBLE_DEVICES": "0,1,2"}
FAILED_DEVICE = "ACME-0002-5e1f-4c2a-9d3b-000000000002"  # fault fatal-2 of acme/acme-4
INTERVAL = 1.0


def rayaccel_cli(*args: str, env: dict[str, str] | None = None,
                 timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rayaccel", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **ENV, **(env or {})})


@pytest.mark.parametrize("value", ["inf", "nan", "0", "-1", "1e-9", "1e9"])
def test_bad_monitor_interval_is_one_line_and_exit_2(value):
    done = rayaccel_cli("start", "--head", "--simulate", "acme/acme-4", "--monitor-interval", value)
    assert done.returncode == 2, done.stderr
    assert "--monitor-interval" in done.stderr and "between 0.1 and 3600" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_visible_devices_naming_missing_units_is_refused_before_ray_starts():
    done = rayaccel_cli("start", "--head", "--simulate", "acme/acme-4", env={"ACME_VISIBLE_DEVICES": "1,7"})
    assert done.returncode == 2, done.stderr
    assert "ACME_VISIBLE_DEVICES='1,7' names '7'" in done.stderr and "unset ACME_VISIBLE_DEVICES" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    from ray.util import get_node_ip_address

    fault_file = tmp_path_factory.mktemp("lifecycle") / "faults.txt"
    fault_file.write_text("", encoding="utf-8")
    port, client, agent, agent_grpc, metrics, runtime_env, objects = free_ports(7)
    address = f"{get_node_ip_address()}:{port}"
    started = rayaccel_cli(
        "start", "--head", "--simulate", "acme/acme-4", "--fault-file", str(fault_file),
        "--monitor-interval", str(INTERVAL), f"--port={port}", f"--ray-client-server-port={client}",
        f"--dashboard-agent-listen-port={agent}", f"--dashboard-agent-grpc-port={agent_grpc}",
        f"--metrics-export-port={metrics}", f"--runtime-env-agent-port={runtime_env}",
        f"--object-manager-port={objects}", "--num-cpus=2", "--include-dashboard=false",
        "--include-log-monitor=false")  # it tails workers' logs for drivers that take their output: none here
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        rayaccel.ray.connect(address, log_to_driver=False)
        (node_id,) = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
        yield {"address": address, "node_id": node_id, "fault_file": fault_file, "started": started}
    finally:
        rayaccel.ray.shutdown()
        uninstall()
        if cluster_processes(address):
            rayaccel_cli("stop", f"--address={address}", "--grace", "3")


@ray.remote(resources={"ACME": 1}, num_cpus=0)
def node_after(meet=None) -> str:  # type: ignore[no-untyped-def]
    if meet is not None:  # say it runs, then hold its unit until the test lets it finish
        meet.set.remote("running")
        assert ray.get(meet.wait.remote("finish", 120))
    return ray.get_runtime_context().get_node_id()


def test_visible_devices_are_honoured_and_plugin_output_stays_off_the_cli(node):
    started = node["started"]
    assert "ACME=3" in started.stdout
    assert "cordons that device alone on this node until it recovers" in started.stdout
    assert "ACME_VISIBLE_DEVICES='0,1,2' is set: the node offers 3 of its 4 healthy acme units" in started.stderr
    # What the plugin printed reaches no stream as such (a problem record may quote it).
    assert not [ln for ln in (started.stdout + started.stderr).splitlines() if ln.startswith("HOSTILE-")]
    assert ray.cluster_resources()["ACME"] == 3
    (info,) = [n for n in ray.nodes() if n["NodeID"] == node["node_id"]]
    assert info["Labels"]["rayaccel.io/count"] == "3"


def test_monitor_polls_through_warm_workers(node):
    # The first poll runs in the monitor's loop, after the actor is created: wait for it, never the first status.
    first = wait_for(lambda: monitor_status(node["node_id"]), lambda s: s is not None and s["polls"] >= 1,
                     timeout=60, what="the monitor's first poll")
    assert first["error"] is None and first["loop"] == "running" and first["cordoned"] == {}
    assert set(first["workers"]) >= {"acme", "hostile-noisy"}
    later = wait_for(lambda: monitor_status(node["node_id"]),
                     lambda s: s["polls"] >= first["polls"] + 3, timeout=30, what="three more polls")
    assert later["workers"] == first["workers"]  # the same processes: kept warm between polls


@ray.remote(resources={"ACME": 1}, num_cpus=0)
def acme_unit(meet=None, n=0) -> str:  # type: ignore[no-untyped-def]
    if meet is not None:  # held until n tasks run at once
        assert ray.get(meet.arrive.remote("concurrent", n))
    return os.environ["ACME_VISIBLE_DEVICES"]


def test_fault_cordons_the_failed_device_alone_and_recovery_offers_it_again(node):
    def status():  # type: ignore[no-untyped-def]
        return monitor_status(node["node_id"])

    def free_acme() -> float:
        return float(ray.available_resources().get("ACME", 0))

    meet = rendezvous()
    running = node_after.remote(meet)
    assert ray.get(meet.wait.remote("running", 90), timeout=120), "the task never ran"
    wait_for(free_acme, lambda n: n == 2, timeout=30, what="the task to hold one of the 3 ACME units")
    node["fault_file"].write_text("fatal-2\n", encoding="utf-8")
    def cordon_state():  # type: ignore[no-untyped-def]
        # What a timeout must show (the whole status is cut at its front): the cordon, the polls, any error.
        s = status()
        return {"cordoned": s["cordoned"], "error": s["error"], "polls": s["polls"],
                "free ACME": free_acme(), "decisions": {f: v["decisions"] for f, v in s["families"].items()}}

    cordon = wait_for(cordon_state, lambda s: s["cordoned"].get("acme", {}).get("held") == 1,
                      timeout=INTERVAL + 60, what="device 2's unit held by its cordon")["cordoned"]["acme"]
    assert FAILED_DEVICE in cordon["message"] and "acme-fatal" in cordon["message"]
    assert list(cordon["devices"]) == [FAILED_DEVICE] and cordon["units"] == 1
    # The family stays schedulable: new work runs beside the running task, on a healthy device.
    assert ray.get(acme_unit.remote(), timeout=60) in {"0", "1"}
    meet.set.remote("finish")
    assert ray.get(running, timeout=60) == node["node_id"]  # running work finishes
    wait_for(free_acme, lambda n: n == 2, timeout=30, what="the two healthy ACME units free")
    together = rendezvous()
    assert sorted(ray.get([acme_unit.remote(together, 2) for _ in range(2)], timeout=90)) == ["0", "1"]

    node["fault_file"].write_text("", encoding="utf-8")  # the device recovers
    recovered = wait_for(status, lambda s: not s["cordoned"], timeout=INTERVAL + 20, what="the recovery")
    assert FAILED_DEVICE in {r.get("device") for r in recovered["recovered"]}
    wait_for(free_acme, lambda n: n == 3, timeout=30, what="all three ACME units free again")
    together = rendezvous()
    assert sorted(ray.get([acme_unit.remote(together, 3) for _ in range(3)], timeout=90)) == ["0", "1", "2"]


DRIVER = """
import sys, time, ray
ray.init(address=sys.argv[1], log_to_driver=False)
print("connected", flush=True)
time.sleep(600)
"""

CALLER = """
import subprocess, sys, ray
ray.init(address=sys.argv[1], log_to_driver=False)
done = subprocess.run([sys.executable, "-m", "rayaccel", "stop", "--address=" + sys.argv[1], "--grace", "5"],
                      capture_output=True, text=True, timeout=120)
print("caller alive after stop:", done.returncode, done.stdout.strip(), done.stderr.strip(), flush=True)
"""


def test_stop_by_address_spares_a_connected_driver_and_its_caller(node):
    # Last in the module: it stops the node.
    address = node["address"]
    rayaccel.ray.shutdown()  # this process is no driver now: the two below are
    env = {**os.environ, **ENV}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, address], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert driver.stdout is not None
        assert driver.stdout.readline().strip() == "connected"
        assert cluster_processes(address) and driver.pid not in cluster_processes(address)
        caller = subprocess.run([sys.executable, "-c", CALLER, address], capture_output=True, text=True,
                                timeout=180, env=env)
        assert "caller alive after stop: 0 rayaccel: stopped" in caller.stdout, caller.stdout + caller.stderr[-2000:]
        assert cluster_processes(address) == []
        assert driver.poll() is None and psutil.Process(driver.pid).status() != psutil.STATUS_ZOMBIE
    finally:
        driver.kill()
        driver.wait(timeout=30)


def _one_fixture_per_plugin():  # type: ignore[no-untyped-def]
    from rayaccel.hosts.fixtures import installed_fixtures, resolve_fixture
    from rayaccel.plugins.manager import PluginManager

    manager = PluginManager()
    chosen: dict[str, str] = {}
    for ref in sorted(installed_fixtures(manager)):
        if resolve_fixture(ref, manager).expected.devices > 1:
            chosen.setdefault(ref.split("/", 1)[0], ref)
    return sorted(chosen.values())


@pytest.mark.parametrize("fixture", _one_fixture_per_plugin())
def test_every_familys_visible_devices_variable_restricts_the_node(fixture, monkeypatch):
    """The variable comes from the family declaration: CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES,
    NEURON_RT_VISIBLE_CORES, TPU_VISIBLE_CHIPS, HABANA_VISIBLE_MODULES, ACME_VISIBLE_DEVICES, ..."""
    from rayaccel.inventory.builder import collect_inventory
    from rayaccel.inventory.visible_units import restrict_to_visible
    from rayaccel.plugins.manager import PluginManager
    from rayaccel.ray.node import node_config
    from rayaccel.simulation.host_factory import make_host

    manager = PluginManager()
    host = make_host(fixture, fault_file=os.devnull, manager=manager)
    plugin = fixture.split("/", 1)[0]
    inventory = collect_inventory(manager, host, plugins=[plugin])
    families = [f for f in inventory.families if len(f.schedulable_units) > 1]
    if not families:
        pytest.skip(f"{fixture} has fewer than two schedulable units")
    (family,) = families
    env_var, resource = family.family.visible_devices_env_var, family.family.resource_name
    first = family.schedulable_units[0]
    monkeypatch.setenv(env_var, first)
    config = node_config(restrict_to_visible(inventory, manager), plugins=[plugin])
    assert config.resources[resource] == 1
    assert config.labels["rayaccel.io/count"] == "1"
    assert config.env[env_var] == first or manager.parse_visible(plugin, config.env[env_var]) == [first]
    (warning,) = [p for p in config.inventory.problems if p.code == "visible-devices"]
    assert f"{env_var}={first!r} is set: the node offers 1 of its {len(family.schedulable_units)}" in warning.message


class _Broken:
    """An event whose wait fails the way ``Event.wait(inf)`` does (OverflowError)."""

    def wait(self, timeout: float) -> bool:
        raise OverflowError("timestamp too large to convert to C _PyTime_t")

    def set(self) -> None:
        pass


def test_a_dying_monitor_loop_says_so_in_its_status(monkeypatch):
    from rayaccel.ray.monitor import HealthMonitor

    class Monitor(HealthMonitor):  # the real monitor, its loop's wait broken, outside Ray
        def _adopt(self, healthy_families: set[str]) -> None:
            pass

        @property  # type: ignore[override]
        def _stop(self) -> _Broken:
            return _Broken()

        @_stop.setter
        def _stop(self, value: object) -> None:
            pass

    monkeypatch.setenv("RAYACCEL_PLUGINS", "acme=rayaccel_testplugins.acme")
    monkeypatch.setenv("RAYACCEL_SIMULATE", "acme/acme-4")
    monitor = Monitor("node-1", 1.0, ["acme"], isolated=False)
    monitor.run()  # outside Ray the caller runs the loop (an actor runs it as its own task): it returns as it stops
    status = monitor.status()
    assert status["loop"].startswith("stopped: OverflowError") and "monitor loop stopped" in status["error"]
    assert status["polls"] == 1 and status["health"]  # the first poll ran; the status still answers
