"""Hardware-aware placement on top of Ray's label scheduling.

A scale-up domain (an NVLink clique, a TPU slice, a Trn2 UltraServer) is published on every node of it
as ``rayaccel.io/scale-up-domain=<id>`` (with ``-kind`` and ``-size``); TPU slices also carry Ray's own
``ray.io/tpu-slice-name`` and ``ray.io/tpu-worker-id``. A placement group built here puts every bundle
inside one domain with ``bundle_label_selector``, and for a TPU slice bundle 0 on worker 0, where JAX's
coordinator runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rayaccel.errors import RayaccelError
from rayaccel.inventory.topology import best_connected_subset
from rayaccel.raycompat import RAY_TPU_SLICE_LABEL, RAY_TPU_WORKER_LABEL
from rayaccel.records import NodeInventory
from rayaccel.reporting import plain_int

DOMAIN_LABEL = "rayaccel.io/scale-up-domain"
DOMAIN_KIND_LABEL = "rayaccel.io/scale-up-domain-kind"
DOMAIN_SIZE_LABEL = "rayaccel.io/scale-up-domain-size"
COUNT_LABEL = "rayaccel.io/count"


@dataclass(frozen=True)
class ScaleUpDomain:
    """One scale-up domain as the whole cluster sees it (every node that publishes its id)."""

    id: str
    kind: str | None
    nodes: tuple[str, ...]
    #: Devices in the domain: the largest size a node declares, or the devices its nodes hold together when
    #: that is more. A node sees only its own part of a rack-scale domain (a GB200 tray: 4 GPUs of the
    #: NVL72's 72), so without an operator-given size each declares its own count; adding them up is the
    #: cluster-wide extent.
    size: int
    #: Every node's resources added up.
    capacity: dict[str, float] = field(default_factory=dict)
    tpu_slice: str | None = None


def _int_label(labels: Mapping[str, str], key: str) -> int:
    return plain_int(str(labels.get(key, ""))) or 0


def scale_up_domains(nodes: Sequence[Mapping[str, Any]] | None = None) -> dict[str, ScaleUpDomain]:
    """The cluster's scale-up domains by id, aggregated across nodes (domain id -> nodes -> size).

    ``nodes`` is ``ray.nodes()``'s shape (``NodeID``, ``Labels``, ``Resources``); by default the live
    cluster's, without draining and dead nodes.
    """
    if nodes is None:
        nodes = _live_nodes()
    members: dict[str, list[Mapping[str, Any]]] = {}
    for node in nodes:
        domain = (node.get("Labels") or {}).get(DOMAIN_LABEL)
        if domain:
            members.setdefault(str(domain), []).append(node)
    domains = {}
    for domain, group in members.items():
        labels = [node.get("Labels") or {} for node in group]
        capacity: dict[str, float] = {}
        for node in group:
            for name, amount in (node.get("Resources") or {}).items():
                capacity[name] = capacity.get(name, 0.0) + float(amount)
        declared = max(_int_label(lb, DOMAIN_SIZE_LABEL) for lb in labels)
        held = sum(_int_label(lb, COUNT_LABEL) for lb in labels)
        kind = next((lb.get(DOMAIN_KIND_LABEL) for lb in labels if lb.get(DOMAIN_KIND_LABEL)), None)
        domains[domain] = ScaleUpDomain(
            id=domain, kind=kind, nodes=tuple(str(node.get("NodeID", "")) for node in group),
            size=max(declared, held, 1), capacity=capacity,
            tpu_slice=next((lb.get(RAY_TPU_SLICE_LABEL) for lb in labels if lb.get(RAY_TPU_SLICE_LABEL)), None))
    return domains


def _live_nodes() -> list[dict[str, Any]]:
    import ray

    from rayaccel.ray.monitor import draining_node_ids

    draining = draining_node_ids()
    list_nodes: Callable[[], list[dict[str, Any]]] = ray.nodes
    return [n for n in list_nodes() if n.get("Alive") and n.get("NodeID") not in draining]


def domain_bundle_selectors(n_bundles: int, domain: str | None = None, tpu_slice: str | None = None,
                            ) -> list[dict[str, str]]:
    """One label selector per bundle keeping all of them inside one domain (pure; tested directly)."""
    if n_bundles < 1:
        raise RayaccelError("a placement group needs at least one bundle")
    if tpu_slice is not None:
        rest = {RAY_TPU_SLICE_LABEL: tpu_slice}
        return [{**rest, RAY_TPU_WORKER_LABEL: "0"}] + [dict(rest) for _ in range(n_bundles - 1)]
    if domain is None:
        raise RayaccelError("name the scale-up domain (domain=...) or the TPU slice (tpu_slice=...)")
    return [{DOMAIN_LABEL: domain} for _ in range(n_bundles)]


def _fits(capacity: Mapping[str, float], bundles: Sequence[Mapping[str, float]]) -> bool:
    need: dict[str, float] = {}
    for bundle in bundles:
        for name, amount in bundle.items():
            need[name] = need.get(name, 0.0) + amount
    return all(capacity.get(name, 0.0) >= amount for name, amount in need.items())


def find_scale_up_domain(bundles: Sequence[Mapping[str, float]], kind: str | None = None,
                         nodes: Sequence[Mapping[str, Any]] | None = None,
                         min_size: int | None = None) -> tuple[str, str | None]:
    """A domain of the running cluster whose nodes together hold the bundles: (domain id, TPU slice name
    or None). ``nodes`` defaults to ``ray.nodes()``; draining and dead nodes are skipped. Domains are the
    cluster-wide view of :func:`scale_up_domains`; ``min_size`` asks for a domain of at least that many
    devices (an NVL72 rack rather than a lone tray)."""
    domains = scale_up_domains(nodes)
    for domain in sorted(domains):
        found = domains[domain]
        if kind is not None and found.kind != kind:
            continue
        if min_size is not None and found.size < min_size:
            continue
        if _fits(found.capacity, bundles):
            return domain, found.tpu_slice if found.kind == "tpu-slice" else None
    known = ", ".join(f"{d} ({domains[d].kind}, {domains[d].size} devices on {len(domains[d].nodes)} nodes)"
                      for d in sorted(domains)) or "none"
    wanted = (f" of kind {kind}" if kind else "") + (f" of at least {min_size} devices" if min_size else "")
    raise RayaccelError(f"no scale-up domain{wanted} has room for bundles {list(bundles)}; "
                        f"domains in the cluster: {known}")


def scale_up_domain_placement_group(bundles: Sequence[Mapping[str, float]], domain: str | None = None, *,
                                    tpu_slice: str | None = None, kind: str | None = None,
                                    min_size: int | None = None,
                                    strategy: str = "PACK", **placement_group_kwargs: Any) -> Any:
    """``ray.util.placement_group`` whose bundles all land in one scale-up domain.

    Give ``domain`` (a ``rayaccel.io/scale-up-domain`` value) or ``tpu_slice`` (a
    ``ray.io/tpu-slice-name``; bundle 0 then goes to worker 0); with neither, the first domain of the
    running cluster (of ``kind`` and at least ``min_size`` devices cluster-wide, if given) that can hold
    all bundles is chosen.
    """
    from ray.util import placement_group

    if domain is None and tpu_slice is None:
        domain, tpu_slice = find_scale_up_domain(bundles, kind, min_size=min_size)
    selectors = domain_bundle_selectors(len(bundles), domain, tpu_slice)
    return placement_group([dict(b) for b in bundles], strategy=strategy, bundle_label_selector=selectors,
                           **placement_group_kwargs)


def best_connected_units(inventory: NodeInventory, family: str, k: int) -> list[str]:
    """The unit ids of the best-connected healthy devices of a family for a k-unit request.

    With one unit per device that is the k devices with the most bandwidth among them (a 4-GPU request on
    two NVLink islands gets one island); with several units per device, the fewest best-connected
    devices that hold k units.
    """
    found = inventory.family(family)
    if found is None:
        raise RayaccelError(f"the node has no {family!r} devices; families: "
                            f"{', '.join(f.family.name for f in inventory.families) or 'none'}")
    schedulable = set(found.schedulable_units)
    healthy = [d for d in found.devices if any(u in schedulable for u in d.unit_ids)]
    if k < 1 or k > len(schedulable):
        raise RayaccelError(f"cannot choose {k} units of {family}: the node has {len(schedulable)} schedulable")
    per_device = max(len(d.unit_ids) for d in healthy)
    devices_needed = min(len(healthy), math.ceil(k / per_device))
    chosen = best_connected_subset(healthy, found.topology.links, devices_needed)
    by_id = {d.id: d for d in healthy}
    units = [u for device_id in chosen for u in by_id[device_id].unit_ids if u in schedulable]
    return units[:k]
