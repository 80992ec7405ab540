"""Topology as a graph: consistency checks and best-connected device selection.

Links are undirected edges between device ids, weighted by how good the connection is. Selection picks
the k devices with the most aggregate bandwidth between them, so a 4-GPU task on an 8-GPU box with two
NVLink islands gets one island, not two GPUs from each.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # records (pydantic) load on first use: a Ray worker choosing units imports this module
    import networkx as nx

    from rayaccel.records import Device, Link, Topology

#: Exhaustive search up to this many candidate subsets, greedy beyond.
EXHAUSTIVE_LIMIT = 20_000

# Without a bandwidth, rank kinds so a fabric link always beats PCIe (GB/s, as Link.bandwidth_gbps).
_DEFAULT_GBPS = {"pcie": 32.0, "ethernet": 12.5, "roce": 25.0, "efa": 25.0, "infiniband": 50.0, "other": 10.0}


def link_weight(link: Link) -> float:
    per_lane = link.bandwidth_gbps if link.bandwidth_gbps is not None else _DEFAULT_GBPS.get(link.kind, 100.0)
    return per_lane * (link.lanes if link.bandwidth_gbps is None else 1)


#: device id -> neighbour id -> weight of the best link between them (undirected: both directions), in whole
#: MB/s (megabytes: a link's bandwidth_gbps is GB/s): sums of integers are exact, so two equally connected
#: choices tie (and the lower index wins) whatever order the bandwidths are added in (0.1 + 25 + 0.1 is not
#: 0.2 + 25 in floating point).
Adjacency = dict[str, dict[str, int]]


def exact_weight(link: Link) -> int:
    """:func:`link_weight` in whole MB/s."""
    return round(link_weight(link) * 1000)


def adjacency(devices: Sequence[Device], links: Sequence[Link]) -> Adjacency:
    """The links between the given devices as plain dicts (several links between two devices: the best)."""
    graph: Adjacency = {d.id: {} for d in devices}
    for link in links:
        if link.a in graph and link.b in graph and link.a != link.b:
            weight = max(graph[link.a].get(link.b, 0), exact_weight(link))
            graph[link.a][link.b] = graph[link.b][link.a] = weight
    return graph


def link_graph(devices: Sequence[Device], links: Sequence[Link]) -> nx.Graph:
    """The same as a networkx graph (edge attribute ``weight``), for analysis; selection does not need it."""
    import networkx as nx  # ~70 ms to import: only for callers that want graph algorithms

    graph = nx.Graph()
    graph.add_nodes_from(d.id for d in devices)
    for a, neighbours in adjacency(devices, links).items():
        for b, weight in neighbours.items():
            graph.add_edge(a, b, weight=weight)
    return graph


def best_connected_subset(devices: Sequence[Device], links: Sequence[Link], k: int) -> list[str]:
    """The ids of k devices with the most bandwidth among them; ties go to lower indices."""
    if k < 0 or k > len(devices):
        raise ValueError(f"cannot choose {k} of {len(devices)} devices")
    ordered = [d.id for d in sorted(devices, key=lambda d: d.index)]
    return best_connected_ids(ordered, adjacency(devices, links), k)


def best_connected_ids(ordered: Sequence[str], graph: Adjacency, k: int,
                       exhaustive_limit: int = EXHAUSTIVE_LIMIT) -> list[str]:
    """The k of ``ordered`` with the most weight among them in ``graph`` (every id a key of it); ties go to
    those earlier in ``ordered``. The selection itself, for callers that hold an adjacency rather than
    records (a Ray worker choosing units from the node's placement table, with a lower ``exhaustive_limit``:
    it chooses as a task starts)."""
    ordered = list(ordered)
    if k < 0 or k > len(ordered):
        raise ValueError(f"cannot choose {k} of {len(ordered)} devices")
    if math.comb(len(ordered), k) <= exhaustive_limit:
        weights = [[graph[a].get(b, 0) for b in ordered] for a in ordered]
        best: tuple[int, ...] = tuple(range(k))
        most = -1
        # Combinations come in lexicographic order: keeping the first of equal weight keeps the earliest.
        for chosen in itertools.combinations(range(len(ordered)), k):
            weight = sum(weights[i][j] for i, j in itertools.combinations(chosen, 2))
            if weight > most:
                most, best = weight, chosen
        return [ordered[i] for i in best]
    return _improved_by_swaps(graph, ordered, _greedy_ids(ordered, graph)[:k])


#: Largest k * (n - k) for which the greedy choice is improved by swaps (each pass costs that many looks).
SWAP_LIMIT = 50_000


def _improved_by_swaps(graph: Adjacency, ordered: list[str], chosen: list[str]) -> list[str]:
    """The greedy choice, improved while swapping one chosen device for one left out adds bandwidth.

    Greedy is optimal on every shipped fixture but not on every topology (a device that looked best early
    can be a poor partner for the rest); a strictly improving swap never makes it worse. Each pass takes
    the best swap (lowest indices on ties), so the result is deterministic; at most one pass per device.
    """
    k = len(chosen)
    rest = [n for n in ordered if n not in set(chosen)]
    if not chosen or not rest or k * len(rest) > SWAP_LIMIT:
        return chosen
    inside = set(chosen)
    gain = {n: sum(w for m, w in graph[n].items() if m in inside) for n in ordered}  # bandwidth to the chosen
    for _ in range(len(ordered)):
        best: tuple[int, int, int] | None = None
        for i, out in enumerate(chosen):
            for j, into in enumerate(rest):
                delta = gain[into] - graph[into].get(out, 0) - gain[out]
                if delta > 0 and (best is None or delta > best[0]):  # exact: integer weights
                    best = (delta, i, j)
        if best is None:
            break
        _, i, j = best
        out, into = chosen[i], rest[j]
        chosen[i], rest[j] = into, out
        for neighbour, weight in graph[out].items():
            gain[neighbour] -= weight
        for neighbour, weight in graph[into].items():
            gain[neighbour] += weight
    return chosen


def greedy_order(devices: Sequence[Device], links: Sequence[Link]) -> list[str]:
    """Devices ordered so that every prefix is well connected: each next device is the one with the most
    bandwidth to those already chosen (index order breaks ties, and is the order with no links)."""
    # O(n^2 + links): each device's bandwidth to the chosen ones is kept up to date as devices are chosen
    # (added in the order they were chosen, so the sums, and the order, are those of summing afresh).
    ordered = [d.id for d in sorted(devices, key=lambda d: d.index)]
    return _greedy_ids(ordered, adjacency(devices, links))


def _greedy_ids(ordered: list[str], graph: Adjacency) -> list[str]:
    if not ordered:
        return []
    rank = {n: i for i, n in enumerate(ordered)}
    first = max(ordered, key=lambda n: (sum(graph[n].values()), -rank[n]))
    chosen = [first]
    gain: dict[str, int] = dict.fromkeys(ordered, 0)
    rest = dict.fromkeys(n for n in ordered if n != first)  # insertion-ordered set
    while rest:
        latest = chosen[-1]
        for neighbour, weight in graph[latest].items():
            if neighbour in rest:
                gain[neighbour] += weight
        nxt = max(rest, key=lambda n: (gain[n], -rank[n]))
        chosen.append(nxt)
        del rest[nxt]
    return chosen


def order_units(devices: Sequence[Device], topology: Topology) -> list[str]:
    """Unit ids of the given devices, best-connected devices first."""
    by_id = {d.id: d for d in devices}
    return [unit for device_id in greedy_order(devices, topology.links) for unit in by_id[device_id].unit_ids]


def topology_errors(devices: Sequence[Device], topology: Topology) -> list[str]:
    """Everything inconsistent in a topology, one sentence each (empty when consistent)."""
    from rayaccel.records import LINK_KINDS

    ids = {d.id for d in devices}
    errors: list[str] = []
    seen: dict[tuple[str, str], Link] = {}
    for link in topology.links:
        for end in (link.a, link.b):
            if end not in ids:
                errors.append(f"link {link.a}<->{link.b} names unknown device {end!r}")
        if link.a == link.b:
            errors.append(f"link {link.a}<->{link.b} connects a device to itself")
        if link.kind not in LINK_KINDS:
            errors.append(f"link {link.a}<->{link.b} has kind {link.kind!r}, not in the vocabulary")
        key = (min(link.a, link.b), max(link.a, link.b))
        other = seen.get(key)
        if other is not None and (other.kind, other.bandwidth_gbps, other.lanes) != (
                link.kind, link.bandwidth_gbps, link.lanes) and other.kind == link.kind:
            errors.append(f"link {key[0]}<->{key[1]} is reported twice with different bandwidth or lanes")
        seen.setdefault(key, link)
    for affinity in topology.affinities:
        if affinity.device not in ids:
            errors.append(f"affinity names unknown device {affinity.device!r}")
    for domain in topology.domains:
        unknown = [m for m in domain.members if m not in ids]
        if unknown:
            errors.append(f"domain {domain.kind} {domain.id} lists unknown devices {unknown}")
        if len(domain.members) > domain.size:
            errors.append(f"domain {domain.kind} {domain.id} has {len(domain.members)} members but size {domain.size}")
        if domain.hosts is not None and domain.host_index is not None and domain.host_index >= domain.hosts:
            errors.append(f"domain {domain.kind} {domain.id}: host index {domain.host_index} >= hosts {domain.hosts}")
        # Hosts of one domain are built alike: each holds at least this host's members (fewer here only where
        # devices were lost), so the domain's devices fill at most ceil(size / members) hosts.
        fill = -(-domain.size // len(domain.members)) if domain.members else None
        if domain.hosts is not None and fill is not None and domain.hosts > fill:
            errors.append(f"domain {domain.kind} {domain.id}: {domain.hosts} hosts, but its {domain.size} devices "
                          f"at this host's {len(domain.members)} fill at most {fill} (invariant "
                          "domain-hosts-hold-its-devices: hosts counted from something else than the size per host)")
    return errors


def best_link_kind(topology: Topology, preference: Sequence[str]) -> str:
    kinds = {link.kind for link in topology.links}
    return next((k for k in preference if k in kinds), "none")
