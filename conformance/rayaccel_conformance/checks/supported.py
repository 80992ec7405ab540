"""Supported tier (RAC2xx): labels, topology, catalog, metrics, speed, Ray label selectors, cloud hints.

Robustness too: every declared fault as declared and recovered from (RAC203), vendor tools that hang or print
garbage bounded (RAC204)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from rayaccel import hookspec
from rayaccel.catalog import matching_skus, unreachable_skus
from rayaccel.hosts.expectations import (
    compare_expected,
    expectation_differences,
    reported_problem_codes,
)
from rayaccel.hosts.fixtures import Fixture, HostState, merge_patch
from rayaccel.hosts.recording import RecordingHost
from rayaccel.hosts.seam import Host
from rayaccel.inventory.topology import topology_errors
from rayaccel.labels import VOCABULARY, VOCABULARY_PREFIX, label_errors
from rayaccel.records import (
    LINK_KINDS,
    STANDARD_METRICS,
    Device,
    FamilyInventory,
    HealthReport,
    NodeInventory,
    Problem,
)
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.cloud_machines import stated_instance_types
from rayaccel_conformance.checks.cut_listings import cut_listing_differences, cut_listing_patches
from rayaccel_conformance.checks.down_records import one_lane_down_findings, one_port_down_findings
from rayaccel_conformance.checks.dropped_variables import dropped_variable_domain_errors
from rayaccel_conformance.checks.error_statuses import error_status_differences, error_status_patches
from rayaccel_conformance.checks.failed_listings import (
    library_failure_patches,
    losses_from_a_failed_listing,
    unreported_losses,
)
from rayaccel_conformance.checks.fatal_counts import one_fatal_error_findings
from rayaccel_conformance.checks.fault_joins import landed_elsewhere
from rayaccel_conformance.checks.fault_readings import readings_taken_for_a_fault
from rayaccel_conformance.checks.group_readings import other_group_member_errors
from rayaccel_conformance.checks.health_labels import health_count_label_errors
from rayaccel_conformance.checks.hint_types import untyped_hint_problem
from rayaccel_conformance.checks.host_domains import host_local_domain_errors
from rayaccel_conformance.checks.label_attributes import label_attribute_findings
from rayaccel_conformance.checks.left_out_signals import left_out_signal_findings
from rayaccel_conformance.checks.link_sized_domains import link_sized_domain_errors
from rayaccel_conformance.checks.link_states import first_link_down, peers_dropped, with_link_down
from rayaccel_conformance.checks.linked_members import (
    network_joined_member_errors,
    off_fabric_member_errors,
    unlinked_member_errors,
)
from rayaccel_conformance.checks.live_labels import live_label_failures
from rayaccel_conformance.checks.lost_answers import lost_answer_findings
from rayaccel_conformance.checks.metric_coverage import reported_elsewhere
from rayaccel_conformance.checks.moved_failures import unseen_failure_findings
from rayaccel_conformance.checks.moved_losses import (
    move_targets,
    moved_loss_differences,
    moved_patch,
    poll_after_loss_differences,
    stable_readings,
)
from rayaccel_conformance.checks.offered_resources import withheld_devices_counted
from rayaccel_conformance.checks.ownership import (
    accelerator_type_owner_problem,
    fabric_owner_problem,
    label_owner_problem,
    resource_name_problem,
    well_known_accelerator_types,
)
from rayaccel_conformance.checks.perturbations import (
    FILE_DAMAGE,
    MAX_DAMAGED_FILES,
    DownstreamAnswers,
    counter_decreases,
    damaged_file_findings,
    device_files,
    fact_differences,
    family_facts,
    inventory_traces,
    one_device_fault_leaks,
    order_differences,
    others_changed,
    removal_choices,
    reorder_differences,
    reorderings,
)
from rayaccel_conformance.checks.readings import host_readings
from rayaccel_conformance.checks.rising_errors import RAISED_BY, cleared_reasons, error_counts, raised_host
from rayaccel_conformance.checks.shared_domains import unshared_domain_errors
from rayaccel_conformance.checks.stated_slices import stated_slice_findings
from rayaccel_conformance.checks.unreadable_signals import unreadable_signal_findings
from rayaccel_conformance.checks.value_relations import (
    count_mixup,
    field_source,
    part_counts,
    plain_ratio,
    published_as,
    rate_mixup,
    ratio_mixup,
    reindexed,
)
from rayaccel_conformance.checks.vanished_entries import (
    VanishedEntryHost,
    entry_files_removed,
    others_dropped,
    vanished_entries,
)
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: Discovery of one fixture must take less than this (seconds), best of a few runs.
DISCOVERY_BUDGET_S = 1.0

@check("RAC201", scope="fixture")
def labels(subject: Subject, fixture: str | None) -> Evidence:
    """Labels use the vocabulary, pass Ray's label syntax and equal the fixture's expected labels.

    Every ``rayaccel.io/`` key must be one of the vocabulary (docs/labels.md); the plugin's own labels
    (``rayaccel_labels``, as returned) need the vendor's own DNS prefix: a domain naming the vendor or the
    family (``acme.example.com/`` for ACME Corp; a vendor's known domains such as ``habana.ai`` for Intel
    count), never another vendor's (``nvidia.com/`` from an ACME plugin), and Ray's keys only where they
    belong to the family (``ray.io/tpu-*`` for TPU); keys and values must pass Ray's label syntax, and none
    may be dropped as invalid; the node's labels must equal ``expected.labels`` of the fixture exactly. A
    whole-number label 1/2, 1/4 or 1/8 (or 2, 4, 8 times) of the value due is said with that ratio (not a cause:
    which per-unit factor gave it the numbers do not tell); where the machine's text states the value due two ways
    that agree (a topology's product, ``16x16``, and the count a name ends in, ``v6e-256``), its chips hold one unit
    each and no per-chip factor applies (held-out round 9's ``p2``, TPU v6e counted as a two-core generation;
    ``c-pod-cores-taken-for-cards``). And a label says what the node is, never what its devices are doing
    (``invariant a-label-is-no-live-reading``): the devices' readings of utilization, memory in use, power,
    temperature and the error counters, found on the host as RAC223 finds them, are moved on every device at once
    (all metrics together, then one at a time where anything moved) to both ends a running device reaches
    (utilization 0 and 100 %, memory in use 0 and all of it; power, temperature and the counters halved and
    doubled); where the metric follows and the devices, their health, links and resources stay as they were, every
    label must stay as it was. A Ray node's labels are set
    once, when it starts, so a label built from such a reading (busy, GiB free) is wrong a minute later (held-out
    round 12's ``l1``; ``c-busy-label-from-utilization``, ``c-free-memory-label``).
    A label whose name after its prefix, or a dotted tail of it (``amd.com/gpu.compute-partition``), names an
    attribute every device holds alike (``compute_partition``) holds that value (``invariant
    a-label-agrees-with-its-devices``, :mod:`.label_attributes`: the same build's records; held-out round 18's ``e2``,
    Neuron's ``logical-nc-config`` label read from an unset variable, ``1``, where the devices run LNC 2).
    Fix: the keys quoted are wrong or missing; values must be <= 63 characters of ``[A-Za-z0-9_.-]``; publish a
    live reading as a metric, never as a label.
    """
    subject.family()
    fx = subject.fixture(fixture)
    inventory = subject.inventory(fixture)
    wrong = [f"{k} is not in the rayaccel.io vocabulary" for k in inventory.labels
             if k.startswith(VOCABULARY_PREFIX) and k not in VOCABULARY]
    wrong += label_errors(inventory.labels)
    wrong += [p.render() for p in subject.plugin_problems(inventory, ("rayaccel_labels",), ("error", "warning"))]
    wrong += foreign_labels(subject, fx, inventory)
    if not fx.expected.labels:
        wrong.append(f"{fx.ref} states no expected labels: add expected.labels to the fixture")
    else:
        exp = fx.expected.model_copy(update={"devices": len(subject.devices(inventory)), "device_ids": [],
                                             "accelerator_type": None, "resources": {}, "health": {}, "skus": {},
                                             "links": None,  # problems are RAC105's:
                                             "problems": reported_problem_codes(inventory, subject.name)})
        wrong += compare_expected(inventory, fx, exp)
        state = fx.host.model_dump(mode="json")
        wrong += [f"label {key}: {named}" for key, want in fx.expected.labels.items()
                  if want.isdigit() and (got := inventory.labels.get(key, "")).isdigit()
                  and (named := count_mixup(int(got), int(want), state))]
    fam = inventory.family(subject.family().name)
    live, tried = live_label_failures(subject, fx, fam) if fam is not None else ([], [])
    wrong += live
    wrong += label_attribute_findings(fx, fam) if fam is not None else []
    if wrong:
        raise CheckFailed(wrong)
    return (f"{fx.ref}: {len(inventory.labels)} labels, all in the vocabulary or vendor-prefixed, as expected"
            + (f"; the same with the devices' {', '.join(tried)}" if tried else "; no live reading (utilization, "
               "memory in use, power, temperature, a counter) of the devices found on the host to move"))


def foreign_labels(subject: Subject, fx: Fixture, inventory: NodeInventory) -> list[str]:
    """The plugin's own labels (rayaccel_labels, as returned) that are not under its vendor's prefix."""
    family = subject.family()
    fam = inventory.family(family.name)
    if fam is None:
        return []
    problems: list[Problem] = []
    raw = subject.manager.answer(subject.name, hookspec.LABELS, problems, host=simulated_host(fx), inventory=fam)
    return [f"rayaccel_labels: {why}" for why in (label_owner_problem(k, family) for k in raw) if why]


@check("RAC202", scope="fixture")
def topology(subject: Subject, fixture: str | None) -> Evidence:
    """The topology is consistent: symmetric links between known devices, vocabulary kinds, sound domains.

    The plugin's ``rayaccel_topology`` result, as returned, must name only discovered device ids, never link a
    device to itself, report each pair once per kind with one bandwidth (links are undirected: a->b and b->a with
    different numbers is asymmetric; the same pair twice is a duplicate), use link kinds from the vocabulary, and
    describe domains whose members are known devices and whose size covers them, with no more hosts than the size
    fills at this host's member count (`invariant domain-hosts-hold-its-devices`), no device in two domains of one
    kind and one id per physical domain; a domain whose id follows the host's name (asked again on the machine
    renamed) is this host's alone and its size is its member count (`invariant host-local-domain-is-its-members`,
    under each fault too: RAC203); with one link the host states taken away, a domain that keeps its members keeps
    its size (`invariant a-domain-is-sized-by-its-devices`); where the plugin links members of a domain to each
    other, a member with no link to any other is no member (`invariant a-member-without-links-is-no-member`, under
    each fault too: RAC203), and two members linked only by a network's kind (roce, infiniband, efa, ethernet) have
    their fabric's links given another kind, and the members of a domain whose kind names a fabric (xgmi-hive: xgmi,
    nvswitch: nvlink, ...) are joined by that fabric's links, not only by another kind's (`invariant
    a-domain-is-joined-by-its-fabric`); with each variable the host sets unset in turn, a domain spanning more
    devices than the host has keeps its id, takes one the host states or builds one from what it states (each stated
    name in it followed when renamed, the rest changing with a number the host's variables state while the node
    keeps its place: a later UltraServer group's ``<worker 0's host>.<k>``), never one made up (`invariant
    a-group-without-its-variable-is-no-group`); with each whole number the host's variables state moved through the
    values around it (the node's place, its worker number), a multi-host domain is one id at several places, never
    one id per place (`invariant one-domain-one-id-on-its-hosts`: the hosts of one group name it alike); a member
    whose record stating part of the domain's id is given another value of an identifier every member states alike
    there (NVML's ``cliqueId`` beside ``clusterUuid``, a driver's ``partition_id``) shares no domain with the others
    (`invariant a-device-of-another-group-is-no-member`: a fabric manager assigns the partition per device); where
    the machine states one count twice, as a topology's product and as the count a name ends in (``TOPOLOGY: '16x16'``
    beside ``ACCELERATOR_TYPE: 'v6e-256'``), a domain whose id the machine states holds that many devices (`invariant
    a-slice-holds-the-chips-its-topology-states`, :mod:`.stated_slices`: two statements that agree leave no per-chip
    factor to apply; held-out round 19's ``p2``, v6e counted as two cores a chip, a 256-chip slice sized 128); the link
    count must equal the fixture's ``expected.links`` (a count off because of duplicates says so). Fix: build links
    from the discovered ``devices`` argument, once per unordered pair, and one domain per physical fabric.
    """
    subject.family()
    fx = subject.fixture(fixture)
    inventory = subject.inventory(fixture)
    devices = subject.devices(inventory)
    problems: list[Problem] = []
    raw = subject.manager.answer(subject.name, hookspec.TOPOLOGY, problems, host=simulated_host(fx),
                                 devices=list(devices))
    wrong = [p.render() for p in problems]
    wrong += topology_errors(devices, raw)
    by_pair: dict[tuple[str, str, str], tuple[float | None, int]] = {}
    duplicates = 0
    for link in raw.links:
        key = (min(link.a, link.b), max(link.a, link.b), link.kind)
        seen = by_pair.setdefault(key, (link.bandwidth_gbps, link.lanes))
        if seen != (link.bandwidth_gbps, link.lanes):
            wrong.append(f"link {key[0]}<->{key[1]} ({link.kind}) is asymmetric: {seen} one way, "
                         f"{(link.bandwidth_gbps, link.lanes)} the other")
        elif sum(1 for ln in raw.links if (min(ln.a, ln.b), max(ln.a, ln.b), ln.kind) == key) > 1:
            duplicates += 1
            if duplicates == 1:
                wrong.append(f"link {key[0]}<->{key[1]} ({link.kind}) is reported twice, as a duplicate (a->b and "
                             "b->a, or the same pair twice): report each unordered pair once")
    wrong += [f"link kind {ln.kind!r} is not in the vocabulary" for ln in raw.links if ln.kind not in LINK_KINDS]
    wrong += domain_problems(raw)
    wrong += stated_slice_findings(fx, raw.domains)
    wrong += host_local_domain_errors(subject, fx, devices, raw.domains)
    name = subject.family().name
    family = inventory.family(name)
    wrong += link_sized_domain_errors(subject, fx, family, name) if family else []
    wrong += unlinked_member_errors(raw.links, raw.domains)
    wrong += network_joined_member_errors(raw.links, raw.domains)
    wrong += off_fabric_member_errors(raw.links, raw.domains)
    wrong += dropped_variable_domain_errors(subject, fx)
    wrong += unshared_domain_errors(subject, fx)
    wrong += other_group_member_errors(subject, fx, family, name) if family else []
    if fx.expected.links is not None and len(raw.links) != fx.expected.links:
        cause = (f" (a consequence of the {len(raw.links) - len(by_pair)} duplicate links above)"
                 if duplicates and len(by_pair) == fx.expected.links else "")
        wrong.append(f"{fx.ref}: expected {fx.expected.links} links, the plugin reports {len(raw.links)}{cause}")
    if wrong:
        raise CheckFailed(sorted(set(wrong), key=wrong.index))
    return (f"{fx.ref}: {len(raw.links)} links ({', '.join(sorted({ln.kind for ln in raw.links})) or 'none'}), "
            f"{len(raw.domains)} domains, consistent")


def domain_problems(topology: Any) -> list[str]:
    """Scale-up domains that contradict each other: one device in two domains of a kind, one id for two
    physical domains (different members or sizes under one kind and id)."""
    wrong = []
    home: dict[tuple[str, str], str] = {}
    by_id: dict[tuple[str, str], tuple[int, tuple[str, ...]]] = {}
    for dm in topology.domains:
        for member in dm.members:
            other = home.setdefault((dm.kind, member), dm.id)
            if other != dm.id:
                wrong.append(f"device {member} is in two {dm.kind} domains ({other} and {dm.id}): a device belongs "
                             "to one physical domain of a kind")
        shape = (dm.size, tuple(sorted(dm.members)))
        seen = by_id.setdefault((dm.kind, dm.id), shape)
        if seen != shape:
            wrong.append(f"two {dm.kind} domains share the id {dm.id!r} (size {seen[0]} with {len(seen[1])} members, "
                         f"size {dm.size} with {len(dm.members)}): give each physical domain its own id")
    return wrong


@check("RAC205", scope="fixture")
def sku_catalog(subject: Subject, fixture: str | None) -> Evidence:
    """The SKU catalog validates and every fixture device resolves to a known SKU.

    ``rayaccel_sku_catalog`` must return a catalog that passes the shipped JSON Schema
    (``sku-catalog.schema.json``) and the record's own checks, and each device the fixture discovers must
    match one of its SKUs (by PCI device id or product name). A fixture may test the unknown-SKU path on
    purpose by stating ``rayaccel.io/sku-known: 'false'`` in its expected labels. The catalog must be
    unambiguous: no device may match two SKUs by the rule that decides it (two SKUs with its PCI device id,
    its exact product name, or product patterns that both match it), or its SKU, memory and accelerator type
    would depend on the catalog's order; so may no product name the catalog itself ships (each SKU's
    marketing and exact names, as a device without a PCI id reports them). Every SKU must be reachable
    (``invariant every-sku-is-reachable``): a SKU told apart by device ``fields`` (cards alike in everything
    else: one name, or one PCI id, for every card) is tried on a card stating its fields, and its PCI id and
    product name where it states them, otherwise as each discovered device reports itself; a sibling whose
    rule outranks the fields (PCI id, exact name: the SDK's order) taking that card means no card of the SKU
    ever resolves to it (held-out round 15's ``l2``: a 64 GB variant after the 96 GB SKU's PCI id). Fix: add
    the SKU with the ``rayaccel sku add`` command the inventory's warning prints; make patterns specific
    (anchor them) so one product has one SKU; tell SKUs alike but for a field apart by fields in each of them.
    """
    from rayaccel.schemas import schema_errors

    subject.family()
    fx = subject.fixture(fixture)
    problems: list[Problem] = []
    catalog = subject.manager.answer(subject.name, hookspec.SKU_CATALOG, problems)
    if catalog is None:
        raise CheckFailed([p.render() for p in problems] or ["the plugin has no rayaccel_sku_catalog hook"])
    errors = schema_errors("sku-catalog", catalog.model_dump(mode="json", by_alias=True, exclude_none=True))
    if errors:
        raise CheckFailed([f"catalog fails its JSON Schema {e}" for e in errors[:3]])
    devices = subject.devices(subject.inventory(fixture))
    ambiguous = [a for a in (ambiguous_match(catalog, d) for d in devices) if a]
    ambiguous += shipped_name_ambiguities(catalog)
    if ambiguous:
        raise CheckFailed(sorted(set(ambiguous)))
    unreachable = unreachable_skus(catalog, devices)
    if unreachable:
        raise CheckFailed([f"invariant every-sku-is-reachable, {fx.ref}: {line}" for line in unreachable])
    unknown = [f"{d.id} ({d.product_name!r})" for d in devices if d.sku is None]
    on_purpose = fx.expected.labels.get("rayaccel.io/sku-known") == "false"
    if unknown and not on_purpose:
        raise CheckFailed(f"{fx.ref}: devices with no SKU in the catalog: {', '.join(unknown[:4])}")
    skus = sorted({str(d.sku) for d in devices if d.sku})
    note = f"; {len(unknown)} unknown on purpose (fixture expects sku-known=false)" if unknown else ""
    return f"{fx.ref}: catalog of {len(catalog.skus)} SKUs validates; devices resolve to {skus}{note}"


def shipped_name_ambiguities(catalog: Any) -> list[str]:
    """Every product name the catalog itself ships (marketing and exact names), reported by a device with no
    PCI id: no name may match two SKUs by the rule that decides it (an unanchored pattern such as ``MI300``
    catches ``MI300A`` beside ``MI300X``), whether or not a fixture has that card."""
    from rayaccel.records import Device

    names = {sku.marketing_name for sku in catalog.skus if sku.marketing_name}
    names |= {name for sku in catalog.skus for name in sku.match.product_names}
    found = []
    for name in sorted(names):
        why = ambiguous_match(catalog, Device(index=0, id="probe", product_name=name))
        if why:
            found.append(f"{why} (a product name the catalog ships)")
    return found


def ambiguous_match(catalog: Any, device: Any) -> str | None:
    """Which SKUs match the device by the rule that decides it (PCI id, exact name, fields, pattern), if several
    do (the rules are the SDK's own, :data:`rayaccel.catalog.MATCH_RULES`)."""
    found = matching_skus(catalog, device)
    if found is None or len(found[1]) == 1:
        return None
    how, hits = found
    return (f"the catalog is ambiguous: {len(hits)} SKUs ({', '.join(s.id for s in hits)}) match product "
            f"{device.product_name!r} by {how}")


@check("RAC206", scope="fixture")
def metrics(subject: Subject, fixture: str | None) -> Evidence:
    """Metric samples have the standard names and units, for discovered devices.

    The plugin must implement ``rayaccel_metrics``; every sample's name must be standard (``utilization`` in
    percent, ``memory_used`` in bytes, ...) or prefixed ``vendor.``, in its one unit, and name a discovered
    device (a fixture whose vendor interface offers no metric may give none; the metrics its ``expected.
    metrics`` names, every device must give). One malformed sample drops all of them. Values must agree with
    the device facts discovery gave: ``memory_total`` equals the device's memory (``memory_mib`` x 2^20
    bytes, within 1%), ``memory_used`` is at most that, ``utilization`` is 0-100, ``temperature`` -40..150
    C, ``power`` 0..5000 W, counters and rates are non-negative, all finite; and the values the fixture's
    ``expected.metric_values`` states (what the recorded machine reads, in the standard unit; rates, which need two
    polls, are RAC246's) within 1%. A wrong value names the defect its relation to the machine's points to: a
    unit mix-up (x1000, 1/2^20, x8), another field of the reading's record (``peak`` beside ``total``), another
    device's key, or a metric the SKU's devices give on another fixture (RAC255); a value twice or half the
    machine's is said as that, no cause (one of two cores, one direction of two: the numbers do not tell which).
    Fix: use ``rayaccel.records.STANDARD_METRICS`` for names and units; convert MiB to bytes, mW to watts. Each
    failure names where the wrong value came from: the plugin's conversion, the device memory the SDK filled
    from the catalog's SKU (fix the catalog), or a stale ``expected.metric_values`` (a fixture ``rayaccel sku
    add`` derived from another card: ``rayaccel fixture expect <fixture> --write`` recomputes it).
    """
    subject.family()
    fx = subject.fixture(fixture)
    devices = subject.devices(subject.inventory(fixture))
    problems: list[Problem] = []
    samples = subject.manager.answer(subject.name, hookspec.METRICS, problems, host=simulated_host(fx),
                                     devices=list(devices))
    wrong = [p.render() for p in problems]
    ids = {d.id for d in devices}
    wrong += [f"sample {s.name} names unknown device {s.device!r}" for s in samples if s.device not in ids]
    raw = subject.manager.answer(subject.name, hookspec.DISCOVER, [], host=simulated_host(fx)) or []
    reported = {d.id: d.memory_mib for d in raw}
    from_catalog = {d.id: str(d.sku) for d in devices if d.memory_mib is not None and reported.get(d.id) is None}
    wrong += metric_contradictions(samples, devices, from_catalog)
    elsewhere: dict[tuple[str | None, tuple[str, ...]], str | None] = {}  # asked once per SKU and metrics lacking
    for device in devices:  # what the fixture says the vendor interface offers for every device
        lacking = sorted(set(fx.expected.metrics) - {s.name for s in samples if s.device == device.id})
        if lacking:
            key = (device.sku, tuple(lacking))
            if key not in elsewhere:
                elsewhere[key] = reported_elsewhere(subject, fx.ref, device.sku, lacking) if device.sku else None
            wrong.append(f"{device.id} has no {', '.join(lacking)} sample, which the fixture's vendor interface "
                         "offers (expected.metrics)" + (f": {elsewhere[key]}" if elsewhere[key] else ""))
    wrong += metric_value_differences(samples, one_poll_values(fx.expected.metric_values), devices, fx)
    if not subject.manager.implements(subject.name, "rayaccel_metrics"):
        names = ", ".join(sorted(STANDARD_METRICS))
        wrong.append(f"the plugin implements no rayaccel_metrics hook (standard metrics: {names})")
    if wrong:
        raise CheckFailed(wrong)
    standard = sorted({s.name for s in samples if s.name in STANDARD_METRICS})
    if not samples:
        return f"{fx.ref}: no samples (the recorded vendor interface offers none here)"
    return f"{fx.ref}: {len(samples)} samples; standard metrics {', '.join(standard) or 'none'}"


def one_poll_values(expected: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The stated values one poll gives: not rates (bytes per second), which need two (RAC246 polls twice)."""
    return {device: {name: value for name, value in values.items()
                     if STANDARD_METRICS.get(name) != "bytes_per_second"} for device, values in expected.items()}


def metric_value_differences(samples: list[Any], expected: dict[str, dict[str, float]],
                             devices: Sequence[Any] = (), fixture: Any = None) -> list[str]:
    """Samples that differ from the values a fixture states for a device (within 1%), each naming the defect its
    value points to (:mod:`.value_relations`): a unit mix-up where the ratio is one, another field of the
    reading's record, another device's value (indexed by another key), or the fixture's value as the stale one
    where the sample agrees with the device's own memory (a fixture derived from another card); else a ratio of
    twice or half, said as that."""
    got = {(s.device, s.name): s for s in samples}
    memory = {d.id: d.memory_mib * 2**20 for d in devices if d.memory_mib}
    by_id = {d.id: d for d in devices}
    derived = fixture is not None and "by rayaccel sku add" in (fixture.source or "")
    recompute = (f"rayaccel fixture expect {fixture.ref} --write" if fixture is not None
                 else "rayaccel fixture expect <fixture> --write")
    stated: dict[str, list[float]] = {}
    for values in expected.values():
        for name, want in values.items():
            stated.setdefault(name, []).append(want)
    # The node's mean of a metric the machine reads differently per device: a sample equal to it is no device's own.
    means = {name: sum(v) / len(v) for name, v in stated.items() if len(v) > 1 and len(set(v)) > 1}
    given = [(s.device, s.name, s.value) for s in samples]
    readings: list[Any] | None = None  # the fixture's numbers, read once and only where a value differs
    wrong = []
    for device, values in expected.items():
        for name, want in values.items():
            sample = got.get((device, name))
            if sample is None:
                moved = published_as(device, name, want, given) or reindexed(device, name, want, given, expected,
                                                                             by_id)
                wrong.append(f"{device} has no {name} sample; the fixture's machine reads {want:g} "
                             "(expected.metric_values)" + (f": {moved}" if moved else ""))
                continue
            if abs(sample.value - want) <= 0.01 * abs(want):
                continue
            if readings is None:
                readings = host_readings(fixture.host.model_dump(mode="json"), zeros=True) if fixture else []
            if (name == "memory_total" and device in memory
                    and abs(sample.value - memory[device]) <= 0.01 * memory[device]):
                why = (f"the sample agrees with the device's {memory[device] // 2**20} MiB, so the fixture's value is "
                       "stale" + (" (derived by rayaccel sku add from another card)" if derived else "")
                       + f": recompute it with {recompute}")
            elif sample.unit == "bytes_per_second" and device in by_id and (
                    timing := rate_mixup(sample.value, want, by_id[device], readings)):
                why = f"the plugin's rate: {timing}"
            elif mixup := ratio_mixup(sample.value, want, sample.unit,
                                      parts=part_counts(by_id[device]) if device in by_id else None):
                why = f"the plugin's conversion: {mixup}"
            elif renamed := published_as(device, name, want, given):
                field = field_source(sample.value, want, name, by_id[device], readings) if device in by_id else None
                why = renamed + (f"; {field}" if field else "")
            elif field := (field_source(sample.value, want, name, by_id[device], readings)
                           if device in by_id else None):
                why = field
            elif moved := reindexed(device, name, want, given, expected, by_id):
                why = moved
            elif name in means and abs(sample.value - means[name]) <= 0.01 * max(abs(means[name]), 1e-9):
                why = (f"the mean of the {len(stated[name])} devices' readings ({means[name]:g}): each device's own "
                       "reading is due, not the node's")
            else:  # twice or half: the ratio, no cause (no unit's power gives it; many defects do)
                why = plain_ratio(sample.value, want, sample.unit,
                                  parts=part_counts(by_id[device]) if device in by_id else None) or ""
            wrong.append(f"sample {name} of {device} is {sample.value:g} {sample.unit}; the fixture's machine "
                         f"reads {want:g} (expected.metric_values)" + (f": {why}" if why else ""))
    return wrong


#: Plausible ranges of standard metrics (inclusive), in their standard units.
METRIC_RANGES: dict[str, tuple[float, float]] = {
    "utilization": (0.0, 100.0), "temperature": (-40.0, 150.0), "power": (0.0, 5000.0),
    "memory_used": (0.0, float("inf")), "memory_total": (0.0, float("inf")),
    "interconnect_tx": (0.0, float("inf")), "interconnect_rx": (0.0, float("inf")),
    "ecc_errors_corrected": (0.0, float("inf")), "ecc_errors_uncorrected": (0.0, float("inf")),
}


def metric_contradictions(samples: list[Any], devices: list[Any],
                          from_catalog: dict[str, str] | None = None) -> list[str]:
    """Samples whose values contradict each other, their unit's range, or the device's own memory size.
    ``from_catalog``: device id -> SKU, for devices whose memory the SDK filled from the catalog (the plugin's
    discovery reported none), so a disagreement names the catalog entry rather than the plugin's conversion."""
    import math

    memory = {d.id: d.memory_mib * 2**20 for d in devices if d.memory_mib}
    parts = {d.id: part_counts(d) for d in devices}
    totals = {s.device: s.value for s in samples if s.name == "memory_total"}
    wrong = []
    for s in samples:
        low, high = METRIC_RANGES.get(s.name, (-math.inf, math.inf))
        if not math.isfinite(s.value):
            wrong.append(f"sample {s.name} of {s.device} is {s.value}, not a finite number")
        elif not low <= s.value <= high:
            wrong.append(f"sample {s.name} of {s.device} is {s.value:g} {s.unit}, outside {low:g}..{high:g}")
        elif (s.name == "memory_total" and s.device in memory
              and abs(s.value - memory[s.device]) > 0.01 * memory[s.device]):
            sku = (from_catalog or {}).get(s.device)
            ratio = (ratio_mixup(s.value, memory[s.device], "bytes", parts=parts.get(s.device))
                     or plain_ratio(s.value, memory[s.device], "bytes", parts=parts.get(s.device)))
            source = (f"SDK-filled from SKU {sku}'s memory_mib in the catalog, as discovery reported none: is the "
                      "catalog entry right?" if sku else "as the plugin's discovery reports it"
                      + (f": {ratio}" if ratio else ""))
            wrong.append(f"sample memory_total of {s.device} is {s.value:g} bytes, but the device has "
                         f"{memory[s.device] // 2**20} MiB = {memory[s.device]} bytes ({source})")
        elif s.name == "memory_used" and s.value > totals.get(s.device, memory.get(s.device, math.inf)) * 1.01:
            wrong.append(f"sample memory_used of {s.device} is {s.value:g} bytes, more than the device's memory "
                         f"({totals.get(s.device, memory.get(s.device))} bytes)")
    return wrong


@check("RAC207", scope="fixture")
def discovery_speed(subject: Subject, fixture: str | None) -> Evidence:
    """Discovery of one fixture takes under 1 s.

    The whole inventory of the fixture (discovery, SKU resolution, topology, health, resources, labels,
    metrics) is built three times on a fresh simulated host; the fastest must take less than 1 s. Slow
    discovery delays every node start and every health poll. Fix: read each vendor answer once per call,
    and do not sleep or retry on a healthy machine.
    """
    subject.family()
    fx = subject.fixture(fixture)
    times = [subject.timed_build(simulated_host(fx))[1] for _ in range(3)]
    best = min(times)
    if best >= DISCOVERY_BUDGET_S:
        raise CheckFailed(f"{fx.ref}: the fastest of 3 inventories took {best:.2f}s (budget {DISCOVERY_BUDGET_S:g}s)")
    return f"{fx.ref}: {best * 1000:.0f} ms (best of 3)"


@check("RAC208", scope="fixture", uses_ray=True)
def ray_label_selector(subject: Subject, fixture: str | None) -> Evidence:
    """On a real multi-node Ray cluster, a task selecting the plugin's accelerator type lands on the node
    that has it and on no other.

    The run's shared ``ray.cluster_utils.Cluster`` has a head node without the family and one node per
    fixture, each started with ``rayaccel.ray.add_node``. Tasks with
    ``label_selector={"ray.io/accelerator-type": <type>}`` must all run on nodes labelled with that type, and
    the fixture's node must carry it. Fix: the node labels come from the inventory; check
    ``ray.io/accelerator-type`` in ``rayaccel inspect --simulate <fixture>``.
    """
    from rayaccel_conformance.harness.raycluster import shared_cluster

    subject.family()
    inventory = subject.inventory(fixture)
    fam = inventory.family(subject.family().name)
    if fam is None or not fam.accelerator_type:
        raise CheckFailed(subject.consequence(inventory, f"{fixture}: no accelerator type to select"))
    assert fixture is not None
    return shared_cluster().label_selector_check(subject, fixture, inventory)


#: Instance types RAC209 asks a plugin about, by provider (the accelerator instances of the big clouds).
CLOUD_INSTANCE_TYPES: dict[str, tuple[str, ...]] = {
    "aws": ("p4d.24xlarge", "p5.48xlarge", "p5e.48xlarge", "g5.48xlarge", "g6.xlarge", "trn1.32xlarge",
            "trn2.48xlarge", "inf2.48xlarge", "dl1.24xlarge"),
    "gcp": ("a2-highgpu-8g", "a3-highgpu-8g", "a3-megagpu-8g", "g2-standard-4", "ct5lp-hightpu-4t",
            "ct5p-hightpu-4t", "ct6e-standard-4t"),
    "azure": ("Standard_ND96amsr_A100_v4", "Standard_ND96isr_H100_v5", "Standard_ND96isr_MI300X_v5"),
    "oci": ("BM.GPU.H100.8", "BM.GPU.MI300X.8"),
}


@check("RAC209")
def cloud_hints(subject: Subject) -> Evidence:
    """Cloud hints agree with the family, its catalog and its quantity rule, and own their resource names.

    ``rayaccel_cloud_hints(provider, instance_type)`` lets an autoscaler scale from zero without probing, so a
    wrong hint starts the wrong machine. The check asks about the accelerator instance types of AWS, GCP, Azure
    and OCI, each fixture's name under every provider and its host name under provider ``other``, and those the
    plugin lists (``rayaccel_cloud_instance_types``, each an exported node type); every hint returned must name
    the asked provider, instance type and the plugin's family, give a positive count the quantity rule allows, an
    accelerator type that one of the catalog's SKUs (or a fixture's inventory) has, and extra resources whose
    names pass RAC111. A hint for a fixture's own machine must count what discovery counts there (chips and cards
    are not interchangeable), give the accelerator type discovery gives and only extra resources discovery gives,
    as many of each. A fixture's own machine is the instance type its name or host name is, and the one its host
    states (EC2's DMI product name, asked under ``aws``) whatever the fixture is called: a hint for that type must
    be what one of those fixtures discovers, one whose host sets no environment where there is one (`invariant
    hint-is-its-stated-machine`: an LNC or UltraServer setting is the node's, not the type's). Where every
    fixture's discovery gives the family an accelerator type, every hint must give one (`invariant
    a-hint-names-the-type-its-node-publishes`: the node type lacks ``accelerator_type:<type>`` otherwise, which
    Ray's own AWS node types carry beside the count, so a task asking for the type never starts it). A plugin
    without the hook, or one that knows none of these instance types, is not applicable. Fix: build hints from the
    same SKU table discovery uses, counting the same unit, each instance type's row from that machine.
    """
    from rayaccel.inventory.quantity import check_quantity

    family = subject.family()
    if not subject.manager.implements(subject.name, "rayaccel_cloud_hints"):
        raise NotApplicable("the plugin implements no rayaccel_cloud_hints hook")
    catalog = subject.manager.answer(subject.name, hookspec.SKU_CATALOG, [])
    types = {sku.accelerator_type for sku in (catalog.skus if catalog else [])}
    catalog_types = set(types)
    # The accelerator type each fixture's node publishes (None: the family found there gives none).
    published: dict[str, str | None] = {}
    for ref in subject.fixture_paths():
        fam = subject.inventory(ref).family(family.name)
        if fam is not None:
            published[ref] = fam.accelerator_type
        if fam is not None and fam.accelerator_type:
            types.add(fam.accelerator_type)
    others = {subject.manager.family(p).resource_name: p for p in subject.manager.plugin_names() if p != subject.name}
    asked = [(provider, t) for provider, names in CLOUD_INSTANCE_TYPES.items() for t in names]
    # A fixture recorded on an instance type (its name, or its host name) is what a hint for that type
    # promises: asked under every provider, and its answer compared with the fixture's own inventory.
    # A host name several fixtures share (cloud VMs' ip-10-...) names no one machine: asked, not compared.
    machine_of: dict[tuple[str, str], str | None] = {}
    # The fixtures whose host states the instance type, whatever they are called (EC2's DMI product name).
    stated_on: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for ref in subject.fixture_paths():
        fx = subject.fixture(ref)
        keys = [(provider, fx.name) for provider in CLOUD_INSTANCE_TYPES] + [("other", fx.host.hostname or fx.name)]
        for key in keys:
            machine_of[key] = ref if key not in machine_of else None
        for provider, instance_type, path in stated_instance_types(fx):
            stated_on.setdefault((provider, instance_type), []).append((ref, path))
    # The instance types the plugin lists itself (rayaccel_cloud_instance_types): `rayaccel export` builds an
    # autoscaler node type from each, so each is asked too.
    listed: list[tuple[str, str]] = []
    if subject.manager.implements(subject.name, "rayaccel_cloud_instance_types"):
        listed = [(h.provider, h.instance_type)
                  for h in subject.manager.answer(subject.name, hookspec.CLOUD_INSTANCE_TYPES, []) or []]
    asked = list(dict.fromkeys([*asked, *machine_of, *stated_on, *listed]))
    wrong, known = [], []
    for provider, instance_type in asked:
        problems: list[Problem] = []
        hint = subject.manager.answer(subject.name, hookspec.CLOUD_HINTS, problems, provider=provider,
                                      instance_type=instance_type)
        wrong += [p.render() for p in problems]
        if hint is None:
            continue
        where = f"hint for {provider} {instance_type}"
        known.append(f"{instance_type}: {hint.count:g} {family.resource_name}")
        if (hint.provider, hint.instance_type) != (provider, instance_type):
            wrong.append(f"{where} answers for {hint.provider} {hint.instance_type}")
        if hint.family != family.name:
            wrong.append(f"{where} names family {hint.family!r}, not {family.name!r}")
        ok, message = check_quantity(family.quantity_rule, family.resource_name, hint.count)
        if hint.count <= 0 or not ok:
            wrong.append(f"{where}: count {hint.count:g} is not a quantity of {family.resource_name} the family "
                         f"offers ({message or 'zero'})")
        if hint.accelerator_type is not None and types and hint.accelerator_type not in types:
            wrong.append(f"{where}: accelerator type {hint.accelerator_type!r} is not one the catalog or discovery "
                         f"gives ({', '.join(sorted(types))})")
        if (untyped := untyped_hint_problem(hint, family.resource_name, published, catalog_types, where)) is not None:
            wrong.append(untyped)
        for name in hint.extra_resources:
            why = resource_name_problem(name, family, others)
            if why:
                wrong.append(f"{where}: {why}")
        machine = machine_of.get((provider, instance_type))
        if machine is not None:
            wrong += hint_against_fixture(subject, hint, f"{machine} (that machine)", subject.inventory(machine), where)
        wrong += hint_against_stated_machine(subject, hint, stated_on.get((provider, instance_type.strip().lower()),
                                                                          []), machine, where)
    if wrong:
        raise CheckFailed(sorted(set(wrong), key=wrong.index))
    if not known:
        raise NotApplicable(f"the plugin gives no hint for any of the {len(asked)} instance types asked")
    return [f"{len(known)} hints agree with the family and catalog", *known[:3]]


def hint_against_stated_machine(subject: Subject, hint: Any, stated: list[tuple[str, str]], named: str | None,
                                where: str) -> list[str]:
    """A hint held to the fixtures whose host states its instance type (ref, the file stating it): what the one at
    the type's defaults contradicts (a host without environment settings), else what every one of them does."""
    defaults = [(ref, path) for ref, path in stated if not subject.fixture(ref).host.env]
    said = {ref: hint_against_fixture(subject, hint, f"{ref} (its {path} states that instance type)",
                                      subject.inventory(ref), where) for ref, path in defaults or stated}
    if not all(said.values()):
        return []
    # The fixture named for the type is compared already, under its name.
    return [f"invariant hint-is-its-stated-machine: {line}" for ref, lines in said.items() if ref != named
            for line in lines][:2]


def hint_against_fixture(subject: Subject, hint: Any, machine: str, inventory: NodeInventory,
                         where: str) -> list[str]:
    """What a hint for a fixture's own instance type says that the fixture's inventory contradicts."""
    family = subject.family()
    fam = inventory.family(family.name)
    if fam is None:
        return []
    wrong = []
    count = fam.resources.get(family.resource_name, 0.0)
    if hint.count != count:
        wrong.append(f"{where}: count {hint.count:g}, but on fixture {machine} discovery counts "
                     f"{count:g} {family.resource_name} ({len(fam.devices)} devices): hints and discovery must count "
                     "the same unit (chips or cards)")
    if hint.accelerator_type is not None and fam.accelerator_type and hint.accelerator_type != fam.accelerator_type:
        wrong.append(f"{where}: accelerator type {hint.accelerator_type!r}, but fixture {machine} discovers "
                     f"{fam.accelerator_type!r}")
    for name, units in hint.extra_resources.items():
        found = fam.resources.get(name)
        if found != units:
            wrong.append(f"{where}: extra resource {name}={units:g}, but on fixture {machine} "
                         + (f"discovery gives {name}={found:g}" if found is not None else f"discovery gives no {name}")
                         + ": an autoscaler would start it for tasks it cannot run")
    return wrong


GARBAGE = "\x00\ufffd<html>502 Bad Gateway</html>\n{\"truncated\": [1, 2,\n\x1b[31m?? ??\n"
#: A vendor tool that cannot reach its driver: it exits non-zero, printing nothing it was asked for (hl-smi exits 1
#: with nothing printed, as hls-gaudi3's hl-smi-fails records; nvidia-smi exits 9, "NVIDIA driver is not loaded" in
#: nvidia-smi(1)'s RETURN VALUE, or 18 with only its error line: GoogleCloudPlatform/compute-gpu-installation#18,
#: anderskm/gputil#55).
COMMAND_FAILURE = {"stdout": "", "stderr": "", "returncode": 1}


@check("RAC203", scope="fixture")
def faults_and_recovery(subject: Subject, fixture: str | None) -> Evidence:
    """Every declared fault gives the declared health state, and recovery gives healthy again.

    Each fault of the fixture is switched on in a running simulated host (through its fault file, as on a live
    node), the inventory is rebuilt and compared with the fault's ``expected`` (health per device, devices,
    resources, fatal, problem codes, each device's units where stated, and the health reason codes each device
    must report: the code is what a monitor and an operator act on, so "some fault" with another code fails; and,
    where stated, device fields, domains, link lanes, metric values sampled under the fault, and
    ``problems_exactly``: no problem but the ones it lists);
    then the fault is switched off on the same host and the inventory must equal the fixture's healthy
    expectation again. A hook that raises under a fault whose ``expected.problem_codes`` does not name
    ``hook-raised`` fails too (`invariant a-fault-is-an-answer`): the SDK's stand-in for a raising hook (the
    catalog's accelerator type, no samples) can equal the right answer, so only the raise tells. A domain that
    is this host's alone must hold exactly its members under each fault as on the fixture (`invariant
    host-local-domain-is-its-members`, RAC202), and hold no member the fault leaves without a link to the others
    (`invariant a-member-without-links-is-no-member`). A vendor label named for the healthy or unhealthy devices with
    a whole-number value must count them under each fault (`invariant health-count-label-follows-health`). A
    fatal or uncorrectable error count a fault raises by two or more, raised by one instead, gives the device the
    same state and fatal flag (`invariant one-fatal-error-is-enough`: one uncorrectable error is the fault). A fault
    that switches several like records of one listing off (ports or links ``UP`` -> ``DOWN``, ``1`` -> ``0``),
    switched for one of them only, leaves a device the whole fault takes out of health still not healthy
    (`invariant one-port-down-is-enough`: a port down is a lane lost; :mod:`.down_records`); where the whole fault
    takes lanes from the node's links, so does each of them alone (`invariant one-port-down-is-a-lane-less`). A device
    a fault states healthy and reported otherwise is named with the readings the fault changes on it, each from and
    to, beside the reasons reported (the cause: NVML's lifetime ECC counter read for the since-boot one). A fault
    whose change lands on a device it does not touch, the one it touches keeping its state, is named by the record
    it changes where a field of that record names the touched device (PCI address or id) and the other device's
    index is the number the record's place carries (``accel2``, a list's entry, a row): the plugin joined the
    record by that enumeration number, not by the address it gives (:mod:`.fault_joins`). A fault that changes
    nothing the plugin answers, written on a sibling of the unit's record it writes (the device's own first), must
    fail no unit there either (`invariant a-failure-anywhere-is-seen`: a partition's or a die's own failure read on
    some records only; :mod:`.moved_failures`). An extra resource that a fault taking a device off the host
    changes must answer the same on the host with the device listed but not given to ``rayaccel_resources``, as an
    unhealthy device is not (`invariant resources-count-the-devices-given`, :mod:`.offered_resources`). A fault that
    only takes answers away (a command failing or hanging, a file gone, a library raising) leaves every partition's
    profile and every text attribute as the machine's full answers give them and adds no resource (`invariant
    a-lost-answer-is-no-other-answer`, :mod:`.lost_answers`): a mode the plugin cannot read is no default. Each
    number a tool's output (JSON value, CSV cell) holds that a fault changes on a device the plugin's faulted build
    takes off healthy, left out (the key gone, the cell empty), leaves the device not healthy or a problem
    reported wherever the same number printed ``N/A`` does (`invariant a-left-out-signal-is-unread`,
    :mod:`.left_out_signals`): a counter the tool did not give is no 0. Fix:
    derive health from the vendor's signals on every call, with
    the reason code of the signal that fired, from the first port or link down; never cache a device's state across
    calls; answer a fault's
    missing or odd readings (unknown, a problem), never raise on them, never default a value left out;
    read every unit's record by one rule;
    count extra resources from the devices given.
    """
    subject.family()
    fx = subject.fixture(fixture)
    if not fx.faults:
        return f"{fx.ref} declares no faults"
    wrong, done, steps = [], [], 0
    fd, fault_file = tempfile.mkstemp(prefix="rayaccel-conformance-", suffix=".faults")
    os.close(fd)
    try:
        host = simulated_host(fx, fault_file=fault_file)
        # Recovered, a build reports the problems a fresh one does (RAC105 holds those to the fixture).
        healthy = fx.expected.model_copy(update={"labels": {}, "problems": reported_problem_codes(
            subject.inventory(fixture), subject.name)})
        for fault in fx.faults:
            _write(fault_file, fault.name)
            waited = host.skipped_wait_s
            faulty, elapsed = subject.timed_build(host)
            subject.fault_runs[(fx.ref, fault.name)] = (faulty, elapsed + host.skipped_wait_s - waited)
            wrong += subject.blamed(faulty, expectation_differences(faulty, subject.name, fault.expected),
                                    f"fault {fault.name}: ", fault.expected.problem_codes)
            wrong += readings_taken_for_a_fault(subject, fx, fault, faulty)
            wrong += landed_elsewhere(fx, fault, subject.inventory(fixture).family(subject.family().name),
                                      faulty.family(subject.family().name))
            wrong += unseen_failure_findings(subject, fx, fault, subject.inventory(fixture), faulty)
            wrong += lost_answer_findings(f"{fx.ref} fault {fault.name}", fault.patch, subject.inventory(
                fixture).family(subject.family().name), faulty.family(subject.family().name))
            wrong += left_out_signal_findings(subject, fx, fault, subject.inventory(fixture).family(
                subject.family().name), faulty)
            wrong += raised_under_fault(faulty, subject.name, fault.name, fault.expected.problem_codes)
            wrong += metrics_under_fault(subject, faulty, host, fault)
            wrong += host_local_domains_under_fault(subject, fx, faulty, host, fault_file, fault.name)
            wrong += withheld_devices_counted(subject, fx, fault.name, subject.inventory(fixture).family(
                subject.family().name), faulty.family(subject.family().name), host)
            wrong += [e for f in faulty.families if f.plugin == subject.name
                      for e in unlinked_member_errors(f.topology.links, f.topology.domains, f"fault {fault.name}: ")]
            wrong += [e for f in faulty.families if f.plugin == subject.name
                      for e in health_count_label_errors(f, f"{fx.ref} fault {fault.name}")]
            stepped, count = one_fatal_error_findings(subject, fx, fault, faulty)
            wrong += stepped
            wrong += one_port_down_findings(subject, fx, fault, faulty)
            wrong += one_lane_down_findings(subject, fx, fault, faulty)
            steps += count
            _write(fault_file, "")
            recovered = subject.build(host)
            wrong += subject.blamed(recovered, compare_expected(recovered, fx, healthy),
                                    f"after fault {fault.name} is cleared: ")
            done.append(fault.name)
    finally:
        os.unlink(fault_file)
    if wrong:
        raise CheckFailed(wrong)
    return (f"{fx.ref}: {len(done)} faults as declared, each recovers: {', '.join(done)}"
            + (f"; {steps} fatal-error counts raised by one event instead give the same health" if steps else ""))


def metrics_under_fault(subject: Subject, faulty: NodeInventory, host: Any, fault: Any) -> list[str]:
    """A fault's ``expected.metric_values``, sampled from the devices the faulty build discovered while the fault
    is on: a scrape the fault makes partial or odd must still give the readings the machine reads."""
    if not fault.expected.metric_values:
        return []
    family = next((f for f in faulty.families if f.plugin == subject.name), None)
    devices = list(family.devices) if family else []
    problems: list[Problem] = []
    samples = subject.manager.answer(subject.name, hookspec.METRICS, problems, host=host, devices=devices) or []
    # Problems the fault's readings make are its answer; a raise is not (RAC203's a-fault-is-an-answer).
    raised = [p.render() for p in problems if p.code == "hook-raised" and p.code not in fault.expected.problem_codes]
    return [f"fault {fault.name}: {line}" for line in
            raised + metric_value_differences(samples, one_poll_values(fault.expected.metric_values), devices)]


def host_local_domains_under_fault(subject: Subject, fx: Fixture, faulty: NodeInventory, host: Any, fault_file: str,
                                   fault: str) -> list[str]:
    """RAC202's host-local domains under a fault: a fault takes a device out of a fabric (every port down) without
    taking it off the host, which no healthy fixture shows."""
    family = next((f for f in faulty.families if f.plugin == subject.name), None)
    if family is None or not family.topology.domains:
        return []
    raw = subject.manager.answer(subject.name, hookspec.TOPOLOGY, [], host=host, devices=list(family.devices))
    return host_local_domain_errors(subject, fx, family.devices, raw.domains if raw else [], fault_file,
                                    f"fault {fault}: ")


def raised_under_fault(inventory: NodeInventory, plugin: str, fault: str, stated: Sequence[str]) -> list[str]:
    """The hooks that raised under a fault whose expectation does not say one raises (``hook-raised``)."""
    if "hook-raised" in stated:
        return []
    return [f"fault {fault}: {p.hook or 'a hook'} raised ({p.message[:200]}) under a fault whose expected."
            "problem_codes does not name hook-raised (invariant a-fault-is-an-answer: a fault's readings are "
            "answered, unknown or a problem, not a crash; the SDK's stand-in can hide a raise)"
            for p in inventory.problems if p.plugin == plugin and p.code == "hook-raised"]


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + ("\n" if text else ""))


def _synthetic_faults(fx: Fixture) -> dict[str, dict[str, Any]]:
    """Merge patches making every vendor tool (command, metadata server) hang, or print garbage, every command
    fail, and every library raise."""
    state = fx.host
    scenarios: dict[str, dict[str, Any]] = {}
    if state.commands:
        scenarios["every command hangs"] = {"commands": {c: {"hang": True} for c in state.commands}}
        scenarios["every command prints garbage"] = {
            "commands": {c: {"stdout": GARBAGE, "stderr": "", "returncode": 0} for c in state.commands}}
        scenarios["every command fails"] = {"commands": {c: COMMAND_FAILURE for c in state.commands}}
    if state.http:
        scenarios["the metadata server hangs"] = {"http": {u: {"hang": True} for u in state.http}}
        scenarios["the metadata server answers garbage"] = {"http": {u: {"body": GARBAGE} for u in state.http}}
    return {**scenarios, **library_failure_patches(fx)}


@check("RAC204", scope="fixture")
def hung_or_garbled_tools_are_contained(subject: Subject, fixture: str | None) -> Evidence:
    """A vendor tool that hangs or prints garbage ends within the timeout as zero devices or a clear problem.

    The fixture's own ``tool-hang`` and ``tool-garbage`` faults run, and so do scenarios the suite makes:
    every command of the fixture hangs, every command prints garbage, the metadata server hangs or answers
    garbage or an HTTP error status (403, 404, 500, 503, each with Google's error page); the hangs also on top
    of each other fault of the fixture, and asked twice on the same host.
    Each inventory must finish within the SDK's hook timeout without the SDK having to abandon the hook
    (``hook-timeout``), no exception may escape, and the plugin must end with zero devices, a problem naming
    what went wrong, or (for a tool it only reads extra details from) the devices it found without it; never
    devices made up from garbage. Under an error status no label may take another value than the machine gives,
    and no resource or domain appear that it does not (`invariant an-error-status-is-no-value`), and facts left
    unknown need a problem saying why but under 404, the server's answer that a key is not set (`invariant
    an-error-status-is-reported`). Each command's output of two lines or more is cut off in the middle of the
    line after its first half, one command at a time (a tool killed mid-answer): the devices, health, links,
    domains and resources must be the whole answer's, or a problem the whole answer did not give must say so
    (`invariant a-cut-listing-is-reported`). Every command also fails (exits 1 with nothing printed, as hl-smi
    does; nvidia-smi exits 9 when it cannot reach its driver), and every library of the fixture raises on each
    call (``rayaccel_fault``, as pynvml raises ``NVMLError_DriverNotLoaded``). Under a tool or library that
    fails, hangs or prints garbage, devices the machine has that the plugin no longer finds need a problem
    saying why (`invariant a-failed-interface-is-reported`: zero devices and nothing said only where the vendor
    interface answers that there are none); and health polled with the devices discovered before (as a health
    monitor polls) on each such state but a hang must not report every device unhealthy for a fatal reason:
    while the listing cannot be read their health is unknown (`invariant a-failed-listing-loses-nothing`).
    A simulated hang lasts the whole timeout the plugin asked for (in
    simulated time: ``SimulatedHost.skipped_wait_s``), so 3 retries of a 120 s call blow the budget as they
    would on a real machine. A fixture on which the plugin reads no vendor tool (no commands, no metadata
    server, no tool faults) has nothing to test: the check is skipped there as not applicable, never passed.
    Fix: bound every call (``host.run(..., timeout=...)``), give up on a timeout instead of retrying, and
    validate what a tool prints before using it.
    """
    subject.family()
    fx = subject.fixture(fixture)
    baseline = {d.id for d in subject.devices(subject.inventory(fixture))}
    limit = float(subject.manager.timeout or 10.0)
    scenarios: list[tuple[str, HostState | None, bool]] = []
    for fault in fx.faults:
        if fault.kind in ("tool-hang", "tool-garbage"):
            cached = (fx.ref, fault.name) in subject.fault_runs  # RAC203 built it already: reuse, not re-wait
            scenarios.append((fault.name, None if cached else _patched(fx, fault.patch), False))
    synthetic_faults = _synthetic_faults(fx)
    error_statuses = error_status_patches(fx)
    cut_listings = cut_listing_patches(fx)
    for name, patch in {**synthetic_faults, **error_statuses, **cut_listings}.items():
        scenarios.append((name, _patched(fx, patch), True))
    # Timeouts hold on every state of the machine, not only the healthy one: each other fault, with every
    # vendor tool hanging on top of it.
    for fault in (f for f in fx.faults if f.kind not in ("tool-hang", "tool-garbage")):
        for name, patch in synthetic_faults.items():
            if name.endswith("hangs"):
                scenarios.append((f"{name} during fault {fault.name}", _patched(fx, fault.patch, patch), True))
    if not scenarios:
        raise NotApplicable(f"{fx.ref}: the plugin reads no vendor tool here (no commands, no metadata server, "
                            "no tool faults): nothing can hang or print garbage")
    wrong, done = [], []
    for name, state, synthetic in scenarios:
        # every command failing or hanging, every library raising: RAC203's lost answers hold there too
        taken_away = name if synthetic and name in synthetic_faults else None
        if state is None:
            inventory, elapsed = subject.fault_runs[(fx.ref, name)]
            name = f"fault {name}"
        else:
            host = simulated_host(fx.model_copy(update={"host": state, "faults": []}))
            inventory, elapsed = subject.timed_build(host)
            elapsed += host.skipped_wait_s  # what the hangs would have cost on a real machine
            name = name if synthetic else f"fault {name}"
            if synthetic and name.endswith("hangs"):  # asked again, the same host: a second call waits no longer
                waited = host.skipped_wait_s
                again, second = subject.timed_build(host)
                if second + host.skipped_wait_s - waited > elapsed:
                    inventory, elapsed = again, second + host.skipped_wait_s - waited
                    name = f"{name} (asked a second time on the same host)"
        problems = [p for p in inventory.problems if p.plugin == subject.name and p.hook]
        timeouts = [p for p in problems if p.code == "hook-timeout"]
        devices = {d.id for d in subject.devices(inventory)}
        if timeouts:
            wrong.append(f"{name}: {timeouts[0].render()}")
        elif elapsed > limit * 1.5:
            wrong.append(f"{name}: would take {elapsed:.1f}s on a real host (the timeouts the plugin asked for, "
                         f"waited out), over the {limit:g}s hook timeout")
        elif " during fault " in name:  # the fault changes facts itself: what is checked here is the time
            done.append(f"{name}: {elapsed:.2f}s")
        elif said := (misread_answer(subject, fixture, name, inventory, problems, error_statuses, cut_listings)
                      or (unreported_losses(name, baseline, devices, problems) if name in synthetic_faults else [])):
            wrong += said
        elif synthetic and devices and not problems and not devices <= baseline:
            wrong.append(f"{name}: reported devices {sorted(devices - baseline)} that are not on the machine")
        elif made_up := facts_from_garbage(subject, inventory, subject.inventory(fixture)):
            wrong.append(f"{name}: {made_up}")
        else:
            outcome = "zero devices" if not devices else f"{len(devices)} devices"
            done.append(f"{name}: {outcome}, {len(problems)} problems, {elapsed:.2f}s")
        if taken_away is not None:
            family = subject.family().name
            wrong += lost_answer_findings(f"{fx.ref} with {taken_away}", synthetic_faults[taken_away],
                                          subject.inventory(fixture).family(family), inventory.family(family))
    wrong += failed_listing_losses(subject, fx, synthetic_faults)
    if wrong:
        raise CheckFailed(wrong)
    return done


def failed_listing_losses(subject: Subject, fx: Fixture, synthetic_faults: dict[str, dict[str, Any]]) -> list[str]:
    """Health polled with the devices discovered before, as a health monitor polls, on each state whose vendor
    interface fails without hanging (the fixture's ``tool-garbage`` faults, every command or server printing
    garbage, every library raising): never every device lost (``invariant a-failed-listing-loses-nothing``)."""
    healthy = subject.inventory(fx.ref)
    devices = subject.devices(healthy)
    family = healthy.family(subject.family().name)
    if not devices or family is None:
        return []
    # Not under hangs: a monitor's build that finds the tool hung stops at discovery, and the health hook's own
    # timeouts are RAC204's to time above.
    failing = [(f"fault {f.name}", simulated_host(fx, faults=[f.name])) for f in fx.faults if f.kind == "tool-garbage"]
    failing += [(name, simulated_host(perturbed(fx, patch))) for name, patch in synthetic_faults.items()
                if not name.endswith("hangs")]
    wrong = []
    for name, host in failing:
        polled = subject.manager.answer(subject.name, hookspec.HEALTH, [], host=host, devices=list(devices))
        wrong += losses_from_a_failed_listing(name, polled, family.health)
    return wrong


def misread_answer(subject: Subject, fixture: str | None, scenario: str, inventory: NodeInventory,
                   problems: list[Problem], error_statuses: dict[str, Any], cut_listings: dict[str, Any]) -> list[str]:
    """What an error status or a listing cut off mid-line made of the machine's facts (RAC204's invariants)."""
    name = subject.family().name
    healthy = subject.inventory(fixture)
    if scenario in error_statuses:
        pages = [str(answer.get("body") or "") for answer in (error_statuses[scenario].get("http") or {}).values()]
        return error_status_differences(scenario, inventory.family(name), healthy.family(name), bool(problems),
                                        pages)
    if scenario in cut_listings:
        whole = [p for p in healthy.problems if p.plugin == subject.name and p.hook]
        return cut_listing_differences(scenario, inventory.family(name), healthy.family(name), problems, whole)
    return []


#: Device facts a tool's garbage must never become (a fact the plugin could not read is None instead).
DEVICE_FACTS = ("product_name", "pci_device_id", "memory_mib", "pci_bus_id", "numa_node", "architecture",
                "driver_version", "runtime_version")


def facts_from_garbage(subject: Subject, inventory: NodeInventory, healthy: NodeInventory) -> str | None:
    """A device fact that differs from the healthy machine's and is not simply unknown (None), if any."""
    before = {d.id: d for d in subject.devices(healthy)}
    for device in subject.devices(inventory):
        known = before.get(device.id)
        if known is None:
            continue
        for fact in DEVICE_FACTS:
            value, truth = getattr(device, fact), getattr(known, fact)
            if value is not None and value != truth:
                return (f"reported {fact}={str(value)[:40]!r} for {device.id} from garbage (the machine's is "
                        f"{truth!r}): validate what a tool prints, and leave a fact unknown when it is unreadable")
    return None


def perturbed(fx: Fixture, patch: dict[str, Any]) -> Fixture:
    """The fixture with its host state patched (a perturbation's variant), without faults."""
    return fx.model_copy(update={"host": _patched(fx, patch), "faults": []})


def _patched(fx: Fixture, *patches: dict[str, Any]) -> HostState:
    state = fx.host.model_dump(mode="json")
    for patch in patches:
        state = merge_patch(state, patch)
    return HostState.model_validate(state)


# Perturbations: invariants on variants the suite derives from each fixture ------------------------------


@check("RAC210", scope="fixture")
def lost_device_leaves_no_trace(subject: Subject, fixture: str | None) -> Evidence:
    """A device discovery does not report is named by nothing: no link, domain, health report or metric.

    The suite derives the losses itself: topology, health and metrics are asked again with the discovered
    devices less one (the last, the first, and one whose position in the list is not its index), on the same
    host, and must not name the device left out, nor drop the links between the others or change their
    health; a plugin that reads links or health for every device the vendor lists, rather than for the
    ``devices`` it is given, keeps a lost card in the topology. Then each
    ``device-lost`` fault of the fixture is switched on, and the inventory built on it must name the lost
    devices nowhere (links, domains, health, metrics, units, labels), while health polled with the devices
    discovered before the loss (as a health monitor polls) reports each lost one unhealthy with a fatal
    reason, and every device the fault's ``expected.reasons`` names (lost, or broken but still found: a
    chiplet gone) with those reason codes, as a fresh inventory gives them; so must each ``lose``
    perturbation the fixture declares (docs/fixtures.md), which must also leave the other devices as they
    were. A fault losing one device whose every change names that device (its id, PCI address, or number in a
    path or key; a peer's link entry to it) is moved, the two devices' names exchanged, to the first device and
    a middle one (``invariant
    a-loss-anywhere-is-the-same-loss``): the same number of devices found, the device lost named nowhere and
    unhealthy to the monitor, every other device found with its PCI address and health, and its index and
    units kept or numbered on without gaps as the recorded loss numbers them; a patch rewriting a whole
    listing is not moved, and the evidence says so. Each loss, as recorded and moved, is then polled as a health
    monitor polls (``invariant a-poll-after-a-loss-reads-each-device-by-its-id``): health and metrics asked with the
    devices discovered before the loss, on the host after it, must raise nothing and give each device not lost the
    health a fresh build of that host gives it and every reading two polls of the healthy machine agree on (a device
    the loss changed aside); a reading that is another device's is named as that device's. Fix: build every per-device
    answer from the ``devices`` argument, never from what the vendor interface lists, find each device by its id in
    what the vendor lists now (a library numbers what it finds anew once a card is lost), never at the number
    discovery gave it, give a lost device the reason code of a loss, and
    skip a lost device without leaving the listing or counting on it being listed last.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    inventory = subject.inventory(fixture)
    devices = subject.devices(inventory)
    if not devices:
        raise CheckFailed(subject.consequence(inventory, f"{fx.ref}: no devices to lose"))
    wrong, tried = [], []
    everything = DownstreamAnswers(subject, simulated_host(fx), devices)
    for position, gone in removal_choices(devices):
        rest = [d for d in devices if d.id != gone.id]
        answers = DownstreamAnswers(subject, simulated_host(fx), rest)
        wrong += [f"{gone.id} (position {position}, index {gone.index}) left out of devices: {trace}"
                  for trace in [*answers.traces_of(gone.id), *others_changed(everything, answers, gone.id)]]
        tried.append(f"{gone.id} (position {position}, index {gone.index})")
    healthy_ids = {d.id for d in devices}
    stable: dict[str, dict[str, float]] | None = None  # the healthy machine's readings, polled where a loss is
    for fault in (f for f in fx.faults if f.kind == "device-lost"):
        faulty = subject.build(simulated_host(fx, faults=[fault.name]))
        fam = faulty.family(family.name)
        lost = healthy_ids - {d.id for d in subject.devices(faulty)}
        if subject.plugin_problems(faulty, ("rayaccel_discover",)):  # what is lost is not known: say why
            wrong.append(subject.consequence(faulty, f"fault {fault.name}: {len(lost)} devices not discovered", None))
            continue
        wrong += [f"fault {fault.name}: {trace}" for trace in inventory_traces(fam, sorted(lost))]
        # A health monitor polls health with the devices discovered at start: a card lost since is unusable.
        stable = healthy_readings(subject, fx, devices) if stable is None else stable
        polled, misread = monitor_poll(subject, simulated_host(fx, faults=[fault.name]), devices,
                                       inventory.family(family.name), fam, stable, lost)
        wrong += [f"{POLL_AFTER_A_LOSS}, fault {fault.name}: {finding}" for finding in misread]
        by_id = {r.device: r for r in polled}
        for dev in sorted(lost):
            report = by_id.get(dev)
            if report is None or report.state != "unhealthy" or not any(r.fatal for r in report.reasons):
                state = f"{report.state} with no fatal reason" if report else "not at all"
                wrong.append(f"fault {fault.name}: rayaccel_health, polled with the devices discovered before {dev} "
                             f"was lost (as a health monitor does), reports it {state}: a lost device is unhealthy, "
                             "fatally")
        # A device the fault breaks without losing it (a chiplet gone) gets the same reason codes from the
        # monitor, which knew it whole, as from a fresh inventory (RAC203): so do the ones it loses.
        for dev in sorted(set(fault.expected.reasons) & healthy_ids):
            report = by_id.get(dev)
            if report is None or (dev in lost and (report.state != "unhealthy"
                                                   or not any(r.fatal for r in report.reasons))):
                continue  # said above
            codes = [r.code for r in report.reasons]
            if lacking := [c for c in fault.expected.reasons[dev] if c not in codes]:
                wrong.append(f"fault {fault.name}: rayaccel_health, polled with the devices discovered before the "
                             f"fault (as a health monitor does), gives {dev} reason codes {codes}; the fixture "
                             f"expects {lacking}")
        tried.append(f"fault {fault.name} ({len(lost)} lost)")
        found = moved_losses(subject, fx, fault, devices, faulty.family(family.name), lost, stable)
        wrong += found[0]
        tried += found[1]
    healthy = inventory.family(family.name)
    for variant in (v for v in fx.perturbations if v.kind == "lose"):
        built = subject.build(simulated_host(perturbed(fx, variant.patch)))
        fam = built.family(family.name)
        where = f"perturbation {variant.name} (losing {', '.join(variant.devices)})"
        still = sorted(set(variant.devices) & {d.id for d in (fam.devices if fam else [])})
        wrong += [f"{where}: discovery still reports {dev}" for dev in still]
        wrong += [f"{where}: {trace}" for trace in inventory_traces(fam, variant.devices)]
        if healthy is not None and fam is not None:
            wrong += [f"{where}: {leak}" for leak in one_device_fault_leaks(healthy, fam, set(variant.devices))]
        elif fam is None and len(variant.devices) < len(devices):
            wrong.append(subject.consequence(built, f"{where}: no devices left at all", None))
        tried.append(f"perturbation {variant.name}")
    if wrong:
        raise CheckFailed(wrong[:8] + ([f"... and {len(wrong) - 8} more"] if len(wrong) > 8 else []))
    return f"{fx.ref}: no trace of a lost device: {', '.join(tried)}"


def moved_losses(subject: Subject, fx: Fixture, fault: Any, devices: list[Device], recorded: FamilyInventory | None,
                 lost: set[str], stable: dict[str, dict[str, float]]) -> tuple[list[str], list[str]]:
    """A fault losing one device, moved to the first device and a middle one (``moved_patch``): the same loss
    (``moved_loss_differences``), named nowhere once gone, and unhealthy, fatally, to a monitor that knew it.
    (What went wrong, what was tried.)"""
    healthy = subject.inventory(fx.ref).family(subject.family().name)
    gone = [d for d in devices if d.id in lost]
    if len(gone) != 1 or healthy is None:
        return [], []
    state = fx.host.model_dump(mode="json")
    wrong, tried, unmoved = [], [], []
    for position, target in move_targets(devices, gone[0]):
        patch, why = moved_patch(fault.patch, state, gone[0], target, devices)
        if patch is None:
            unmoved.append(why)
            break
        host = simulated_host(perturbed(fx, patch))
        built = subject.build(host)
        fam = built.family(healthy.family.name)
        where = (f"invariant a-loss-anywhere-is-the-same-loss, fault {fault.name} moved from {gone[0].id} to "
                 f"{target.id} (position {position}): ")
        differences = moved_loss_differences(healthy, recorded, lost, fam, target)
        if target.id not in {d.id for d in (fam.devices if fam else [])}:
            differences += inventory_traces(fam, [target.id])
        polled, found = monitor_poll(subject, host, devices, healthy, fam, stable, {target.id})
        report = next((r for r in polled if r.device == target.id), None)
        if report is None or report.state != "unhealthy" or not any(r.fatal for r in report.reasons):
            differences.append(f"rayaccel_health, polled with the devices discovered before, reports {target.id} "
                               f"{f'{report.state} with no fatal reason' if report else 'not at all'}")
        wrong += subject.blamed(built, differences, where)
        wrong += [f"{POLL_AFTER_A_LOSS}, fault {fault.name} moved from {gone[0].id} to {target.id} (position "
                  f"{position}): {finding}" for finding in found]
        tried.append(f"fault {fault.name} moved to position {position}")
    tried += [f"fault {fault.name} not moved ({why})" for why in unmoved]
    return wrong, tried


POLL_AFTER_A_LOSS = "invariant a-poll-after-a-loss-reads-each-device-by-its-id"


def monitor_poll(subject: Subject, host: Host, devices: list[Device], healthy: FamilyInventory | None,
                 fresh: FamilyInventory | None, stable: dict[str, dict[str, float]],
                 lost: set[str]) -> tuple[list[HealthReport], list[str]]:
    """Health and metrics asked with the devices discovered before ``lost`` were lost, as a health monitor polls
    (its discovery answered before the card fell off), on ``host`` where they are gone: the health reports, and
    how the poll reads a device not lost otherwise than ``fresh`` (a build of ``host``) and ``stable`` (the healthy
    machine's readings) give it (``poll_after_loss_differences``). A hook that raises is asked again for each
    device alone, to say which device it raises for and what it reads for the others (the reports returned stay
    the whole call's)."""
    whole: dict[str, list[Any]] = {}
    answers: dict[str, list[Any]] = {}
    raised: dict[str, list[str]] = {}
    unanswered: set[str] = set()
    for hook in (hookspec.HEALTH.name, hookspec.METRICS.name):
        asked: list[Problem] = []
        whole[hook] = list(subject.manager.answer(subject.name, hook, asked, host=host, devices=list(devices)) or [])
        answers[hook] = whole[hook]
        failed = [p.message for p in asked if p.code == "hook-raised"]
        if not failed or healthy is None:
            continue
        raised[hook], answers[hook] = failed[:1], []
        for device in devices:
            alone: list[Problem] = []
            answers[hook] += subject.manager.answer(subject.name, hook, alone, host=host, devices=[device]) or []
            if why := [p.message for p in alone if p.code == "hook-raised"]:
                unanswered.add(device.id)
                raised[hook].append(f"asked for {device.id} (index {device.index}"
                                    f"{', lost' if device.id in lost else ''}) alone, it {why[0]}")
    if healthy is None:
        return whole[hookspec.HEALTH.name], []
    return whole[hookspec.HEALTH.name], poll_after_loss_differences(
        healthy, fresh, stable, answers[hookspec.HEALTH.name], answers[hookspec.METRICS.name], lost, raised,
        unanswered)


def healthy_readings(subject: Subject, fx: Fixture, devices: list[Device]) -> dict[str, dict[str, float]]:
    """The readings two polls of the healthy machine give alike, per device (``stable_readings``)."""
    polls = [subject.manager.answer(subject.name, hookspec.METRICS, [], host=simulated_host(fx),
                                    devices=list(devices)) or [] for _ in range(2)]
    return stable_readings(*polls)


@check("RAC211", scope="fixture")
def device_order_and_single_device_changes(subject: Subject, fixture: str | None) -> Evidence:
    """Per-device answers depend on which devices, not their order, and a fault on one device changes
    only that device.

    Topology, health and metrics are asked with the discovered devices reversed and rotated: links, domains,
    health per device and samples per device must equal the answers in discovery's order (a health hook
    that pairs reports with positions, or links built by position, gives another card's state). Then each
    fault of the fixture whose expectation names the devices it touches (``expected.health``) is switched
    on: every other device keeps its health and its facts. The fixture's own perturbations (docs/fixtures.md)
    say how its vendor lists devices in another order (``reorder``: the same ids, and per id the same SKU,
    health and number of units; the same units on the node and the same links) and how one device's values
    change (``change``: only that device's facts
    change). Last, each file of one device's own vendor entry that the plugin read on the fixture (a path
    naming its PCI address or numbering it: ``.../example1/...``) is made missing, empty and garbage in turn:
    no hook may raise, every other device keeps its health and facts, and the device is left out, reported
    unhealthy or unknown, or kept with the facts it cannot read as unknown at any depth (a partition's
    ``memory_mib``, an optional attribute dropped), or with a text stand-in and a problem naming the device
    or the file; never kept with another number (``memory_mib`` 0 for a size not read), reported or not.
    That device's own entries (each directory of the fixture holding its files alone: its PCI address's sysfs
    directory, its IOMMU group, its class entry) are then kept in the listings of their parents while every read
    under them answers as gone (FileNotFoundError, absent), as a device unbound between a listing and the next
    read leaves them: no hook may raise, no other device may go or change, and the device is left out, reported,
    or kept with what it cannot read unknown (``invariant an-entry-gone-when-read-is-no-crash``).
    And every error count the machine states for that device (a number its own field or file name calls corrected
    or uncorrected, correctable or uncorrectable, or errors) is raised by 3, as a device correcting errors counts
    them: every reason it had is still given, its state no better, and no other device changes (``invariant
    more-errors-clear-no-reason``: a reason about errors fires from the first one counted, never at 0).
    And the middle device's first link record that is up (a collection under a key naming links, numbered
    0, 1, ..., each with its state: NVML's per-NVLink state) is switched off in the vendor's own off value,
    as ``nvidia-smi nvlink -s`` shows a link inactive between active ones: every peer another record still
    links stays linked (``invariant one-link-down-keeps-the-others``). And the health signals the fixture's
    faults change (the numbers a fault sets on a device its expectation names, in a library's data or a tool's
    JSON or CSV output) are made unreadable on the first device listed, then on the last, as the interface makes
    them: a library's value left out (its NOT_SUPPORTED), a tool's value printed ``N/A``; no hook may raise and
    every other device keeps its health and facts (``invariant one-unreadable-device-keeps-the-others``); where
    the plugin reports a problem on that build alone (it says it could not read them), the device itself is not
    reported healthy (``invariant an-unreadable-device-is-not-healthy``: a plugin that says nothing may keep it
    healthy, as a GPU without ECC answers NOT_SUPPORTED for its ECC counts). A fault's change that lands on an
    untouched device is named by the record it changes and the enumeration number the plugin joined it by
    (RAC203's). Fix:
    key every answer by ``device.id``; read a device's signals from its own vendor entry (its index or bus id),
    never from its place in a list; sort ids numerically, not as text; skip a link that is down, never stop at
    it; a vendor value that cannot be read is unknown (``None``) and reported, never a default, for that device
    alone (read each device's signals, and each listed entry, in a try of its own: an entry listed may be
    gone when read).
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    inventory = subject.inventory(fixture)
    devices = subject.devices(inventory)
    if not devices:
        raise CheckFailed(subject.consequence(inventory, f"{fx.ref}: no devices to reorder"))
    base = DownstreamAnswers(subject, simulated_host(fx), devices).by_device()
    wrong, tried = [], []
    for how, order in reorderings(devices):
        wrong += order_differences(base, DownstreamAnswers(subject, simulated_host(fx), order).by_device(), how)
        tried.append(how)
    healthy = inventory.family(family.name)
    for fault in fx.faults:
        touched = set(fault.expected.health)
        if not touched or fault.kind in ("tool-hang", "tool-garbage") or healthy is None:
            continue
        faulty = subject.build(simulated_host(fx, faults=[fault.name])).family(family.name)
        if faulty is not None:
            wrong += [f"fault {fault.name} (touching {', '.join(sorted(touched))}): {leak}"
                      for leak in one_device_fault_leaks(healthy, faulty, touched)]
            wrong += landed_elsewhere(fx, fault, healthy, faulty)
            tried.append(f"fault {fault.name}")
    for variant in (v for v in fx.perturbations if v.kind in ("reorder", "change") and healthy is not None):
        assert healthy is not None
        built = subject.build(simulated_host(perturbed(fx, variant.patch)))
        fam = built.family(family.name)
        where = f"perturbation {variant.name} ({variant.kind})"
        if variant.kind == "reorder":
            wrong += [subject.consequence(built, f"{where}: {d}", None) for d in reorder_differences(healthy, fam)]
        elif variant.kind == "change" and fam is not None:
            wrong += [f"{where}: {leak}" for leak in one_device_fault_leaks(healthy, fam, set(variant.devices))]
        tried.append(f"perturbation {variant.name}")
    if healthy is not None:  # one device's own readings damaged, each way: (findings, what was tried) from each
        for damage in (damaged_device_files, vanished_device_entry, raised_error_counts, first_link_switched_off,
                       unreadable_signal_findings):
            found, done = damage(subject, fx, healthy, devices)
            wrong += found
            tried += done
    if wrong:
        raise CheckFailed(wrong[:8] + ([f"... and {len(wrong) - 8} more"] if len(wrong) > 8 else []))
    if not tried:
        raise NotApplicable(f"{fx.ref}: one device and no single-device fault: no order or device to vary")
    return f"{fx.ref}: the same answers per device {', '.join(tried)}"


def first_link_switched_off(subject: Subject, fx: Fixture, healthy: FamilyInventory,
                            devices: list[Device]) -> tuple[list[str], list[str]]:
    """RAC211's ``one-link-down-keeps-the-others``: the middle device's first link record that is up switched off
    (``link_states.first_link_down``); every peer another record still links stays linked. (What went wrong, what
    was tried.)"""
    device = devices[len(devices) // 2]
    host = fx.host.model_dump(mode="json")
    link = first_link_down(host, device)
    if link is None:
        return [], []
    built = subject.build(simulated_host(fx.model_copy(update={
        "host": HostState.model_validate(with_link_down(host, link)), "faults": []})))
    where = f"invariant one-link-down-keeps-the-others, {fx.ref} with {link.describe()} of {device.id}: "
    wrong = subject.blamed(built, peers_dropped(healthy, built.family(healthy.family.name), device, link, devices),
                           where)
    return wrong, [f"{device.id}'s first link switched off"]


def vanished_device_entry(subject: Subject, fx: Fixture, healthy: FamilyInventory,
                          devices: list[Device]) -> tuple[list[str], list[str]]:
    """RAC211's ``an-entry-gone-when-read-is-no-crash``: the damaged device's own directories (its entries alone)
    still listed by their parents but gone when read, as a device unbound mid-probe leaves them (one build).
    (What went wrong, what was tried.)"""
    device = devices[1] if len(devices) > 1 else devices[0]  # the device damaged_device_files damages
    gone = vanished_entries(fx.host.files, device)
    if not gone:
        return [], []
    after = simulated_host(perturbed(fx, {"files": entry_files_removed(fx.host.files, gone)}))
    built = subject.build(VanishedEntryHost(simulated_host(fx), after, gone))
    where = (f"invariant an-entry-gone-when-read-is-no-crash, {fx.ref} with {', '.join(gone)} listed, then gone "
             "when read (the device unbound mid-probe)")
    family, problems = built.family(healthy.family.name), subject.plugin_problems(
        built, severities=("error", "warning"))
    wrong = damaged_file_findings(healthy, family, problems, device, where, "missing", gone[0])
    if not any(p.code == "hook-raised" for p in problems):  # a raise drops them all: said once, above
        wrong += [f"{where}: {d}" for d in others_dropped(healthy, family, device)]
    return wrong, [f"{device.id}'s entries {', '.join(gone)} gone when read"]


def raised_error_counts(subject: Subject, fx: Fixture, healthy: FamilyInventory,
                        devices: list[Device]) -> tuple[list[str], list[str]]:
    """RAC211's ``more-errors-clear-no-reason``: every error count the machine states for the damaged device
    raised by a few (one build); its reasons all kept, its state no better, the other devices unchanged.
    (What went wrong, what was tried.)"""
    device = devices[1] if len(devices) > 1 else devices[0]
    host = fx.host.model_dump(mode="json")
    counts = error_counts(host, device)
    if not counts:
        return [], []
    built = subject.build(simulated_host(fx.model_copy(update={
        "host": HostState.model_validate(raised_host(host, counts)), "faults": []})))
    family = built.family(healthy.family.name)
    where = (f"invariant more-errors-clear-no-reason, {fx.ref} with {device.id}'s {len(counts)} error counts "
             f"raised by {RAISED_BY} ({counts[0].describe()}, ...)")
    wrong = cleared_reasons(healthy, family, device, where)
    if family is not None:
        wrong += [f"{where}: {leak}" for leak in one_device_fault_leaks(healthy, family, {device.id})]
    before = [p.code for p in subject.discovery_failed(subject.inventory(fx.ref))]  # the machine's own fallbacks
    return subject.blamed(built, wrong, "", before), [f"{device.id}'s {len(counts)} error counts raised"]


def damaged_device_files(subject: Subject, fx: Fixture, healthy: FamilyInventory,
                         devices: list[Device]) -> tuple[list[str], list[str]]:
    """One device's own vendor files, as the plugin read them on the fixture, each missing, empty or garbage in
    turn: (what went wrong, what was tried). A plugin that reads no per-device file has nothing to damage."""
    device = devices[1] if len(devices) > 1 else devices[0]  # not the first: its position differs from the last
    recorder = RecordingHost(simulated_host(fx))
    subject.build(recorder)
    keys = {str(PurePosixPath("/" + k.lstrip("/"))): k for k in fx.host.files if not k.endswith("/")}
    read = [path for path, content in recorder.files.items() if content and path in keys]
    files = device_files(read, device)[:MAX_DAMAGED_FILES]
    wrong = []
    for path in files:
        for damage, value in FILE_DAMAGE:
            built = subject.build(simulated_host(perturbed(fx, {"files": {keys[path]: value}})))
            wrong += damaged_file_findings(healthy, built.family(healthy.family.name),
                                           subject.plugin_problems(built, severities=("error", "warning")), device,
                                           f"{path} {damage}", damage, path)
    return wrong, ([f"{len(files)} files of {device.id} missing, empty and garbage"] if files else [])


@check("RAC212", scope="fixture")
def answers_depend_on_the_host_alone(subject: Subject, fixture: str | None) -> Evidence:
    """The same host asked twice answers the same; another host asked in between gets its own answer, and
    counters never go down.

    The fixture's inventory is built on a fresh host, then on the same host again, then on other hosts (the
    machine without the driver, and the machine of each fault that loses a device, a hung tool's excepted), then on a
    fresh host of the fixture once more: the two same-host answers and the last must equal the first (devices,
    links, domains, health, resources, units, labels), the driverless machine must find nothing and a lost device
    must be lost, so nothing is cached across calls or hosts; ECC counters polled twice never decrease. A discovery
    that fails on its second call is quoted here. Fix: derive every answer from the ``host`` argument on
    each call; cache nothing in the module or the plugin object.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    host = simulated_host(fx)
    first = subject.build(host)
    base = family_facts(first.family(family.name))
    if not base["devices"]:
        raise CheckFailed(subject.consequence(first, f"{fx.ref}: no devices to ask for twice"))
    wrong = []
    again = subject.build(host)
    wrong += [subject.consequence(again, f"the same host asked twice: {d}", None)
              for d in fact_differences(base, family_facts(again.family(family.name)))]
    polls = [fam.metrics if (fam := built.family(family.name)) else [] for built in (first, again)]
    wrong += counter_decreases(polls[0], polls[1])
    empty = Fixture.model_validate({"schema": "rayaccel-fixture/1", "plugin": subject.name, "name": "no-driver",
                                    "description": "a machine without the vendor's driver", "host": HostState(),
                                    "expected": {"devices": 0}})
    found = subject.devices(subject.build(simulated_host(empty)))
    if found:
        wrong.append(f"after {fx.ref}, a machine without the driver got {len(found)} devices "
                     f"({found[0].id}, ...): an answer cached from another host")
    others = ["the driverless machine"]
    ids = {d["id"] for d in base["devices"]}
    # A hung tool's machine is left out: it answers nothing of its host (the plugin waits out its own timeout,
    # seconds of real time each), and RAC203/RAC204 hold that fault already.
    for fault in (f for f in fx.faults if f.expected.devices is not None and f.expected.devices < len(ids)
                  and f.kind != "tool-hang"):
        lost = ids - {d.id for d in subject.devices(subject.build(simulated_host(fx, faults=[fault.name])))}
        if not lost:
            wrong.append(f"after {fx.ref}, the machine of fault {fault.name} (a device lost) still got all "
                         f"{len(ids)} devices: an answer cached from another host")
        others.append(f"fault {fault.name}")
    last = subject.build(simulated_host(fx))
    wrong += [subject.consequence(last, f"{fx.ref} asked again after other hosts: {d}", None)
              for d in fact_differences(base, family_facts(last.family(family.name)))]
    if wrong:
        raise CheckFailed(sorted(set(wrong), key=wrong.index))
    return f"{fx.ref}: identical twice on one host and again after {', '.join(others)}; counters monotonic"


@check("RAC213")
def hardware_names_are_owned(subject: Subject) -> Evidence:
    """Accelerator types, link kinds and domain kinds are the family's own, never another vendor's.

    A plugin copied from another vendor's example keeps that vendor's names: ``H100`` as the accelerator
    type of an ACME card sends ``accelerator_type="H100"`` tasks to it, and an ``nvlink`` topology makes
    placement prefer a fabric the node does not have. Every accelerator type the plugin gives (its
    catalog's SKUs, discovery on each fixture; RAC209 holds cloud hints to these) is compared with
    the well-known product names Ray lists (``ray.util.accelerators``), and every link and domain kind on
    each fixture with the vendor fabrics of the vocabulary (``nvlink``/``nvswitch`` NVIDIA's, ``xgmi``
    AMD's, ``ici`` Google's, ``neuronlink`` AWS's, ``gaudi-roce`` Intel's): each must belong to the
    family's vendor (by its name or the family's). Fix: use the vendor's own product names, and ``other``
    or a generic kind (``pcie``, ``roce``, ``infiniband``, ``ethernet``, ``efa``) for a new fabric.
    """
    family = subject.family()
    known = well_known_accelerator_types()
    types: dict[str, str] = {}
    catalog = subject.manager.answer(subject.name, hookspec.SKU_CATALOG, [])
    for sku in catalog.skus if catalog else []:
        if sku.accelerator_type:
            types.setdefault(sku.accelerator_type, f"SKU {sku.id}")
    wrong = []
    for ref in subject.fixture_paths():
        fam = subject.inventory(ref).family(family.name)
        if fam is None:
            continue
        if fam.accelerator_type:
            types.setdefault(fam.accelerator_type, f"discovery on {ref}")
        fabrics = [("link", str(ln.kind)) for ln in fam.topology.links]
        fabrics += [("domain", str(dm.kind)) for dm in fam.topology.domains]
        for what, kind in dict.fromkeys(fabrics):
            why = fabric_owner_problem(kind, family, what)
            wrong += [f"{ref}: {why}"] if why else []
    for accelerator_type, where in types.items():
        why = accelerator_type_owner_problem(accelerator_type, family, known)
        wrong += [f"{where}: {why}"] if why else []
    if wrong:
        raise CheckFailed(sorted(set(wrong), key=wrong.index))
    return f"accelerator types {', '.join(sorted(types)) or 'none'} and every fabric are {family.vendor}'s own"


@check("RAC214", scope="fixture")
def device_facts_over_their_value_space(subject: Subject, fixture: str | None) -> Evidence:
    """Labels, resources and metrics stay valid for the device facts other machines report, not only the
    fixture's.

    A fixture has one driver string and one card count. Starting from the fixture's discovered devices,
    hypothesis varies the facts plugins turn into labels, resources and metrics (``rayaccel_conformance.
    checks.value_space``): version strings with ``+``, spaces, long or empty values, or none; product names
    with spaces and punctuation; memory 0, 1 MiB or 2^31-1 MiB, or unknown; none, one, the fixture's or four
    times as many devices. For each, the plugin's own labels must pass Ray's label syntax; and, for the
    devices on the host, extra resources must be positive finite numbers and metrics finite and about the
    devices given, with no hook raising. Derandomized, at most 30 examples and 8 s per fixture. Fix: make
    vendor strings label values with ``rayaccel.to_label_value``, and never assume a count or format.
    """
    from rayaccel_conformance.checks.value_space import value_space_failures

    family = subject.family()
    fx = subject.fixture(fixture)
    inventory = subject.inventory(fixture)
    fam = inventory.family(family.name)
    if fam is None or not fam.devices:
        raise CheckFailed(subject.consequence(inventory, f"{fx.ref}: no devices to vary"))
    found, ran = value_space_failures(subject, simulated_host(fx), fam)
    if found:
        raise CheckFailed(found)
    return f"{fx.ref}: {ran} variants of the devices' facts and count; labels, resources and metrics valid"

