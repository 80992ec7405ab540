"""Cordons: a failed device taken out of scheduling on its node, and given back when it recovers.

A cordon is two things kept together: a cordon claim in the node's claims table (:mod:`rayaccel.ray.claims`),
which keeps every later task off the device's units, and one detached single-bundle placement group pinned
to the node that holds as many of the family's tokens, so Ray offers that many fewer. A zero-CPU task inside
the group tags the claim with the group's tokens (claims still holding them are over and dropped). Running
work finishes; the family's other devices keep taking work. A partitioned device (MIG) holds nothing itself:
its partitions are cordoned one by one, each in its profile's resource.

Why not drain: Ray 2.60 cannot undo a drain (``DrainRaylet`` has no inverse in the raylet's or the GCS's
services) and refuses to resize unit-instance resources on a live node; a drained node would stay drained
until restarted. The cost of cordoning: a task already running on the failed device keeps it until it ends.

The health monitor (:mod:`rayaccel.ray.monitor`) decides which devices fail; :class:`Cordons` holds this
node's cordons and makes Ray's state follow that decision, poll after poll.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from rayaccel.inventory.health_findings import HealthFinding
from rayaccel.support.raycompat import RAY_NODE_ID_LABEL, unit_request

logger = logging.getLogger("rayaccel.ray.monitor")

#: How many recoveries the monitor's status keeps (the most recent).
RECOVERIES_KEPT = 10


def cordon_name(node_id: str, family: str, device: str) -> str:
    """The name of the placement group holding a cordon's units (a restarted monitor finds it by name)."""
    return f"rayaccel-cordon-{node_id}-{family}-{device}"


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


class Cordons:
    """This node's cordons, one per family and device (two families may report one device id, each under its own
    resource: each is cordoned on its own): made, adopted from an earlier monitor, released.

    ``reconcile`` is what the monitor calls after each poll with the devices failing now; the rest of the
    monitor sees :meth:`pending` (a group not holding its units yet) and :meth:`by_family` (its status)."""

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self._lock = threading.Lock()
        #: (family, device) -> {"family", "message", "group", "units", "error", ...}
        self._cordons: dict[tuple[str, str], dict[str, Any]] = {}

    def reconcile(self, failing: Mapping[str, Sequence[HealthFinding]], family_resources: Mapping[str, str],
                  first: bool) -> tuple[list[str], list[dict[str, Any]]]:
        """Cordon each failing device (device -> its findings, each naming its family) in each family that finds
        it failing, where not cordoned yet or where the last try failed, and release each cordon whose family no
        longer finds its device failing; on the ``first`` poll, first remove what an earlier monitor left for
        devices that are fine now. Returns what could not be done (one line each, again at every poll until
        done) and the recoveries, oldest first."""
        wanted: dict[tuple[str, str], list[HealthFinding]] = {}
        for device, found in failing.items():
            for finding in found:
                wanted.setdefault((finding.family, device), []).append(finding)
        errors: list[str] = []
        if first:
            try:
                self.adopt(set(wanted), family_resources)
            except Exception as e:  # monitoring goes on; an old cordon stays until its device faults again
                logger.warning("rayaccel: could not look for an earlier monitor's cordons: %s", e)
        for (family, device), found in wanted.items():
            kept = self._cordons.get((family, device))
            if kept is None or kept.get("error"):
                error = self.cordon(family, family_resources.get(family, ""), device,
                                    "rayaccel health monitor: " + "; ".join(f.phrase for f in found))
                if error is not None:
                    errors.append(error)
        recovered = [self.release(family, device) for family, device in [k for k in self._cordons if k not in wanted]]
        return errors, recovered

    def cordon(self, family: str, family_resource: str, device: str, message: str) -> str | None:
        """Take exactly the failed device out of scheduling on this node; returns why it could not be (None:
        done, or the node does not offer the device, so nothing of it is held). A cordon that could not be made
        is kept with its error, and :meth:`reconcile` tries it again at the next poll."""
        resource, units = cordon_units(node_placement(), family_resource, device)
        group = tag = error = None
        if units:
            try:  # each step kept as made: a retry finds the group by name, and a release removes it
                group = self._group(family, resource, device, units)
                tag = self._tag(group, resource, device, units)
            except Exception as e:
                error = f"could not cordon {family} device {device}: {type(e).__name__}: {e}"
                logger.warning("rayaccel: could not cordon %s device %s: %s", family, device, e)
        with self._lock:
            earlier = self._cordons.get((family, device))
            self._cordons[(family, device)] = {
                "family": family, "resource": resource, "message": message, "group": group, "tag": tag,
                "units": units, "held": False, "error": error, "at": earlier["at"] if earlier else time.time()}
        logger.warning("%s (cordoning %s unit(s) %s of device %s on node %s)", message, resource, ",".join(units),
                       device, self.node_id)
        return error

    def _group(self, family: str, resource: str, device: str, units: list[str]) -> Any:
        """The cordon's claim, then its placement group (an earlier try's, found by name, or a new one): what
        holds the units in Ray. Raises what Ray raised."""
        from ray.util import placement_group

        from rayaccel.ray.claims import node_claims_table

        node_claims_table().cordon(resource, device, units)
        return _existing_group(cordon_name(self.node_id, family, device)) or placement_group(
            [{resource: float(len(units))}], strategy="STRICT_PACK", name=cordon_name(self.node_id, family, device),
            lifetime="detached", bundle_label_selector=[{RAY_NODE_ID_LABEL: self.node_id}])

    def _tag(self, group: Any, resource: str, device: str, units: list[str]) -> Any:
        """The task in the group that tags the claim with the group's tokens (asking for them as Ray wants a
        family's units asked for: GPU by ``num_gpus``)."""
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        from rayaccel.ray.claims import CORDON_TAG_TASK

        return _tag_task().options(
            name=CORDON_TAG_TASK, num_cpus=0, max_retries=-1, **unit_request(resource, float(len(units))),
            scheduling_strategy=PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=0),
        ).remote(resource, device)

    def release(self, family: str, device: str) -> dict[str, Any]:
        """Give the device's units in ``family`` back to scheduling; returns the recovery as the status lists it."""
        with self._lock:  # listed as cordoned until released; then, at once, as recovered
            cordon = self._cordons[(family, device)]
        try:
            self._let_go(cordon["resource"], device, cordon["group"], cordon["tag"])
        except Exception as e:
            logger.warning("rayaccel: could not remove the cordon of %s device %s: %s", family, device, e)
        with self._lock:
            self._cordons.pop((family, device), None)
        recovered = {"family": family, "device": device, "at": time.time(),
                     "message": f"{family}: device {device} has no fatal reason left; its units on this node "
                                f"take work again (was: {cordon['message']})"}
        logger.warning("%s", recovered["message"])
        return recovered

    def _let_go(self, resource: str, device: str, group: Any, tag: Any) -> None:
        """The claim removed first (the group's tokens, once free, are then ordinary tokens), then the tag task
        still waiting for the group, then the group."""
        import ray
        from ray.util import remove_placement_group

        from rayaccel.ray.claims import node_claims_table

        node_claims_table().uncordon(resource, device)
        if tag is not None:
            ray.cancel(tag)
        if group is not None:
            remove_placement_group(group)

    def adopt(self, failing: set[tuple[str, str]], family_resources: Mapping[str, str]) -> None:
        """A restarted monitor removes the cordons an earlier one left (claims and groups) for devices that
        are fine now (``failing``: the (family, device) pairs failing now)."""
        from ray.util import remove_placement_group

        from rayaccel.ray.claims import node_claims_table

        table = node_claims_table()
        placements = node_placement()
        for family, family_resource in family_resources.items():
            # The family's resource (cordons per device) and its partition profiles' (cordons per partition).
            for resource, placement in placements.items():
                if resource != family_resource and not resource.startswith(family_resource + "_"):
                    continue
                for device in table.cordons(resource):
                    if (family, device) not in failing:
                        table.uncordon(resource, device)
                for device in placement.device_units if resource == family_resource else placement.units:
                    group = _existing_group(cordon_name(self.node_id, family, device))
                    if group is not None and (family, device) not in failing:
                        remove_placement_group(group)

    def pending(self) -> bool:
        """Whether a cordon's placement group may not hold its units yet."""
        with self._lock:
            return any(c["group"] is not None and not c["held"] for c in self._cordons.values())

    def by_family(self) -> dict[str, dict[str, Any]]:
        """Family -> its cordoned devices' messages, units (cordoned) and held (units Ray holds for the cordons,
        so it offers that many fewer), and per device the same. Asks Ray about groups not seen holding yet."""
        with self._lock:
            waiting = [c["group"] for c in self._cordons.values() if c["group"] is not None and not c["held"]]
        held = {id(group) for group in waiting if _held([group])}  # a group once created holds until removed
        with self._lock:
            for cordon in self._cordons.values():
                cordon["held"] = cordon["held"] or id(cordon["group"]) in held
            cordons = {key: dict(c) for key, c in self._cordons.items()}
        families: dict[str, dict[str, Any]] = {}
        for (_, device), cordon in sorted(cordons.items(), key=lambda item: item[1]["at"]):
            units = len(cordon["units"]) if cordon["held"] else 0
            entry = families.setdefault(cordon["family"], {"message": "", "at": cordon["at"], "units": 0, "held": 0,
                                                           "devices": {}})
            entry["message"] = "; ".join(filter(None, [entry["message"], cordon["message"]]))
            entry["units"] += len(cordon["units"])
            entry["held"] += units
            entry["devices"][device] = {"units": list(cordon["units"]), "held": units, "message": cordon["message"],
                                        "error": cordon["error"]}
        return families


def _existing_group(name: str) -> Any:
    """The live placement group of that name, if any. GCS still answers a name with the group an earlier
    monitor removed (state REMOVED): adopting that one would leave the new cordon holding nothing, forever."""
    from ray.util import get_placement_group, placement_group_table

    try:
        group = get_placement_group(name)
    except ValueError:
        return None
    try:
        state = placement_group_table(group).get("state")
    except Exception:  # a group being removed has no state to report
        return None
    return None if state in (None, "REMOVED") else group


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
