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
from typing import Any

from rayaccel.errors import RayaccelError
from rayaccel.records import NodeInventory
from rayaccel.topology import best_connected_subset

DOMAIN_LABEL = "rayaccel.io/scale-up-domain"
DOMAIN_KIND_LABEL = "rayaccel.io/scale-up-domain-kind"
TPU_SLICE_LABEL = "ray.io/tpu-slice-name"
TPU_WORKER_LABEL = "ray.io/tpu-worker-id"


def domain_bundle_selectors(n_bundles: int, domain: str | None = None, tpu_slice: str | None = None,
                            ) -> list[dict[str, str]]:
    """One label selector per bundle keeping all of them inside one domain (pure; tested directly)."""
    if n_bundles < 1:
        raise RayaccelError("a placement group needs at least one bundle")
    if tpu_slice is not None:
        rest = {TPU_SLICE_LABEL: tpu_slice}
        return [{**rest, TPU_WORKER_LABEL: "0"}] + [dict(rest) for _ in range(n_bundles - 1)]
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
                         nodes: Sequence[Mapping[str, Any]] | None = None) -> tuple[str, str | None]:
    """A domain of the running cluster whose nodes together hold the bundles: (domain id, TPU slice name
    or None). ``nodes`` defaults to ``ray.nodes()``; draining and dead nodes are skipped."""
    if nodes is None:
        import ray

        from rayaccel.ray.monitor import draining_node_ids

        draining = draining_node_ids()
        list_nodes: Callable[[], list[dict[str, Any]]] = ray.nodes
        nodes = [n for n in list_nodes() if n.get("Alive") and n.get("NodeID") not in draining]
    capacity: dict[str, dict[str, float]] = {}
    slices: dict[str, str | None] = {}
    kinds: dict[str, str | None] = {}
    for node in nodes:
        labels = node.get("Labels") or {}
        domain = labels.get(DOMAIN_LABEL)
        if not domain:
            continue
        total = capacity.setdefault(domain, {})
        for name, amount in (node.get("Resources") or {}).items():
            total[name] = total.get(name, 0.0) + float(amount)
        slices.setdefault(domain, labels.get(TPU_SLICE_LABEL))
        kinds.setdefault(domain, labels.get(DOMAIN_KIND_LABEL))
    for domain in sorted(capacity):
        if (kind is None or kinds[domain] == kind) and _fits(capacity[domain], bundles):
            return domain, slices[domain] if kinds[domain] == "tpu-slice" else None
    known = ", ".join(f"{d} ({kinds[d]})" for d in sorted(capacity)) or "none"
    raise RayaccelError(f"no scale-up domain{f' of kind {kind}' if kind else ''} has room for bundles "
                        f"{list(bundles)}; domains in the cluster: {known}")


def scale_up_domain_placement_group(bundles: Sequence[Mapping[str, float]], domain: str | None = None, *,
                                    tpu_slice: str | None = None, kind: str | None = None,
                                    strategy: str = "PACK", **placement_group_kwargs: Any) -> Any:
    """``ray.util.placement_group`` whose bundles all land in one scale-up domain.

    Give ``domain`` (a ``rayaccel.io/scale-up-domain`` value) or ``tpu_slice`` (a
    ``ray.io/tpu-slice-name``; bundle 0 then goes to worker 0); with neither, the first domain of the
    running cluster (of ``kind``, if given) that can hold all bundles is chosen.
    """
    from ray.util import placement_group

    if domain is None and tpu_slice is None:
        domain, tpu_slice = find_scale_up_domain(bundles, kind)
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
