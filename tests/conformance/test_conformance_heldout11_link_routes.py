"""Held-out grading, round 11 (issue 46, lane F3): a pair the vendor's tool states at several hops, joined by a chain
of 1-hop pairs through other devices, is a route, not a link (``invariant a-route-is-no-link``, RAC267).

The command-csv bake ``c2`` gained a hops column in its link table, as ROCm SMI lists every pair of GPUs with the hops
between them (``rsmi_topo_get_link_type``), re-recorded its fixture as a 4-ring, and kept every listed pair as a link:
the opposite cards, 2 hops apart, became direct links, and the fixture's expected link count (6) was the one its
code gave. Two corpus shapes read a ring machine's pairs and ignore the hops: a CSV table of pairs, JSON records of
each card's peers keyed by the peer's index; the readers keeping the pairs at 1 hop pass, and a pair at 2 hops with
no chain through other devices (PCIe hops counted through switches) names nothing.
"""

from __future__ import annotations

import pytest
from mutant_grading import evidence, failure, graded, mutant

from rayaccel.records import Device, Link, Topology
from rayaccel_conformance.checks.link_routes import routes_taken_for_links
from rayaccel_conformance.checks.readings import host_readings
from rayaccel_conformance.registry import CHECKS, NotApplicable
from rayaccel_testplugins import corpus_link_routes as routes

IDS = [f"ACME-000{i}-5e1f-4c2a-9d3b-00000000000{i}" for i in range(4)]


@pytest.mark.parametrize(("shape", "reading"), [
    (routes.EveryListedPairALink, "`acme-smi topo --query=a,b,hops,gbytes_per_s --format=csv,noheader` output line 1 "
                                  "field 2 (2)"),
    (routes.EveryPeerRecordALink, "`acme-smi topo --json` output cards.0.peers.2.hops (2)")], ids=["table", "records"])
def test_a_route_of_two_hops_kept_as_a_link_is_named(shape: type[routes.EveryListedPairALink], reading: str) -> None:
    text = failure(mutant(shape), "RAC267", routes.MACHINE)
    assert "invariant a-route-is-no-link, " in text, text
    assert (f"{reading} states {IDS[0]} and {IDS[2]} 2 hops apart, and the pairs it states at 1 hop join them through "
            f"{IDS[1]} ({IDS[0]} - {IDS[1]} - {IDS[2]}, 2 links of the topology of that kind), yet the topology lists "
            f"{IDS[0]}<->{IDS[2]} as a link of kind 'other' too, 100 GB/s: a route through other devices is taken "
            "for a direct link") in text, text
    assert f"{IDS[1]}<->{IDS[3]}" in text, text  # the other opposite pair too
    assert f"{IDS[0]}<->{IDS[1]}" not in text, text  # a neighbour's link is one


def test_the_readers_keeping_the_pairs_at_one_hop_pass() -> None:
    records = evidence(routes.RingRecordsByHops("c-ring-records-by-hops"), "RAC267", routes.MACHINE)
    assert f"links {IDS[0]}<->{IDS[1]}, {IDS[0]}<->{IDS[3]}, {IDS[1]}<->{IDS[2]}, {IDS[2]}<->{IDS[3]} each followed" \
        in records, records
    plugin = routes.RingByHops("c-ring-by-hops")
    subject = graded(plugin)
    with pytest.raises(NotApplicable, match="no link's bandwidth is found"):  # a table's cells name no peer
        CHECKS["RAC267"].function(subject, f"{plugin.name}/{routes.MACHINE}")
    family = subject.inventory(f"{plugin.name}/{routes.MACHINE}").family(plugin.name)
    assert family is not None and len(family.topology.links) == 4


DEVICES = [Device(index=i, id=IDS[i], product_name="R1") for i in range(4)]


def _routes(links: list[tuple[int, int]], hops: dict[tuple[int, int], int]) -> list[str]:
    """What the invariant names for a topology of ``links`` where a tool's CSV table states ``hops`` per pair."""
    rows = "".join(f"{IDS[a]}, {IDS[b]}, {h}\n" for (a, b), h in hops.items())
    readings = host_readings({"commands": {"tool topo --query=a,b,hops --format=csv": {"stdout": rows}}})
    return routes_taken_for_links(DEVICES, Topology(links=[Link(a=IDS[a], b=IDS[b], kind="other") for a, b in links]),
                                  readings, "here")


def test_hops_with_no_chain_through_other_devices_name_nothing() -> None:
    every_pair = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    # PCIe pairs at 2 hops each (through a switch, ROCm/rocm_smi_lib#108 prints 3 for every pair): no chain.
    assert _routes(every_pair, dict.fromkeys(every_pair, 2)) == []
    # The ring read right: its opposite cards are no link, so nothing is named.
    ring = {(0, 1): 1, (1, 2): 1, (2, 3): 1, (0, 3): 1, (0, 2): 2, (1, 3): 2}
    assert _routes([p for p, h in ring.items() if h == 1], ring) == []
    assert len(_routes(list(ring), ring)) == 2  # every listed pair linked: both opposite pairs named
    # A pair at 3 hops the 1-hop pairs join in 2 is no such route: the hops count something else.
    path = {(0, 1): 1, (1, 2): 1, (0, 2): 3}
    assert _routes(list(path), path) == []
    assert len(_routes(list(path), {**path, (0, 2): 2})) == 1
