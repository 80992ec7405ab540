"""RAC230 (supported tier): a fixture the plugin rewrites for a new SKU (``rayaccel_fixture_for_sku``, what
``rayaccel sku add`` writes day-zero fixtures with) behaves as that SKU, on every fixture the plugin ships.

The SKU is one the suite makes up, one generation on from the fixture's own: a new id, name, PCI device id,
memory size and accelerator type (the base's, its last generation number made ``9Z``: ``TPU-V5E`` ->
``TPU-V9Z``, ``H100`` -> ``H9Z``), so no field of the base SKU can still win the SKU's resolution. The
rewrite is then graded as ``rayaccel sku add --dry-run`` grades it: every device resolves to the new SKU,
with its memory, its type and its labels, the fixture's faults kept and each behaving as before.
"""

from __future__ import annotations

import hashlib
import re

from rayaccel.errors import RayaccelError
from rayaccel.hosts.fixtures import parse_fixture
from rayaccel.onboarding.fleet import FleetDevice, fleet_devices
from rayaccel.onboarding.new_sku import add_sku
from rayaccel.onboarding.sku_fixture import plugin_fixtures
from rayaccel.records import SkuMatch, SkuRecord
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.catalog_agreement import plugin_catalog
from rayaccel_conformance.checks.invariants import memory_against_devices
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

DAY_ZERO_ID = "zz-rac230-day-zero"
DAY_ZERO_NAME = "RAC230 Day Zero Chip"
#: The SKU's marketing name is not what the driver prints (NVIDIA's "H100 SXM5 80GB" is nvidia-smi's "NVIDIA H100
#: 80GB HBM3", Intel's "Gaudi 3 OAM (HL-325L)" hl-smi's "HL-325L"), so a rewrite writing it as the product shows.
DAY_ZERO_MARKETING_NAME = "RAC230 Day Zero Accelerator OAM"


def day_zero_sku(base: SkuRecord, taken_pci_ids: set[str]) -> SkuRecord:
    """A SKU one generation on from ``base`` that shares no identifying field with any catalogued SKU."""
    pci = next(f"0x{n:04x}" for n in range(0xfe30, 0x10000) if f"0x{n:04x}" not in taken_pci_ids)
    accelerator_type = (re.sub(r"\d+[A-Za-z]*(?=\D*$)", "9Z", base.accelerator_type, count=1)
                        if re.search(r"\d", base.accelerator_type) else f"{base.accelerator_type}-9Z")
    memory = (base.memory_mib or 8192) * 2 + 1024  # a size no catalogued SKU of the family has
    return base.model_copy(update={
        "id": DAY_ZERO_ID, "marketing_name": DAY_ZERO_MARKETING_NAME, "accelerator_type": accelerator_type,
        "memory_mib": memory, "match": SkuMatch(pci_device_ids=[pci], product_names=[DAY_ZERO_NAME])})


def plugin_fleet(subject: Subject) -> list[FleetDevice]:
    """Every device of the fixtures the plugin ships as its discovery reports them (``fleet_devices``, which
    ``rayaccel sku add`` refuses a SKU on), discovered once per run: remembered under the plugin and the path and
    bytes of each of its fixtures, so a fixture changed is a fleet discovered afresh. A failure is not kept (a
    fixture that cannot be read is discovered afresh, and fails as it did)."""
    try:
        key = (subject.name, tuple((ref, str(path), hashlib.sha256(path.read_bytes()).hexdigest())
                                   for ref, path in sorted(plugin_fixtures(subject.manager, subject.name).items())))
    except OSError:
        return fleet_devices(subject.manager, subject.name)
    if key not in subject.fleets:
        subject.fleets[key] = fleet_devices(subject.manager, subject.name)
    return subject.fleets[key]


@check("RAC230", scope="fixture")
def rewritten_fixture_is_of_the_new_sku(subject: Subject, fixture: str | None) -> Evidence:
    """A fixture the plugin rewrites for another SKU (``rayaccel_fixture_for_sku``) behaves as that SKU.

    ``rayaccel sku add`` trusts the plugin to rewrite a fixture's vendor answers (sysfs files, the library's
    data, a tool's output, each fault's patch) so its devices become a new SKU; a rewrite that misses one
    place leaves devices of the old SKU, a wrong memory size or a fault that no longer behaves, in every
    day-zero fixture written with it. For each shipped fixture, a SKU one generation on from the fixture's
    own (new id, name, PCI device id, memory size and accelerator type) is derived, and the rewrite graded as
    ``rayaccel sku add --dry-run`` grades it: every device resolves to the new SKU with its memory, type and
    labels, every fault of the base fixture is kept and behaves as before, and the rewritten machine's memory
    metrics describe its devices as RAC218 holds them on a shipped fixture (``memory_total`` within 10% of the
    device's ``memory_mib``, ``memory_used`` within both). The SKU is marketed under another name than the
    product name it matches, as real SKUs are, and ``rayaccel sku add`` refuses a rewrite whose host states a
    product name the SKU's product rules do not match (its devices would resolve by PCI id alone). Not applicable
    to a plugin without the hook, or a fixture with no catalogued SKU. Fix: rewrite every place the vendor's
    answers state the product name (as the driver prints it: ``match.product_names``, not the marketing name),
    PCI device id and memory size (each answer a metric reads it from, in that answer's unit), faults' patches
    included.
    """
    if not subject.manager.implements(subject.name, "rayaccel_fixture_for_sku"):
        raise NotApplicable("the plugin does not implement rayaccel_fixture_for_sku")
    if fixture is None:
        raise NotApplicable("the plugin ships no fixtures")
    catalog = plugin_catalog(subject)
    own = set(subject.fixture(fixture).expected.skus.values())
    base = next((sku for sku in catalog.skus if sku.id in own), None)
    if base is None:
        raise NotApplicable(f"{fixture} states no catalogued SKU (expected.skus) to derive a new one from")
    sku = day_zero_sku(base, {p.lower() for s in catalog.skus for p in s.match.pci_device_ids})
    what = (f"invariant 'a fixture rewritten for a SKU is of that SKU' broken on {fixture} rewritten from "
            f"{base.id} to {sku.id} (PCI {sku.match.pci_device_ids[0]}, {sku.memory_mib} MiB, {sku.accelerator_type})")
    try:
        done = add_sku(subject.manager, subject.name, sku, from_fixture=fixture, dry_run=True,
                       fleet=lambda: plugin_fleet(subject))
    except RayaccelError as e:
        raise CheckFailed(f"{what}: {e}") from None
    # The SDK resolves a device by its name when its PCI id matches nothing: the id the plugin reads back from
    # the rewritten answers must be the SKU's too, or the rewrite wrote it wrong (RAC231 on a shipped fixture).
    derived = parse_fixture(done.fixture_data, f"the fixture rewritten for {sku.id}")
    rebuilt = subject.build(simulated_host(derived))
    read_back = {d.id: d.pci_device_id for d in subject.devices(rebuilt)
                 if d.pci_device_id and d.pci_device_id.lower() != sku.match.pci_device_ids[0]}
    if read_back:
        device, pci = next(iter(read_back.items()))
        raise CheckFailed(f"{what}: the plugin reads PCI device id {pci} back from the rewritten answers of {device} "
                          f"({len(read_back)} device(s)), not the SKU's {sku.match.pci_device_ids[0]}: the rewrite "
                          "encodes the id wrong")
    # A fixture may state no metric values, so the dry run compares none: the metrics the rewritten machine gives
    # must still describe its devices (RAC218's memory invariants), or the rewrite missed a metric's own source.
    family = rebuilt.family(subject.family().name)
    disagree = memory_against_devices(family, f"{fixture} rewritten for {sku.id}") if family else []
    if disagree:
        raise CheckFailed(f"{what}: the rewritten machine's metrics disagree with its devices: {disagree[0]} "
                          f"({len(disagree)} in all; is every answer a memory metric is read from rewritten, in its "
                          "own unit?)")
    return (f"{fixture} rewritten from {base.id} to a new SKU ({sku.match.pci_device_ids[0]}, {sku.memory_mib} "
            f"MiB, {sku.accelerator_type}): every device is of it, faults kept")
