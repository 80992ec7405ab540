"""RAC245 (supported tier): a device's NUMA node, changed where the host states it, moves that device's
``numa_node`` to exactly the new node and no other device's.

A NUMA node derived from something else (the PCI bus number, the index, the first card's) is right on every
fixture whose machine happens to agree with the rule and wrong on the next; nothing else in an inventory can
tell. The SDK cannot parse a vendor's formats, but it can find where a device's NUMA node is written: a file
of the device's own named for it (``/sys/bus/pci/devices/<address>/numa_node``), a value under a ``numa`` key
in a library's data or a command's JSON keyed by the device's index, a cell of a command's CSV under a ``numa``
column in the device's row. Each helper here is pure.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from rayaccel.hosts.fixtures import HostState
from rayaccel.records import Device, FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.affinities import numa_topology_differences
from rayaccel_conformance.checks.readings import Reading, owned_by
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

_INTEGER = re.compile(r"^\s*(-?\d+)\s*$")
#: A name in which NUMA begins a word (``numa_node``, ``NUMA``, ``numa.node``, ``numaNode``, ``cpuNumaNode``), not
#: one holding the letters inside another word: a family or peer id (``ACMENUMA-5e1f-0001``, a link file named
#: for its peer), ``pneumatic``.
_NUMA_WORD = re.compile(r"(?:^|[^A-Za-z])[Nn][Uu][Mm][Aa]|(?<=[a-z])N(?:uma|UMA)")


def names_numa(name: object) -> bool:
    return bool(_NUMA_WORD.search(str(name)))


@dataclass(frozen=True)
class NumaReading:
    """Where the host states one device's NUMA node, and the node it states."""

    where: str  # "file", "library", "command" (JSON output) or "table" (a command's CSV output)
    key: str  # the file's path, the library's name, the command line
    path: tuple[str | int, ...]  # inside the data; (line, field) of a table
    node: int

    def describe(self) -> str:
        if self.where == "table":
            return f"`{self.key}` output line {self.path[0]} field {self.path[1]}"
        inner = ".".join(str(p) for p in self.path)
        return {"file": f"file {self.key}", "library": f"library {self.key} {inner}",
                "command": f"`{self.key}` output {inner}"}[self.where]


def _numa_leaves(data: Any, path: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], int]]:
    """Integers (or integer text) in ``data`` under a key naming NUMA (``numa_node``, ``numa.node``)."""
    if isinstance(data, dict):
        return [leaf for key, value in data.items() for leaf in _numa_leaves(value, (*path, key))]
    if isinstance(data, list):
        return [leaf for i, value in enumerate(data) for leaf in _numa_leaves(value, (*path, i))]
    if not any(names_numa(p) for p in path) or isinstance(data, bool):
        return []
    if isinstance(data, int):
        return [(path, data)]
    match = _INTEGER.match(data) if isinstance(data, str) else None
    return [(path, int(match.group(1)))] if match else []


def numa_readings(host: dict[str, Any], device: Device) -> list[NumaReading]:
    """Every place the host states the device's NUMA node (whatever node it states)."""
    found = []
    for path, text in (host.get("files") or {}).items():
        match = _INTEGER.match(text or "")
        if match and names_numa(path.rsplit("/", 1)[-1]) and owned_by(Reading("file", path, (), 0.0), device):
            found.append(NumaReading("file", path, (), int(match.group(1))))
    for name, data in (host.get("libraries") or {}).items():
        found += [NumaReading("library", name, p, n) for p, n in _numa_leaves(data)
                  if owned_by(Reading("library", name, p, 0.0), device)]
    for line, answer in (host.get("commands") or {}).items():
        stdout = (answer or {}).get("stdout") or ""
        try:
            data = json.loads(stdout)
        except (ValueError, TypeError):
            found += _table_readings(line, stdout, device)
            continue
        found += [NumaReading("command", line, p, n) for p, n in _numa_leaves(data)
                  if owned_by(Reading("command", line, p, 0.0), device)]
    return found


def _table_readings(command: str, stdout: str, device: Device) -> list[NumaReading]:
    """The cell under a header naming NUMA in the device's row of a command's CSV output."""
    rows = stdout.splitlines()
    if not rows:
        return []
    columns = [i for i, cell in enumerate(rows[0].split(",")) if names_numa(cell.strip())]
    found = []
    for n, row in enumerate(rows[1:], start=1):
        if not owned_by(Reading("table", command, (), 0.0, row), device):
            continue
        cells = row.split(",")
        for i in columns:
            match = _INTEGER.match(cells[i]) if i < len(cells) else None
            if match:
                found.append(NumaReading("table", command, (n, i), int(match.group(1))))
    return found


def moved_host(host: dict[str, Any], readings: list[NumaReading], node: int) -> dict[str, Any]:
    """The host with every reading stating ``node`` instead, written as the vendor wrote it (text stays text)."""
    state: dict[str, Any] = json.loads(json.dumps(host))
    for reading in readings:
        if reading.where == "file":
            state["files"][reading.key] = f"{node}\n"
            continue
        if reading.where == "table":
            lines = state["commands"][reading.key]["stdout"].split("\n")
            cells = lines[int(reading.path[0])].split(",")
            old = cells[int(reading.path[1])]
            cells[int(reading.path[1])] = old.replace(old.strip(), str(node), 1)
            lines[int(reading.path[0])] = ",".join(cells)
            state["commands"][reading.key]["stdout"] = "\n".join(lines)
            continue
        data = state["libraries"][reading.key] if reading.where == "library" else json.loads(
            state["commands"][reading.key]["stdout"])
        inner = data
        for step in reading.path[:-1]:
            inner = inner[step]
        inner[reading.path[-1]] = str(node) if isinstance(inner[reading.path[-1]], str) else node
        if reading.where == "command":
            state["commands"][reading.key]["stdout"] = json.dumps(data)
    return state


def numa_nodes(family: FamilyInventory | None) -> dict[str, int | None]:
    return {d.id: d.numa_node for d in (family.devices if family else [])}


def topology_followed(now: FamilyInventory | None, was: FamilyInventory) -> list[str]:
    """Where the rebuilt topology's affinities disagree with the rebuilt devices' NUMA nodes, on a fixture whose
    own topology agreed (`invariant affinity-node-follows-the-host`): an affinity's node computed (from the
    device's position, another device's node) matches discovery's only where the machine happens to agree."""
    if now is None or numa_topology_differences(was):
        return []  # (a fixture's own disagreement is RAC258's)
    return [f"invariant affinity-node-follows-the-host: {w.split(': ', 1)[-1]} (the topology did not follow the "
            "node the host now states)" for w in numa_topology_differences(now)]


@check("RAC245", scope="fixture")
def numa_node_read_from_the_host(subject: Subject, fixture: str | None) -> Evidence:
    """A device's NUMA node changed where the host states it moves that device's ``numa_node`` to exactly the
    new node, and no other device's.

    For the middle device with a NUMA node, the suite finds every place the host states its node (a file of its
    own named ``numa...``, a value under a ``numa`` key of a library's data or a command's JSON keyed by its
    index, a ``numa`` column of its row in a command's CSV), writes another node there (1, or 0 where it was 1),
    and builds the inventory again: the device's ``numa_node`` must be that node, every other device's as it
    was. A node that stays put was derived (from the PCI bus number, the index, another device) or defaulted.
    Where the device's node is stated only in files named ``numa_node`` (Linux's attribute, ``-1`` where the
    kernel knows no node: a one-socket machine, most VMs), ``-1`` is written there too and the device's node must
    be none (``None``, or ``-1`` kept), no other device's may move, and the build may report no problem the
    fixture's own build does not (`invariant no-numa-node-is-not-a-node`: a warning on every poll of such a
    machine, or node 0 made up, is wrong).
    In both builds, where the fixture's affinities state the nodes discovery read, the rebuilt ones must state the
    rebuilt nodes (`invariant affinity-node-follows-the-host`: a node computed in the topology hook).
    Not applicable where no device has a NUMA node or the host states none of the chosen device's. Fix: read
    each device's node from its own entry (``/sys/bus/pci/devices/<address>/numa_node``, NVML's
    ``nvmlDeviceGetNumaNodeId``), never compute it, and take -1 as no node.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    fam = subject.inventory(fixture).family(family.name)
    placed = [d for d in (fam.devices if fam else []) if d.numa_node is not None]
    if fam is None or not placed:
        raise NotApplicable(f"{fx.ref}: no device has a NUMA node")
    device = placed[len(placed) // 2]
    host = fx.host.model_dump(mode="json")
    readings = numa_readings(host, device)
    if not readings:
        raise NotApplicable(f"{fx.ref}: the host states no NUMA node of {device.id} where the suite can find it (a "
                            "file of its own named numa..., a numa key keyed by its index, a numa column of its row)")
    node = next(n for n in (1, 0, 2, 3) if n != device.numa_node and all(r.node != n for r in readings))
    variant = fx.model_copy(update={"host": HostState.model_validate(moved_host(host, readings, node)), "faults": []})
    rebuilt = subject.build(simulated_host(variant), with_metrics=False)
    after = numa_nodes(rebuilt.family(family.name))
    stated = ", ".join(f"{r.describe()} ({r.node})" for r in readings[:3])
    where = (f"invariant numa-node-read-from-the-host, {fx.ref} with {device.id}'s NUMA node made {node} "
             f"({stated} -> {node})")
    wrong = []
    if after.get(device.id) != node:
        wrong.append(f"{device.id}'s numa_node is {after.get(device.id)} (was {device.numa_node}), not {node}:"
                     " the node is derived (from the PCI bus number, the index, another device) or defaulted, not "
                     "read from the device's own entry" + (f" (which stated {readings[0].node} before the change)"
                                                           if readings[0].node != device.numa_node else ""))
    wrong += [f"{other}'s numa_node went from {was} to {after.get(other)}: a device's node is its own"
              for other, was in numa_nodes(fam).items() if other != device.id and after.get(other) != was]
    wrong += topology_followed(rebuilt.family(family.name), fam)
    if wrong:  # (a discovery that failed in this build is quoted instead: the nodes missing are its consequence)
        raise CheckFailed(subject.blamed(rebuilt, wrong, f"{where}: ")[:4])
    none = no_node_differences(subject, fx, host, readings, device, fam, family.name)
    if none:
        raise CheckFailed(none[:4])
    return (f"{fx.ref}: {device.id}'s NUMA node made {node} at {len(readings)} place(s); its numa_node followed"
            + ("; made -1 (none), it is none" if _linux_attribute(readings) else ""))


def _linux_attribute(readings: list[NumaReading]) -> bool:
    """Whether every reading is a file named ``numa_node`` (Linux's attribute: -1 means no node)."""
    return all(r.where == "file" and r.key.rsplit("/", 1)[-1] == "numa_node" for r in readings)


def no_node_differences(subject: Subject, fx: Any, host: dict[str, Any], readings: list[NumaReading],
                        device: Device, fam: FamilyInventory, family: str) -> list[str]:
    """The device's ``numa_node`` files made ``-1``: what the inventory got wrong (empty when right)."""
    if not _linux_attribute(readings):
        return []
    variant = fx.model_copy(update={"host": HostState.model_validate(moved_host(host, readings, -1)), "faults": []})
    rebuilt = subject.build(simulated_host(variant), with_metrics=False)
    after = numa_nodes(rebuilt.family(family))
    where = (f"invariant no-numa-node-is-not-a-node, {fx.ref} with {device.id}'s "
             f"{', '.join(r.key for r in readings[:2])} made -1 (Linux's 'no NUMA node')")
    wrong = []
    if after.get(device.id) not in (None, -1):
        wrong.append(f"{where}: its numa_node is {after.get(device.id)}, not none: -1 names no node")
    wrong += [f"{where}: {other}'s numa_node went from {was} to {after.get(other)}"
              for other, was in numa_nodes(fam).items() if other != device.id and after.get(other) != was]
    wrong += [f"{where}: {w}" for w in topology_followed(rebuilt.family(family), fam)]
    before = {p.code for p in subject.inventory(fx.ref).problems if p.plugin == subject.name}
    wrong += [f"{where}: the build reports {p.code} ({p.severity}: {p.message[:160]}), which the fixture's own build "
              "does not: -1 is the kernel's answer for a machine without NUMA nodes, not a malformed value"
              for p in rebuilt.problems if p.plugin == subject.name and p.severity != "info" and p.code not in before]
    return wrong
