"""xGMI / PCIe links between the GPUs, NUMA affinity, and the xGMI hive as the scale-up domain."""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Affinity, Device, Domain, Link, Topology
from rayaccel_amd.readings import Snapshot


def topology_of(snapshot: Snapshot | None, devices: Sequence[Device], host_name: str) -> Topology:
    if snapshot is None:
        return Topology()
    known = {d.id for d in devices}
    gpus = [g for g in snapshot.gpus if g.uuid in known]
    by_index = {g.index: g for g in gpus}
    links: dict[tuple[str, str], Link] = {}
    for gpu in gpus:
        for peer_index, peer_link in gpu.links.items():
            peer = by_index.get(peer_index)
            if peer is None or peer.uuid == gpu.uuid:
                continue
            key = (min(gpu.uuid, peer.uuid), max(gpu.uuid, peer.uuid))
            if key in links and links[key].kind == "xgmi":
                continue  # both ends report the pair; one xGMI answer is enough
            links[key] = Link(a=key[0], b=key[1], kind=peer_link.kind)
    affinities = [Affinity(device=g.uuid, numa_node=g.numa_node) for g in gpus if g.numa_node is not None]
    return Topology(links=sorted(links.values(), key=lambda ln: (ln.a, ln.b)), affinities=affinities,
                    domains=_hives(snapshot, [g.uuid for g in gpus], list(links.values()), host_name))


def _hives(snapshot: Snapshot, order: list[str], links: list[Link], host_name: str) -> list[Domain]:
    """One xgmi-hive domain per set of GPUs joined by xGMI (the library names the hive; the CLI does not)."""
    import networkx as nx  # ~100 ms to import: only on a host with AMD GPUs, not in every plugin load

    graph = nx.Graph()
    graph.add_edges_from((ln.a, ln.b) for ln in links if ln.kind == "xgmi")
    hive_ids = {g.uuid: g.xgmi_hive_id for g in snapshot.gpus}
    domains = []
    components = sorted((sorted(c, key=order.index) for c in nx.connected_components(graph)),
                        key=lambda c: order.index(c[0]))
    for number, members in enumerate(components):
        ids = {hive_ids.get(m) for m in members} - {None}
        hive = ids.pop() if len(ids) == 1 else f"{host_name}-xgmi-{number}"
        domains.append(Domain(kind="xgmi-hive", id=str(hive), size=len(members), members=members))
    return domains
