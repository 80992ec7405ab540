"""How the devices connect: peer links and NUMA affinity."""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Affinity, Device, Link, Topology

from {{ cookiecutter.__module }}.readings import PeerLink

# VENDOR: the link kind of your interconnect, if rayaccel.records.LINK_KINDS has it ("other" otherwise).
LINK_KIND = "other"


def to_topology(devices: Sequence[Device], links: list[PeerLink]) -> Topology:
    ids = {d.id for d in devices}
    seen: dict[tuple[str, str], Link] = {}
    for link in links:
        if link.a not in ids or link.b not in ids or link.a == link.b:
            continue  # a peer that was not discovered (lost, or another node's) is not a link here
        pair = (min(link.a, link.b), max(link.a, link.b))
        # The driver lists each link from both ends: keep one, undirected.
        seen.setdefault(pair, Link(a=pair[0], b=pair[1], kind=LINK_KIND, bandwidth_gbps=link.gbytes_per_s))
    affinities = [Affinity(device=d.id, numa_node=d.numa_node) for d in devices if d.numa_node is not None]
    return Topology(links=list(seen.values()), affinities=affinities)
