"""The per-node health monitor: a detached Ray actor pinned to its node.

Every ``interval`` seconds it builds the node's inventory on the node itself (the real host, or the
simulated one named by the node's ``RAYACCEL_SIMULATE`` and fault file, which the actor's worker inherits
from the raylet), and

- publishes each device's health, identity, links and the plugins' metrics through ``ray.util.metrics``,
  so every vendor's numbers reach Ray's Prometheus endpoint and dashboard under the same names: one
  metric per quantity in base units (``rayaccel_device_power_watts``, ``..._temperature_celsius``, ...;
  :mod:`rayaccel.outputs.metric_series` names them, docs/observability.md lists them);
- rewrites the export files the node's env names (``RAYACCEL_NFD_FILE``, ``RAYACCEL_DRA_FILE``:
  :mod:`rayaccel.outputs.exporters.upkeep`), so NFD's labels and the DRA slices follow devices as they fail
  and recover;
- when a device turns unhealthy for a fatal reason (or stops being enumerated), cordons exactly that
  device on the node (:mod:`rayaccel.ray.cordons`), and releases the cordon when no fatal reason remains.

Each job has its own module; a poll is their sequence: build the inventory on the node's host (the plugins'
hooks run in worker processes kept warm between polls, :mod:`rayaccel.isolation.pool`), rewrite the export
files, track health against the node's start (:mod:`rayaccel.ray.health_watch`), publish the series
(:mod:`rayaccel.ray.metric_publisher`), cordon and release (:mod:`rayaccel.ray.cordons`).

The polling loop is a task the actor gives itself when it is created (and again when Ray restarts it),
running on the actor's main thread for the actor's whole life: a Ray worker whose main thread waits in
Ray's task loop wakes every 10 ms to check for signals, one whose main thread runs a task does not. So the
actor answers no calls; it publishes its status (:meth:`HealthMonitor.status`) in the GCS's internal
key-value store after every poll, and every reader gets it with :func:`monitor_status`.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rayaccel.inventory.health_policy import POLICY_ENV
from rayaccel.ray.cordons import RECOVERIES_KEPT, Cordons
from rayaccel.ray.health_watch import HealthWatch, node_baseline, offered_units
from rayaccel.ray.metric_publisher import MetricCadence, poll_series
from rayaccel.support.monitor_interval import check_interval

if TYPE_CHECKING:
    from rayaccel.hosts.seam import Host
    from rayaccel.inventory.builder import InventoryBuilder
    from rayaccel.isolation.pool import WorkerPool
    from rayaccel.outputs.exporters.upkeep import KeptFiles
    from rayaccel.records import FamilyInventory, NodeInventory

logger = logging.getLogger("rayaccel.ray.monitor")

NAMESPACE = "rayaccel"
COUNT_LABEL = "rayaccel.io/count"
HEALTH_LABEL = "rayaccel.io/health"

#: While a new cordon's placement group does not hold its units yet, the status is looked at this often
#: between polls (seconds), so a reader waiting for ``held`` sees it within this bound of Ray's doing.
HELD_RECHECK_S = 0.25
#: A published status older than twice the interval and this many seconds more is reported ``silent``: its
#: actor (or its node) is gone, or a poll hangs far past every hook's timeout.
SILENT_AFTER_S = 120.0


def monitor_name(node_id: str) -> str:
    return f"rayaccel-health-{node_id}"


def status_key(node_id: str) -> str:
    """Where the node's monitor publishes its status in the GCS's internal key-value store (namespace
    :data:`NAMESPACE`)."""
    return f"health-status/{node_id}"


class HealthMonitor:
    """The actor's class (wrapped by ``ray.remote`` in :func:`start_monitor`)."""

    #: The cordons' keeper (a test outside Ray records what would be cordoned with a subclass of its own).
    cordons_class: type[Cordons] = Cordons

    def __init__(self, node_id: str, interval: float, plugins: Sequence[str] | None = None,
                 baseline: Sequence[str] | None = None, isolated: bool = True) -> None:
        from rayaccel.ray.node import NODE_PLUGINS_ENV

        if baseline is None:  # the node's start-up baseline, from the raylet's env (rayaccel.ray.node_config)
            baseline = node_baseline()
        if plugins is None and NODE_PLUGINS_ENV in os.environ:  # the node's plugins (from the raylet's env)
            plugins = [p for p in os.environ[NODE_PLUGINS_ENV].split(",") if p]
        self.node_id = node_id
        self.interval = check_interval(interval)
        # Set by _setup, in the loop (plugins are loaded there, not in the actor's creation).
        self._plugins = list(plugins) if plugins is not None else None
        self._isolated = isolated
        self._host: Host | None = None
        self._pool: WorkerPool | None = None
        self._builder: InventoryBuilder | None = None
        self._kept: KeptFiles | None = None
        # An empty baseline says no device was bad at start: a fault before the first poll (or before a restarted
        # monitor's) is cordoned; only a node that gives none has its first poll's unhealthy devices excused.
        self._health = HealthWatch(baseline=set(baseline) if baseline is not None else None)
        self._cordons = self.cordons_class(node_id)
        # The plugins' metrics are sampled twice per Ray metrics report (or every poll, when polls are that
        # rare): Ray exports only a gauge's last value of each report, so sampling more often is work lost.
        # Health is polled every interval.
        self._metrics = MetricCadence(self.interval)
        self._lock = threading.Lock()
        self._status: dict[str, Any] = {"node_id": node_id, "polls": 0, "cordoned": {}, "recovered": [],
                                        "health": {}, "error": None, "loop": "running", "workers": {},
                                        "interval": self.interval, "pid": os.getpid(), "families": {},
                                        "policy": os.environ.get(POLICY_ENV) or None,
                                        "metrics_every": self._metrics.sample_every, "samples": 0}
        self._stop = threading.Event()
        self._published = ""  # the status as last published (JSON)
        # In a Ray actor: the status readers see before the first poll, then the loop as the actor's own task
        # (its main thread, for the actor's life). Loading the plugins and the first poll run in the loop:
        # creating the monitor waits neither for the plugins' import nor for their workers.
        actor = _this_actor()
        self._in_ray = actor is not None
        self._publish()
        # Retried: a restarted actor's call to itself can reach it while Ray still calls it restarting.
        self._running = actor.run.options(max_task_retries=-1).remote() if actor is not None else None

    def _setup(self) -> None:
        """The plugins, the host and the export files a poll needs: the host is the node's (this process
        inherits the raylet's env), chosen here, at the edge, and passed to every build."""
        from rayaccel.inventory.builder import InventoryBuilder
        from rayaccel.isolation.pool import WorkerPool
        from rayaccel.outputs.exporters.upkeep import KeptFiles
        from rayaccel.plugins.manager import PluginManager
        from rayaccel.simulation.host_factory import host_from_env

        manager = PluginManager()
        self._host = host_from_env(manager)
        plugin_list = self._plugins
        offered = offered_units()
        if offered is not None:  # poll only the plugins whose devices the node offers: no idle workers
            plugin_list = [p for p in (plugin_list or manager.plugin_names()) if p in offered]
        self._pool = WorkerPool(manager, plugin_list) if self._isolated else None
        if self._pool is not None:  # each poll repeats the last: workers send what changed (health, metrics)
            self._pool.refresh = True
        self._builder = InventoryBuilder(manager, plugin_list)
        self._health.offered = offered or {}
        self._kept = KeptFiles.from_env(self.interval)  # RAYACCEL_NFD_FILE / RAYACCEL_DRA_FILE, if named

    def run(self) -> None:
        """The polling loop, until :meth:`stop`: the actor's own task on its main thread (given at creation),
        or, outside Ray, the caller's. Each poll's status is published (:func:`monitor_status` reads it)."""
        try:
            self._setup()
            while True:
                try:
                    self.poll()
                except Exception as e:  # keep monitoring; the status says what went wrong
                    logger.exception("rayaccel health poll failed")
                    with self._lock:
                        self._status["error"] = f"{type(e).__name__}: {e}"
                self._publish()
                if self._wait_next_poll():
                    break
        except BaseException as e:  # never silently: the status says the loop is gone, and why
            logger.exception("rayaccel health monitor loop stopped")
            with self._lock:
                self._status["loop"] = f"stopped: {type(e).__name__}: {e}"
                self._status["error"] = f"the monitor loop stopped: {type(e).__name__}: {e}"
        finally:
            if self._pool is not None:
                self._pool.close()
            with self._lock:
                if self._status["loop"] == "running":
                    self._status["loop"] = "stopped"
            self._publish()

    def _wait_next_poll(self) -> bool:
        """Wait one interval (True: stopped meanwhile). Meanwhile the last sample's series are set again
        within each Ray metrics report (polls rarer than half a report), and while a cordon's placement group
        does not hold its units yet, the status is published again as soon as it does."""
        until = time.monotonic() + self.interval
        while True:
            now = time.monotonic()
            pending = self._cordons.pending()
            resend = self._metrics.resend_at()
            wake = min(until, resend, now + HELD_RECHECK_S if pending else math.inf)
            if self._stop.wait(max(wake - now, 0.0)):
                return True
            now = time.monotonic()
            if now >= until:
                return False
            if now >= resend:
                self._metrics.resend()
            if pending:
                self._publish()

    def _publish(self) -> None:
        """Write the status where readers get it (:func:`monitor_status`), when it changed; nothing outside
        Ray. A failed write is logged; the next poll writes again."""
        if not self._in_ray:
            return
        from ray.experimental.internal_kv import _internal_kv_put

        status = self.status()
        text = json.dumps(status, sort_keys=True, default=str)
        if text == self._published:
            return
        try:
            _internal_kv_put(status_key(self.node_id), json.dumps({**status, "updated": time.time()}, default=str),
                             namespace=NAMESPACE)
        except Exception as e:  # the GCS is briefly away (a restart): the next poll publishes again
            logger.warning("rayaccel: could not publish the health monitor's status: %s", e)
            return
        self._published = text

    def poll(self) -> dict[str, Any]:
        """One poll: the node's inventory on its host, then each job's module in turn."""
        assert self._host is not None and self._builder is not None, "poll() before _setup()"
        first = not self._status["polls"]
        sample = self._metrics.sample_now(self._status["samples"])
        inventory = self._build(sample)
        self._rewrite_export_files(inventory)
        seen = self._health.observe(inventory, first)
        # Between samples only what changed (a health state, the schedulable units): the next sample sets all. A
        # poll that kept every family (devices and health answered as before) changed none.
        if sample or self._pool is None or self._pool.kept != set(self._pool.plugins):
            self._metrics.publish(poll_series(inventory, self.node_id, seen.vanished), sample)
        with self._lock:
            self._status["polls"] += 1
            self._status["samples"] += sample
            self._status["health"] = seen.health
            self._status["families"] = {f.family.name: family_status(f) for f in inventory.families}
            self._status["error"] = None
            self._status["workers"] = self._pool.worker_pids() if self._pool is not None else {}
        errors, recovered = self._cordons.reconcile(seen.failing, self._health.resources, first)
        with self._lock:
            for error in errors:
                self._status["error"] = error
            self._status["recovered"] = [*self._status["recovered"], *recovered][-RECOVERIES_KEPT:]
        return self.status()

    def _build(self, sample: bool) -> NodeInventory:
        """The node's inventory on its host; ``sample``: with the plugins' metrics."""
        assert self._host is not None and self._builder is not None
        if self._pool is not None:
            return self._pool.build(self._host, with_metrics=sample)
        return self._builder.build(self._host, with_metrics=sample)

    def _rewrite_export_files(self, inventory: NodeInventory) -> None:
        """NFD's and DRA's files follow the devices; a failure leaves the health work going, and says why."""
        if not self._kept:
            return
        try:
            self._kept.write(inventory)
        except Exception as e:
            logger.exception("rayaccel could not rewrite the node's export files")
            with self._lock:
                self._status["error"] = f"export files: {type(e).__name__}: {e}"

    def status(self) -> dict[str, Any]:
        """Polls, per-device health, cordoned families (units held so far), recoveries, errors, the loop (as
        :func:`monitor_status` gives it)."""
        cordoned = self._cordons.by_family()
        with self._lock:
            status = {**self._status, "health": dict(self._status["health"])}
        status["cordoned"] = cordoned
        baseline = self._health.baseline
        status["baseline"] = sorted(baseline) if baseline is not None else None
        return status

    def stop(self) -> None:
        """End :meth:`run` after the poll under way (in process; a Ray actor's loop ends with the actor)."""
        self._stop.set()


def family_status(family: FamilyInventory) -> dict[str, Any]:
    """What readers of the status (``rayaccel cluster``) show of a family live: its devices, how many take work
    (``rayaccel.io/count``), its health label, whether nothing is left to schedule (``drained``), and what the
    operator's health policy did to each reason reported."""
    return {"devices": len(family.devices), "healthy": int(family.labels.get(COUNT_LABEL, 0)),
            "health": family.labels.get(HEALTH_LABEL, "unknown"),
            "drained": bool(family.devices) and not family.schedulable_units and not family.partition_units,
            "decisions": [d.model_dump() for d in family.decisions]}


def start_monitor(node_id: str, interval: float, plugins: Sequence[str] | None = None,
                  baseline: Sequence[str] | None = None, isolated: bool = True) -> Any:
    """Create (or find) the node's monitor actor; returns its handle. Needs a connected driver. The actor
    answers no calls (its main thread runs the polling loop): read its status with :func:`monitor_status`,
    wait for it to be up with :func:`wait_for_monitor`.

    ``interval``: seconds between polls, within :mod:`rayaccel.support.monitor_interval`'s bounds;
    ``baseline``: the devices unhealthy when the node started (None: the node's own, from its env; an empty
    list: none was, so every later fatal fault is cordoned); ``isolated``: the hooks run in worker processes
    (default) rather than in the actor's threads.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    # No baseline given: the actor reads the node's own (its worker inherits the raylet's env).
    interval = check_interval(interval)
    actor_class = ray.remote(HealthMonitor)
    return actor_class.options(
        name=monitor_name(node_id), namespace=NAMESPACE, lifetime="detached", get_if_exists=True,
        num_cpus=0, max_restarts=3,  # one task at a time: the loop, on the main thread (restarted: again)
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
    ).remote(node_id, interval, list(plugins) if plugins is not None else None,
             list(baseline) if baseline is not None else None, isolated)


def get_monitor(node_id: str) -> Any:
    """The node's monitor actor (to kill it; it answers no calls)."""
    import ray

    return ray.get_actor(monitor_name(node_id), namespace=NAMESPACE)


def monitor_status(node_id: str) -> dict[str, Any] | None:
    """The node's monitor status as its actor last published it (None: none published yet). Needs a connected
    driver. The keys are :meth:`HealthMonitor.status`'s, plus ``updated`` (when it was published, seconds
    since the epoch); a status older than twice the interval and :data:`SILENT_AFTER_S` more says ``loop``
    ``silent: ...``."""
    from ray.experimental.internal_kv import _internal_kv_get

    data = _internal_kv_get(status_key(node_id), namespace=NAMESPACE)
    if data is None:
        return None
    status: dict[str, Any] = json.loads(data)
    age = time.time() - float(status.get("updated", 0))
    if status.get("loop") == "running" and age > 2 * float(status.get("interval", 0)) + SILENT_AFTER_S:
        status["loop"] = f"silent: no status for {age:.0f}s (the monitor's actor or its node may be gone)"
    return status


def wait_for_monitor(node_id: str, timeout: float) -> dict[str, Any]:
    """The node's monitor status once its actor is up (it publishes at creation, before its first poll)."""
    from rayaccel.support.polling import wait_for

    status = wait_for(lambda: monitor_status(node_id), lambda s: s is not None, timeout=timeout, interval=0.1,
                      what=f"the health monitor of node {node_id} to start")
    assert status is not None
    return status


def _this_actor() -> Any:
    """This process's own actor handle when it runs as a Ray actor; None elsewhere (the class used directly)."""
    import ray

    if not ray.is_initialized():
        return None
    context = ray.get_runtime_context()
    return context.current_actor if context.get_actor_id() is not None else None


def draining_node_ids() -> set[str]:
    """Hex ids of the nodes GCS is draining (needs a connected driver); the monitor drains none itself."""
    import ray._private.state

    return set(ray._private.state.state.get_draining_nodes())
