"""A link's bandwidth follows the link's own reading on the host (supported tier, issue 46): RAC267.

RAC223 scales a device's readings and requires its metrics to follow; a link is about two devices, and its
reading names both: a file under one device's entry named for its peer (``acme0/links/<peer id>``), a number in
a library's or a tool's JSON data keyed by both devices' indexes. Scaled up or down at the host seam, that
reading must move the link's bandwidth the same way. A plugin that takes one reading for every link (the first
file it finds, a cached value, the first peer's speed for all of a card's links) is right on a fixture whose
links all run at one speed, and no check that compares the node with itself can tell.
"""

from __future__ import annotations

import math
from typing import Any

from rayaccel.hosts.fixtures import HostState
from rayaccel.records import Device, FamilyInventory, Link
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.host_grids import grid_link_problems
from rayaccel_conformance.checks.link_routes import routes_taken_for_links
from rayaccel_conformance.checks.readings import Reading, host_readings, names_peer, owned_by, scaled_host
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: A link's bandwidth (GB/s) from its reading: as written, from Gbit/s, from MB/s or MiB/s, from bytes/s.
LINK_FACTORS = (1.0, 0.125, 1e-3, 2.0**20 / 1e9, 1e-9)
MATCH_TOLERANCE = 1e-4
#: Links tried per fixture (spread over the list: the first, the last and between) and readings per link.
MAX_LINKS = 4
MAX_CANDIDATES = 4


def link_readings(link: Link, by_id: dict[str, Device], readings: list[Reading]) -> list[Reading]:
    """The readings that are this link's own: owned by one end, naming the other, giving its bandwidth."""
    a, b = by_id.get(link.a), by_id.get(link.b)
    if a is None or b is None or not link.bandwidth_gbps:
        return []
    found = []
    for reading in readings:
        ends = (owned_by(reading, a) and names_peer(reading, b)) or (owned_by(reading, b)
                                                                      and names_peer(reading, a))
        if ends and any(abs(reading.value * f - link.bandwidth_gbps) <= MATCH_TOLERANCE * link.bandwidth_gbps
                        for f in LINK_FACTORS):
            found.append(reading)
    return found[:MAX_CANDIDATES]


def under_link(reading: Reading) -> bool:
    """Whether the reading's place is a link entry: a file path or data key with ``link`` in it."""
    places = [reading.key] if reading.where == "file" else [str(p) for p in reading.path]
    return any("link" in place.lower() for place in places)


def spelled_in(reading: Reading, device: Device) -> str | None:
    """How the reading's place spells ``device``'s id (a path segment or data key equal to it in any case)."""
    places = reading.key.strip("/").split("/") if reading.where == "file" else [str(p) for p in reading.path]
    return next((place for place in places if place.lower() == device.id.lower()), None)


def stated_links_missing(fam: FamilyInventory, readings: list[Reading], where: str) -> list[str]:
    """``invariant stated-link-in-topology``: every pair of discovered devices the host names as linked (a
    number under one device's link entry, its place naming the other by its id) has a link in the topology."""
    linked = {frozenset((ln.a, ln.b)) for ln in fam.topology.links}
    wrong, seen = [], set()
    for reading in (r for r in readings if r.where in ("file", "library", "command") and under_link(r)):
        for owner in (d for d in fam.devices if owned_by(reading, d)):
            for peer in (d for d in fam.devices if d.id != owner.id):
                spelled = spelled_in(reading, peer)
                pair = frozenset((owner.id, peer.id))
                if spelled is None or pair in linked or pair in seen:
                    continue
                seen.add(pair)
                case = f" (spelled {spelled!r} there: the device's id is not the vendor's)" if spelled != peer.id \
                    else ""
                wrong.append(f"invariant stated-link-in-topology, {where}: {reading.describe()} ({reading.value:g}) "
                             f"states a link from {owner.id} to {peer.id}{case}, but the topology has no link "
                             "between them")
    return wrong


def _bandwidths(family: FamilyInventory | None) -> dict[tuple[str, str], float | None]:
    return {(min(ln.a, ln.b), max(ln.a, ln.b)): ln.bandwidth_gbps for ln in (family.topology.links if family else [])}


def _spread(links: list[Link]) -> list[Link]:
    if len(links) <= MAX_LINKS:
        return links
    step = (len(links) - 1) / (MAX_LINKS - 1)
    return [links[round(i * step)] for i in range(MAX_LINKS)]


@check("RAC267", scope="fixture")
def link_follows_its_reading(subject: Subject, fixture: str | None) -> Evidence:
    """A link's reading scaled at the host seam moves that link's bandwidth the same way, and only the links
    of the device it belongs to.

    For up to four of the fixture's links with a bandwidth (spread over the list), the suite finds the link's
    own readings: numbers on the host owned by one end (a file under a path naming it, data keyed by its
    index) whose place also names the other end (its id or PCI address in the path, its index as a further
    key) and that give the bandwidth as written, from Gbit/s, MB/s or bytes/s. Each is halved, and doubled,
    and the inventory built again: in at least one of those builds the link's bandwidth must move the way
    the reading did (either end's reading may be the one the plugin reads; a plugin taking the smaller
    direction follows the halving), and no link without the reading's device as an end may move. ``invariant
    link-follows-its-reading`` fails naming the link, the readings scaled and what the bandwidth did: stayed
    put (one reading, or a cached value, stands for every link) or another device's link moved (the link read
    from the wrong entry). Not applicable where no link's bandwidth is found among its own readings (a
    bandwidth from the catalog, or computed from a link count and a version). Before that, every link the host
    states between two discovered devices (a number under one device's link entry whose place names the other
    by its id, in any case) must be in the topology (``invariant stated-link-in-topology``), and no link may join
    a pair the host states at ``h`` hops (a number in a field named for hops: ``hops``, ``num_hops``, a CSV
    column so named) that its pairs at 1 hop join by a chain of exactly ``h`` links of that kind through other
    devices (``invariant a-route-is-no-link``: a tool listing every pair, as ROCm SMI does, lists routes too).
    Where a TPU family's node states its chip grid (``TPU_CHIPS_PER_HOST_BOUNDS``, else the TPU VM's ``tpu-env``
    ``CHIPS_PER_HOST_BOUNDS``), every ICI link between two of its chips joins neighbours in it, chip ``i`` at
    ``(i mod X, i div X)`` as jax lists them (``invariant links-join-grid-neighbours``: a grid laid out otherwise,
    transposed, reports as many links between chips that have none).
    Fix: read each link's bandwidth from the entry that names both its ends, at every poll, keep the vendor's
    spelling of a device's id, keep the pairs a tool states at 1 hop, and lay a TPU host's chips out by the
    bounds its node states.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    fam = subject.inventory(fixture).family(family.name)
    if fam is None:
        raise NotApplicable(f"{fx.ref}: no devices")
    host: dict[str, Any] = fx.host.model_dump(mode="json")
    readings = host_readings(host)
    by_id = {d.id: d for d in fam.devices}
    before = _bandwidths(fam)
    wrong = stated_links_missing(fam, readings, fx.ref) + routes_taken_for_links(fam.devices, fam.topology, readings,
                                                                                 fx.ref)
    grid_wrong, grid_note = grid_link_problems(family, fam, simulated_host(fx), fx.ref)
    wrong += grid_wrong
    followed: list[str] = []
    for link in _spread([ln for ln in fam.topology.links if ln.bandwidth_gbps]):
        own = link_readings(link, by_id, readings)
        if not own:
            continue
        key = (min(link.a, link.b), max(link.a, link.b))
        moved, strays = False, []
        for reading in own:
            owner = next(d.id for d in (by_id[link.a], by_id[link.b]) if owned_by(reading, d))
            for k in (0.5, 2.0):
                variant = fx.model_copy(update={"host": HostState.model_validate(scaled_host(host, reading, k)),
                                                "faults": []})
                built = subject.build(simulated_host(variant))
                if subject.discovery_failed(built, fx.expected.problems):
                    # Discovery failing in that build (on a later call) is the cause to quote, not the links it took.
                    raise CheckFailed(subject.consequence(built, f"invariant link-follows-its-reading, {fx.ref}: "
                                                          f"{reading.describe()} x{k:g}: the links change", None,
                                                          fx.expected.problems))
                after = _bandwidths(built.family(family.name))
                now, was = after.get(key), before[key]
                if now is not None and was and (now - was) * (k - 1) > 0 and not math.isclose(
                        now, was, rel_tol=MATCH_TOLERANCE):
                    moved = True
                strays += [f"{x}<->{y} ({value:g} -> {after.get((x, y))})" for (x, y), value in before.items()
                           if owner not in (x, y) and (x, y) in after and value is not None
                           and not math.isclose(after[(x, y)] or 0.0, value, rel_tol=MATCH_TOLERANCE)]
            if moved:
                break
        where = (f"invariant link-follows-its-reading, {fx.ref}: link {link.a}<->{link.b} ({link.kind}, "
                 f"{link.bandwidth_gbps:g} GB/s)")
        scaled = ", ".join(r.describe() for r in own)
        if strays:
            wrong.append(f"{where}: scaling its reading {scaled} moved links of other devices, e.g. "
                         f"{sorted(set(strays))[0]}: a link's bandwidth read from another device's entry")
        elif not moved:
            wrong.append(f"{where}: its readings {scaled} halved and doubled, the bandwidth stayed "
                         f"{link.bandwidth_gbps:g}: one reading or a cached value stands for this link")
        else:
            followed.append(f"{link.a}<->{link.b}")
    if wrong:
        raise CheckFailed(wrong[:6])
    if not followed:
        if grid_note:
            return f"{fx.ref}: {grid_note}; no link's bandwidth is found among the readings that name both its ends"
        raise NotApplicable(f"{fx.ref}: no link's bandwidth is found among the readings that name both its ends")
    return (f"{fx.ref}: links {', '.join(followed)} each followed their own reading, no other device's link moved"
            + (f"; {grid_note}" if grid_note else ""))
