"""A device with no link left in its fabric is no member of that fabric's domain (invariant
``a-member-without-links-is-no-member``, RAC202 on the fixture, RAC203 under each fault).

A scale-up domain is the devices one fabric joins (NVLink through NVSwitch, an xGMI hive, a Gaudi box's internal
RoCE ports). Where the plugin reports that fabric's links between members of a domain, a member with no link to
any other member has every port of it down or gone: it is cut off the fabric and a job placed across the domain
cannot reach it (Habana's hl-smi prints each port DOWN; the Gaudi fixture's ``scale-up-ports-all-down`` has the
module leave the domain). A domain whose members the plugin links to none of each other (a slice known from
metadata, one member on this host) says nothing about its links, so it is not judged. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel.records import Domain, Link

INVARIANT = "a-member-without-links-is-no-member"


def unlinked_member_errors(links: Sequence[Link], domains: Sequence[Domain], where: str = "") -> list[str]:
    """The members of each domain with two or more members here, some of them linked to each other, that have no
    link to any other member."""
    wrong = []
    for domain in domains:
        members = set(domain.members)
        if len(members) < 2:
            continue
        inside = [ln for ln in links if ln.a in members and ln.b in members and ln.a != ln.b]
        if not inside:
            continue
        linked = {ln.a for ln in inside} | {ln.b for ln in inside}
        kinds = ", ".join(sorted({ln.kind for ln in inside}))
        for member in domain.members:
            if member not in linked:
                wrong.append(f"{where}device {member} is a member of domain {domain.kind} {domain.id!r} (size "
                             f"{domain.size}) but has no link to any of its {len(members) - 1} other members, "
                             f"which the plugin links to each other ({len(inside)} {kinds} links): a device with "
                             f"every link of its fabric down or gone is cut off it (invariant {INVARIANT}: "
                             "leave it out of the domain's members and size)")
    return wrong
