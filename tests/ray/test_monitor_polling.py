"""What makes the health monitor's 1 Hz polls cheap, without Ray: a poll that repeats the last one keeps the family
whose devices and health answer as before (only its metrics sampled again) and builds it whole when anything
changed; its worker gets the host once and sends only the metrics; bounded calls reuse their threads there.
tests/ray/test_ray_lifecycle.py shows the monitor itself cordoning and releasing on a real Ray node.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Mapping
from pathlib import Path

import pytest

from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.isolation.pool import WorkerPool
from rayaccel.isolation.process import WorkerProcess
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import FamilyInventory, Problem
from rayaccel.simulation.host_factory import make_host
from rayaccel.support.bounded import BoundedTimeout, idle_threads, reuse_threads, run_bounded
from rayaccel_testplugins import broken_topology


def _without_metrics(family: FamilyInventory | None) -> dict[str, object]:
    assert family is not None
    return family.model_dump(exclude={"metrics"})


@pytest.fixture
def acme_node(tmp_path: Path):  # type: ignore[no-untyped-def]
    manager = PluginManager(autoload=False)
    # The module as it is now (another test may have imported it again): the pool's workers import it by name.
    manager.register(importlib.import_module("rayaccel_testplugins.acme"), "acme")
    fault_file = tmp_path / "faults.txt"
    fault_file.write_text("")
    host = make_host("acme/acme-4", fault_file=str(fault_file), manager=manager)
    return manager, host, fault_file


def test_a_refresh_keeps_the_family_only_while_devices_and_health_answer_as_before(acme_node):
    manager, host, fault_file = acme_node
    builder = InventoryBuilder(manager, ["acme"])
    first, kept = builder.refresh("acme", host, [])
    assert not kept  # nothing to keep yet: built whole
    again, kept = builder.refresh("acme", host, [])
    assert kept and _without_metrics(again) == _without_metrics(first)
    assert _without_metrics(again) == _without_metrics(builder.family("acme", host, []))

    fault_file.write_text("fatal-2\n")  # health changes: the whole family again (resources, labels, units)
    faulted, kept = builder.refresh("acme", host, [])
    assert not kept and faulted is not None
    assert faulted.resources["ACME"] == 3 and "2" not in faulted.schedulable_units
    assert _without_metrics(faulted) == _without_metrics(builder.family("acme", host, []))
    assert builder.refresh("acme", host, [])[1]  # ... and kept while the fault stays

    fault_file.write_text("lost-3\n")  # a device stops being enumerated: discovery changed
    lost, kept = builder.refresh("acme", host, [])
    assert not kept and lost is not None and len(lost.devices) == 3

    fault_file.write_text("")  # recovery
    recovered, kept = builder.refresh("acme", host, [])
    assert not kept and _without_metrics(recovered) == _without_metrics(first)


def test_a_kept_family_keeps_the_problems_of_the_hooks_not_asked_again():
    manager = PluginManager(autoload=False)
    manager.register(broken_topology, "broken-topology")
    host = make_host("broken-topology/acme-4", fault_file=os.devnull, manager=manager)
    builder = InventoryBuilder(manager, ["broken-topology"])
    whole: list[Problem] = []
    builder.refresh("broken-topology", host, whole)
    kept_problems: list[Problem] = []
    _, kept = builder.refresh("broken-topology", host, kept_problems)
    assert kept and kept_problems == whole
    assert any(p.code == "inconsistent-topology" for p in kept_problems)


def test_a_refreshing_pool_sends_its_worker_the_host_once_and_answers_as_a_whole_build(acme_node, monkeypatch):
    manager, host, fault_file = acme_node
    sent: list[str] = []
    send = WorkerProcess._send

    def record(self: WorkerProcess, line: str) -> None:
        sent.append(line)
        send(self, line)

    monkeypatch.setattr(WorkerProcess, "_send", record)
    with WorkerPool(manager, ["acme"]) as pool, WorkerPool(manager, ["acme"]) as whole:
        pool.refresh = True
        polls = [pool.build(host) for _ in range(3)]
        assert pool.kept == {"acme"}  # the last two polls kept the family: the monitor has no series to set
        fault_file.write_text("fatal-2\n")
        faulted = pool.build(host)
        assert pool.kept == set()  # health changed: the whole family again
        expected = whole.build(host)
        worker = pool.worker_pids()["acme"]
    requests = [line for line in sent if '"refresh":true' in line]
    assert len(requests) == 4
    assert '"fixture"' in requests[0] and not any('"fixture"' in line for line in requests[1:])
    assert all(p.families[0].metrics for p in polls)
    assert _without_metrics(polls[-1].families[0]) == _without_metrics(polls[0].families[0])
    assert faulted.resources == expected.resources and faulted.resources["ACME"] == 3
    assert _without_metrics(faulted.families[0]) == _without_metrics(expected.families[0])
    assert pool.restarts()["acme"] == 0 and worker  # one warm worker served every poll


def test_reused_threads_serve_call_after_call_and_a_hang_still_keeps_its_thread(monkeypatch):
    import rayaccel.support.bounded as bounded

    monkeypatch.setattr(bounded, "_reuse", False)
    monkeypatch.setattr(bounded, "_idle", [])
    reuse_threads()
    threads = {run_bounded(lambda: threading.current_thread(), 5) for _ in range(20)}
    assert len(threads) == 1 and idle_threads() == 1  # one thread, waiting for the next call
    # nested bounded calls (a hook that bounds its own vendor calls) take a second thread, kept too
    assert run_bounded(lambda: run_bounded(lambda: 42, 5), 5) == 42 and idle_threads() == 2

    release = threading.Event()
    with pytest.raises(BoundedTimeout) as hung:
        run_bounded(release.wait, 0.2)
    assert hung.value.thread.is_alive() and idle_threads() == 1  # busy, so counted as a thread left behind
    release.set()
    hung.value.thread.join(0)  # it returns and waits idle again
    assert run_bounded(lambda: 7, 5) == 7
    with pytest.raises(ZeroDivisionError):
        run_bounded(lambda: 1 / 0, 5)  # the call's exception reaches the caller; the thread serves on
    assert run_bounded(lambda: "next", 5) == "next"


def test_a_monitor_asks_health_every_poll_and_metrics_twice_per_ray_metrics_report(tmp_path: Path, monkeypatch):
    """Ray exports only a gauge's last value of each metrics report, so the monitor samples the plugins' metrics
    every max(interval, report / 2) seconds; health is asked at every poll, and a fault is acted on at the
    next poll whether it samples or not. (Cordoning itself needs Ray: tests/ray/test_ray_lifecycle.py.)"""
    from rayaccel.ray.cordons import Cordons
    from rayaccel.ray.metric_publisher import metrics_report_interval
    from rayaccel.ray.monitor import HealthMonitor

    cordoned: list[str] = []

    class RecordedCordons(Cordons):  # outside Ray: what the monitor would cordon is recorded
        def adopt(self, failing: set[tuple[str, str]], family_resources: Mapping[str, str]) -> None:
            pass

        def cordon(self, family: str, family_resource: str, device: str, message: str) -> str | None:
            cordoned.append(device)
            return None

    class Monitor(HealthMonitor):  # the real monitor outside Ray, its cordons recorded
        cordons_class = RecordedCordons

    fault_file = tmp_path / "faults.txt"
    fault_file.write_text("")
    monkeypatch.setenv("RAYACCEL_PLUGINS", "acme=rayaccel_testplugins.acme")
    monkeypatch.setenv("RAYACCEL_SIMULATE", "acme/acme-4")
    monkeypatch.setenv("RAYACCEL_SIMULATE_FAULT_FILE", str(fault_file))
    monitor = Monitor("node-1", 0.1, ["acme"], isolated=False)  # the first poll is its baseline: all healthy
    assert monitor.status()["metrics_every"] == max(0.1, metrics_report_interval() / 2) >= 0.1
    monitor._setup()
    for _ in range(4):  # well within half a report (5 s unless RAY_metrics_report_interval_ms says otherwise)
        status = monitor.poll()
    # The first two polls sampled the metrics (a rate needs two samples: the first report has it too).
    assert status["polls"] == 4 and status["samples"] == 2
    assert set(status["health"].values()) == {"healthy"} and not cordoned
    fault_file.write_text("fatal-2\n")
    status = monitor.poll()
    assert status["samples"] == 2 and status["health"]["ACME-0002-5e1f-4c2a-9d3b-000000000002"] == "unhealthy"
    assert cordoned == ["ACME-0002-5e1f-4c2a-9d3b-000000000002"]


@pytest.mark.parametrize("node_baseline", ["[]", None])
def test_a_fault_before_the_first_poll_is_cordoned_where_the_node_says_nothing_was_bad_at_start(
        tmp_path: Path, monkeypatch, node_baseline):
    """A node started by rayaccel says which devices were bad at its start (RAYACCEL_NODE_BASELINE, [] when none
    was): a fault that a monitor first sees at its first poll (the monitor started after it, or restarted by Ray)
    is cordoned. Only where the node says nothing (a node not started by rayaccel) does the first poll stand for
    the start. The corpus control's second RAC312 (stop 56, under load): its fault, written before the new
    monitor's first poll, was taken as there since the start and never cordoned."""
    from rayaccel.ray.cordons import Cordons
    from rayaccel.ray.monitor import HealthMonitor
    from rayaccel.ray.node import NODE_BASELINE_ENV

    cordoned: list[str] = []

    class RecordedCordons(Cordons):  # outside Ray: what the monitor would cordon is recorded
        def adopt(self, failing: set[tuple[str, str]], family_resources: Mapping[str, str]) -> None:
            pass

        def cordon(self, family: str, family_resource: str, device: str, message: str) -> str | None:
            cordoned.append(device)
            return None

    class Monitor(HealthMonitor):
        cordons_class = RecordedCordons

    fault_file = tmp_path / "faults.txt"
    fault_file.write_text("fatal-2\n")
    monkeypatch.setenv("RAYACCEL_PLUGINS", "acme=rayaccel_testplugins.acme")
    monkeypatch.setenv("RAYACCEL_SIMULATE", "acme/acme-4")
    monkeypatch.setenv("RAYACCEL_SIMULATE_FAULT_FILE", str(fault_file))
    if node_baseline is None:
        monkeypatch.delenv(NODE_BASELINE_ENV, raising=False)
    else:
        monkeypatch.setenv(NODE_BASELINE_ENV, node_baseline)
    monitor = Monitor("node-1", 0.1, ["acme"], isolated=False)
    monitor._setup()
    status = monitor.poll()
    assert status["health"]["ACME-0002-5e1f-4c2a-9d3b-000000000002"] == "unhealthy"
    if node_baseline is None:
        assert cordoned == [] and status["baseline"] == ["ACME-0002-5e1f-4c2a-9d3b-000000000002"]
    else:
        assert cordoned == ["ACME-0002-5e1f-4c2a-9d3b-000000000002"] and status["baseline"] == []
