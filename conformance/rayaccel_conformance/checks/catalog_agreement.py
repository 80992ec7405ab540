"""RAC231-RAC232 (supported tier): what the plugin reads of a device agrees with what its SKU's catalog record
declares: the PCI device id it reports is one the SKU lists, and the links of a healthy node reach the
fastest link the SKU declares. Both were found by ``make mutation``: a PCI id read from the wrong bits of a
register, or a link bandwidth that lost its lanes, stayed plausible and self-consistent, so no check saw it.
"""

from __future__ import annotations

from rayaccel.errors import RayaccelError
from rayaccel.onboarding.catalog_file import catalog_of
from rayaccel.records import FamilyInventory, SkuRecord
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: How far below the SKU's declared fastest link the fastest link of a healthy node may be (rounding).
LINK_TOLERANCE = 0.05


def _family_and_skus(subject: Subject, fixture: str | None) -> tuple[str, FamilyInventory, dict[str, SkuRecord]]:
    if fixture is None:
        raise NotApplicable("the plugin ships no fixtures")
    try:
        catalog = catalog_of(subject.manager, subject.name)
    except RayaccelError as e:
        raise NotApplicable(f"the plugin's SKU catalog does not load ({e}): RAC208 grades it") from None
    family = subject.inventory(fixture).family(subject.family().name)
    if family is None or not family.devices:
        raise NotApplicable(f"{fixture}: the family has no devices (RAC201 grades the count)")
    return fixture, family, {sku.id: sku for sku in catalog.skus}


@check("RAC231", scope="fixture")
def pci_device_id_is_one_its_sku_lists(subject: Subject, fixture: str | None) -> Evidence:
    """A device's PCI device id is one its SKU's catalog record lists.

    The SDK resolves a device's SKU by its PCI device id, else by its product name. A PCI id read from the
    wrong bits of the register (the vendor half, a shift left out) matches no SKU, so the device still
    resolves, by name, and nothing looks wrong, yet every consumer of the id (gres.conf, DRA attributes,
    the node picture, ``sku add``'s fleet check) gets a number no such card has. For every device of the
    recorded fixture whose SKU lists PCI ids and that reports one, the id must be among them; the failure
    names the device, the id, the SKU and how the SDK resolved it. Fix: read the device id (PCI config
    offset 0x02, the upper half of NVML's ``pciDeviceId``), or add the card's id to the SKU's
    ``match.pci_device_ids`` if it is a variant the catalog lacks.
    """
    fixture, family, skus = _family_and_skus(subject, fixture)
    wrong, checked = [], 0
    for device in family.devices:
        sku = skus.get(device.sku or "")
        if sku is None or not sku.match.pci_device_ids or not device.pci_device_id:
            continue
        checked += 1
        listed = [p.lower() for p in sku.match.pci_device_ids]
        if device.pci_device_id.lower() not in listed:
            wrong.append(f"invariant 'a device's PCI device id is one its SKU lists' broken on {fixture}: device "
                         f"{device.id} reports PCI device id {device.pci_device_id}, but its SKU {sku.id} (resolved "
                         f"by the SDK from its product name {device.product_name!r}) lists {', '.join(listed)}")
    if wrong:
        raise CheckFailed(wrong[:4] + ([f"(and {len(wrong) - 4} more)"] if len(wrong) > 4 else []))
    if not checked:
        raise NotApplicable(f"{fixture}: no device reports a PCI device id its SKU could list")
    return f"{fixture}: the PCI device id of {checked} device(s) is one their SKU lists"


@check("RAC232", scope="fixture")
def links_reach_the_skus_declared_bandwidth(subject: Subject, fixture: str | None) -> Evidence:
    """The fastest device-to-device link of a healthy node reaches the fastest link its SKU declares.

    A SKU's ``link_bandwidth_gbytes_per_s`` is the fastest device-to-device link of the product, one
    direction, all lanes (H100 SXM5: 450 GB/s over 18 NVLinks); RAC217 holds links below it. A bandwidth
    that lost its lanes, was divided once too often or counted one lane of a switched fabric stays under
    that maximum and looks plausible, and placement then weighs the fabric as slower than PCIe. On the
    recorded fixture (a healthy machine, no fault), when every device is of one SKU that declares a link
    bandwidth and the topology has links other than PCIe, the fastest of them must be within 5% of the
    declared figure; the failure names the SKU, its figure and the fastest link found. Fix: multiply the
    per-link bandwidth by the lanes (links) between the two devices, through a switch too.
    """
    fixture, family, skus = _family_and_skus(subject, fixture)
    of_node = {device.sku for device in family.devices}
    sku = skus.get(next(iter(of_node)) or "") if len(of_node) == 1 else None
    if sku is None or sku.link_bandwidth_gbytes_per_s is None:
        raise NotApplicable(f"{fixture}: its devices are not all of one SKU that declares link_bandwidth_gbytes_per_s")
    links = [link for link in (family.topology.links if family.topology else []) if link.kind != "pcie"]
    if not links:
        raise NotApplicable(f"{fixture}: the topology has no device-to-device link but PCIe")
    fastest = max(links, key=lambda link: link.bandwidth_gbps or 0.0)
    declared = sku.link_bandwidth_gbytes_per_s
    if (fastest.bandwidth_gbps or 0.0) < declared * (1 - LINK_TOLERANCE):
        raise CheckFailed(
            f"invariant 'the fastest link of a healthy node reaches its SKU's declared link bandwidth' broken on "
            f"{fixture}: SKU {sku.id} declares {declared:g} GB/s one way, the fastest {fastest.kind} link "
            f"({fastest.a}-{fastest.b}, {fastest.lanes} lane(s)) is {fastest.bandwidth_gbps} GB/s")
    return (f"{fixture}: the fastest {fastest.kind} link is {fastest.bandwidth_gbps:g} GB/s, the {declared:g} GB/s "
            f"SKU {sku.id} declares")
