"""What a running cluster's nodes published, as a :class:`~rayaccel.outputs.cluster_picture.ClusterView`.

Read from Ray alone (``ray.nodes()``: labels, resources, liveness; the GCS's draining nodes; the health
monitors' cordon placement groups and the status each publishes in the GCS's key-value store), never by calling a
plugin or logging into a node. A node's health and device counts are its monitor's live ones
(:func:`rayaccel.ray.monitor.monitor_status`); the labels the node started with only where no monitor runs or
its status has gone silent (``health_source`` says which). Scale-up domains are
:func:`rayaccel.ray.placement.scale_up_domains` over the live nodes, so a TPU slice or an NVL72 domain whose
nodes each published the same domain id is one unit.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence, Set
from typing import Any

from rayaccel.errors import RayaccelError
from rayaccel.outputs.cluster_picture import ClusterDomain, ClusterNode, ClusterView, NodeState
from rayaccel.ray.placement import COUNT_LABEL, DOMAIN_LABEL, scale_up_domains
from rayaccel.reporting import plain_int
from rayaccel.support.raycompat import RAY_ACCELERATOR_TYPE_LABEL

#: Resources every Ray node has; what is left is what its accelerators contributed.
NOT_ACCELERATORS = ("CPU", "memory", "object_store_memory")
CORDON_PREFIX = "rayaccel-cordon-"


def _accelerator_resources(resources: Mapping[str, Any]) -> dict[str, float]:
    return {str(name): float(amount) for name, amount in resources.items()
            if name not in NOT_ACCELERATORS and not str(name).startswith(("node:", "accelerator_type:"))
            and "_group_" not in str(name)}  # placement groups' bundle resources


def live_family(status: Mapping[str, Any] | None, family: str | None) -> Mapping[str, Any] | None:
    """The family's live state in a monitor's status (None: no monitor, its loop stopped or silent, or it has
    not polled the family yet)."""
    if status is None or family is None or status.get("loop") != "running":
        return None
    found = (status.get("families") or {}).get(family)
    return found if isinstance(found, Mapping) else None


def build_view(address: str, nodes: Sequence[Mapping[str, Any]], draining: Mapping[str, str] | Set[str],
               cordon_groups: Sequence[str] = (), statuses: Mapping[str, Mapping[str, Any]] | None = None,
               ) -> ClusterView:
    """The view of ``ray.nodes()``-shaped ``nodes``; ``draining``: node id (-> reason) the GCS drains;
    ``cordon_groups``: names of live placement groups (the monitors' cordons are ``rayaccel-cordon-<node>-...``);
    ``statuses``: node id -> its health monitor's published status."""
    built: list[ClusterNode] = []
    for node in nodes:
        node_id = str(node.get("NodeID", ""))
        labels = {str(k): str(v) for k, v in (node.get("Labels") or {}).items()}
        state: NodeState = "dead" if not node.get("Alive") else "draining" if node_id in draining else "alive"
        reason = draining.get(node_id) if isinstance(draining, Mapping) else None
        family = labels.get("rayaccel.io/family")
        status = (statuses or {}).get(node_id)
        current = live_family(status, family) if state != "dead" else None
        built.append(ClusterNode(
            node_id=node_id, address=str(node.get("NodeManagerAddress", "")), state=state,
            family=family, vendor=labels.get("rayaccel.io/vendor"),
            sku=labels.get("rayaccel.io/sku"), accelerator_type=labels.get(RAY_ACCELERATOR_TYPE_LABEL),
            devices=int(current["healthy"]) if current else plain_int(labels.get(COUNT_LABEL, "")) or 0,
            health=str(current["health"]) if current else labels.get("rayaccel.io/health"),
            domain=labels.get(DOMAIN_LABEL), resources=_accelerator_resources(node.get("Resources") or {}),
            cordoned=tuple(sorted(g for g in cordon_groups if g.startswith(f"{CORDON_PREFIX}{node_id}-"))),
            drain_reason=reason or None, health_source="monitor" if current else "labels",
            total_devices=int(current["devices"]) if current else None,
            drained=bool(current and current.get("drained")),
            monitor=str(status.get("loop")) if status is not None else None))
    live = [n for n in nodes if n.get("Alive")]
    topology = {str((n.get("Labels") or {}).get(DOMAIN_LABEL)): str((n.get("Labels") or {}).get("ray.io/tpu-topology"))
                for n in live if (n.get("Labels") or {}).get("ray.io/tpu-topology")}
    domains = tuple(ClusterDomain(id=d.id, kind=d.kind, size=d.size, nodes=d.nodes, tpu_slice=d.tpu_slice,
                                  topology=topology.get(d.id))
                    for d in sorted(scale_up_domains(live).values(), key=lambda d: d.id))
    order = {"draining": 0, "alive": 1, "dead": 2}
    return ClusterView(address, tuple(sorted(built, key=lambda n: (order[n.state], n.family or "~", n.address,
                                                                   n.node_id))), domains)


def _monitor_status(node_id: str) -> dict[str, Any] | None:
    from rayaccel.ray.monitor import monitor_status

    try:
        return monitor_status(node_id)
    except (ValueError, TypeError):  # a status that does not parse: as if none was published
        return None


def read_cluster(address: str) -> ClusterView:
    """Connect a driver to ``address`` (``auto``: the local cluster), read the view, disconnect."""
    import ray
    import ray._private.state
    from ray.util import placement_group_table

    from rayaccel.ray.auth import agree_with_cluster

    agree_with_cluster()
    connected_here = not ray.is_initialized()
    if connected_here:
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
        except ConnectionError as e:
            raise RayaccelError(f"no Ray cluster found at {address!r} ({e or 'nothing answers'}); start one "
                                "(rayaccel start --head) or give its GCS address with --address HOST:PORT") from None
    try:
        list_nodes: Any = ray.nodes
        nodes = list_nodes()
        draining = {str(k): f"drain deadline {v}" if v else "draining"
                    for k, v in ray._private.state.state.get_draining_nodes().items()}
        groups = [str(g.get("name", "")) for g in placement_group_table().values()
                  if g.get("state") != "REMOVED" and str(g.get("name", "")).startswith(CORDON_PREFIX)]
        statuses = {str(n.get("NodeID")): found for n in nodes if n.get("Alive")
                    for found in [_monitor_status(str(n.get("NodeID")))] if found is not None}
        context = ray.get_runtime_context()
        gcs = str(getattr(context, "gcs_address", "") or address)
        return build_view(gcs, nodes, draining, groups, statuses)
    finally:
        if connected_here:
            ray.shutdown()
