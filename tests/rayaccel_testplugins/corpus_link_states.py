"""Corpus mutants that walk a card's link records right only while none is down ahead of an active one (issue 46,
held-out round 6: an NVLink down ahead of active ones): every fixture's links are all up (or all down), so a walk
that stops at the first link down, or keeps the first n records for the n up, answers the same. RAC211 switches the
middle card's first link off (``invariant one-link-down-keeps-the-others``). Two shapes: a loop left (``break``) at
the first link down, and the first n records kept.

Each mutant reads ``acme-smi links --json`` on a machine of its own (``acme-4-links``: acme-4 with the tool listing
each card, by index with its uuid, and its links as records numbered 0, 1, 2, each with its state and peer, as NVML
answers per NVLink); the healthy reader keeps a link where both ends' records of it are up. Imported by
tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its name
(``c-links-until-first-down`` as ``c_links_until_first_down``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rayaccel import Device, Host, Topology, malformed
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

LINKS = ("acme-smi", "links", "--json")


def _add_links_machine(plugin: str) -> None:
    """The plugin's acme-4 machine with ``acme-smi links`` listing each card's links to the three others, all up."""
    data = read_machine(plugin)
    files = data["host"]["files"]
    ids = [files[f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]
    cards = {str(i): {"uuid": ids[i], "links": {str(n): {"state": "up", "peer": peer}
                                                for n, peer in enumerate(p for p in ids if p != ids[i])}}
             for i in range(4)}
    data["name"], data["description"] = "acme-4-links", f"{data['description']}, acme-smi listing each card's links"
    data["host"]["commands"] = {**(data["host"].get("commands") or {}),
                                " ".join(LINKS): {"stdout": json.dumps({"cards": cards}, indent=1)}}
    write_machine(plugin, "acme-4-links", data)


def _records(host: Host) -> dict[str, Any] | None:
    """Card uuid -> its link records, as the tool lists them; None where the tool is not installed."""
    if (stdout := tool_output(host, LINKS)) is None:
        return None
    try:
        cards = json.loads(stdout)["cards"]
        return {str(v["uuid"]): v["links"] for v in cards.values()}
    except (ValueError, KeyError, TypeError, AttributeError):
        malformed(" ".join(LINKS), "its output", "JSON with each card's links")
        return None


def _topology(host: Host, devices: list[Device], up: Callable[[list[Any]], list[Any]]) -> Topology:
    """The driver's links, less those the tool lists as down on either end (``up``: a card's records, in order, to
    those it takes as up)."""
    topology = acme.rayaccel_topology(host, devices)
    records = _records(host)
    if records is None:
        return topology
    active = set()
    for device in devices:
        listed = [r for _, r in sorted(records.get(device.id, {}).items(), key=lambda kv: int(kv[0]))]
        active |= {(device.id, r.get("peer")) for r in up(listed) if isinstance(r, dict)}
    kept = [ln for ln in topology.links if (ln.a, ln.b) in active and (ln.b, ln.a) in active]
    return topology.model_copy(update={"links": kept})


class LinksUntilFirstDown(Healthy):
    DEFECT = ("a card's link records are walked until the first one down (break where continue was meant): the "
              "links listed after it are dropped")
    KILLED_BY = ("RAC211", "invariant one-link-down-keeps-the-others")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_links_machine(name)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        def up(listed: list[Any]) -> list[Any]:
            taken = []
            for record in listed:
                if record.get("state") != "up":
                    break  # the defect
                taken.append(record)
            return taken

        return _topology(host, devices, up)


class LinksFirstNUp(Healthy):
    DEFECT = ("a card's first n link records are taken as its links, n the records up: a link down ahead of active "
              "ones is kept and the last active one dropped")
    KILLED_BY = ("RAC211", "invariant one-link-down-keeps-the-others")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_links_machine(name)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        def up(listed: list[Any]) -> list[Any]:
            return listed[:sum(r.get("state") == "up" for r in listed)]  # the defect: the up ones filtered was meant

        return _topology(host, devices, up)


for _cls in (LinksUntilFirstDown, LinksFirstNUp):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
