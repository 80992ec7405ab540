"""The all-to-all RoCE scale-up inside an HLS box.

On HLS-Gaudi2 and HLS-Gaudi3 baseboards, 21 of each device's 24 RoCE ports are wired to the other seven
devices, three ports per peer; the other three go out of the box (scale-out). hl-smi reports which ports
are internal and whether they are UP, not which peer each one reaches, so a pair is linked when both ends
have internal ports UP, with as many lanes as the fewer of their UP internal ports spread over the peers.
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Affinity, Device, Domain, Link, Topology
from rayaccel_gaudi.readings import Snapshot


def topology_of(snapshot: Snapshot | None, devices: Sequence[Device], host_name: str) -> Topology:
    if snapshot is None:
        return Topology()
    by_uuid = snapshot.by_uuid()
    present = [by_uuid[d.id] for d in devices if d.id in by_uuid]
    peers = max(1, len(present) - 1)
    up = {d.aip.uuid: len(d.ports("internal", "up")) for d in present}
    links = []
    for i, a in enumerate(present):
        for b in present[i + 1:]:
            lanes = min(up[a.aip.uuid], up[b.aip.uuid]) // peers
            if lanes > 0:
                links.append(Link(a=a.aip.uuid, b=b.aip.uuid, kind="gaudi-roce", lanes=lanes))
    members = [d.aip.uuid for d in present if up[d.aip.uuid] > 0]
    domains = [Domain(kind="gaudi-scaleup", id=f"{host_name}-scaleup", size=len(members), members=members)] \
        if len(members) > 1 else []
    affinities = [Affinity(device=d.aip.uuid, numa_node=d.numa_node) for d in present if d.numa_node is not None]
    return Topology(links=links, affinities=affinities, domains=domains)
