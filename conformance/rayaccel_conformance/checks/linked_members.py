"""A device with no link left in its fabric is no member of that fabric's domain (invariant
``a-member-without-links-is-no-member``, RAC202 on the fixture, RAC203 under each fault).

A scale-up domain is the devices one fabric joins (NVLink through NVSwitch, an xGMI hive, a Gaudi box's internal
RoCE ports). Where the plugin reports that fabric's links between members of a domain, a member with no link to
any other member has every port of it down or gone: it is cut off the fabric and a job placed across the domain
cannot reach it (Habana's hl-smi prints each port DOWN; the Gaudi fixture's ``scale-up-ports-all-down`` has the
module leave the domain). A domain whose members the plugin links to none of each other (a slice known from
metadata, one member on this host) says nothing about its links, so it is not judged.

The same fabric joins the members, so two members linked only by a network's kind (``roce``, ``infiniband``,
``efa``, ``ethernet``: a NIC's scale-out, through a switch) have their fabric's links given another kind (invariant
``a-domain-is-joined-by-its-fabric``, RAC202; held-out round 11's ``g1``, a Gaudi box's internal ports given
``roce`` where the vocabulary's ``gaudi-roce`` names them). A domain whose kind names its fabric (an xGMI hive,
an NVSwitch baseboard or NVLink clique, a TPU slice's ICI, NeuronLink, an UltraServer, a Gaudi box's scale-up) has
its members here joined by that fabric's links, so where the plugin links them to each other, links of another kind
alone (PCIe peer-to-peer, ``other``) leave a member outside the fabric (held-out round 14's ``a1``: AMD GPUs linked
by PCIe only joined into an ``xgmi-hive``). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel.records import Domain, Link

INVARIANT = "a-member-without-links-is-no-member"
FABRIC_INVARIANT = "a-domain-is-joined-by-its-fabric"

#: Link kinds of a network a NIC joins (scale-out): never the fabric a scale-up domain is.
NETWORK_KINDS = frozenset({"roce", "infiniband", "efa", "ethernet"})

#: The link kinds of the fabric each domain kind names (``other`` names none): an xGMI hive is GPUs joined by xGMI,
#: an NVSwitch baseboard's or NVLink clique's by NVLink (through the switch), a TPU slice's chips by ICI, Trainium's
#: devices (one box or an UltraServer's hosts) by NeuronLink, a Gaudi box's by its internal RoCE ports.
DOMAIN_FABRICS: dict[str, frozenset[str]] = {
    "xgmi-hive": frozenset({"xgmi"}),
    "nvswitch": frozenset({"nvlink", "nvswitch"}),
    "nvlink-clique": frozenset({"nvlink", "nvswitch"}),
    "tpu-slice": frozenset({"ici"}),
    "neuronlink": frozenset({"neuronlink"}),
    "ultraserver": frozenset({"neuronlink"}),
    "gaudi-scaleup": frozenset({"gaudi-roce"}),
}


def unlinked_member_errors(links: Sequence[Link], domains: Sequence[Domain], where: str = "") -> list[str]:
    """The members of each domain with two or more members here, some of them linked to each other, that have no
    link to any other member."""
    wrong = []
    for domain in domains:
        members = set(domain.members)
        if len(members) < 2:
            continue
        inside = [ln for ln in links if ln.a in members and ln.b in members and ln.a != ln.b]
        if not inside:
            continue
        linked = {ln.a for ln in inside} | {ln.b for ln in inside}
        kinds = ", ".join(sorted({ln.kind for ln in inside}))
        for member in domain.members:
            if member not in linked:
                wrong.append(f"{where}device {member} is a member of domain {domain.kind} {domain.id!r} (size "
                             f"{domain.size}) but has no link to any of its {len(members) - 1} other members, "
                             f"which the plugin links to each other ({len(inside)} {kinds} links): a device with "
                             f"every link of its fabric down or gone is cut off it (invariant {INVARIANT}: "
                             "leave it out of the domain's members and size)")
    return wrong


def network_joined_member_errors(links: Sequence[Link], domains: Sequence[Domain], where: str = "") -> list[str]:
    """Each domain two of whose members here are linked only by a network's kind: the pairs, once per domain."""
    wrong = []
    for domain in domains:
        members = set(domain.members)
        kinds: dict[frozenset[str], set[str]] = {}
        for ln in links:
            if ln.a in members and ln.b in members and ln.a != ln.b:
                kinds.setdefault(frozenset((ln.a, ln.b)), set()).add(ln.kind)
        networked = sorted(sorted(pair) for pair, found in kinds.items() if found <= NETWORK_KINDS)
        if not networked:
            continue
        first = networked[0]
        named = ", ".join(sorted(kinds[frozenset(first)]))
        wrong.append(f"{where}{len(networked)} of the {len(kinds)} linked pairs of domain {domain.kind} {domain.id!r} "
                     f"are linked only by a network's kind ({first[0]}<->{first[1]}: {named}): a scale-up domain is "
                     f"the devices one fabric joins, and {', '.join(sorted(NETWORK_KINDS))} name a NIC's scale-out "
                     f"network, so the fabric's links are given another kind, which the interconnect label and "
                     f"transport paths then name (invariant {FABRIC_INVARIANT}: give the fabric's links its own kind)")
    return wrong


def off_fabric_member_errors(links: Sequence[Link], domains: Sequence[Domain], where: str = "") -> list[str]:
    """Each domain whose kind names a fabric and whose members here, linked to each other, are not all joined by
    that fabric's links: the members the fabric leaves apart from the first member, once per domain."""
    import networkx as nx

    wrong = []
    for domain in domains:
        fabric = DOMAIN_FABRICS.get(domain.kind)
        members = set(domain.members)
        inside = [ln for ln in links if ln.a in members and ln.b in members and ln.a != ln.b]
        if fabric is None or len(members) < 2 or not inside:
            continue
        graph = nx.Graph()
        graph.add_nodes_from(domain.members)
        graph.add_edges_from((ln.a, ln.b) for ln in inside if ln.kind in fabric)
        first = domain.members[0]
        apart = [m for m in domain.members if m not in nx.node_connected_component(graph, first)]
        if not apart:
            continue
        kinds = ", ".join(sorted({ln.kind for ln in inside}))
        fabric_kinds = " or ".join(sorted(fabric))
        wrong.append(f"{where}domain {domain.kind} {domain.id!r} (size {domain.size}) names the {fabric_kinds} "
                     f"fabric, but {len(apart)} of its {len(members)} members here ({', '.join(apart[:3])}"
                     f"{', ...' if len(apart) > 3 else ''}) {'has' if len(apart) == 1 else 'have'} no path of "
                     f"{fabric_kinds} links to {first}: the plugin links its members by {kinds} ({len(inside)} "
                     f"link{'' if len(inside) == 1 else 's'}), so a member joined only by "
                     f"another kind is not on the fabric the domain's kind names (invariant {FABRIC_INVARIANT}: "
                     f"make the domain from the {fabric_kinds} links alone, or give it the kind of the fabric that "
                     "joins it)")
    return wrong
