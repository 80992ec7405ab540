"""The inventory as Prometheus series: one metric per quantity, in base units, the same names for every vendor.

The health monitor publishes these through ``ray.util.metrics``; the node's metrics agent serves them with
Ray's ``ray_`` prefix (``ray_rayaccel_device_power_watts``). Names follow Prometheus' naming guide
(https://prometheus.io/docs/practices/naming/): a unit suffix in plural base units (``_bytes``, ``_watts``,
``_celsius``, ``_ratio`` for 0-1 fractions), ``_total`` for counters, and no quantity hidden in a label.
Plugins report utilisation in percent (``STANDARD_METRICS``); it becomes a 0-1 ratio here. Interconnect
throughput is what the plugins measure, a rate, so it is a gauge in ``_bytes_per_second``; cumulative ECC
counts are counters. A vendor-specific metric ``vendor.<name>`` in ``<unit>`` becomes
``rayaccel_device_vendor_<name>_<unit>`` (percent as ``_ratio``). docs/observability.md lists them all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from rayaccel.records import HEALTH_ORDER, FamilyInventory, MetricSample, NodeInventory

#: What Ray's metrics agent puts before every application metric's name.
EXPORT_PREFIX = "ray_"

DEVICE_LABELS = ("node", "family", "device")
LINK_LABELS = ("node", "family", "device", "peer", "kind")

MetricKind = Literal["gauge", "counter"]


@dataclass(frozen=True)
class MetricFamily:
    """One Prometheus metric: its name as registered with Ray (Ray adds :data:`EXPORT_PREFIX`), type, help, unit."""

    name: str
    kind: MetricKind
    help: str
    unit: str
    labels: tuple[str, ...] = DEVICE_LABELS

    @property
    def exported(self) -> str:
        return EXPORT_PREFIX + self.name


@dataclass(frozen=True)
class Series:
    """One series' current value. For a counter, ``value`` is the running count the device reports."""

    metric: MetricFamily
    labels: dict[str, str] = field(hash=False)
    value: float


HEALTH = MetricFamily("rayaccel_device_health", "gauge",
                      "Accelerator device health: 0 healthy, 1 unknown, 2 degraded, 3 unhealthy", "")
HEALTH_REASON = MetricFamily(
    "rayaccel_device_health_reason", "gauge",
    "A reason a device reports now, by the action taken on it (drain, degrade, ignore, or count: a drain-after rule "
    "still counting; rule 'plugin': no policy rule, the plugin's classification); value: its occurrences within "
    "the rule's window (1 without one)", "", (*DEVICE_LABELS, "reason", "rule", "action"))
FAMILY_DRAINED = MetricFamily(
    "rayaccel_family_drained", "gauge",
    "1 when no device of the family on the node takes work any more (every one drained or unhealthy: replace the "
    "node), else 0", "", ("node", "family"))
INFO = MetricFamily("rayaccel_device_info", "gauge", "Accelerator device identity (value 1): SKU and product name",
                    "", (*DEVICE_LABELS, "sku", "product"))
SCHEDULABLE_UNITS = MetricFamily("rayaccel_schedulable_units", "gauge",
                                 "Healthy schedulable units of a family on the node", "", ("node", "family"))
SCHEDULABLE_PARTITIONS = MetricFamily(
    "rayaccel_schedulable_partitions", "gauge",
    "Healthy schedulable partitions of one profile on the node, by its Ray resource (GPU_MIG_1g.10gb)", "",
    ("node", "family", "resource"))
LINK_BANDWIDTH = MetricFamily("rayaccel_link_bandwidth_bytes_per_second", "gauge",
                              "Unidirectional bandwidth of a device-to-device link (all lanes), by link kind",
                              "bytes_per_second", LINK_LABELS)

#: The standard metrics a plugin reports (``rayaccel.records.STANDARD_METRICS``): the Prometheus metric each
#: becomes and the factor from the plugin's unit to the metric's base unit.
STANDARD: dict[str, tuple[MetricFamily, float]] = {
    "utilization": (MetricFamily("rayaccel_device_utilization_ratio", "gauge",
                                 "Fraction of time the device was busy (0-1)", "ratio"), 0.01),
    "memory_used": (MetricFamily("rayaccel_device_memory_used_bytes", "gauge",
                                 "Device memory in use", "bytes"), 1.0),
    "memory_total": (MetricFamily("rayaccel_device_memory_capacity_bytes", "gauge",
                                  "Device memory capacity", "bytes"), 1.0),
    "power": (MetricFamily("rayaccel_device_power_watts", "gauge", "Device power draw", "watts"), 1.0),
    "temperature": (MetricFamily("rayaccel_device_temperature_celsius", "gauge",
                                 "Device temperature", "celsius"), 1.0),
    "interconnect_tx": (MetricFamily("rayaccel_device_interconnect_transmit_bytes_per_second", "gauge",
                                     "Device interconnect (NVLink, xGMI, ICI, ...) send throughput",
                                     "bytes_per_second"), 1.0),
    "interconnect_rx": (MetricFamily("rayaccel_device_interconnect_receive_bytes_per_second", "gauge",
                                     "Device interconnect (NVLink, xGMI, ICI, ...) receive throughput",
                                     "bytes_per_second"), 1.0),
    "ecc_errors_corrected": (MetricFamily("rayaccel_device_ecc_errors_corrected_total", "counter",
                                          "Corrected ECC errors the device counted", ""), 1.0),
    "ecc_errors_uncorrected": (MetricFamily("rayaccel_device_ecc_errors_uncorrected_total", "counter",
                                            "Uncorrected ECC errors the device counted", ""), 1.0),
}

#: Units a vendor metric may name and (suffix, factor) in base units; any other unit is kept as its suffix.
VENDOR_UNITS: dict[str, tuple[str, float]] = {
    "percent": ("ratio", 0.01), "ratio": ("ratio", 1.0), "bytes": ("bytes", 1.0), "watts": ("watts", 1.0),
    "celsius": ("celsius", 1.0), "seconds": ("seconds", 1.0), "milliseconds": ("seconds", 0.001),
    "bytes_per_second": ("bytes_per_second", 1.0), "hertz": ("hertz", 1.0), "count": ("", 1.0),
}

_NOT_NAME = re.compile(r"[^a-z0-9]+")


def _snake(text: str) -> str:
    return _NOT_NAME.sub("_", text.lower()).strip("_")


def vendor_metric(name: str, unit: str) -> tuple[MetricFamily, float]:
    """The gauge a plugin's ``vendor.<name>`` metric in ``unit`` becomes, and the factor to its base unit."""
    suffix, factor = VENDOR_UNITS.get(unit, (_snake(unit), 1.0))
    base = _snake(name.removeprefix("vendor.")) or "metric"
    metric_name = "_".join(part for part in ("rayaccel_device_vendor", base, suffix) if part)
    return MetricFamily(metric_name, "gauge", f"Vendor-specific metric {name!r} reported by the device's plugin",
                        suffix), factor


def sample_series(node: str, family: str, sample: MetricSample) -> Series:
    """One plugin metric sample as the series it is published under."""
    metric, factor = STANDARD.get(sample.name) or vendor_metric(sample.name, sample.unit)
    return Series(metric, {"node": node, "family": family, "device": sample.device}, sample.value * factor)


def node_series(inventory: NodeInventory, node: str) -> list[Series]:
    """Every series a node publishes for one poll of its inventory (metrics included when it was built with them)."""
    series: list[Series] = []
    for fam in inventory.families:
        name = fam.family.name
        series.append(Series(SCHEDULABLE_UNITS, {"node": node, "family": name}, float(len(fam.schedulable_units))))
        series.append(Series(FAMILY_DRAINED, {"node": node, "family": name},
                             float(bool(fam.devices) and not fam.schedulable_units and not fam.partition_units)))
        for resource, partition_ids in sorted(fam.partition_units.items()):
            series.append(Series(SCHEDULABLE_PARTITIONS, {"node": node, "family": name, "resource": resource},
                                 float(len(partition_ids))))
        for dev in fam.devices:
            series.append(Series(INFO, {"node": node, "family": name, "device": dev.id, "sku": dev.sku or "",
                                        "product": dev.product_name or ""}, 1.0))
        for report in fam.health:
            series.append(Series(HEALTH, {"node": node, "family": name, "device": report.device},
                                 float(HEALTH_ORDER[report.state])))
        series.extend(reason_series(node, fam))
        for link in fam.topology.links:
            if link.bandwidth_gbps is not None:
                series.append(Series(LINK_BANDWIDTH, {"node": node, "family": name, "device": link.a,
                                                      "peer": link.b, "kind": link.kind},
                                     link.bandwidth_gbps * 1e9))
        series.extend(sample_series(node, name, sample) for sample in fam.metrics)
    return series


def reason_series(node: str, family: FamilyInventory) -> list[Series]:
    """One series per reason a device reports: the health policy's decisions, or without a policy the plugin's
    classification (a fatal reason of an unhealthy device: drain, else degrade) of every device not healthy."""
    name = family.family.name
    if family.decisions:
        return [Series(HEALTH_REASON, {"node": node, "family": name, "device": d.device, "reason": d.code,
                                       "rule": d.rule, "action": d.action}, float(d.occurrences))
                for d in family.decisions]
    return [Series(HEALTH_REASON, {"node": node, "family": name, "device": report.device, "reason": reason.code,
                                   "rule": "plugin", "action": "drain" if report.drains(reason) else "degrade"},
                   1.0)
            for report in family.health if report.state in ("degraded", "unhealthy") for reason in report.reasons]


def counter_increment(previous: float | None, current: float) -> float:
    """How much a counter publishing a device's running count grows when the count goes from previous to current.

    The first reading counts in full, so the counter equals the device's count; a count that went down
    (the driver reset it) starts over, as Prometheus' ``rate()`` expects of a counter reset.
    """
    if previous is None or current < previous:
        return max(current, 0.0)
    return current - previous


def all_metric_families() -> list[MetricFamily]:
    """The fixed metrics (vendor-specific ones come from the plugins), in the order docs list them."""
    return [HEALTH, HEALTH_REASON, FAMILY_DRAINED, INFO, SCHEDULABLE_UNITS, SCHEDULABLE_PARTITIONS, LINK_BANDWIDTH,
            *(m for m, _ in STANDARD.values())]
