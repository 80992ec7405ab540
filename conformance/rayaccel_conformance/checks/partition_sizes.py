"""One partition name, one size, on every node the plugin describes (supported tier, issue 46): RAC244; a
partition's memory slices its memory's share of the device's: RAC252.

RAC216 holds a partition resource to one size within a node. A cluster mixes nodes, and a task asking for a
partition resource by name gets whichever node's partition Ray picks: a profile named by its compute slices
alone ('3g') is 20 GB on an A100 40GB and 40 GB on an A100 80GB, although each node, alone, is consistent.
The plugin's fixtures are the nodes it describes; this check compares their partitions by name.
"""

from __future__ import annotations

from collections import defaultdict

from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: How far two nodes' partitions of one name may differ in memory: products reserve a few percent differently
#: (an A100 80GB's 3g.40gb has 40192 MiB, an H100's 40320 MiB); a partition of another size differs far more.
MEMORY_TOLERANCE = 0.10


@check("RAC244")
def one_partition_name_one_size_on_every_node(subject: Subject) -> Evidence:
    """A partition name stands for one size on every node the plugin's fixtures describe: the same compute
    slices, and memory within 10%.

    RAC216 holds each node to one size per partition resource; a Ray cluster mixes nodes, and a task that asks
    for a partition resource by name gets whichever node's partition Ray places it on. For every partition
    kind and profile (which name the partition's Ray resource and label) the suite collects the partitions of
    that name across all the plugin's fixtures: their compute slices, where stated, must be equal, and their
    memory within 10% of each other (products reserve memory a little differently). A failure names the
    profile and two fixtures with their sizes. Fix: name a partition by everything that sizes it (NVIDIA's
    '3g.40gb', not '3g'), so another size gets another name.
    """
    family = subject.family()
    # (kind, profile) -> fixture -> sizes (compute slices, memory MiB) of its partitions of that name
    seen: dict[tuple[str, str], dict[str, set[tuple[int | None, int | None]]]] = defaultdict(lambda: defaultdict(set))
    for ref in subject.fixture_paths():
        try:
            fam = subject.inventory(ref).family(family.name)
        except CheckFailed:
            continue  # an inventory that does not validate is RAC105's
        for device in fam.devices if fam is not None else []:
            for p in device.partitions:
                seen[(p.kind, p.profile)][ref].add((p.compute_slices, p.memory_mib))
    if not seen:
        raise NotApplicable("no fixture of the plugin has partitions")
    wrong = []
    for (kind, profile), by_fixture in sorted(seen.items()):
        sizes = [(ref, c, m) for ref, found in sorted(by_fixture.items()) for c, m in sorted(found, key=str)]
        computes = [(ref, c) for ref, c, _ in sizes if c is not None]
        memories = [(ref, m) for ref, _, m in sizes if m]
        if len({c for _, c in computes}) > 1:
            (a, ca), (b, cb) = computes[0], next(x for x in computes if x[1] != computes[0][1])
            wrong.append(f"invariant one-partition-name-one-size, {kind} '{profile}': {ca} compute slices on {a}, "
                         f"{cb} on {b}")
        elif memories:
            (a, small), (b, large) = min(memories, key=lambda x: x[1]), max(memories, key=lambda x: x[1])
            if large > small * (1 + MEMORY_TOLERANCE):
                wrong.append(f"invariant one-partition-name-one-size, {kind} '{profile}': {small} MiB on {a}, "
                             f"{large} MiB on {b}: a task asking for it by name gets either size")
    if wrong:
        raise CheckFailed(wrong)
    return (f"{len(seen)} partition names, each one size across the {len(list(subject.fixture_paths()))} "
            "fixtures")


#: How far a partition's memory slices may be from its memory's share of the device's slices: rounding to the
#: nearest slice (products reserve a little memory per partition, so a 3g.40gb on an A100 80GB is 3.93 of 8).
SLICE_ROUNDING = 0.5


@check("RAC252", scope="fixture")
def partition_memory_slices_are_its_share(subject: Subject, fixture: str | None) -> Evidence:
    """A partition's memory slices are its memory's share of the device's memory, in the device's memory slices,
    to the nearest slice.

    A device states how many memory slices it has (``partition_capacity.memory_slices``, 8 on an A100) and each
    partition how many it takes (``memory_slices``) and how much memory it has (``memory_mib``): the two
    must agree, ``memory_slices`` = ``memory_mib`` / device ``memory_mib`` x the device's slices, rounded to
    the nearest slice (at least 1). A count by floor division (3 for a 3g.40gb's 3.93 of 8), a constant 1, or
    the compute slices copied there is self-consistent on every fixture and makes placement by slices pack a
    partition where it does not fit. The failure names the fixture, the device, the partition and both counts
    (``invariant partition-memory-slices-are-its-share``). Not applicable where no partition states both its
    memory slices and its memory on a device that states its own. Fix: compute a partition's memory slices
    from its memory and the device's (round, not floor), or leave them unknown.
    """
    family = subject.family()
    ref = subject.fixture(fixture).ref
    fam = subject.inventory(fixture).family(family.name)
    wrong, compared = [], 0
    for device in fam.devices if fam is not None else []:
        capacity = device.partition_capacity
        if capacity is None or not device.memory_mib:
            continue
        for p in device.partitions:
            if p.memory_slices is None or p.memory_mib is None:
                continue
            compared += 1
            share = p.memory_mib * capacity.memory_slices / device.memory_mib
            if abs(p.memory_slices - max(1.0, share)) > SLICE_ROUNDING:
                wrong.append(f"invariant partition-memory-slices-are-its-share, {ref}: {device.id} partition "
                             f"{p.id} ({p.kind} '{p.profile}') takes {p.memory_slices} of the device's "
                             f"{capacity.memory_slices} memory slices, but its {p.memory_mib} MiB of the device's "
                             f"{device.memory_mib} MiB are {share:.2f} slices")
    if wrong:
        raise CheckFailed(wrong[:8] + ([f"... and {len(wrong) - 8} more"] if len(wrong) > 8 else []))
    if not compared:
        raise NotApplicable(f"{ref}: no partition states its memory slices and memory on a device of known "
                            "memory and slices")
    return f"{ref}: {compared} partitions, each taking its memory's share of its device's slices"
