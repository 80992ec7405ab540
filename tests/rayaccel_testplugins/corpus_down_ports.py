"""Corpus mutants that weigh how many of a card's ports or links are down instead of taking one as the fault (issue
46, held-out round 16's ``g2``: a Gaudi module degraded only once three of its internal ports were DOWN, and every
port fault of the fixtures took down three or all). Each wrote its machine's fault past its own tolerance, as the
vendor who wrote the tolerance would, so every fixture passes; RAC203 applies each fault that switches several like
records off with one of them switched only (``invariant one-port-down-is-enough``). Two shapes: ``acme-smi ports``
printing each port ``UP`` or ``DOWN`` (as ``hl-smi -n link`` does), a card degraded from three down; and ACME's link
library answering each link's state 1 or 0 (as NVML's ``nvmlDeviceGetNvLinkState`` does), a card degraded once
more than half its links are inactive.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-ports-down-from-three`` as ``c_ports_down_from_three``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rayaccel import (
    Device,
    HealthReason,
    HealthReport,
    Host,
    LibraryAdapter,
    LibraryUnavailable,
    malformed,
)
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

#: Ports each card lists, and the ports the machine's fault takes down on card 2.
PORTS = 8
PORTS_MACHINE = "acme-4-ports"
#: Links each card's record in ACME's link library holds (four lanes, NVLink's way), all inactive under the fault.
LINKS = 4
LINK_LIBRARY = "acmelink"
LINKS_MACHINE = "acme-4-linklib"
#: ``acme-smi ports``: one line per port of every card, ``card N port M: UP|DOWN``.
PORTS_ARGV = ("acme-smi", "ports")
_PORT_LINE = re.compile(r"^card\s+(\d+)\s+port\s+(\d+):\s*(UP|DOWN)$")


def _ports_listing(down: int = 0) -> str:
    """Every card's ports UP, but the first ``down`` of card 2's."""
    return "".join(f"card {c} port {p:2d}:\t{'DOWN' if c == 2 and p < down else 'UP'}\n"
                   for c in range(4) for p in range(PORTS))


def _ids(data: Mapping[str, Any]) -> list[str]:
    return [data["host"]["files"][f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]


def _fault(data: Mapping[str, Any], name: str, description: str, patch: dict[str, Any], code: str) -> dict[str, Any]:
    card = _ids(data)[2]
    return {"name": name, "description": description, "kind": "degraded", "patch": patch,
            "expected": {"reasons": {card: [code]}, "health": {card: "degraded"},
                         "resources": dict(data["expected"]["resources"])}}  # a degraded card is still offered


def add_ports_machine(plugin: str, down: int) -> None:
    """The plugin's acme-4 with ``acme-smi ports`` listing each card's ports UP, and a fault taking ``down`` of card
    2's ports DOWN."""
    data = read_machine(plugin)
    data["name"], data["description"] = PORTS_MACHINE, f"{data['description']}, acme-smi listing each card's ports"
    data["host"]["commands"] = {**(data["host"].get("commands") or {}),
                                " ".join(PORTS_ARGV): {"stdout": _ports_listing()}}
    data["faults"] = [*data["faults"], _fault(
        data, "ports-down-2", f"ports 0-{down - 1} of card 2 are DOWN",
        {"commands": {" ".join(PORTS_ARGV): {"stdout": _ports_listing(down)}}}, "acme-port-down")]
    write_machine(plugin, PORTS_MACHINE, data)


class PortsDownFromThree(Healthy):
    DEFECT = ("a card's ports DOWN weighed: it is degraded only once three are DOWN ('one peer's worth'); its "
              "machine's fault takes three down to match")
    KILLED_BY = ("RAC203", "invariant one-port-down-is-enough")
    #: Ports DOWN from which a card is degraded (the defect: 3; the healthy reader's is 1).
    tolerance = 3

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_ports_machine(name, down=3)

    def ports_down(self, host: Host) -> dict[int, list[int]] | None:
        """Each card's ports DOWN, by index; None where the tool is not installed (acme-4) or its answer is
        unreadable."""
        stdout = tool_output(host, PORTS_ARGV)
        if stdout is None:
            return None
        states = [_PORT_LINE.match(line.strip()) for line in stdout.splitlines() if line.strip()]
        if not all(states):
            malformed(" ".join(PORTS_ARGV), "its output", "a 'card N port M: UP|DOWN' line per port")
            return None
        down: dict[int, list[int]] = {}
        for m in states:
            if m is not None and m.group(3) == "DOWN":
                down.setdefault(int(m.group(1)), []).append(int(m.group(2)))
        return down

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        listed = self.ports_down(host) or {}
        out = []
        for device, report in zip(devices, super().rayaccel_health(host, devices), strict=True):
            down = listed.get(device.index)
            if report.state == "healthy" and down and len(down) >= self.tolerance:
                report = HealthReport(device=device.id, state="degraded", reasons=[HealthReason(
                    code="acme-port-down", message=f"ports {', '.join(map(str, down))} are DOWN")])
            out.append(report)
        return out


class LinkStates:
    """ACME's link library, simulated: per card, each link's state (1 active, 0 inactive), as NVML answers
    ``nvmlDeviceGetNvLinkState`` per link."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.cards = data.get("cards") or {}

    def states(self, index: int) -> list[int]:
        links = (self.cards.get(str(index)) or {}).get("links")
        if not isinstance(links, dict):
            raise LookupError(f"card {index}: no link records")
        return [int((links[k] or {}).get("state", -1)) for k in sorted(links, key=int)]


def _no_real_library() -> Any:
    raise LibraryUnavailable(f"{LINK_LIBRARY}: simulated only")


LINK_LIBRARY_ADAPTER = LibraryAdapter(LINK_LIBRARY, _no_real_library, LinkStates)


def add_link_library_machine(plugin: str) -> None:
    """The plugin's acme-4 with ACME's link library answering each card's four links active, and a fault making
    every link of card 2 inactive."""
    data = read_machine(plugin)
    data["name"], data["description"] = LINKS_MACHINE, f"{data['description']}, link states from acme's link library"
    ids = _ids(data)
    data["host"]["libraries"] = {LINK_LIBRARY: {"cards": {str(i): {"uuid": ids[i], "links": {
        str(n): {"state": 1} for n in range(LINKS)}} for i in range(4)}}}
    data["faults"] = [*data["faults"], _fault(
        data, "links-down-2", "every link of card 2 is inactive",
        {"libraries": {LINK_LIBRARY: {"cards": {"2": {"links": {str(n): {"state": 0} for n in range(LINKS)}}}}}},
        "acme-link-inactive")]
    write_machine(plugin, LINKS_MACHINE, data)


class LinksDownByShare(Healthy):
    DEFECT = ("a card's inactive links weighed: it is degraded only once more than half its links are inactive; its "
              "machine's fault makes all of them inactive")
    KILLED_BY = ("RAC203", "invariant one-port-down-is-enough")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_link_library_machine(name)

    def degrades(self, states: list[int]) -> bool:
        return bool(states) and states.count(0) * 2 > len(states)  # the defect: a share, not any

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        reports = super().rayaccel_health(host, devices)
        try:
            links: LinkStates = host.library(LINK_LIBRARY_ADAPTER)
        except LibraryUnavailable:
            return reports
        out = []
        for device, report in zip(devices, reports, strict=True):
            try:
                states = links.states(device.index)
            except (LookupError, ValueError, TypeError, AttributeError):
                states = []
            if report.state == "healthy" and self.degrades(states):
                inactive = [str(n) for n, s in enumerate(states) if s == 0]
                report = HealthReport(device=device.id, state="degraded", reasons=[HealthReason(
                    code="acme-link-inactive", message=f"links {', '.join(inactive)} are inactive")])
            out.append(report)
        return out


for _cls in (PortsDownFromThree, LinksDownByShare):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
