"""Corpus mutants whose link lanes do not follow the ports up one by one (issue 46, held-out round 17's ``g2``: a Gaudi
wrapper spreading a module's 21 internal ports over the box's 8 modules, itself included, 2 lanes a pair where the
box wires 3; with one port down it still gave 2). Each card of the machine wires three ports to each of its three
peers, as an HLS box wires three to each of seven, and the tool states each port ``UP`` or ``DOWN`` without naming
its peer; its fault takes every port of card 2 down, so every mutant's links to it go, as the right reader's do.
RAC203 applies the fault with one port down only (``invariant one-port-down-is-a-lane-less``). Two shapes:
``acme-smi ports`` printing each port's line (as ``hl-smi -n link`` does), lanes spread over every card of the
machine, the card itself among them; and each port's state file (``/sys/class/acme/acmeN/ports/M/state``, as
``/sys/class/infiniband/<hca>/ports/<n>/state``), a link given the lanes it is wired with while any port is up.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-lanes-over-every-card`` as ``c_lanes_over_every_card``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rayaccel import Device, Host, HostError, Topology, malformed
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

#: Cards of the machine and the ports each wires to each of its peers (an HLS box: three to each of seven).
CARDS = 4
PORTS_PER_PEER = 3
PORTS = PORTS_PER_PEER * (CARDS - 1)
#: The card whose every port the machine's fault takes down.
FAULTY_CARD = 2
TOOL_MACHINE = "acme-4-port-lines"
FILES_MACHINE = "acme-4-port-files"
#: ``acme-smi ports``: one line per port of every card, ``card N port M: UP|DOWN``.
PORTS_ARGV = ("acme-smi", "ports")
_PORT_LINE = re.compile(r"^card\s+(\d+)\s+port\s+(\d+):\s*(UP|DOWN)$")


def _port_lines(down: bool = False) -> str:
    """Every card's ports UP, but card 2's DOWN where ``down``."""
    return "".join(f"card {c} port {p}:\t{'DOWN' if down and c == FAULTY_CARD else 'UP'}\n"
                   for c in range(CARDS) for p in range(PORTS))


def _port_files(cards: range, state: str) -> dict[str, str]:
    return {f"{SYSFS}/acme{c}/ports/{p}/state": f"{state}\n" for c in cards for p in range(PORTS)}


def _add_machine(plugin: str, machine: str, description: str, host: dict[str, Any], patch: dict[str, Any]) -> None:
    """The plugin's acme-4 with ``host``'s answers added and a fault writing ``patch``: every port of card 2 down.
    The cards' health does not read ports (acme-4's counters), so the fault leaves each card healthy."""
    data = read_machine(plugin)
    data["name"], data["description"] = machine, f"{data['description']}, {description}"
    for section, answers in host.items():
        data["host"][section] = {**(data["host"].get(section) or {}), **answers}
    data["faults"] = [*data["faults"], {
        "name": "ports-down-2", "description": "every port of card 2 is DOWN: its links are gone", "kind": "other",
        "patch": patch, "expected": {"resources": dict(data["expected"]["resources"])}}]
    write_machine(plugin, machine, data)


def port_lines_up(host: Host) -> dict[int, int] | None:
    """Each card's ports UP as ``acme-smi ports`` lists them; None where the tool is not installed (acme-4) or its
    answer is unreadable."""
    stdout = tool_output(host, PORTS_ARGV)
    if stdout is None:
        return None
    states = [_PORT_LINE.match(line.strip()) for line in stdout.splitlines() if line.strip()]
    if not all(states):
        malformed(" ".join(PORTS_ARGV), "its output", "a 'card N port M: UP|DOWN' line per port")
        return None
    up: dict[int, int] = {}
    for m in states:
        if m is not None:
            up[int(m.group(1))] = up.get(int(m.group(1)), 0) + (m.group(3) == "UP")
    return up


def port_files_up(host: Host, devices: list[Device]) -> dict[int, int] | None:
    """Each card's ports whose state file says ``up``; None where the driver lists no ports (acme-4)."""
    up: dict[int, int] = {}
    for device in devices:
        base = f"{SYSFS}/acme{device.index}/ports"
        if not host.is_dir(base):
            return None
        try:
            up[device.index] = sum(host.read_text(f"{base}/{p}/state").strip() == "up" for p in host.list_dir(base))
        except (OSError, HostError):
            return None
    return up


def with_lanes(topology: Topology, devices: list[Device], up: dict[int, int] | None,
               lanes: Callable[[int, int], int]) -> Topology:
    """The sysfs links, each given ``lanes`` of its two cards' ports up (omitted with none); as they are where the
    machine states no ports."""
    if up is None:
        return topology
    index = {d.id: d.index for d in devices}
    links = []
    for link in topology.links:
        count = lanes(up.get(index[link.a], 0), up.get(index[link.b], 0))
        if count > 0:
            links.append(link.model_copy(update={"lanes": count}))
    return topology.model_copy(update={"links": links})


class LanesOverEveryCard(Healthy):
    DEFECT = ("a card's ports up spread over every card of the machine, itself included (4, not its 3 peers): 9 "
              "ports give 2 lanes a link, not 3, and 8 (one down) still 2")
    KILLED_BY = ("RAC203", "invariant one-port-down-is-a-lane-less")
    #: Whether the card itself is counted among its peers (the defect; the right reader spreads over its peers).
    itself_among_peers = True

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_machine(name, TOOL_MACHINE, "acme-smi listing each card's ports", {
            "commands": {" ".join(PORTS_ARGV): {"stdout": _port_lines()}}},
            {"commands": {" ".join(PORTS_ARGV): {"stdout": _port_lines(down=True)}}})

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        peers = max(1, len(devices) - (0 if self.itself_among_peers else 1))
        return with_lanes(super().rayaccel_topology(host, devices), devices, port_lines_up(host),
                          lambda a, b: min(a, b) // peers)


class LanesAsWired(Healthy):
    DEFECT = ("a link given the lanes it is wired with (3) while both its cards have any port up: a port down takes "
              "no lane, only the last one takes the link")
    KILLED_BY = ("RAC203", "invariant one-port-down-is-a-lane-less")
    #: Whether a link keeps its wired lanes while any port is up (the defect; the right reader counts ports up).
    as_wired = True

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_machine(name, FILES_MACHINE, "each card's port states in sysfs",
                     {"files": _port_files(range(CARDS), "up")},
                     {"files": _port_files(range(FAULTY_CARD, FAULTY_CARD + 1), "down")})

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        peers = max(1, len(devices) - 1)
        return with_lanes(super().rayaccel_topology(host, devices), devices, port_files_up(host, devices),
                          lambda a, b: (PORTS_PER_PEER if min(a, b) > 0 else 0) if self.as_wired
                          else min(a, b) // peers)


for _cls in (LanesOverEveryCard, LanesAsWired):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
