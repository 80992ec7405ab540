"""Corpus mutants that take every pair the vendor's tool lists for a link, the hops it states read nowhere (issue 46,
held-out round 11's ``c2``: a command-csv bake whose link table gained a hops column, re-recorded on a 4-ring, kept
the 2-hop pairs as direct links). ROCm SMI answers hops and a link type for any two GPUs
(``rsmi_topo_get_link_type``; ``rocm-smi --showtopo`` prints the whole "Hops between two GPUs" matrix), so a tool
listing every pair lists the routes too. Only RAC267's ``a-route-is-no-link`` sees it: the bandwidths are the
ring's, each within the catalog's, and the fixture's expected link count is the one the author's code gave.

Each mutant reads ``acme-smi topo`` on a machine of its own (``acme-4-ring``: acme-4's cards joined in a ring
0-1-2-3-0, the driver publishing no link files, the tool listing every pair with its hops and GB/s), in one of two
shapes: a CSV table of pairs (``--query=a,b,hops,gbytes_per_s``), and JSON records of each card's peers keyed by the
peer's index (as amdsmi answers per pair). The right reader, :class:`RingByHops`, keeps the pairs at 1 hop; it is
not registered (the tests grade it beside the mutants). Imported by tests/conformance/test_conformance_corpus.py
(``corpus.MUTANT_MODULES``); each mutant is bound here under its name (``c-every-listed-pair-a-link`` as
``c_every_listed_pair_a_link``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

from rayaccel import Device, Host, Link, Topology, malformed
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

TABLE = ("acme-smi", "topo", "--query=a,b,hops,gbytes_per_s", "--format=csv,noheader")
RECORDS = ("acme-smi", "topo", "--json")
MACHINE = "acme-4-ring"
#: Hops between cards i and j of the ring 0-1-2-3-0: neighbours at 1, opposite cards at 2 (through either).
RING_HOPS = {(0, 1): 1, (0, 2): 2, (0, 3): 1, (1, 2): 1, (1, 3): 2, (2, 3): 1}
GBYTES_PER_S = 100


def add_ring_machine(plugin: str, records: bool) -> None:
    """The plugin's acme-4 machine as a ring: no link files in sysfs, ``acme-smi topo`` listing every pair (as JSON
    records where ``records``, else as a CSV table)."""
    data = read_machine(plugin)
    files = data["host"]["files"]
    ids = [files[f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]
    data["host"]["files"] = {path: text for path, text in files.items() if "/links/" not in path}
    rows = "".join(f"{ids[i]}, {ids[j]}, {hops}, {GBYTES_PER_S}\n" for (i, j), hops in RING_HOPS.items())
    peers = {str(i): {"uuid": ids[i], "peers": {str(j): {"hops": RING_HOPS[min(i, j), max(i, j)],
                                                           "gbytes_per_s": GBYTES_PER_S} for j in range(4) if j != i}}
             for i in range(4)}
    data["name"], data["description"] = MACHINE, f"{data['description']}, its cards in a ring (acme-smi topo)"
    listing = {" ".join(RECORDS): {"stdout": json.dumps({"cards": peers}, indent=1)}} if records else {
        " ".join(TABLE): {"stdout": rows}}
    data["host"]["commands"] = {**(data["host"].get("commands") or {}), **listing}
    write_machine(plugin, MACHINE, data)


def _number(text: object) -> float | None:
    try:
        return float(str(text).strip())
    except ValueError:
        return None


def table_pairs(host: Host) -> Iterator[tuple[str, str, float | None, float | None]] | None:
    """(a, b, hops, GB/s) of each row of ``acme-smi topo``'s CSV; None where the tool is not installed."""
    if (stdout := tool_output(host, TABLE)) is None:
        return None

    def rows() -> Iterator[tuple[str, str, float | None, float | None]]:
        for line in stdout.splitlines():
            cells = [c.strip() for c in line.split(",")]
            if len(cells) != 4:
                malformed(" ".join(TABLE), f"line {line!r}", "a, b, hops, GB/s")
                continue
            yield cells[0], cells[1], _number(cells[2]), _number(cells[3])

    return rows()


def record_pairs(host: Host) -> Iterator[tuple[str, str, float | None, float | None]] | None:
    """(a, b, hops, GB/s) of each card's peer records in ``acme-smi topo --json``, the peer by the tool's index."""
    if (stdout := tool_output(host, RECORDS)) is None:
        return None
    try:
        cards = json.loads(stdout)["cards"]
        by_index = {str(key): str(card["uuid"]) for key, card in cards.items()}  # the tool's own numbering
        return iter([(str(card["uuid"]), by_index.get(peer, ""), _number(record.get("hops")),
                      _number(record.get("gbytes_per_s")))
                     for card in cards.values() for peer, record in card["peers"].items()])
    except (ValueError, KeyError, TypeError, AttributeError):
        malformed(" ".join(RECORDS), "its output", "JSON with each card's peers")
        return None


def topology_of(host: Host, devices: list[Device], pairs: Iterator[tuple[str, str, float | None, float | None]],
                linked: Callable[[float | None], bool]) -> Topology:
    """The pairs of discovered devices ``linked`` keeps by their hops, one link each, beside the driver's
    affinities."""
    known = {d.id for d in devices}
    links: dict[tuple[str, str], Link] = {}
    for a, b, hops, bandwidth in pairs:
        key = (min(a, b), max(a, b))
        if a != b and {a, b} <= known and key not in links and linked(hops):
            links[key] = Link(a=key[0], b=key[1], kind="other", bandwidth_gbps=bandwidth)
    base = acme.rayaccel_topology(host, devices)
    return base.model_copy(update={"links": sorted(links.values(), key=lambda ln: (ln.a, ln.b))})


def ring_topology(host: Host, devices: list[Device], records: bool, linked: Callable[[float | None], bool]) -> Topology:
    """The driver's topology where ``acme-smi topo`` is not installed (acme-4); else the pairs it lists (as JSON
    records where ``records``, else as a CSV table) that ``linked`` keeps by their hops."""
    pairs = record_pairs(host) if records else table_pairs(host)
    return acme.rayaccel_topology(host, devices) if pairs is None else topology_of(host, devices, pairs, linked)


class RingByHops(Healthy):
    DEFECT = "none: the pairs the tool's table states at 1 hop are the links (the right reader, not registered)"
    RECORDS = False

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_ring_machine(name, self.RECORDS)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        return ring_topology(host, devices, self.RECORDS, lambda hops: hops == 1)


class RingRecordsByHops(RingByHops):
    DEFECT = "none: the peer records at 1 hop are the links (the right reader, not registered)"
    RECORDS = True


class EveryListedPairALink(Healthy):
    DEFECT = ("every pair acme-smi topo's CSV table lists is taken for a link, its hops column read nowhere: the "
              "ring's opposite cards, 2 hops apart, are linked directly")
    KILLED_BY = ("RAC267", "invariant a-route-is-no-link")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_ring_machine(name, records=False)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        return ring_topology(host, devices, False, lambda hops: True)  # the defect: hops == 1 was meant


class EveryPeerRecordALink(Healthy):
    DEFECT = ("every peer record of acme-smi topo --json is taken for a link, its hops read nowhere: the ring's "
              "opposite cards, 2 hops apart, are linked directly")
    KILLED_BY = ("RAC267", "invariant a-route-is-no-link")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_ring_machine(name, records=True)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        return ring_topology(host, devices, True, lambda hops: True)  # the defect: hops == 1 was meant


for _cls in (EveryListedPairALink, EveryPeerRecordALink):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
