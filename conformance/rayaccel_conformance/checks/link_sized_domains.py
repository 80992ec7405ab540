"""A domain's size counts its devices, which one link neither adds nor takes away (invariant
``a-domain-is-sized-by-its-devices``, RAC202 on the fixture; held-out round 14's ``c2``: a command-csv bake sizing
its fabric's domain by the number of links the tool lists, 6 for a full mesh of 4 devices).

``Domain.size`` is the devices (or, for a slice, the hosts) of the whole domain, ``members`` the ones on this host.
A size taken from the links is right only where the links happen to number the devices, and a domain whose id does
not follow the host's name (``host-local-domain-is-its-members``) is not held to its member count. So the suite
takes one link away at the host seam (every reading the link's own: the file under one end's entry naming the other,
the JSON record stating the pair, as RAC267 finds them, and a tool's CSV line naming both), as a link that is down
is left out of its listing, builds the inventory again and requires each domain that keeps its kind, id and members
to keep its size: the other hosts' devices are where they were, and this host's are the same. A link gone that takes
a member out of the domain changes what is judged, so that domain is left alone. Where the suite finds no place
stating a link (NVML's links by remote PCI address, amd-smi's by bus id, a TPU's by its grid), nothing is taken
away: no reference plugin's fixture is reached.
"""

from __future__ import annotations

import json
from typing import Any

from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import Device, Domain, FamilyInventory, Link
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.link_readings import link_readings
from rayaccel_conformance.checks.readings import Reading, host_readings, owned_by
from rayaccel_conformance.harness.subject import Subject

INVARIANT = "a-domain-is-sized-by-its-devices"


def without_readings(host: dict[str, Any], readings: list[Reading]) -> dict[str, Any]:
    """The host state with each reading's place gone: its file, its CSV line, the JSON record holding it."""
    state: dict[str, Any] = json.loads(json.dumps(host))
    # The last places first, so a line or record removed moves no place still to remove.
    for reading in sorted(readings, key=lambda r: (r.where, r.key, tuple(str(p).zfill(8) for p in r.path)),
                          reverse=True):
        if reading.where == "file":
            state["files"].pop(reading.key, None)
        elif reading.where == "table":
            command = state["commands"][reading.key]
            lines = command["stdout"].split("\n")
            del lines[int(reading.path[0])]
            command["stdout"] = "\n".join(lines)
        else:
            section = "libraries" if reading.where == "library" else "commands"
            data = state[section][reading.key] if section == "libraries" else json.loads(
                state[section][reading.key]["stdout"])
            inner = data
            for step in reading.path[:-2]:
                inner = inner[step]
            del inner[reading.path[-2]]
            if section == "commands":
                state[section][reading.key]["stdout"] = json.dumps(data)
    return state


def link_places(link: Link, by_id: dict[str, Device], readings: list[Reading]) -> list[Reading]:
    """Where the host states the link: its own readings (RAC267's), and each line of a tool's table naming both its
    ends (one reading a line)."""
    a, b = by_id.get(link.a), by_id.get(link.b)
    if a is None or b is None:
        return []
    rows: dict[tuple[str, object], Reading] = {}
    for reading in readings:
        if reading.where == "table" and owned_by(reading, a) and owned_by(reading, b):
            rows.setdefault((reading.key, reading.path[0]), reading)
    return link_readings(link, by_id, readings) + list(rows.values())


def _place(reading: Reading) -> str:
    return f"`{reading.key}` output line {reading.path[0]}" if reading.where == "table" else reading.describe()


def _domains(family: FamilyInventory | None) -> dict[tuple[str, str], Domain]:
    return {(d.kind, d.id): d for d in (family.topology.domains if family else [])}


def link_sized_domain_errors(subject: Subject, fx: Fixture, family: FamilyInventory, name: str) -> list[str]:
    """The domains whose size moves when one link, not one of their members, is gone from the host."""
    if not family.topology.domains or not family.topology.links:
        return []
    host: dict[str, Any] = fx.host.model_dump(mode="json")
    readings = host_readings(host)
    by_id = {d.id: d for d in family.devices}
    link: Link | None = None
    own: list[Reading] = []
    for candidate in family.topology.links:
        own = link_places(candidate, by_id, readings)
        if own:
            link = candidate
            break
    if link is None:
        return []
    variant = fx.model_copy(update={"host": HostState.model_validate(without_readings(host, own)), "faults": []})
    built = subject.build(simulated_host(variant))
    if subject.plugin_problems(built, ("rayaccel_discover", "rayaccel_topology"), ("error",)):
        return []  # the plugin refused that state: nothing to compare
    after = built.family(name)
    if after is None or {d.id for d in after.devices} != set(by_id):
        return []
    wrong = []
    now = _domains(after)
    for key, domain in _domains(family).items():
        other = now.get(key)
        if other is None or sorted(other.members) != sorted(domain.members) or other.size == domain.size:
            continue
        wrong.append(f"invariant {INVARIANT}, {fx.ref}: domain {domain.kind} {domain.id!r} has size {domain.size} "
                     f"with {len(domain.members)} members here; with link {link.a}<->{link.b} ({link.kind}) gone "
                     f"from the host ({', '.join(_place(r) for r in own)} removed) its members are the same and "
                     f"its size is {other.size}: a domain's size counts its devices, which a link neither adds nor "
                     "takes away (size it by its devices: its members here, and the other hosts' as the host "
                     "states them)")
    return wrong
