"""What the health monitor watches: each poll's device health on the node, and the devices failing now.

A device fails when it is unhealthy for a fatal reason or stops being enumerated, unless it was already bad
when the node started (the node's baseline) or the node does not offer it (the operator's visible-devices
setting); a partitioned device's failure is each of its partitions' too. Pure bookkeeping over the
inventories it is given: no Ray, no plugin call (:mod:`rayaccel.ray.monitor` builds them, :mod:`rayaccel.ray.
cordons` acts on the failing devices).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from rayaccel.inventory.health_findings import HealthFinding, by_family, fatal_findings, vanished_findings
from rayaccel.records import NodeInventory


@dataclass(frozen=True)
class PollHealth:
    """One poll's health: every device's (and partition's) state, the devices seen before and gone now
    (device, family), and the failing devices with their findings (a cordon is per family and device: two
    families may report one device id, each under its own resource)."""

    health: dict[str, str]
    vanished: list[tuple[str, str]]
    failing: dict[str, list[HealthFinding]]


@dataclass
class HealthWatch:
    """The node's health across polls. ``baseline``: devices unhealthy when the node started (None: not given,
    so the first poll's unhealthy devices are; an empty set says none was); ``offered``: plugin -> the units the
    node offers (empty: all)."""

    baseline: set[str] | None = None
    offered: dict[str, set[str]] = field(default_factory=dict)
    resources: dict[str, str] = field(default_factory=dict)  # family -> its resource name
    #: (family, device) -> None, in the order first seen: the devices each family reported, for those that vanish.
    _seen: dict[tuple[str, str], None] = field(default_factory=dict)
    _not_offered: set[tuple[str, str]] = field(default_factory=set)  # (family, device)
    _partitions: dict[str, list[str]] = field(default_factory=dict)  # partitioned device -> its partitions' ids

    def observe(self, inventory: NodeInventory, first: bool) -> PollHealth:
        """One poll's inventory; ``first``: the monitor's first poll (the baseline, when none was given)."""
        health: dict[str, str] = {}
        present: dict[str, set[str]] = {}  # family -> its devices (and partitions) discovered now
        for family in inventory.families:
            name = family.family.name
            self.resources[name] = family.family.resource_name
            offered = self.offered.get(family.plugin)
            for dev in family.devices:
                if dev.partitions:  # a fault of the device drains every one of its partitions
                    self._partitions[dev.id] = [p.id for p in dev.partitions]
                own = set(dev.unit_ids) | set(self._partitions.get(dev.id, ()))
                if offered is not None and not own & offered:
                    self._not_offered.add((name, dev.id))  # not offered (the operator's visible-devices setting)
            reported: dict[str, str] = {}
            for report in family.health:
                self._seen.setdefault((name, report.device), None)
                reported[report.device] = report.state
            for dev in family.devices:  # a partition without a report of its own is as its device
                for partition in dev.partitions:
                    reported.setdefault(partition.id, reported.get(dev.id, "unknown"))
            for device, state in reported.items():  # a device two families report is as bad as either says
                if health.get(device) != "unhealthy":
                    health[device] = state
            # A partition still discovered is present, reported on its own or not (its fault may have cleared).
            present.setdefault(name, set()).update(
                {h.device for h in family.health} | {p.id for d in family.devices for p in d.partitions})
        vanished = [(device, name) for name, device in self._seen if device not in present.get(name, set())]
        for device, _ in vanished:
            health[device] = "unhealthy"
        if first and self.baseline is None:
            # Started without the node's start-up inventory: what is bad now was bad at start.
            self.baseline = {d for d, state in health.items() if state == "unhealthy"}
        baseline = self.baseline or set()
        lost: list[HealthFinding] = []
        for name in dict.fromkeys(name for name, _ in self._seen):
            seen = {device: family for family, device in self._seen if family == name}
            lost += vanished_findings(seen, present.get(name, set()), baseline)
        findings = [f for f in fatal_findings(inventory, baseline) + lost
                    if (f.family, f.device) not in self._not_offered]
        return PollHealth(health, vanished, self._failing(by_family(findings).values()))

    def _failing(self, findings: Iterable[list[HealthFinding]]) -> dict[str, list[HealthFinding]]:
        failing: dict[str, list[HealthFinding]] = {}
        for found in findings:
            for finding in found:
                failing.setdefault(finding.device, []).append(finding)
                for partition_id in self._partitions.get(finding.device, ()):
                    failing.setdefault(partition_id, []).append(finding)
        return failing


def offered_units() -> dict[str, set[str]] | None:
    """Plugin -> the unit ids this node offers, from the node's env (``RAYACCEL_NODE_UNITS``, set by
    :func:`rayaccel.ray.node_config`); None when not set. Faults of other devices do not cordon, and
    plugins that found no devices when the node started are not polled."""
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


def node_baseline() -> list[str] | None:
    """The devices unhealthy when this node started, from its env (``RAYACCEL_NODE_BASELINE``, set by
    :func:`rayaccel.ray.node_config`: ``[]`` when none was); None when not set or not a JSON list (the monitor's
    first poll is the baseline then)."""
    from rayaccel.ray.node import NODE_BASELINE_ENV

    if NODE_BASELINE_ENV not in os.environ:
        return None
    try:
        data = json.loads(os.environ[NODE_BASELINE_ENV])
    except json.JSONDecodeError:
        return None
    return [str(d) for d in data] if isinstance(data, list) else None
