"""xGMI / PCIe links between the GPUs, NUMA affinity, and the xGMI hive as the scale-up domain.

Between physical GPUs: the partitions of one GPU share its links, so a partitioned GPU's links are its
primary partition's (each logical GPU reports them again)."""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Affinity, Device, Domain, Link, Topology
from rayaccel_amd.discovery import members
from rayaccel_amd.readings import Snapshot


def topology_of(snapshot: Snapshot | None, devices: Sequence[Device], host_name: str) -> Topology:
    if snapshot is None:
        return Topology()
    # Each device as the logical GPU that answers for it (a partitioned GPU: its primary partition).
    answering = [(d.id, gpus[0]) for d in devices if (gpus := members(d, snapshot))[0] is not None]
    owner = {gpu.index: device for d in devices for device, gpus in [(d.id, members(d, snapshot))]
             for gpu in gpus if gpu is not None}
    links: dict[tuple[str, str], Link] = {}
    for device, gpu in answering:
        for peer_index, peer_link in gpu.links.items():
            peer = owner.get(peer_index)
            if peer is None or peer == device:
                continue
            key = (min(device, peer), max(device, peer))
            if key in links and links[key].kind == "xgmi":
                continue  # both ends report the pair; one xGMI answer is enough
            links[key] = Link(a=key[0], b=key[1], kind=peer_link.kind)
    # The device's NUMA node as discovery read it: the topology's snapshot (amd-smi topology alone, on the CLI path)
    # holds none, and a device placed on a node must be on it in the topology too.
    numa = {d.id: d.numa_node for d in devices}
    affinities = [Affinity(device=device, numa_node=numa[device]) for device, _ in answering
                  if numa[device] is not None]
    hive_ids = {device: g.xgmi_hive_id for device, g in answering}
    return Topology(links=sorted(links.values(), key=lambda ln: (ln.a, ln.b)), affinities=affinities,
                    domains=_hives(hive_ids, [d for d, _ in answering], list(links.values()), host_name))


def _hives(hive_ids: dict[str, str | None], order: list[str], links: list[Link], host_name: str) -> list[Domain]:
    """One xgmi-hive domain per set of GPUs joined by xGMI, named by the host and the hive id the library
    reports (the CLI reports none: the host and the hive's number). A hive never spans hosts, and the host
    name keeps two machines' hives apart where their ids could meet (two nodes simulated from one fixture)."""
    import networkx as nx  # ~100 ms to import: only on a host with AMD GPUs, not in every plugin load

    graph = nx.Graph()
    graph.add_edges_from((ln.a, ln.b) for ln in links if ln.kind == "xgmi")
    domains = []
    components = sorted((sorted(c, key=order.index) for c in nx.connected_components(graph)),
                        key=lambda c: order.index(c[0]))
    for number, component in enumerate(components):
        ids = {hive_ids.get(m) for m in component} - {None}
        hive = ids.pop() if len(ids) == 1 else number
        domains.append(Domain(kind="xgmi-hive", id=f"{host_name}-xgmi-{hive}", size=len(component),
                              members=component))
    return domains
