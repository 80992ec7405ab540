"""A device whose fabric record names another group is not in this one (RAC202's ``a-device-of-another-group-is-no-
member``; held-out round 15's ``n2``: an NVIDIA plugin naming its NVLink clique by the fabric's cluster UUID alone,
``nvmlDeviceGetGpuFabricInfoV``'s ``cliqueId`` dropped, so two NVLink partitions of one cluster were one domain).

A vendor states which group a device is in with a record per device: NVML's fabric info (``clusterUuid`` and
``cliqueId``), a driver directory holding the fabric's name beside the partition's number. A fabric manager assigns
the partition per GPU (NVIDIA's NVLink partitioning takes "NVLink Interface configuration for each GPU", so the GPUs
of one compute tray can be in two partitions, each its own ``cliqueId``), and GPUs of two partitions cannot reach
each other's memory: they are two domains. The suite finds, for each domain with two members or more on the host,
the members' own records that state part of the domain's id (a value of the record is in it), and in them each
number named as an identifier (``cliqueId``, ``partition_id``, ``hive_id``) that every member states alike; it gives
one member alone another such number at the host seam and builds the inventory again. That member must then share no
domain with the others: a plugin keeping it there names the group by less than what its members share. A number
named otherwise (a state, a status, a count) or one the members state differently is left alone, so is a record
stating nothing of the id (a product's PCI device id). No expectation is read.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any

from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import Device, Domain, FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.readings import Reading, host_readings, owned_by, with_reading
from rayaccel_conformance.harness.subject import Subject

INVARIANT = "a-device-of-another-group-is-no-member"
#: A reading's name that says it identifies something (``cliqueId``, ``clique_id``, ``partition-id``, ``hive_uuid``).
IDENTIFIER = re.compile(r"(?:[a-z0-9](?:Id|ID|Uuid|UUID)|(?:^|[_-])(?:id|ID|uuid|UUID))$")
#: The shortest record value taken as stating part of a domain's id (no digit or short word matches by chance).
MIN_STATED = 4


def reading_name(reading: Reading) -> str:
    """The reading's own name: a file's base name, the last key of its place in library or JSON data."""
    if reading.where == "file":
        return posixpath.basename(reading.key)
    return str(reading.path[-1]) if reading.path else ""


def shape(reading: Reading) -> tuple[str, str, tuple[str, ...]]:
    """Where the reading is, its device's number taken out: the same reading of every device has one shape."""
    if reading.where == "file":
        return reading.where, re.sub(r"\d+", "#", reading.key), ()
    return reading.where, reading.key, tuple("#" if isinstance(p, int) or str(p).isdigit() else str(p)
                                             for p in reading.path)


def record_values(host: dict[str, Any], reading: Reading) -> list[str]:
    """The other values of the record holding ``reading``: the files of its directory, its JSON object's entries."""
    if reading.where == "file":
        folder = posixpath.dirname(reading.key)
        return [text.strip() for path, text in (host.get("files") or {}).items()
                if posixpath.dirname(path) == folder and path != reading.key]
    if reading.where == "table" or not reading.path:
        return []
    data: Any = (host.get("libraries") or {}).get(reading.key) if reading.where == "library" else None
    if reading.where == "command":
        try:
            data = json.loads(((host.get("commands") or {}).get(reading.key) or {}).get("stdout") or "")
        except ValueError:
            return []
    for step in reading.path[:-1]:
        data = data[step]
    return [str(v).strip() for k, v in data.items() if k != reading.path[-1] and isinstance(v, str | int)
            and not isinstance(v, bool)] if isinstance(data, dict) else []


def group_identifiers(host: dict[str, Any], domain: Domain, members: list[Device]) -> list[list[Reading]]:
    """For each identifier reading the members' records state alike beside a part of the domain's id: that reading
    of each member, in the members' order."""
    readings = [r for r in host_readings(host, zeros=True) if IDENTIFIER.search(reading_name(r))]
    found: list[list[Reading]] = []
    shapes = dict.fromkeys(shape(r) for r in readings if owned_by(r, members[0]))
    for wanted in shapes:
        each = [next((r for r in readings if shape(r) == wanted and owned_by(r, m)), None) for m in members]
        chosen = [r for r in each if r is not None]
        if len(chosen) != len(members) or len({r.value for r in chosen}) != 1 or not chosen[0].value.is_integer():
            continue
        if all(any(len(v) >= MIN_STATED and v in domain.id for v in record_values(host, r)) for r in chosen):
            found.append(chosen)
    return found


def renumbered(host: dict[str, Any], reading: Reading, value: int) -> dict[str, Any]:
    """The host state with ``reading`` made ``value``, written as the vendor writes it."""
    return with_reading(host, reading, lambda _old: str(value), lambda _old: value)


def other_group_member_errors(subject: Subject, fx: Fixture, family: FamilyInventory, name: str) -> list[str]:
    """Domains keeping a member whose record was given another group's identifier."""
    host = fx.host.model_dump(mode="json")
    by_id = {d.id: d for d in family.devices}
    wrong: list[str] = []
    for domain in family.topology.domains:
        members = [by_id[m] for m in domain.members if m in by_id]
        if len(members) < 2:
            continue
        for readings in group_identifiers(host, domain, members):
            moved, reading = members[-1], readings[-1]
            value = int(reading.value) + 1
            state = renumbered(host, reading, value)
            after = subject.build(simulated_host(fx.model_copy(update={
                "host": HostState.model_validate(state), "faults": []})), with_metrics=False).family(name)
            others = {m.id for m in members[:-1]}
            kept = [d for d in (after.topology.domains if after else [])
                    if moved.id in d.members and others & set(d.members)]
            if kept:
                stated = [v for v in record_values(host, reading) if len(v) >= MIN_STATED and v in domain.id]
                wrong.append(
                    f"invariant {INVARIANT}, {fx.ref}: {domain.kind} domain {domain.id!r} holds {len(members)} "
                    f"devices whose records each state {reading_name(reading)}={int(reading.value)} beside "
                    f"{stated[0]!r} (part of its id); with {moved.id}'s alone made {value} ({reading.describe()}), "
                    f"another group's, as a fabric manager assigns a partition to each device, it is still in "
                    f"{kept[0].kind} domain {kept[0].id!r} with {sorted(others & set(kept[0].members))}: devices of "
                    f"two groups cannot reach each other's memory; name the domain by every identifier its members "
                    f"share there (the cluster and the partition, '<cluster>.<clique>'), so two groups never share "
                    f"one")
                break
    return wrong
