"""A scale-up domain that is this host's alone holds exactly its members here (invariant
``host-local-domain-is-its-members``, RAC202 on the fixture, RAC203 under each fault).

``Domain.size`` counts the devices of the whole domain, ``members`` the ones on this host. A domain whose id is
made from the host's own name (an NVSwitch baseboard, an xGMI hive, a Gaudi box's scale-up: docs/labels.md) is
never shared with another host, so every device of it is here and its size is its member count; a size above
that counts a device that is not in it (one whose fabric ports are all down, counted because it is present).
Which domains are the host's own the suite finds without knowing the vendor: it asks ``rayaccel_topology``
again on the same machine under another host name, and a domain whose id follows the name is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rayaccel import hookspec
from rayaccel.hosts.fixtures import Fixture
from rayaccel.records import Device, Domain, Problem
from rayaccel.simulation.host_factory import simulated_host

INVARIANT = "host-local-domain-is-its-members"
#: Put before the fixture's host name for the second answer: a name no fixture's host has.
RENAME_PREFIX = "rayaccel-renamed-"


def renamed(fixture: Fixture) -> Fixture:
    """The same machine under another host name."""
    name = f"{RENAME_PREFIX}{fixture.host.hostname or fixture.name}"
    return fixture.model_copy(update={"host": fixture.host.model_copy(update={"hostname": name})})


def host_local_domain_errors(subject: Any, fixture: Fixture, devices: Sequence[Device], domains: Sequence[Domain],
                             fault_file: str | None = None, where: str = "") -> list[str]:
    """The host's own domains (ids that follow the host name) whose size is not their member count.

    ``domains`` is the plugin's answer on ``fixture`` (with the faults of ``fault_file``); the plugin is asked
    once more, with the same ``devices``, on the machine renamed."""
    if not domains:
        return []
    other = simulated_host(renamed(fixture), fault_file=fault_file)
    if other.name == simulated_host(fixture).name:
        return []  # the process names every simulated host (RAYACCEL_SIMULATE_HOSTNAME): no rename to compare
    problems: list[Problem] = []
    answer = subject.manager.answer(subject.name, hookspec.TOPOLOGY, problems, host=other, devices=list(devices))
    renamed_ids = {(d.kind, tuple(sorted(d.members))): d.id for d in (answer.domains if answer else [])}
    ids = {d.id for d in devices}
    wrong = []
    for domain in domains:
        moved = renamed_ids.get((domain.kind, tuple(sorted(domain.members))))
        if moved is None or moved == domain.id or len(domain.members) == domain.size:
            continue
        outside = [d.id for d in devices if d.id not in domain.members]
        counted = (f"; it equals the {len(ids)} devices discovered, and {', '.join(outside)} "
                   f"{'is' if len(outside) == 1 else 'are'} not a member" if domain.size == len(ids) and outside
                   else "")
        wrong.append(f"{where}domain {domain.kind} {domain.id!r} has size {domain.size} but {len(domain.members)} "
                     f"members, and its id follows the host's name ({moved!r} on a host named "
                     f"{other.name!r}): a domain that never leaves this host holds exactly its members here, so "
                     f"its size counts {domain.size - len(domain.members)} device(s) not in it{counted} (invariant "
                     f"{INVARIANT}: size the domain by its members)")
    return wrong
