"""Cross-record invariants (RAC215-RAC220, supported tier), and the visible-devices properties over generated
unit ids (RAC114, experimental): what holds between records, and for any input, for every correct plugin.

A fixture recorded from the plugin itself agrees with the plugin's output by construction; these invariants do
not depend on it. Each is checked on the fixture, on every perturbation the fixture declares, and on a variant
the suite derives at the host seam (an unrelated device of another kind added: a virtio display card with its
DRM card and render nodes, and files of another kind beside them: its display connector, the DRM version), and
each failure names the invariant, the fixture, the variant and the values; where the SDK filled a value itself
(a memory size from the catalog), the failure says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rayaccel import hookspec
from rayaccel.hosts.fixtures import Fixture
from rayaccel.records import DEVICE_FILE, Device, FamilyInventory, NodeInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.attribute_fields import attribute_field_findings
from rayaccel_conformance.checks.merged_profiles import MachineRecords, merged_profiles
from rayaccel_conformance.checks.ownership import own_words
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

MIB = 2**20
#: The fastest one-way bandwidth (GB/s, all lanes of one link record together) any product of a link kind
#: has: NVLink 6 (1800: 3.6 TB/s both ways per GPU), Infinity Fabric on MI355X (7 x 153.6 ~ 1075), TPU ICI,
#: NeuronLink (Trn2: 1 TB/s per chip), Gaudi 3's 24 x 200 GbE (600), PCIe 7 x16 (242), 1.6 Tbit/s NICs (200),
#: an EFA instance's 3200 Gbit/s (400). Faster is a unit slip (Gbit/s, both directions, MB/s), not a product.
KIND_MAX_GBYTES_PER_S: dict[str, float] = {
    "nvlink": 1800.0, "nvswitch": 1800.0, "xgmi": 1100.0, "ici": 1200.0, "neuronlink": 1100.0,
    "gaudi-roce": 600.0, "pcie": 256.0, "roce": 200.0, "infiniband": 200.0, "ethernet": 200.0, "efa": 400.0,
}
#: Plausible ranges of the standard metrics, in their declared units (name -> (lowest, highest)).
METRIC_RANGES: dict[str, tuple[float, float]] = {
    "utilization": (0.0, 100.0), "temperature": (-40.0, 150.0), "power": (0.0, 5000.0),
    "memory_used": (0.0, float("inf")), "memory_total": (0.0, float("inf")),
    "interconnect_tx": (0.0, float("inf")), "interconnect_rx": (0.0, float("inf")),
    "ecc_errors_corrected": (0.0, float("inf")), "ecc_errors_uncorrected": (0.0, float("inf")),
}
#: memory_total may differ from the device's memory size by this share (a driver's reserved memory).
MEMORY_TOTAL_TOLERANCE = 0.1

#: Well-known accelerator instance types -> words naming the vendor whose devices they carry.
INSTANCE_TYPE_VENDORS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("p4d.24xlarge", "p5.48xlarge", "p5e.48xlarge", "g5.48xlarge", "g6.xlarge", "a2-highgpu-8g",
                     "a3-highgpu-8g", "a3-megagpu-8g", "g2-standard-4", "standard_nd96amsr_a100_v4",
                     "standard_nd96isr_h100_v5", "bm.gpu.h100.8"), ("nvidia",)),
    **dict.fromkeys(("trn1.32xlarge", "trn2.48xlarge", "inf2.48xlarge"), ("aws", "amazon", "neuron")),
    **dict.fromkeys(("ct5lp-hightpu-4t", "ct5p-hightpu-4t", "ct6e-standard-4t"), ("google", "tpu")),
    **dict.fromkeys(("standard_nd96isr_mi300x_v5", "bm.gpu.mi300x.8"), ("amd",)),
    "dl1.24xlarge": ("intel", "habana", "gaudi"),
}


# Variants: the fixture, its declared perturbations, and the derived host-seam ones -----------------------------


@dataclass
class Variant:
    name: str
    kind: str  # "recorded", a declared perturbation's kind, or "derived"
    inventory: NodeInventory
    family: FamilyInventory | None


def unrelated_device_patch(fx: Fixture) -> tuple[dict[str, Any], str]:
    """A merge patch adding a device of another kind to the fixture's host (a virtio display card with its DRM
    card and render nodes, at a PCI address and numbers the fixture does not use), and files of another kind
    beside them (the card's display connector, the DRM version file), and its description."""
    files = fx.host.files
    bus = next(f"0000:{n:02x}:00.0" for n in range(0xEE, 0, -1)
               if not any(f"0000:{n:02x}:00.0" in path for path in files))
    card = next(n for n in range(9, 1000) if not any(f"card{n}" in path for path in files))
    render = next(n for n in range(137, 1000) if not any(f"renderD{n}" in path for path in files))
    sysfs, drm = f"/sys/bus/pci/devices/{bus}", "/sys/class/drm"
    added = {f"{sysfs}/vendor": "0x1af4\n", f"{sysfs}/device": "0x1050\n", f"{sysfs}/class": "0x030000\n",
             f"{sysfs}/numa_node": "0\n", f"{drm}/card{card}/device/vendor": "0x1af4\n",
             f"{drm}/card{card}/device/device": "0x1050\n",
             f"{drm}/card{card}/device/uevent": f"DRIVER=virtio-pci\nPCI_SLOT_NAME={bus}\n",
             f"/dev/dri/card{card}": "", f"{drm}/renderD{render}/device/vendor": "0x1af4\n",
             f"{drm}/renderD{render}/device/device": "0x1050\n", f"/dev/dri/renderD{render}": "",
             # Files of another kind beside the devices: a display connector and the DRM core's version.
             f"{drm}/card{card}-Virtual-1/status": "connected\n", f"{drm}/card{card}-Virtual-1/enabled": "enabled\n"}
    if f"{drm}/version" not in files:
        added[f"{drm}/version"] = "drm 1.1.0 20060810\n"
    return {"files": added}, (f"an unrelated virtio display device added (PCI {bus}, /dev/dri/card{card}, its render "
                              f"node renderD{render} and connector card{card}-Virtual-1)")


_VARIANTS: dict[tuple[int, str], tuple[Subject, list[Variant]]] = {}


def variants(subject: Subject, ref: str) -> list[Variant]:
    """The fixture's inventory, then one per declared perturbation, then the unrelated-device one (cached)."""
    key = (id(subject), ref)
    if key in _VARIANTS and _VARIANTS[key][0] is subject:
        return _VARIANTS[key][1]
    from rayaccel_conformance.checks.supported import perturbed

    family = subject.family().name
    fx = subject.fixture(ref)
    base = subject.inventory(ref)
    found = [Variant(f"{ref} as recorded", "recorded", base, base.family(family))]
    for variant in fx.perturbations:
        built = subject.build(simulated_host(perturbed(fx, variant.patch)))
        found.append(Variant(f"{ref} perturbation {variant.name} ({variant.kind})", variant.kind, built,
                             built.family(family)))
    patch, what = unrelated_device_patch(fx)
    built = subject.build(simulated_host(perturbed(fx, patch)))
    found.append(Variant(f"{ref} with {what}", "derived", built, built.family(family)))
    _VARIANTS[key] = (subject, found)
    return found


def raw_memory(subject: Subject, ref: str) -> dict[str, int | None]:
    """Each device's memory size as the plugin's discovery gave it, before the SDK filled any from the catalog."""
    devices = subject.manager.answer(subject.name, hookspec.DISCOVER, [],
                                     host=simulated_host(subject.fixture(ref))) or []
    return {d.id: d.memory_mib for d in devices}


def memory_source(device: Device, raw: dict[str, int | None]) -> str:
    if device.id in raw and raw[device.id] is None and device.memory_mib is not None:
        return f" (filled by the SDK from SKU {device.sku}'s catalog memory_mib; the plugin's discovery gave none)"
    return ""


def _ref(subject: Subject, fixture: str | None) -> str:
    """The fixture a per-fixture check runs on; a plugin that did not load skips as every check does (its family
    is asked first), one that ships no fixture fails as RAC105 does."""
    subject.family()
    if fixture is None:
        subject.fixture(fixture)  # raises, saying the plugin ships no fixtures
        raise AssertionError("unreachable")
    return fixture


def _fail(wrong: list[str], limit: int = 8) -> None:
    if wrong:
        unique = sorted(set(wrong), key=wrong.index)
        raise CheckFailed(unique[:limit] + ([f"... and {len(unique) - limit} more"] if len(unique) > limit else []))


def _families(subject: Subject, ref: str) -> Iterator[tuple[Variant, FamilyInventory]]:
    for variant in variants(subject, ref):
        if variant.family is not None:
            yield variant, variant.family


# RAC114 ---------------------------------------------------------------------------------------------------------

_VISIBLE: dict[tuple[int, Any], tuple[Subject, list[str]]] = {}


@check("RAC114", scope="fixture")
def visible_devices_over_generated_units(subject: Subject, fixture: str | None) -> Evidence:
    """The visible-devices variable round-trips for any unit ids in the node's range, in any order, and its
    parser refuses or normalises anything else.

    Hypothesis draws the unit ids (``rayaccel_conformance.checks.properties``): numeric ids of any width and
    any count up to 64 when the fixture's units are numbers, else every subset of the fixture's own units in
    every order. Each list set with ``rayaccel_visible_env`` must parse back (``rayaccel_parse_visible``) to
    exactly that list; the value Ray and the vendor runtimes write (``0,1,2``), and the same with spaces and a
    trailing comma, must parse to it too; and any other text (garbage of digits, letters and separators) must
    parse to ids that are non-empty, unpadded and hold no comma, or be refused. And every entry is kept or
    refused (``invariant an-entry-is-kept-or-refused``, ``checks/kept_entries.py``): a value naming a device by
    its own id (alone, and beside another device's unit), as the runtimes take it (CUDA_VISIBLE_DEVICES
    ``GPU-<uuid>``, HIP_VISIBLE_DEVICES a UUID) and Ray's managers keep it, and the garbage, must not parse as
    the value without one of its entries does unless the parser reports a problem: dropped, ``rayaccel start``
    offers fewer devices than the operator named, without a word. And a device's own id names that device
    (``invariant an-id-names-its-device``, ``checks/own_ids.py``): with the devices' ids moved among them at the
    host seam (a UUID is the device's, not its place), each device's own id, kept without a problem, must parse as
    written or as that device's units. A failure quotes the smallest counterexample hypothesis shrank it to.
    Derandomized, 25 examples per property. Fix: split on commas, strip each entry, drop empty ones, and never
    assume an id's width or the number of ids; keep an entry you cannot read (the SDK places a device's own id at
    its units) or refuse the value with ``rayaccel.report_problem``, and never read a unit out of an id's digits.
    """
    from rayaccel_conformance.checks.experimental import offered_units
    from rayaccel_conformance.checks.kept_entries import dropped_entry_failures
    from rayaccel_conformance.checks.own_ids import misplaced_id_failures
    from rayaccel_conformance.checks.properties import visible_failures

    fixture = _ref(subject, fixture)
    fam = subject.inventory(fixture).family(subject.family().name)
    ids = offered_units(fam)
    if not ids:
        raise CheckFailed(subject.consequence(subject.inventory(fixture), f"{fixture}: no units to draw from"))
    numeric = all(i.isdigit() for i in ids)
    # The two hooks are pure (no host): numeric ids draw the same lists on every fixture, so ask once per plugin.
    key = (id(subject), "numeric" if numeric else tuple(ids))
    if key not in _VISIBLE or _VISIBLE[key][0] is not subject:
        _VISIBLE[key] = (subject, visible_failures(subject, ids))
    _fail([*_VISIBLE[key][1], *dropped_entry_failures(subject, fam, ids),
           *misplaced_id_failures(subject, subject.fixture(fixture), fam)])
    return (f"{fixture}: round trip, canonical, garbage and kept-entry properties hold over "
            f"{'numeric ids 0-511, up to 64' if numeric else f'every order of the {len(ids)} units'}")


# RAC215 ---------------------------------------------------------------------------------------------------------

#: How close a link must be to 8x (or 1/8 of) the declared bandwidth to be named as bits taken for bytes, and
#: to twice it to be said to be twice it (no cause: two directions, two links or two lanes summed read alike).
BIT_BYTE_TOLERANCE = 0.05


def catalog_link_maxima(subject: Subject) -> dict[str, float]:
    """SKU id -> the fastest link one way the plugin's catalog declares for it (GB/s)."""
    catalog = subject.manager.answer(subject.name, hookspec.SKU_CATALOG, [])
    return {s.id: s.link_bandwidth_gbytes_per_s for s in (catalog.skus if catalog else [])
            if s.link_bandwidth_gbytes_per_s is not None}


def _against_the_catalog(got: float, limit: float, sku: str, where: str) -> str | None:
    """What is wrong with one link's bandwidth against its SKU's declared maximum (None when within it)."""
    if abs(got - 8 * limit) <= BIT_BYTE_TOLERANCE * 8 * limit:
        return (f"invariant link-in-gbytes-per-s, {where} is {got:g} GB/s, 8x the {limit:g} GB/s SKU {sku} declares: "
                "Gbit/s taken for GB/s? divide by 8")
    if abs(got - 2 * limit) <= BIT_BYTE_TOLERANCE * 2 * limit:
        return (f"invariant link-within-sku-maximum, {where} is {got:g} GB/s, twice the {limit:g} GB/s SKU {sku} "
                "declares (link_bandwidth_gbytes_per_s)")
    if got > limit * 1.01:
        return (f"invariant link-within-sku-maximum, {where} is {got:g} GB/s, faster than the {limit:g} GB/s SKU "
                f"{sku} declares (link_bandwidth_gbytes_per_s)")
    return None


@check("RAC215", scope="fixture")
def link_bandwidth_against_the_catalog(subject: Subject, fixture: str | None) -> Evidence:
    """Link bandwidths are one direction's GB/s within the catalog's declared link bandwidth: never bits taken
    for bytes, nor both directions summed.

    ``Link.bandwidth_gbps`` is unidirectional gigabytes per second, all lanes together (H100 SXM5: 18 NVLink 4
    links x 25 GB/s = 450). A vendor tool printing Gbit/s (400G fabrics, ``gbps`` keys) passed on unchanged
    is 8 times too fast, and a bidirectional figure twice; placement then prefers the wrong devices. Where the
    plugin's catalog declares a SKU's fastest link (``link_bandwidth_gbytes_per_s``), every link with a device
    of that SKU at one end, on the fixture, each of its perturbations and the unrelated-device variant, must be
    at most that (within 1%); one at 8 times it is named as the bit/byte slip, one at twice it is said to be
    twice it (both directions, two links or two lanes summed: the numbers do not tell which). A link at an
    eighth of it is named too when every link of a variant is (the catalog's value written in Gbit/s, or a
    plugin dividing by 8 twice). This check owns every comparison with the
    catalog; RAC217 holds links to their kind's fastest product, which needs no catalog. A catalog that
    declares no link bandwidth, or links without one, leave nothing to compare (not applicable). Fix: report
    one direction in GB/s (divide a tool's Gbit/s by 8, halve a bidirectional figure); or correct the
    catalog's ``link_bandwidth_gbytes_per_s`` (GB/s, not Gbit/s).
    """
    fixture = _ref(subject, fixture)
    declared = catalog_link_maxima(subject)
    if not declared:
        raise NotApplicable(f"{fixture}: the catalog declares no link_bandwidth_gbytes_per_s to compare with")
    wrong: list[str] = []
    compared: dict[str, int] = {}
    for variant, fam in _families(subject, fixture):
        sku_of = {d.id: d.sku for d in fam.devices}
        eighths, count = [], 0
        for link in fam.topology.links:
            limits = sorted((declared[s], s) for s in {sku_of.get(link.a), sku_of.get(link.b)} if s in declared)
            if link.bandwidth_gbps is None or not limits:
                continue
            count += 1
            (limit, sku), got = limits[0], link.bandwidth_gbps
            where = f"{variant.name}: link {link.a}-{link.b} ({link.kind})"
            found = _against_the_catalog(got, limit, sku, where)
            if found:
                wrong.append(found)
            elif abs(8 * got - limit) <= BIT_BYTE_TOLERANCE * limit:
                eighths.append(f"invariant link-in-gbytes-per-s, {where} is {got:g} GB/s, an eighth of the {limit:g} "
                               f"GB/s SKU {sku} declares: is the catalog's link_bandwidth_gbytes_per_s in Gbit/s?")
        if eighths and len(eighths) == count:
            wrong += eighths
        compared[variant.name] = count
    _fail(wrong, limit=4)
    first = next(iter(compared.values()), 0)
    if not sum(compared.values()):
        raise NotApplicable(f"{fixture}: no link of a SKU with a declared bandwidth reports one")
    return (f"{fixture}: {first} links within the catalog's declared GB/s as recorded, {sum(compared.values())} on "
            f"its {len(compared)} variants")


# RAC216 ---------------------------------------------------------------------------------------------------------


@check("RAC216", scope="fixture")
def one_resource_name_one_size(subject: Subject, fixture: str | None) -> Evidence:
    """One resource name stands for one size on a node: every unit of the family's resource, and every
    partition of one partition resource, has the same memory and compute slices.

    Ray counts units, not sizes: a task asking for one unit of a resource whose units differ (a 40 GB and an
    80 GB card, a 1g.10gb and a 2g.20gb partition under one name) gets either, and one of them runs out of
    memory. On the fixture, its ``reorder`` and ``lose`` perturbations and the unrelated-device variant (a
    ``change`` perturbation may resize one card on purpose), the memory per unit
    (a device's known ``memory_mib`` over its units) must be the same for every device offered whole, and
    every partition listed under one ``partition_units`` resource must have the same ``memory_mib``,
    ``compute_slices`` and ``memory_slices``. A size the SDK filled from the catalog is named as such.
    Partitions of one size can still be two profiles (NVIDIA's ``1g.10gb`` and ``1g.10gb+me``, media
    extensions, same slices and memory): where each partition's own record on the machine (the library's or
    JSON record stating its id, its id file's directory, its line of a tool's output) writes its profile as
    part of one name, the partitions of one resource must be written under one name (invariant
    one-resource-one-profile, ``checks/merged_profiles.py``; ``+`` matched by ``.``, any case). And an attribute
    of a device or partition named as a field of the machine's records about it (amdsmi's ``compute_partition``)
    holds a value those records state for that field (invariant an-attribute-holds-its-field,
    ``checks/attribute_fields.py``): the partitions' profiles and the Kubernetes names are read from it.
    An attribute saying on or off (``enabled``, ``disabled``) holds the switch those records state under its
    name as 1 or 0, or true or false (NVML's ``mig_mode``: ``NVML_DEVICE_MIG_ENABLE`` 1, ``_DISABLE`` 0).
    Fix: give differently sized devices or partitions different resource names (a partition resource per
    profile, named by the vendor's whole profile name, options included), or read each device's memory from
    the device itself, never from another card or a default.
    """
    family = subject.family()
    fixture = _ref(subject, fixture)
    raw = raw_memory(subject, fixture)
    wrong, compared = [], 0
    for variant, fam in _families(subject, fixture):
        if variant.kind == "change":
            continue  # a perturbation that resizes one card makes a mixed machine on purpose
        offered = set(fam.schedulable_units)
        whole = [d for d in fam.devices if not d.partitions and d.memory_mib is not None and d.unit_ids
                 and set(d.unit_ids) & offered]
        sizes: dict[float, list[Device]] = {}
        for d in whole:
            sizes.setdefault(d.memory_mib / len(d.unit_ids), []).append(d)  # type: ignore[operator]
        compared += len(whole)
        if len(sizes) > 1:
            (small, a), (large, b) = min(sizes.items()), max(sizes.items())
            wrong.append(f"invariant one-resource-one-size, {variant.name}: {family.resource_name} stands for "
                         f"{small:g} MiB per unit on {a[0].id}{memory_source(a[0], raw)} and {large:g} MiB on "
                         f"{b[0].id}{memory_source(b[0], raw)}")
        partitions = {p.id: p for d in fam.devices for p in d.partitions}
        for resource, ids in fam.partition_units.items():
            shapes: dict[tuple[Any, ...], str] = {}
            for pid in ids:
                p = partitions.get(pid)
                if p is not None:
                    shapes.setdefault((p.memory_mib, p.compute_slices, p.memory_slices), pid)
            compared += len(ids)
            if len(shapes) > 1:
                (s1, p1), (s2, p2) = list(shapes.items())[:2]
                wrong.append(f"invariant one-resource-one-size, {variant.name}: partition resource {resource} "
                             f"stands for partitions of (memory_mib, compute_slices, memory_slices) {s1} ({p1}) "
                             f"and {s2} ({p2})")
    built = subject.inventory(fixture).family(family.name)
    if built is not None:  # partitions of one size can still be two profiles: the machine's own names tell them apart
        profiles = {p.id: p.profile for d in built.devices for p in d.partitions}
        records = MachineRecords(subject.fixture(fixture).host.model_dump(mode="json"))
        wrong += merged_profiles(built.partition_units, profiles, records)
        wrong += attribute_field_findings(list(built.devices), records, fixture)
    _fail(wrong)
    if not compared:
        raise NotApplicable(f"{fixture}: no device or partition of known size is offered")
    return f"{fixture}: every unit of {family.resource_name} and of each partition resource has one size"


# RAC217 ---------------------------------------------------------------------------------------------------------


@check("RAC217", scope="fixture")
def link_bandwidth_within_kind_maximum(subject: Subject, fixture: str | None) -> Evidence:
    """A link's bandwidth is one direction's GB/s, within the fastest product of its kind.

    ``Link.bandwidth_gbps`` is GB/s one way, all lanes together. On the fixture, each of its perturbations
    and the unrelated-device variant, every link with a bandwidth must be at most the fastest one-way
    bandwidth any product of its kind has (``KIND_MAX_GBYTES_PER_S``: NVLink 1800, PCIe 256, RoCE 200, ...):
    faster is a unit slip (Gbit/s, MB/s, both directions summed), whatever the plugin's catalog says. It needs
    no catalog: the comparison with a SKU's declared link bandwidth is RAC215's. Fix: report one direction
    (halve a tool's bidirectional figure), in GB/s (divide Gbit/s by 8, MB/s by 1000).
    """
    family = subject.family()
    fixture = _ref(subject, fixture)
    wrong, compared = [], 0
    for variant, fam in _families(subject, fixture):
        for link in fam.topology.links:
            ceiling = KIND_MAX_GBYTES_PER_S.get(str(link.kind))
            if link.bandwidth_gbps is None or ceiling is None:
                continue
            compared += 1
            if link.bandwidth_gbps > ceiling:
                wrong.append(f"invariant link-within-kind-maximum, {variant.name}: link {link.a}-{link.b} "
                             f"({link.kind}) is {link.bandwidth_gbps:g} GB/s, faster than any {link.kind} product "
                             f"({ceiling:g} GB/s one way): Gbit/s, MB/s or both directions?")
    _fail(wrong)
    if not compared:
        raise NotApplicable(f"{fixture}: no link of a kind with a known fastest product reports a bandwidth")
    return f"{fixture}: {compared} link bandwidths one way, within their kind's fastest product ({family.name})"


# RAC218 ---------------------------------------------------------------------------------------------------------


@check("RAC218", scope="fixture")
def metrics_within_their_units(subject: Subject, fixture: str | None) -> Evidence:
    """Every metric is within its declared unit's range and consistent with the record it describes.

    On the fixture, each of its perturbations and the unrelated-device variant: ``utilization`` (percent)
    in [0, 100], ``temperature`` (celsius) in [-40, 150], ``power`` (watts) in [0, 5000], counters and sizes
    never negative; a device's ``memory_used`` at most its ``memory_total`` and at most its ``memory_mib``
    (bytes = MiB x 2^20); ``memory_total`` within 10% of ``memory_mib``; ``interconnect_tx``/``_rx`` at most
    the device's links' bandwidth together. A ratio for a percentage is caught where the fixture's load is
    known (RAC206); a scale off by 1024, or a MiB value for bytes, is caught here against the device's size.
    Fix: convert every reading to the metric's declared unit (docs/hooks.md#rayaccel_metrics), and sample
    memory against the same device's size.
    """
    fixture = _ref(subject, fixture)
    raw = raw_memory(subject, fixture)
    wrong, compared = [], 0
    for variant, fam in _families(subject, fixture):
        devices = {d.id: d for d in fam.devices}
        by_device: dict[str, dict[str, float]] = {}
        for s in fam.metrics:
            by_device.setdefault(s.device, {})[s.name] = s.value
            compared += 1
            low, high = METRIC_RANGES.get(s.name, (float("-inf"), float("inf")))
            if not low <= s.value <= high:
                parts = len(devices[s.device].partitions) if s.device in devices else 0
                summed = (f": summed over its {parts} partitions? a device's share of time busy is their mean"
                          if s.unit == "percent" and parts > 1 and s.value <= high * parts else "")
                wrong.append(f"invariant metric-in-unit-range, {variant.name}: {s.name} of {s.device} is "
                             f"{s.value:g} {s.unit}, outside [{low:g}, {high:g}]{summed}")
        wrong += memory_against_devices(fam, variant.name, raw)
        for dev, values in by_device.items():
            where = f"{variant.name}: {dev}"
            fastest = sum(ln.bandwidth_gbps or 0.0 for ln in fam.topology.links if dev in (ln.a, ln.b)) * 1e9
            for name in ("interconnect_tx", "interconnect_rx"):
                if fastest and values.get(name, 0.0) > fastest * 1.05:
                    wrong.append(f"invariant interconnect-within-links, {where}: {name} {values[name]:g} bytes/s "
                                 f"is more than its links carry together ({fastest:g} bytes/s)")
    _fail(wrong)
    if not compared:
        raise NotApplicable(f"{fixture}: no metric samples")
    return f"{fixture}: {compared} samples within their units and consistent with their devices"


def memory_against_devices(fam: FamilyInventory, where: str, raw: dict[str, int | None] | None = None) -> list[str]:
    """Each device's memory metrics against its record: ``memory_used`` at most ``memory_total`` and at most the
    device's ``memory_mib`` (bytes = MiB x 2^20), ``memory_total`` within 10% of it, whatever machine built the
    family (a shipped fixture, a perturbation, a fixture rewritten for another SKU). ``raw``: discovery's own
    sizes, to say where the SDK filled one in."""
    devices = {d.id: d for d in fam.devices}
    by_device: dict[str, dict[str, float]] = {}
    for s in fam.metrics:
        by_device.setdefault(s.device, {})[s.name] = s.value
    wrong = []
    for dev, values in by_device.items():
        device = devices.get(dev)
        used, total = values.get("memory_used"), values.get("memory_total")
        if used is not None and total is not None and used > total:
            wrong.append(f"invariant memory-used-within-capacity, {where}: {dev}: memory_used {used:g} bytes is more "
                         f"than memory_total {total:g} bytes")
        if device is None or device.memory_mib is None:
            continue
        size = device.memory_mib * MIB
        source = memory_source(device, raw or {})
        if used is not None and used > size:
            wrong.append(f"invariant memory-used-within-capacity, {where}: {dev}: memory_used {used:g} bytes is more "
                         f"than the device's memory_mib {device.memory_mib} ({size:g} bytes){source}")
        if total is not None and abs(total - size) > MEMORY_TOTAL_TOLERANCE * size:
            wrong.append(f"invariant memory-total-is-the-device's, {where}: {dev}: memory_total {total:g} bytes, but "
                         f"memory_mib {device.memory_mib} is {size:g} bytes{source}")
    return wrong


# RAC219 ---------------------------------------------------------------------------------------------------------


def _owned(fam: FamilyInventory) -> dict[str, list[tuple[str, str]]]:
    """What each device claims as its own: PCI functions, device files, units -> [(device, value)]."""
    owned: dict[str, list[tuple[str, str]]] = {"PCI function": [], "device file": [], "unit": []}
    for d in fam.devices:
        if d.pci_bus_id:
            owned["PCI function"].append((d.id, d.pci_bus_id.lower().removeprefix("0000:")))
        listed = d.attributes.get(DEVICE_FILE)
        if isinstance(listed, str):
            owned["device file"] += [(d.id, f.strip()) for f in listed.split(",") if f.strip()]
        owned["unit"] += [(d.id, u) for u in d.unit_ids]
    return owned


@check("RAC219", scope="fixture")
def device_files_and_functions_owned_once(subject: Subject, fixture: str | None) -> Evidence:
    """A device file or PCI function belongs to exactly one device, and to the right one when the machine
    has a device of another kind too.

    On the fixture and each of its perturbations, no two devices (of this family, or of any family on the
    node) name the same PCI function (``pci_bus_id``), device file (the ``device_file`` attribute) or unit.
    Then the suite adds an unrelated device of another kind at the host seam (a virtio display function
    with its PCI entry, DRM card and render nodes, at an address and numbers the fixture does not use, and
    files of another kind beside them: its display connector ``card<n>-Virtual-1``, the DRM version file):
    the family's devices, their PCI functions, device files and units must stay exactly as on the fixture. A
    plugin that counts every PCI function, DRM card or render node, or pairs files with devices by position,
    takes the newcomer's.
    Fix: select the vendor's own functions (PCI vendor id, driver) and key each file by the device's own
    address or index, never by position in a listing of everything.
    """
    fixture = _ref(subject, fixture)
    found = variants(subject, fixture)
    wrong = []
    for variant in found:
        claims: dict[tuple[str, str], set[str]] = {}
        for fam in variant.inventory.families:
            for what, pairs in _owned(fam).items():
                for device, value in pairs:
                    claims.setdefault((what, value), set()).add(f"{fam.family.name}:{device}")
        for (what, value), owners in claims.items():
            if len(owners) > 1:
                wrong.append(f"invariant owned-by-one-device, {variant.name}: {what} {value} is claimed by "
                             f"{', '.join(sorted(owners))}")
    base, extra = found[0], found[-1]
    if base.family is not None:
        before = _owned(base.family) | {"device": [(d.id, d.id) for d in base.family.devices]}
        after = _owned(extra.family) if extra.family is not None else {}
        after = after | {"device": [(d.id, d.id) for d in (extra.family.devices if extra.family else [])]}
        changes = []
        for what in before:
            if sorted(before[what]) != sorted(after.get(what, [])):
                gained = sorted(set(after.get(what, [])) - set(before[what]))
                lost = sorted(set(before[what]) - set(after.get(what, [])))
                changes.append(f"the family's {what}s change: gains {gained[:2]}, loses {lost[:2]}")
        # Discovery failing in that build (on its second call) is the cause to quote, not what it took away.
        wrong += subject.blamed(extra.inventory, changes, f"invariant unrelated-device-changes-nothing, {extra.name}: ")
    _fail(wrong)
    return (f"{fixture}: every PCI function, device file and unit owned by one device; unchanged with an unrelated "
            "device added")


# RAC220 ---------------------------------------------------------------------------------------------------------


@check("RAC220")
def hints_only_for_what_the_plugin_owns(subject: Subject) -> Evidence:
    """Cloud hints only for instance types whose devices are the family's: never one another installed plugin
    or a known cloud catalogue assigns elsewhere.

    Each accelerator instance type RAC209 asks about, and each that another vendor's installed plugin lists
    (``rayaccel_cloud_instance_types``), is asked of the plugin; a hint for one that another vendor's
    installed plugin also hints, or that the known catalogue (``INSTANCE_TYPE_VENDORS``: ``p5.48xlarge`` carries
    NVIDIA GPUs, ``trn2.48xlarge`` AWS Trainium) assigns to another vendor, is a conflict naming both.
    Hypothesis also draws instance type names no catalogue has (``zz...``, every provider): none may get a
    hint (the shrunk name is quoted). An autoscaler adding a node for the hint's resource starts a machine
    without the family's devices.
    Fix: hint only the instance types that carry your family's devices (the plugin's instance-types.yaml).
    """
    from rayaccel_conformance.checks.supported import CLOUD_INSTANCE_TYPES

    family = subject.family()
    if not subject.manager.implements(subject.name, "rayaccel_cloud_hints"):
        raise NotApplicable("the plugin implements no rayaccel_cloud_hints hook")
    asked = {(provider, t) for provider, names in CLOUD_INSTANCE_TYPES.items() for t in names}
    # Another vendor's plugin hinting the same type is a conflict; two plugins of one vendor may share a machine.
    others = [p for p in subject.manager.plugin_names() if p != subject.name
              and not own_words(subject.manager.family(p)) & own_words(family)]
    for other in others:
        if subject.manager.implements(other, "rayaccel_cloud_instance_types"):
            listed = subject.manager.answer(other, hookspec.CLOUD_INSTANCE_TYPES, []) or []
            asked |= {(h.provider, h.instance_type) for h in listed}
    own = own_words(family)
    wrong, hinted = [], 0
    for provider, instance_type in sorted(asked):
        hint = subject.manager.answer(subject.name, hookspec.CLOUD_HINTS, [], provider=provider,
                                      instance_type=instance_type)
        if hint is None:
            continue
        hinted += 1
        vendor = INSTANCE_TYPE_VENDORS.get(instance_type.lower())
        if vendor is not None and not own & set(vendor):
            wrong.append(f"invariant hints-only-for-own-devices: {provider} {instance_type} carries "
                         f"{vendor[0].upper()} devices (known cloud catalogue), yet {subject.name} hints "
                         f"{hint.count:g} {family.resource_name} of {family.vendor}")
        for other in others:
            if subject.manager.implements(other, "rayaccel_cloud_hints") and subject.manager.answer(
                    other, hookspec.CLOUD_HINTS, [], provider=provider, instance_type=instance_type) is not None:
                wrong.append(f"invariant hints-only-for-own-devices: {provider} {instance_type} is hinted by "
                             f"installed plugin {other} too: one of the two claims another family's machine")
    from rayaccel_conformance.checks.properties import unknown_hint_failure

    unknown = unknown_hint_failure(subject)
    wrong += [unknown] if unknown else []
    _fail(wrong)
    if not hinted:
        raise NotApplicable(f"the plugin hints none of the {len(asked)} instance types asked")
    return f"{hinted} hints, each for an instance type no other plugin or known catalogue assigns elsewhere"
