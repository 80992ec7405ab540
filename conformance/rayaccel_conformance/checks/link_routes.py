"""A route through other devices is no link (RAC267's ``invariant a-route-is-no-link``, issue 46).

Vendor tools list every pair of devices with the hops between them, not only the pairs a link joins: ROCm SMI's
``rsmi_topo_get_link_type`` (amdsmi's ``amdsmi_topo_get_link_type``) answers "the hops and the connection type
between 2 GPUs" for any pair, ``rocm-smi --showtopo`` prints a full "Hops between two GPUs" matrix
(ROCm/rocm_smi_lib#108), ``amd-smi topology --json`` a ``num_hops`` per peer. On a ring or a partial mesh, a pair
the host states at ``h`` hops, where the pairs it states at one hop join the two ends by a chain of exactly ``h``
of them through other devices, is that route: a plugin that keeps every listed pair as a link (the hops read
nowhere) reports the route as one more link of the route's own kind, which placement then takes as a direct
connection. A pair at several hops with no such chain (PCIe hops counted through switches, two GPUs alone on a
host) says nothing, nor does a link of another kind between the route's ends (a PCIe path beside an xGMI route).
"""

from __future__ import annotations

import itertools
import re

from rayaccel.records import Device, Topology
from rayaccel_conformance.checks.fault_readings import field_name
from rayaccel_conformance.checks.readings import Reading, names_peer, owned_by

_WORD = re.compile(r"[a-z]+")


def is_hops(reading: Reading) -> bool:
    """Whether the reading's field is named for hops (``hops``, ``num_hops``, ``hop_count``, a column so named)."""
    name = field_name(reading)
    return name is not None and bool({"hop", "hops"} & set(_WORD.findall(name.lower())))


def pair_of(reading: Reading, devices: list[Device]) -> frozenset[str] | None:
    """The two discovered devices the reading is about: a table row naming both, or a place owned by one device
    that names the other (its id or PCI address in the path, its index as a further key)."""
    owners = [d for d in devices if owned_by(reading, d)]
    if reading.where == "table":
        return frozenset(d.id for d in owners) if len(owners) == 2 else None
    if len(owners) != 1:
        return None
    peers = [d for d in devices if d.id != owners[0].id and names_peer(reading, d)]
    return frozenset((owners[0].id, peers[0].id)) if len(peers) == 1 else None


def stated_hops(devices: list[Device], readings: list[Reading]) -> dict[frozenset[str], tuple[int, Reading]]:
    """Each pair of discovered devices the host states hops for: the fewest it states, with the reading."""
    hops: dict[frozenset[str], tuple[int, Reading]] = {}
    for reading in readings:
        if not reading.value.is_integer() or reading.value < 1 or not is_hops(reading):
            continue
        pair = pair_of(reading, devices)
        if pair is not None and (pair not in hops or reading.value < hops[pair][0]):
            hops[pair] = (int(reading.value), reading)
    return hops


def routes_taken_for_links(devices: list[Device], topology: Topology, readings: list[Reading], where: str) -> list[str]:
    """``invariant a-route-is-no-link``: no link of the topology joins a pair the host states at ``h`` hops
    where its one-hop pairs join the two ends by a chain of exactly ``h`` of them through other devices, with
    the chain's link kind."""
    import networkx as nx  # ~100 ms to import: only where a check runs, not where the registry loads

    hops = stated_hops(devices, readings)
    one_hop = nx.Graph()
    one_hop.add_edges_from(tuple(pair) for pair, (h, _) in hops.items() if h == 1)
    kinds = {frozenset((ln.a, ln.b)): ln for ln in topology.links}
    wrong = []
    for pair, (h, reading) in sorted(hops.items(), key=lambda kv: sorted(kv[0])):
        a, b = sorted(pair)
        link = kinds.get(pair)
        if h < 2 or link is None or a not in one_hop or b not in one_hop or not nx.has_path(one_hop, a, b):
            continue
        route = nx.shortest_path(one_hop, a, b)
        steps = [kinds.get(frozenset(step)) for step in itertools.pairwise(route)]
        if len(route) - 1 != h or any(s is None or s.kind != link.kind for s in steps):
            continue
        bandwidth = f", {link.bandwidth_gbps:g} GB/s" if link.bandwidth_gbps else ""
        wrong.append(f"invariant a-route-is-no-link, {where}: {reading.describe()} ({h}) states {a} and {b} {h} "
                     f"hops apart, and the pairs it states at 1 hop join them through "
                     f"{', '.join(route[1:-1])} ({' - '.join(route)}, {h} links of the topology of that kind), yet "
                     f"the topology lists {a}<->{b} as a link of kind {link.kind!r} too{bandwidth}: a route "
                     "through other devices is taken for a direct link (the hops the tool states for each pair are "
                     "not read); keep the pairs it states at 1 hop")
    return wrong
