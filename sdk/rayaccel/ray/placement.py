"""Hardware-aware placement on top of Ray's label scheduling and topology-aware placement groups.

A scale-up domain (an NVLink clique, a TPU slice, a Trn2 UltraServer) is published on every node of it
as ``rayaccel.io/scale-up-domain=<id>`` (with ``-kind`` and ``-size``; a node with several domains numbers
the others, ``rayaccel.io/scale-up-domain-1``, ...); a GPU domain also as Ray's ``ray.io/gpu-domain``, and TPU
slices carry Ray's own ``ray.io/tpu-slice-name`` and ``ray.io/tpu-worker-id``. Each node also offers one count
resource per domain and family, ``<resource>_domain_<id>`` (:func:`rayaccel.ray.claims.domain_resource`).

A group built here without a named domain is Ray's own topology-aware placement group where Ray has it
(2.60: ``topology_strategy={<domain label>: "STRICT_PACK"}``): the GCS chooses the domain when it places the
group, atomically, so two drivers never fill one domain twice, and a group no domain can hold stays pending.
Where Ray cannot (an older Ray; a node with several domains, of which a label names one; ``min_size``), the
driver chooses the domain and pins every bundle to it with ``bundle_label_selector``, asking for that
domain's resource beside the family's. For a TPU slice bundle 0 goes on worker 0, where JAX's coordinator runs.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rayaccel.errors import RayaccelError
from rayaccel.inventory.topology import best_connected_subset
from rayaccel.labels import GPU_DOMAIN_KINDS
from rayaccel.ray.claims import DOMAIN_RESOURCE_INFIX, domain_resource
from rayaccel.ray.group_topology import group_table
from rayaccel.ray.node_view import alive_nodes_versioned
from rayaccel.records import NodeInventory
from rayaccel.reporting import plain_int
from rayaccel.support.raycompat import (
    RAY_ACCELERATOR_RESOURCES,
    RAY_GPU_DOMAIN_LABEL,
    RAY_NODE_ID_LABEL,
    RAY_TOPOLOGY_NODE_KEY,
    RAY_TPU_SLICE_LABEL,
    RAY_TPU_WORKER_LABEL,
    unit_request,
)

logger = logging.getLogger("rayaccel.ray.placement")

DOMAIN_LABEL = "rayaccel.io/scale-up-domain"
DOMAIN_KIND_LABEL = "rayaccel.io/scale-up-domain-kind"
DOMAIN_SIZE_LABEL = "rayaccel.io/scale-up-domain-size"
DOMAIN_COUNT_LABEL = "rayaccel.io/scale-up-domain-count"
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


def node_domains(labels: Mapping[str, str]) -> list[tuple[str, int]]:
    """A node's scale-up domains from its labels: (id, declared size), the largest first."""
    found = []
    if labels.get(DOMAIN_LABEL):
        found.append((str(labels[DOMAIN_LABEL]), _int_label(labels, DOMAIN_SIZE_LABEL)))
    for n in range(1, _int_label(labels, DOMAIN_COUNT_LABEL)):
        if labels.get(f"{DOMAIN_LABEL}-{n}"):
            found.append((str(labels[f"{DOMAIN_LABEL}-{n}"]), _int_label(labels, f"{DOMAIN_LABEL}-{n}-size")))
    return found


def domain_share(node: Mapping[str, Any], domain: str) -> tuple[dict[str, float], int | None]:
    """What one node holds of one of its domains: its resources, each family's count replaced by the
    family's ``<resource>_domain_<id>`` where the node offers one, and those units (None: no such resource)."""
    resources = {str(k): float(v) for k, v in (node.get("Resources") or {}).items()}
    suffix = domain_resource("", domain)
    units = None
    for name, amount in list(resources.items()):
        if name.endswith(suffix) and name.removesuffix(suffix) in resources:
            resources[name.removesuffix(suffix)] = amount
            units = (units or 0) + int(amount)
    return resources, units


def scale_up_domains(nodes: Sequence[Mapping[str, Any]] | None = None) -> dict[str, ScaleUpDomain]:
    """The cluster's scale-up domains by id, aggregated across nodes (domain id -> nodes -> size), each of a
    node's domains on its own: a node with two 3-device islands adds two domains of 3.

    ``nodes`` is ``ray.nodes()``'s shape (``NodeID``, ``Labels``, ``Resources``); by default the live
    cluster's, without draining and dead nodes.
    """
    if nodes is None:
        nodes = _live_nodes()
    members: dict[str, list[Mapping[str, Any]]] = {}
    for node in nodes:
        for domain, _ in node_domains(node.get("Labels") or {}):
            members.setdefault(domain, []).append(node)
    domains = {}
    for domain, group in members.items():
        labels = [node.get("Labels") or {} for node in group]
        capacity: dict[str, float] = {}
        held = 0
        for node in group:
            share, units = domain_share(node, domain)
            for name, amount in share.items():
                capacity[name] = capacity.get(name, 0.0) + amount
            held += units if units is not None else _int_label(node.get("Labels") or {}, COUNT_LABEL)
        declared = max(size for lb in labels for d, size in node_domains(lb) if d == domain)
        kind = next((lb.get(DOMAIN_KIND_LABEL) for lb in labels if lb.get(DOMAIN_KIND_LABEL)), None)
        domains[domain] = ScaleUpDomain(
            id=domain, kind=kind, nodes=tuple(str(node.get("NodeID", "")) for node in group),
            size=max(declared, held, 1), capacity=capacity,
            tpu_slice=next((lb.get(RAY_TPU_SLICE_LABEL) for lb in labels if lb.get(RAY_TPU_SLICE_LABEL)), None))
    return domains


def _live_nodes(without_draining: bool = True) -> list[dict[str, Any]]:
    import ray

    list_nodes: Callable[[], list[dict[str, Any]]] = ray.nodes
    alive = [n for n in list_nodes() if n.get("Alive")]
    if not without_draining:
        return alive
    from rayaccel.ray.monitor import draining_node_ids

    draining = draining_node_ids()
    return [n for n in alive if n.get("NodeID") not in draining]


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


@functools.cache
def ray_has_topology_strategy() -> bool:
    """True when this Ray's ``placement_group`` packs groups into label domains (``topology_strategy``, 2.60);
    asked once per process (the installed Ray does not change under it)."""
    import inspect

    from ray.util import placement_group

    return "topology_strategy" in inspect.signature(placement_group).parameters


def _fitting_domains(bundles: Sequence[Mapping[str, float]], kind: str | None,
                     nodes: Sequence[Mapping[str, Any]]) -> list[ScaleUpDomain]:
    """The domains (of ``kind``) that offer every resource the bundles ask for, whether free or not."""
    names = {name for bundle in bundles for name, amount in bundle.items() if amount > 0}
    return [d for d in scale_up_domains(nodes).values()
            if (kind is None or d.kind == kind) and names <= set(d.capacity)]


def domain_topology_key(bundles: Sequence[Mapping[str, float]], kind: str | None = None,
                        nodes: Sequence[Mapping[str, Any]] | None = None) -> str | None:
    """The node label Ray's ``topology_strategy`` can pack these bundles' domain by (pure given ``nodes``), or
    None where the driver must choose: no domain of ``kind`` offers every resource the bundles ask for, or
    a node among them has several domains (a label names only one of them, so Ray would see one domain where
    there are two). GPU domains: ``ray.io/gpu-domain``; the others: ``rayaccel.io/scale-up-domain``."""
    return _topology_choice(bundles, kind, _live_nodes() if nodes is None else nodes).key


@dataclass(frozen=True)
class _TopologyChoice:
    """How a group without a named domain is handed to Ray's ``topology_strategy``, as the nodes decide it."""

    #: The label Ray packs the domain by (:func:`domain_topology_key`); None: the driver chooses the domain.
    key: str | None
    #: Every domain that offers the bundles is a TPU slice: bundle 0 goes on worker 0 (JAX's coordinator).
    tpu_head: bool = False


def _topology_choice(bundles: Sequence[Mapping[str, float]], kind: str | None,
                     nodes: Sequence[Mapping[str, Any]]) -> _TopologyChoice:
    candidates = _fitting_domains(bundles, kind, nodes)
    members = {n for d in candidates for n in d.nodes}
    if not candidates or any(_int_label(node.get("Labels") or {}, DOMAIN_COUNT_LABEL) > 1 for node in nodes
                             if str(node.get("NodeID", "")) in members):
        return _TopologyChoice(None)
    if all(d.kind in GPU_DOMAIN_KINDS for d in candidates):
        return _TopologyChoice(RAY_GPU_DOMAIN_LABEL)
    return _TopologyChoice(DOMAIN_LABEL, tpu_head=all(d.kind == "tpu-slice" for d in candidates))


#: (the bundles' resource names, kind) -> (the node view's version it was made from, the choice).
_choices: dict[tuple[frozenset[str], str | None], tuple[object, _TopologyChoice]] = {}
#: Shapes remembered at most (a driver asks for a few; one that asks for many starts over).
_CHOICES_KEPT = 64


def _current_topology_choice(bundles: Sequence[Mapping[str, float]], kind: str | None) -> _TopologyChoice:
    """:func:`_topology_choice` on the live nodes, made once per bundle shape and node view: it reads every
    node's labels and resources (O(nodes) of the driver's CPU before each group, ~0.1 ms cold for one node), and
    its answer changes only when a node comes or goes (:func:`rayaccel.ray.node_view.alive_nodes_versioned`)."""
    nodes, version = alive_nodes_versioned()
    if version is None:
        return _topology_choice(bundles, kind, nodes)
    key = (frozenset(name for bundle in bundles for name, amount in bundle.items() if amount > 0), kind)
    kept = _choices.get(key)
    if kept is not None and kept[0] is version:
        return kept[1]
    choice = _topology_choice(bundles, kind, nodes)
    if len(_choices) >= _CHOICES_KEPT:
        _choices.clear()
    _choices[key] = (version, choice)
    return choice


def _topology_group(bundles: Sequence[Mapping[str, float]], choice: _TopologyChoice, strategy: str,
                    kind: str | None, placement_group_kwargs: Mapping[str, Any]) -> Any:
    from ray.util import placement_group

    kwargs = dict(placement_group_kwargs)
    selectors: list[dict[str, str]] = [dict(s) for s in kwargs.get("bundle_label_selector") or [{} for _ in bundles]]
    if choice.tpu_head:
        selectors[0].setdefault(RAY_TPU_WORKER_LABEL, "0")
    if kind is not None:
        # Ray packs by the domain label alone, which several kinds share (ray.io/gpu-domain names an NVLink
        # clique and an NVSwitch box alike): every bundle also asks for the kind, so the GCS picks only its domains.
        for selector in selectors:
            selector.setdefault(DOMAIN_KIND_LABEL, kind)
    if any(selectors):
        kwargs["bundle_label_selector"] = selectors
    return placement_group([dict(b) for b in bundles],
                           topology_strategy={str(choice.key): "STRICT_PACK", RAY_TOPOLOGY_NODE_KEY: strategy},
                           **kwargs)


def scale_up_domain_placement_group(bundles: Sequence[Mapping[str, float]], domain: str | None = None, *,
                                    tpu_slice: str | None = None, kind: str | None = None,
                                    min_size: int | None = None,
                                    strategy: str = "PACK", **placement_group_kwargs: Any) -> Any:
    """``ray.util.placement_group`` whose bundles all land in one scale-up domain.

    Give ``domain`` (a ``rayaccel.io/scale-up-domain`` value) or ``tpu_slice`` (a
    ``ray.io/tpu-slice-name``; bundle 0 then goes to worker 0) to name it. With neither, Ray's GCS chooses a
    domain (of ``kind``, if given) that can hold all bundles when it places the group
    (``topology_strategy={"ray.io/gpu-domain": "STRICT_PACK"}``, or ``rayaccel.io/scale-up-domain`` for TPU
    slices and UltraServers), and the group stays pending while none can; ``strategy`` packs the bundles over
    the domain's nodes. Where Ray cannot choose (:func:`domain_topology_key` is None, an older Ray, or
    ``min_size``: at least that many devices cluster-wide), the first domain of the running cluster that
    holds them now is chosen here.
    """
    from ray.util import placement_group

    if domain is None and tpu_slice is None and min_size is None and ray_has_topology_strategy():
        # Only which label names the domains is decided here (Ray's GCS chooses the domain, and never a
        # draining node): the live nodes' labels and resource names, read again when a node came or went.
        choice = _current_topology_choice(bundles, kind)
        if choice.key is not None:
            return _topology_group(bundles, choice, strategy, kind, placement_group_kwargs)
    if domain is None and tpu_slice is None:
        try:
            domain, tpu_slice = find_scale_up_domain(bundles, kind, min_size=min_size)
        except RayaccelError as e:  # no domain holds it now: the largest one, pending (pending_reason says why)
            domain = _largest_domain(bundles, kind, min_size)
            if domain is None:
                raise
            logger.warning("rayaccel: %s; the placement group waits for domain %s", e, domain)
    nodes = _live_nodes()
    selectors = domain_bundle_selectors(len(bundles), domain, tpu_slice)
    members = sorted(str(n.get("NodeID", "")) for n in nodes
                     if domain in dict(node_domains(n.get("Labels") or {}))) if domain and not tpu_slice else []
    if members and not any((n.get("Labels") or {}).get(DOMAIN_LABEL) == domain for n in nodes):
        # Another domain of its nodes (rayaccel.io/scale-up-domain-<n>): no one label names it; their ids do.
        selectors = [{RAY_NODE_ID_LABEL: f"in({','.join(members)})"} for _ in bundles]
    asked = domain_bundles(bundles, domain or tpu_slice or "", nodes)
    return placement_group(asked, strategy=strategy, bundle_label_selector=selectors, **placement_group_kwargs)


def _largest_domain(bundles: Sequence[Mapping[str, float]], kind: str | None, min_size: int | None) -> str | None:
    names = {name for bundle in bundles for name in bundle}
    domains = [d for d in scale_up_domains().values() if (kind is None or d.kind == kind)
               and (min_size is None or d.size >= min_size)]
    if not domains:
        return None
    return max(domains, key=lambda d: (sum(d.capacity.get(n, 0.0) for n in names), d.size, d.id)).id


def domain_bundles(bundles: Sequence[Mapping[str, float]], domain: str,
                   nodes: Sequence[Mapping[str, Any]]) -> list[dict[str, float]]:
    """The bundles, each also asking for the domain's count resource of every family it asks for, where a
    node offers one (pure; nodes started without per-domain resources leave the bundles as they are)."""
    offered = {str(name) for node in nodes for name in (node.get("Resources") or {})}
    asked = []
    for bundle in bundles:
        extra = {domain_resource(name, domain): amount for name, amount in bundle.items()
                 if domain and domain_resource(name, domain) in offered}
        asked.append({**bundle, **extra})
    return asked


def pending_reason(group: Any, nodes: Sequence[Mapping[str, Any]] | None = None) -> str | None:
    """Why a placement group is not READY (None when it is): the resources its bundles ask for in all that
    no node or domain of the live cluster holds, else that it waits for resources now in use."""
    from ray.util import placement_group_table

    table = placement_group_table(group)
    if table.get("state") == "CREATED":
        return None
    need: dict[str, float] = {}
    for bundle in (table.get("bundles") or {}).values():
        for name, amount in bundle.items():
            need[name] = need.get(name, 0.0) + float(amount)
    nodes = _live_nodes() if nodes is None else nodes
    state = str(table.get("state", "PENDING")).lower()
    gcs_group = group_table(group)
    domain_key = next((key for key in gcs_group.strategy if key != RAY_TOPOLOGY_NODE_KEY), None)
    if domain_key is not None:
        selected = [n for n in nodes if gcs_group.selects(n.get("Labels") or {})]
        return _topology_pending_reason(table, state, domain_key, need, selected)
    have: dict[str, float] = {}
    for node in nodes:
        for name, amount in (node.get("Resources") or {}).items():
            have[name] = have.get(name, 0.0) + float(amount)
    short = [f"{amount:g} {name} (the cluster has {have.get(name, 0.0):g})"
             for name, amount in sorted(need.items()) if have.get(name, 0.0) < amount]
    if short:
        return (f"placement group {table.get('name') or table.get('placement_group_id')} is {state}: its "
                f"{len(table.get('bundles') or {})} bundles ask for " + ", ".join(short) +
                "; no scale-up domain holds that many: ask for fewer, or add a node whose domain does")
    return (f"placement group {table.get('name') or table.get('placement_group_id')} is {state}: the cluster "
            "holds what its bundles ask for, but not free now (in use, or a node is starting)")


def _topology_pending_reason(table: Mapping[str, Any], state: str, key: str, need: Mapping[str, float],
                             nodes: Sequence[Mapping[str, Any]]) -> str:
    """Why a group Ray packs by ``key`` (``topology_strategy``) waits: no domain holds it, or those that do are
    in use."""
    totals: dict[str, dict[str, float]] = {}
    for node in nodes:
        value = (node.get("Labels") or {}).get(key)
        if value:
            held = totals.setdefault(str(value), {})
            for name, amount in (node.get("Resources") or {}).items():
                held[name] = held.get(name, 0.0) + float(amount)
    wanted = ", ".join(f"{amount:g} {name}" for name, amount in sorted(need.items()))
    group = f"placement group {table.get('name') or table.get('placement_group_id')} is {state}"
    holding = sorted(v for v, held in totals.items() if all(held.get(n, 0.0) >= a for n, a in need.items()))
    if holding:
        return (f"{group}: its {len(table.get('bundles') or {})} bundles ask for {wanted} in one {key} domain; "
                f"the domains that hold that many ({', '.join(holding)}) are in use by other tasks, actors or "
                "placement groups, and Ray places it when one is free")
    named = [n for n in sorted(need) if n in RAY_ACCELERATOR_RESOURCES or DOMAIN_RESOURCE_INFIX in n] or sorted(need)
    shares = ", ".join(f"{value} has {', '.join(f'{held.get(n, 0.0):g} {n}' for n in named)}"
                       for value, held in sorted(totals.items())) or f"no node has a {key} label"
    return (f"{group}: its {len(table.get('bundles') or {})} bundles ask for {wanted} in one {key} domain, and "
            f"no scale-up domain holds that many ({shares}): ask for fewer, or add nodes to a domain")


def family_resource(family: str, nodes: Sequence[Mapping[str, Any]]) -> str:
    """The Ray resource of a family, by family name (``nvidia`` -> ``GPU``, ``qts`` -> ``QTS``) or resource
    name, from the live nodes and this process's registry."""
    from rayaccel.ray.registry import installed

    if any(family in (node.get("Resources") or {}) for node in nodes):
        return family
    for resource, manager in installed().items():
        spec = getattr(manager, "rayaccel_spec", None)
        if spec is not None and spec.name == family:
            return resource
    for node in nodes:
        if (node.get("Labels") or {}).get("rayaccel.io/family") == family:
            known = sorted(str(r) for r in (node.get("Resources") or {}) if r in RAY_ACCELERATOR_RESOURCES)
            if known:
                return known[0]
    raise RayaccelError(f"no node of the cluster has the {family!r} family: give its family name "
                        "(rayaccel.io/family) or its Ray resource name")


def _nodes_holding(resource: str, k: float, nodes: Sequence[Mapping[str, Any]]) -> list[str]:
    """Nodes where k units of ``resource`` fit in one scale-up domain (or on the node, without domains)."""
    fits = []
    for node in nodes:
        resources = node.get("Resources") or {}
        if float(resources.get(resource, 0.0)) < k:
            continue
        per_domain = [float(v) for n, v in resources.items() if str(n).startswith(resource + DOMAIN_RESOURCE_INFIX)]
        if not per_domain or max(per_domain) >= k:
            fits.append(str(node.get("NodeID", "")))
    return fits


def best_connected(k: int, family: str, *, nodes: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """Task or actor options for k best-connected devices of a family: the request (``num_gpus`` for GPU,
    else ``resources``) and a label selector for the nodes where k fit in one scale-up domain. Pass them to
    ``.options(**...)``. Which k units a task gets is decided on the node when it starts (its claims table:
    the best-connected free ones), so there is no race between choosing and scheduling to lose."""
    nodes = _live_nodes() if nodes is None else nodes
    resource = family_resource(family, nodes)
    fits = _nodes_holding(resource, k, nodes)
    if not fits:
        raise RayaccelError(f"no node of the cluster holds {k} {resource} in one scale-up domain")
    options = unit_request(resource, k)
    options["label_selector"] = {RAY_NODE_ID_LABEL: f"in({','.join(sorted(fits))})"}
    return options


def best_connected_bundles(k: int, family: str, n_bundles: int = 1, *,
                           nodes: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """``ray.util.placement_group(**...)`` arguments for ``n_bundles`` bundles of k best-connected devices each;
    a task in a bundle gets the best-connected free units of its node, as a task with :func:`best_connected`
    options does.

    Where Ray packs by domain (:func:`domain_topology_key`): ``bundles`` and ``topology_strategy``, so the GCS
    puts every bundle in one scale-up domain it chooses when it places the group (pending while none holds
    them all). Else ``bundles`` and ``bundle_label_selector``: each bundle on a node where k fit in one domain.
    """
    nodes = _live_nodes() if nodes is None else nodes
    resource = family_resource(family, nodes)
    bundles = [{resource: float(k)} for _ in range(n_bundles)]
    key = domain_topology_key(bundles, nodes=nodes) if ray_has_topology_strategy() else None
    if key is not None:
        return {"bundles": bundles, "topology_strategy": {key: "STRICT_PACK"}}
    options = best_connected(k, family, nodes=nodes)
    return {"bundles": bundles, "bundle_label_selector": [dict(options["label_selector"]) for _ in range(n_bundles)]}


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
