"""The metrics a device reports belong to its SKU, not to the node it sits in (supported tier, issue 46): RAC255.

A plugin that reads a metric right on the node its fixture recorded and loses it on another node of the same
SKU (a value indexed by the device's place in a multi-host slice, a tool's summary mode on a denser node) is
self-consistent on each fixture: every check that compares a node with itself passes. The plugin's fixtures
together are nodes of one cluster; this check compares them.
"""

from __future__ import annotations

from rayaccel.hosts.fixtures import Fixture
from rayaccel_conformance.checks.fault_readings import named_metric, words
from rayaccel_conformance.checks.readings import SCALED_METRICS
from rayaccel_conformance.checks.stated_metrics import INVARIANT as STATED, stated_after_all
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check


def layout_difference(here: Fixture, there: Fixture, metrics: list[str]) -> str | None:
    """Where a metric the devices report on ``there`` is read from a file whose name names it, and ``here`` has no
    such file but a directory of that name holding the counter (``mem_ecc_uncorrected/total``): the driver's other
    layout of one counter, which the plugin does not read. None where the two machines' files show no such
    difference."""
    names = set(SCALED_METRICS) | set(metrics)
    there_files = list(there.host.files)
    here_files = list(here.host.files)
    for metric in metrics:
        named = {path.rsplit("/", 1)[-1] for path in there_files
                 if named_metric(path.rsplit("/", 1)[-1], names) == metric}
        if not named or any(path.rsplit("/", 1)[-1] in named for path in here_files):
            continue
        # The directory whose name is closest to the metric's (mem_ecc_uncorrected before mem_ecc_repairable_...).
        nested = sorted((len(words(seg) - words(metric)), seg, path) for path in here_files
                        for seg in path.split("/")[:-1] if seg in named)
        if not nested:
            continue
        _, seg, path = nested[0]
        file = next(p for p in sorted(there_files) if p.rsplit("/", 1)[-1] == seg)
        return (f"{metric} is read on {there.ref} from the file {file}; on {here.ref} {seg} is a directory holding "
                f"the counter ({path}), the driver's other layout of it, which the plugin does not read: read both "
                "layouts (a counter file, or its directory's total), invariant metrics-follow-the-sku (RAC255)")
    return None


def files_become_directories(here: Fixture, there: Fixture) -> list[tuple[str, str, str]]:
    """The names that are files on ``there`` and, on ``here``, never files but directories holding files (a
    driver's other layout of one counter, ``mem_ecc_uncorrected`` and ``mem_ecc_uncorrected/total``): (name, a path
    of it on ``there``, a path under it on ``here``)."""
    there_files = {path.rsplit("/", 1)[-1]: path for path in sorted(there.host.files, reverse=True)}
    here_names = {path.rsplit("/", 1)[-1] for path in here.host.files}
    found: dict[str, tuple[str, str, str]] = {}
    for path in sorted(here.host.files):
        for seg in path.split("/")[:-1]:
            if seg in there_files and seg not in here_names and seg not in found:
                found[seg] = (seg, there_files[seg], path)
    return list(found.values())


def reported_elsewhere(subject: Subject, ref: str, sku: str, lacking: list[str]) -> str | None:
    """For RAC206's devices lacking metrics a fixture states: the other fixture where the plugin gives them for
    devices of the same SKU, named as RAC255 names it (a key that finds a device on one node only). Inventories are
    the subject's own, built once a run."""
    family = subject.family()
    for other in subject.fixture_paths():
        if other == ref:
            continue
        try:
            fam = subject.inventory(other).family(family.name)
        except CheckFailed:
            continue
        same = {d.id for d in (fam.devices if fam else []) if d.sku == sku and not d.partitions}
        found = sorted({s.name for s in (fam.metrics if fam else []) if s.device in same} & set(lacking))
        if found and (layout := layout_difference(subject.fixture(ref), subject.fixture(other), found)):
            return f"its SKU {sku}'s devices report {', '.join(found)} on {other}: {layout}"
        if found:
            return (f"its SKU {sku}'s devices report {', '.join(found)} on {other}: read by a key that finds a device "
                    "on one node only (the device's index in a slice, worker or rack, not on this host), invariant "
                    "metrics-follow-the-sku (RAC255)")
    return None


@check("RAC255")
def metrics_follow_the_sku(subject: Subject) -> Evidence:
    """The devices of one SKU report the same metrics on every fixture where they report any.

    For each SKU, the suite collects the metric names its whole (unpartitioned) devices report on each of the
    plugin's fixtures: where a fixture's devices of that SKU report any metric, they must report the same
    names as on every other such fixture (``invariant metrics-follow-the-sku``, naming the SKU, both fixtures
    and the metrics one lacks). A metric read by the device's index in a slice or a rack (right on its first
    host, gone on the others), or only in a tool's mode the recorded node happened to be in, passes every
    check of one node. A partitioned device is left out (a GPU in MIG mode reports less, rightly), and so is a
    fixture whose devices of the SKU report no metric at all (no metrics endpoint on that machine), and so is a
    metric a fixture's own statement of what its vendor interface offers (``expected.metrics``, where it has
    one) leaves out: a machine with ECC off or under vGPU rightly lacks its error counters, and RAC206 holds
    the plugin to every metric a fixture states; but not where that fixture's answers state a number for the
    metric in the place the other fixture's answers state the one the plugin reads it from (the devices' own
    readings that give their samples, or Prometheus samples of that value; the same field of every device:
    ``invariant an-unoffered-metric-is-not-stated``, naming both places): then its vendor interface offers it.
    Not applicable where no SKU's devices report metrics on two fixtures. Where the metric's file on one machine
    (named for it) is a directory holding the counter on the other (``mem_ecc_uncorrected/total``), both failures
    name that layout (:func:`layout_difference`). Fix: map each
    sample to the device it is about by the device's own id or host-local index, and read the same fields on every
    node, in each layout the driver publishes them.
    """
    family = subject.family()
    names: dict[str, dict[str, set[str]]] = {}  # sku -> fixture -> metric names of its whole devices
    offered: dict[str, set[str]] = {}  # fixture -> the metrics it states its vendor interface offers, if it does
    for ref in subject.fixture_paths():
        stated = set(subject.fixture(ref).expected.metrics)
        if stated:
            offered[ref] = stated
        try:
            fam = subject.inventory(ref).family(family.name)
        except CheckFailed:
            continue  # an inventory that does not validate is RAC105's
        if fam is None:
            continue
        for device in fam.devices:
            if device.partitions or device.sku is None:
                continue
            reported = {s.name for s in fam.metrics if s.device == device.id}
            names.setdefault(device.sku, {}).setdefault(ref, set()).update(reported)
    wrong, compared = [], 0
    for sku, by_fixture in sorted(names.items()):
        reporting = sorted((ref, found) for ref, found in by_fixture.items() if found)
        if len(reporting) < 2:
            continue
        compared += 1
        widest = max(reporting, key=lambda item: len(item[1]))
        for ref, found in reporting:
            lacking = sorted(name for name in widest[1] - found if name in offered.get(ref, {name}))
            excused = sorted(widest[1] - found - set(lacking))
            there_family = subject.inventory(widest[0]).family(family.name) if excused else None
            contradicted = (stated_after_all(subject.fixture(ref), subject.fixture(widest[0]), there_family, excused)
                            if there_family else [])
            if contradicted:
                wrong.append(f"{STATED}, SKU {sku}: {ref} says its vendor interface does not offer "
                             f"{', '.join(excused)} (expected.metrics), yet its answers state "
                             f"{'; '.join(contradicted)}: the devices report them on {widest[0]} and not here (they "
                             f"report {', '.join(sorted(found))}): read each sample by a key that finds its device on "
                             "every node (the host's own index or the device's id), not its place in a slice, worker "
                             "or rack, and state in expected.metrics what the machine offers")
            if lacking:
                layout = layout_difference(subject.fixture(ref), subject.fixture(widest[0]), lacking)
                wrong.append(f"invariant metrics-follow-the-sku, SKU {sku}: its devices report {', '.join(lacking)} on "
                             f"{widest[0]} but not on {ref} (they report {', '.join(sorted(found))} there)"
                             + (f": {layout}" if layout else ""))
    if wrong:
        raise CheckFailed(wrong[:8])
    if not compared:
        raise NotApplicable("no SKU's devices report metrics on two fixtures")
    return f"{compared} SKUs, each reporting the same metrics on every fixture where its devices report any"
