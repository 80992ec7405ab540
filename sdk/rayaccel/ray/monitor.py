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
  device on the node: a cordon claim in the node's claims table (:mod:`rayaccel.ray.claims`) keeps every
  later task off its units, and one detached single-bundle placement group pinned to the node holds as
  many of the family's tokens, so Ray offers that many fewer. Running work finishes; the family's other
  devices keep taking work. When no fatal reason remains, the claim and the group are removed.

Why not drain: Ray 2.60 cannot undo a drain (``DrainRaylet`` has no inverse in the raylet's or the
GCS's services) and refuses to resize unit-instance resources (GPU, TPU, neuron_cores, the day-zero
families) on a live node; a drained node would stay drained until restarted. The cost of cordoning: a
task already running on the failed device keeps it until it ends.

The plugins' hooks run in worker processes kept warm between polls (:mod:`rayaccel.isolation.pool`).

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
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rayaccel.inventory.health_policy import POLICY_ENV
from rayaccel.outputs.health_findings import by_family, fatal_findings, vanished_findings
from rayaccel.outputs.metric_series import HEALTH, Series, counter_increment, node_series
from rayaccel.records import HEALTH_ORDER
from rayaccel.support.monitor_interval import check_interval
from rayaccel.support.raycompat import RAY_NODE_ID_LABEL

if TYPE_CHECKING:
    from rayaccel.hosts.seam import Host
    from rayaccel.inventory.builder import InventoryBuilder
    from rayaccel.isolation.pool import WorkerPool
    from rayaccel.outputs.exporters.upkeep import KeptFiles
    from rayaccel.records import FamilyInventory

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


def cordon_name(node_id: str, family: str, device: str) -> str:
    return f"rayaccel-cordon-{node_id}-{family}-{device}"


class SeriesPublisher:
    """Publishes :class:`~rayaccel.outputs.metric_series.Series` through ``ray.util.metrics``, making each
    metric on first use (vendor-specific ones are known only when a plugin reports them). A counter grows by
    what the device's running count grew since the last poll."""

    def __init__(self) -> None:
        self._metrics: dict[str, Any] = {}
        self._counts: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self._gauges: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}  # the value each was last set to

    def publish(self, series: Sequence[Series], changed_only: bool = False) -> None:
        """Set each gauge and grow each counter. ``changed_only``: leave a gauge alone when it already holds
        the value. Ray exports the values a gauge was set to since its last report and then forgets them
        (``metrics_report_interval_ms``), so every series needs a full publish within each report interval."""
        from ray.util.metrics import Counter, Gauge

        for one in series:
            metric: Any = self._metrics.get(one.metric.name)
            if metric is None:
                kind = Counter if one.metric.kind == "counter" else Gauge
                metric = kind(one.metric.name, one.metric.help, tag_keys=one.metric.labels)
                self._metrics[one.metric.name] = metric
            if one.metric.kind == "counter":
                key = (one.metric.name, tuple(sorted(one.labels.items())))
                grown = counter_increment(self._counts.get(key), one.value)
                self._counts[key] = one.value
                if grown > 0:
                    metric.inc(grown, tags=one.labels)
            else:
                key = (one.metric.name, tuple(one.labels.items()))
                if changed_only and self._gauges.get(key) == one.value:
                    continue
                self._gauges[key] = one.value
                metric.set(one.value, tags=one.labels)


def metrics_report_interval() -> float:
    """Seconds between a Ray process's metric reports to its node's agent (Ray's ``metrics_report_interval_ms``,
    10 s unless the cluster sets it)."""
    import importlib

    raylet: Any = importlib.import_module("ray._raylet")  # compiled: no type information
    return float(raylet.Config.metrics_report_interval_ms()) / 1000


class HealthMonitor:
    """The actor's class (wrapped by ``ray.remote`` in :func:`start_monitor`)."""

    def __init__(self, node_id: str, interval: float, plugins: Sequence[str] | None = None,
                 baseline: Sequence[str] | None = None, isolated: bool = True) -> None:
        from rayaccel.ray.node import NODE_PLUGINS_ENV

        if not baseline:  # the node's start-up baseline, from the raylet's env (rayaccel.ray.node_config)
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
        self._offered: dict[str, set[str]] = {}
        self._baseline = set(baseline or ())
        self._seen: dict[str, str] = {}  # device id -> family, for devices that later vanish
        self._not_offered: set[str] = set()
        self._resource: dict[str, str] = {}  # family -> its resource name
        self._partitions: dict[str, list[str]] = {}  # partitioned device -> its partitions' ids
        self._cordons: dict[str, dict[str, Any]] = {}  # device -> {"family", "message", "group", "units", ...}
        self._publisher = SeriesPublisher()
        # The plugins' metrics are sampled twice per Ray metrics report (or every poll, when polls are that
        # rare): Ray exports only a gauge's last value of each report, so sampling more often is work lost.
        # Health is polled every interval.
        report = metrics_report_interval()
        self._sample_every = max(self.interval, report / 2)
        self._sampled_at = -math.inf
        # Polls rarer than that: the last sample's series are set again between polls, twice per report.
        self._resend_every = report / 2 if self.interval > report / 2 else math.inf
        self._series: list[Series] = []  # the last sample's series
        self._sent_at = -math.inf  # when they were last set
        self._lock = threading.Lock()
        self._status: dict[str, Any] = {"node_id": node_id, "polls": 0, "cordoned": {}, "recovered": [],
                                        "health": {}, "error": None, "loop": "running", "workers": {},
                                        "interval": self.interval, "pid": os.getpid(), "families": {},
                                        "policy": os.environ.get(POLICY_ENV) or None,
                                        "metrics_every": self._sample_every, "samples": 0}
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
        """The plugins, the host and the export files a poll needs."""
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
        self._offered = offered or {}
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
            with self._lock:
                pending = any(c["group"] is not None and not c["held"] for c in self._cordons.values())
            resend = self._sent_at + self._resend_every
            wake = min(until, resend, now + HELD_RECHECK_S if pending else math.inf)
            if self._stop.wait(max(wake - now, 0.0)):
                return True
            now = time.monotonic()
            if now >= until:
                return False
            if now >= resend:
                self._publisher.publish(self._series)
                self._sent_at = now
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
        assert self._host is not None and self._builder is not None, "poll() before _setup()"
        now = time.monotonic()
        # Half a poll early rather than late; the first two polls both sample, so rates (two samples) are in
        # the first report too.
        sample = now - self._sampled_at >= self._sample_every - self.interval / 2 or self._status["samples"] < 2
        if sample:
            self._sampled_at = now
        if self._pool is not None:
            inventory = self._pool.build(self._host, with_metrics=sample)
        else:
            inventory = self._builder.build(self._host, with_metrics=sample)
        if self._kept:
            try:
                self._kept.write(inventory)
            except Exception as e:  # the health work goes on; the status says why the files are stale
                logger.exception("rayaccel could not rewrite the node's export files")
                with self._lock:
                    self._status["error"] = f"export files: {type(e).__name__}: {e}"
        health: dict[str, str] = {}
        ignored = self._baseline | self._not_offered
        for family in inventory.families:
            name = family.family.name
            self._resource[name] = family.family.resource_name
            offered = self._offered.get(family.plugin)
            for dev in family.devices:
                if dev.partitions:  # a fault of the device drains every one of its partitions
                    self._partitions[dev.id] = [p.id for p in dev.partitions]
                own = set(dev.unit_ids) | set(self._partitions.get(dev.id, ()))
                if offered is not None and not own & offered:
                    self._not_offered.add(dev.id)  # not offered (the operator's visible-devices setting)
                    ignored.add(dev.id)
            for report in family.health:
                self._seen.setdefault(report.device, name)
                health[report.device] = report.state
            for dev in family.devices:  # a partition without a report of its own is as its device
                for partition in dev.partitions:
                    health.setdefault(partition.id, health.get(dev.id, "unknown"))
        vanished = [(device, family_name) for device, family_name in self._seen.items() if device not in health]
        for device, _ in vanished:
            health[device] = "unhealthy"
        # Between samples only what changed (a health state, the schedulable units): the next sample sets all. A
        # poll that kept every family (devices and health answered as before) changed none.
        if sample or self._pool is None or self._pool.kept != set(self._pool.plugins):
            series = node_series(inventory, self.node_id)
            series.extend(Series(HEALTH, {"node": self.node_id, "family": family_name, "device": device},
                                 float(HEALTH_ORDER["unhealthy"])) for device, family_name in vanished)
            self._publisher.publish(series, changed_only=not sample)
            if sample:
                self._series, self._sent_at = series, time.monotonic()
        first = not self._status["polls"]
        if first and not self._baseline:
            # Started without the node's start-up inventory: what is bad now was bad at start.
            self._baseline = {d for d, state in health.items() if state == "unhealthy"}
            ignored |= self._baseline
        # A partition still discovered is present, reported on its own or not (its fault may have cleared).
        present = {h.device for f in inventory.families for h in f.health} | {
            p.id for f in inventory.families for d in f.devices for p in d.partitions}
        findings = by_family(fatal_findings(inventory, ignored) + vanished_findings(self._seen, present, ignored))
        with self._lock:
            self._status["polls"] += 1
            self._status["samples"] += sample
            self._status["health"] = health
            self._status["families"] = {f.family.name: family_status(f) for f in inventory.families}
            self._status["error"] = None
            self._status["workers"] = self._pool.worker_pids() if self._pool is not None else {}
        failing: dict[str, list[Any]] = {}  # device -> its findings: a cordon is per device
        for found in findings.values():
            for finding in found:
                failing.setdefault(finding.device, []).append(finding)
                for partition_id in self._partitions.get(finding.device, ()):
                    failing.setdefault(partition_id, []).append(finding)
        if first:
            try:
                self._adopt(set(failing))
            except Exception as e:  # monitoring goes on; an old cordon stays until its device faults again
                logger.warning("rayaccel: could not look for an earlier monitor's cordons: %s", e)
        for device, found in failing.items():
            if device not in self._cordons:
                self._cordon(found[0].family, device, "rayaccel health monitor: " + "; ".join(f.phrase for f in found))
        for device in [d for d in self._cordons if d not in failing]:
            self._release(device)
        return self.status()

    def _cordon(self, family: str, device: str, message: str) -> None:
        """Take exactly the failed device out of scheduling on this node (see :mod:`rayaccel.ray.claims`): a
        cordon claim keeps every later task off its units, and a single-bundle placement group pinned to the
        node holds as many of the family's tokens, so Ray offers that many fewer. A zero-CPU task inside the
        group tags the cordon with the group's tokens (claims still holding them are over and dropped)."""
        from ray.util import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        from rayaccel.ray.claims import CORDON_TAG_TASK, node_claims_table

        resource, units = cordon_units(node_placement(), self._resource.get(family, ""), device)
        group = tag = None
        if units:  # else the node does not offer the device: nothing of it to hold
            try:
                node_claims_table().cordon(resource, device, units)
                name = cordon_name(self.node_id, family, device)
                group = _existing_group(name) or placement_group(
                    [{resource: float(len(units))}], strategy="STRICT_PACK", name=name, lifetime="detached",
                    bundle_label_selector=[{RAY_NODE_ID_LABEL: self.node_id}])
                tag = _tag_task().options(
                    name=CORDON_TAG_TASK, num_cpus=0, resources={resource: float(len(units))}, max_retries=-1,
                    scheduling_strategy=PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=0),
                ).remote(resource, device)
            except Exception as e:
                with self._lock:
                    self._status["error"] = f"could not cordon {family} device {device}: {type(e).__name__}: {e}"
                logger.warning("rayaccel: could not cordon %s device %s: %s", family, device, e)
        with self._lock:
            self._cordons[device] = {"family": family, "resource": resource, "message": message, "at": time.time(),
                                     "group": group, "tag": tag, "units": units, "held": False}
        logger.warning("%s (cordoning %s unit(s) %s of device %s on node %s)", message, resource, ",".join(units),
                       device, self.node_id)

    def _release(self, device: str) -> None:
        import ray
        from ray.util import remove_placement_group

        from rayaccel.ray.claims import node_claims_table

        with self._lock:  # listed as cordoned until released; then, at once, as recovered
            cordon = self._cordons[device]
        family = cordon["family"]
        try:  # the claim first: the group's tokens, once free, are then ordinary tokens
            node_claims_table().uncordon(cordon["resource"], device)
            if cordon["tag"] is not None:
                ray.cancel(cordon["tag"])  # a tag still waiting for the group
            if cordon["group"] is not None:
                remove_placement_group(cordon["group"])
        except Exception as e:
            logger.warning("rayaccel: could not remove the cordon of %s device %s: %s", family, device, e)
        with self._lock:
            self._cordons.pop(device, None)
            recovered = {"family": family, "device": device, "at": time.time(),
                         "message": f"{family}: device {device} has no fatal reason left; its units on this node "
                                    f"take work again (was: {cordon['message']})"}
            self._status["recovered"] = [*self._status["recovered"], recovered][-10:]
        logger.warning("%s", recovered["message"])

    def _adopt(self, failing: set[str]) -> None:
        """A restarted monitor removes the cordons an earlier one left for devices that are fine now."""
        from ray.util import remove_placement_group

        from rayaccel.ray.claims import node_claims_table

        table = node_claims_table()
        placements = node_placement()
        for family, family_resource in self._resource.items():
            # The family's resource (cordons per device) and its partition profiles' (cordons per partition).
            for resource, placement in placements.items():
                if resource != family_resource and not resource.startswith(family_resource + "_"):
                    continue
                for device in table.cordons(resource):
                    if device not in failing:
                        table.uncordon(resource, device)
                for device in placement.device_units if resource == family_resource else placement.units:
                    group = _existing_group(cordon_name(self.node_id, family, device))
                    if group is not None and device not in failing:
                        remove_placement_group(group)

    def status(self) -> dict[str, Any]:
        """Polls, per-device health, cordoned families (units held so far), recoveries, errors, the loop (as
        :func:`monitor_status` gives it)."""
        with self._lock:
            waiting = [c["group"] for c in self._cordons.values() if c["group"] is not None and not c["held"]]
        held = {id(group) for group in waiting if _held([group])}  # a group once created holds until removed
        with self._lock:
            for cordon in self._cordons.values():
                cordon["held"] = cordon["held"] or id(cordon["group"]) in held
            cordons = {family: dict(c) for family, c in self._cordons.items()}
            status = {**self._status, "health": dict(self._status["health"])}
        status["cordoned"] = _cordoned_by_family(cordons)
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


def offered_units() -> dict[str, set[str]] | None:
    """Plugin -> the unit ids this node offers, from the node's env (``RAYACCEL_NODE_UNITS``, set by
    :func:`rayaccel.ray.node_config`); None when not set. Faults of other devices do not cordon, and
    plugins that found no devices when the node started are not polled."""
    import json

    from rayaccel.ray.node import NODE_UNITS_ENV

    if NODE_UNITS_ENV not in os.environ:
        return None
    try:
        data = json.loads(os.environ[NODE_UNITS_ENV])
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    return {str(k): {str(u) for u in v} for k, v in data.items() if isinstance(v, list)}


def node_baseline() -> list[str]:
    """The devices unhealthy when this node started, from its env (``RAYACCEL_NODE_BASELINE``, set by
    :func:`rayaccel.ray.node_config`); empty when not set (the first poll is the baseline then)."""
    import json

    from rayaccel.ray.node import NODE_BASELINE_ENV

    try:
        data = json.loads(os.environ.get(NODE_BASELINE_ENV) or "[]")
    except json.JSONDecodeError:
        return []
    return [str(d) for d in data] if isinstance(data, list) else []


def _existing_group(name: str) -> Any:
    from ray.util import get_placement_group

    try:
        return get_placement_group(name)
    except ValueError:
        return None


def _cordoned_by_family(cordons: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Family -> its cordoned devices' messages, units (cordoned) and held (units Ray holds for the cordons,
    so it offers that many fewer), and per device the same."""
    families: dict[str, dict[str, Any]] = {}
    for device, cordon in sorted(cordons.items(), key=lambda item: item[1]["at"]):
        held = len(cordon["units"]) if cordon["held"] else 0
        entry = families.setdefault(cordon["family"], {"message": "", "at": cordon["at"], "units": 0, "held": 0,
                                                       "devices": {}})
        entry["message"] = "; ".join(filter(None, [entry["message"], cordon["message"]]))
        entry["units"] += len(cordon["units"])
        entry["held"] += held
        entry["devices"][device] = {"units": list(cordon["units"]), "held": held, "message": cordon["message"]}
    return families


def cordon_units(placements: Mapping[str, Any], family_resource: str, device: str) -> tuple[str, list[str]]:
    """The resource and units a cordon of ``device`` holds: the device's units of its family's resource, or,
    for a partition (a MIG instance), that one partition of its profile's resource. A partitioned device
    holds none itself: its partitions are cordoned one by one."""
    placement = placements.get(family_resource)
    if placement is not None and device in placement.device_units:
        return family_resource, list(placement.device_units[device])
    for resource, entry in placements.items():
        if resource.startswith(family_resource + "_") and device in entry.units:
            return resource, [device]
    return family_resource, []


def node_placement() -> dict[str, Any]:
    """The node's placement table (from the raylet's env, which the monitor's worker inherits)."""
    from rayaccel.ray.claims import PLACEMENT_ENV, load_placement

    return load_placement(os.environ.get(PLACEMENT_ENV))


def _tag_cordon(resource: str, device: str) -> list[str]:
    """Runs inside a cordon's placement group: gives the cordon the tokens the group holds."""
    from rayaccel.ray.claims import node_claims_table
    from rayaccel.ray.worker_preload import assigned_tokens

    tokens = assigned_tokens(resource)
    node_claims_table().tag_cordon(resource, device, tokens)
    return tokens


def _tag_task() -> Any:
    import ray

    return ray.remote(_tag_cordon)


def _held(groups: Sequence[Any]) -> int:
    from ray.util import placement_group_table

    held = 0
    for group in groups:
        try:
            held += placement_group_table(group).get("state") == "CREATED"
        except Exception:  # a group being removed has no state to report
            continue
    return held


def start_monitor(node_id: str, interval: float, plugins: Sequence[str] | None = None,
                  baseline: Sequence[str] | None = None, isolated: bool = True) -> Any:
    """Create (or find) the node's monitor actor; returns its handle. Needs a connected driver. The actor
    answers no calls (its main thread runs the polling loop): read its status with :func:`monitor_status`,
    wait for it to be up with :func:`wait_for_monitor`.

    ``interval``: seconds between polls, within :mod:`rayaccel.support.monitor_interval`'s bounds;
    ``isolated``: the hooks run in worker processes (default) rather than in the actor's threads.
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
    ).remote(node_id, interval, list(plugins) if plugins is not None else None, list(baseline or ()), isolated)


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
