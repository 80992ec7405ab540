"""The per-node health monitor: a detached Ray actor pinned to its node.

Every ``interval`` seconds it builds the node's inventory on the node itself (the real host, or the
simulated one named by the node's ``RAYACCEL_SIMULATE`` and fault file, which the actor's worker inherits
from the raylet), and

- publishes each device's health and the plugins' metrics as ``ray.util.metrics`` gauges, so every
  vendor's numbers reach Ray's Prometheus endpoint and dashboard, not only NVIDIA's, AMD's and TPU's:
  ``rayaccel_device_health`` (0 healthy, 1 unknown, 2 degraded, 3 unhealthy; tags node, family, device),
  ``rayaccel_device_metric`` (tags node, family, device, metric, unit) and
  ``rayaccel_schedulable_units`` (tags node, family);
- when a device turns unhealthy for a fatal reason, asks GCS to drain the node (reason PREEMPTION, which
  the raylet cannot reject, no deadline) with a message naming the device and the code: no new work
  lands there, running work finishes.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

from rayaccel.records import HEALTH_ORDER, NodeInventory

logger = logging.getLogger("rayaccel.ray.monitor")

NAMESPACE = "rayaccel"
#: Devices missing from discovery that were there before are reported with this code.
LOST_CODE = "device-lost"


def monitor_name(node_id: str) -> str:
    return f"rayaccel-health-{node_id}"


def fatal_findings(inventory: NodeInventory, baseline: set[str]) -> list[str]:
    """One phrase per device that is unhealthy for a fatal reason and was not already bad at start."""
    findings = []
    for family in inventory.families:
        for report in family.health:
            if report.state != "unhealthy" or report.device in baseline:
                continue
            for reason in report.reasons:
                if reason.fatal:
                    findings.append(f"{family.family.name} device {report.device} is unhealthy "
                                    f"({reason.code}: {reason.message})")
    return findings


def vanished_findings(seen: dict[str, str], present: set[str], baseline: set[str]) -> list[str]:
    """One phrase per device seen earlier that discovery no longer lists and that was fine at start.

    A device that stops being enumerated fell off the bus (what XID 79 reports, when the driver still
    answers): as fatal as any reason a plugin marks fatal.
    """
    return [f"{family} device {device} is no longer enumerated ({LOST_CODE})"
            for device, family in seen.items() if device not in present and device not in baseline]


class HealthMonitor:
    """The actor's class (wrapped by ``ray.remote`` in :func:`start_monitor`)."""

    def __init__(self, node_id: str, interval: float, plugins: Sequence[str] | None = None,
                 baseline: Sequence[str] = ()) -> None:
        from ray.util.metrics import Gauge

        from rayaccel.inventory import InventoryBuilder, host_from_env
        from rayaccel.manager import PluginManager
        from rayaccel.ray.node import NODE_PLUGINS_ENV

        if plugins is None and NODE_PLUGINS_ENV in os.environ:  # the node's plugins (from the raylet's env)
            plugins = [p for p in os.environ[NODE_PLUGINS_ENV].split(",") if p]
        self.node_id = node_id
        self.interval = float(interval)
        self._manager = PluginManager()
        self._host = host_from_env(self._manager)
        self._builder = InventoryBuilder(self._manager, list(plugins) if plugins is not None else None)
        self._baseline = set(baseline)
        self._seen: dict[str, str] = {}  # device id -> family, for devices that later vanish
        self._health = Gauge("rayaccel_device_health", "Accelerator device health: 0 healthy, 1 unknown, "
                             "2 degraded, 3 unhealthy", tag_keys=("node", "family", "device"))
        self._metric = Gauge("rayaccel_device_metric", "Accelerator metric reported by the device's plugin",
                             tag_keys=("node", "family", "device", "metric", "unit"))
        self._units = Gauge("rayaccel_schedulable_units", "Healthy schedulable units of a family on the node",
                            tag_keys=("node", "family"))
        self._lock = threading.Lock()
        self._status: dict[str, Any] = {"node_id": node_id, "polls": 0, "drained": None, "health": {},
                                        "error": None}
        self._stop = threading.Event()
        self.poll()
        self._thread = threading.Thread(target=self._loop, name="rayaccel-health-monitor", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.poll()
            except Exception as e:  # keep monitoring; the status says what went wrong
                logger.exception("rayaccel health poll failed")
                with self._lock:
                    self._status["error"] = f"{type(e).__name__}: {e}"

    def poll(self) -> dict[str, Any]:
        inventory = self._builder.build(self._host, with_metrics=True)
        health: dict[str, str] = {}
        for family in inventory.families:
            name = family.family.name
            self._units.set(len(family.schedulable_units), tags={"node": self.node_id, "family": name})
            for report in family.health:
                self._seen.setdefault(report.device, name)
                health[report.device] = report.state
                self._health.set(HEALTH_ORDER[report.state],
                                 tags={"node": self.node_id, "family": name, "device": report.device})
            for sample in family.metrics:
                self._metric.set(sample.value, tags={"node": self.node_id, "family": name, "device": sample.device,
                                                     "metric": sample.name, "unit": sample.unit})
        vanished = vanished_findings(self._seen, set(health), self._baseline)
        for device, family_name in self._seen.items():
            if device not in health:
                health[device] = "unhealthy"
                self._health.set(HEALTH_ORDER["unhealthy"],
                                 tags={"node": self.node_id, "family": family_name, "device": device})
        if not self._status["polls"] and not self._baseline:
            # Started without the node's start-up inventory: what is bad now was bad at start.
            self._baseline = {d for d, state in health.items() if state == "unhealthy"}
        findings = fatal_findings(inventory, self._baseline) + vanished
        with self._lock:
            self._status["polls"] += 1
            self._status["health"] = health
            self._status["error"] = None
            drained = self._status["drained"]
        if findings and drained is None:
            self._drain("rayaccel health monitor: " + "; ".join(findings))
        return self.status()

    def _drain(self, message: str) -> None:
        import ray._private.worker
        from ray.core.generated import autoscaler_pb2 as protos

        worker: Any = ray._private.worker.global_worker
        autoscaler_pb2: Any = protos
        reasons = autoscaler_pb2.DrainNodeReason
        # PREEMPTION: the raylet cannot reject it (IDLE_TERMINATION is refused on a busy node); no deadline.
        accepted, rejection = worker.gcs_client.drain_node(
            self.node_id, reasons.Value("DRAIN_NODE_REASON_PREEMPTION"), message, 0)
        with self._lock:
            if accepted:
                self._status["drained"] = {"message": message, "at": time.time()}
            else:
                self._status["error"] = f"drain request rejected: {rejection}"
        logger.warning("%s (drain %s)", message, "accepted" if accepted else f"rejected: {rejection}")

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {**self._status, "health": dict(self._status["health"])}

    def stop(self) -> None:
        self._stop.set()


def start_monitor(node_id: str, interval: float, plugins: Sequence[str] | None = None,
                  baseline: Sequence[str] | None = None) -> Any:
    """Create (or find) the node's monitor actor; returns its handle. Needs a connected driver."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    if baseline is None:
        from rayaccel.ray.driver import node_configs

        config = node_configs().get(node_id)
        baseline = [h.device for f in config.inventory.families for h in f.health
                    if h.state == "unhealthy"] if config else []
    actor_class = ray.remote(HealthMonitor)
    return actor_class.options(
        name=monitor_name(node_id), namespace=NAMESPACE, lifetime="detached", get_if_exists=True,
        num_cpus=0, max_restarts=3, max_concurrency=2,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
    ).remote(node_id, interval, list(plugins) if plugins is not None else None, list(baseline))


def get_monitor(node_id: str) -> Any:
    import ray

    return ray.get_actor(monitor_name(node_id), namespace=NAMESPACE)


def draining_node_ids() -> set[str]:
    """Hex ids of the nodes GCS is draining (needs a connected driver)."""
    import ray._private.state

    return set(ray._private.state.state.get_draining_nodes())
