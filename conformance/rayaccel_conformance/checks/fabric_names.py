"""RAC232's ``interconnect-names-the-links-fabric``: a SKU's catalog ``interconnect`` is the fabric its devices'
links are of (held-out round 13's ``c3``).

The SDK labels a node ``rayaccel.io/interconnect`` with its best link kind, and where that kind is ``other`` (a
fabric the vocabulary has no word for, reported so rather than mislabelled) with the name the SKU's catalog
record gives the fabric (``SkuRecord.interconnect``: "the SKU's device-to-device fabric"). So that name stands
for links the plugin said are none of the vocabulary's kinds: a name that reads as one of them (``pcie5-x16``,
``infiniband-ndr``) contradicts the topology. Either the catalog names something else than the devices' own
fabric (the card's host bus as a datasheet lists it, the node's network), or the plugin reports a fabric the
vocabulary has as ``other``; the label then tells a scheduler the devices talk over PCIe where the topology joins
them by their own links (or the reverse). A kind of another name than the links' (an H100 PCIe SKU's ``pcie5``
over an NVLink bridge) is a real machine and passes: the label takes the links' kind there, not the catalog's.
"""

from __future__ import annotations

from rayaccel import hookspec
from rayaccel.labels import LINK_PREFERENCE
from rayaccel.records import FamilyInventory, Problem, SkuRecord
from rayaccel.vocabulary import named_link_kind as named_link_kind  # the SDK warns by the same reading
from rayaccel_conformance.harness.subject import Subject

INVARIANT = "invariant interconnect-names-the-links-fabric"

def answered_skus(subject: Subject) -> dict[str, SkuRecord]:
    """The SKUs of the catalog the plugin answers (a file beside it or one built in code), as the SDK resolves
    devices and labels the node with; none where it answers no catalog (RAC205 and RAC208 grade that)."""
    problems: list[Problem] = []
    catalog = subject.manager.answer(subject.name, hookspec.SKU_CATALOG, problems)
    return {sku.id: sku for sku in catalog.skus} if catalog is not None else {}


def fabric_name_findings(fixture: str, family: FamilyInventory,
                         skus: dict[str, SkuRecord]) -> tuple[list[str], list[str]]:
    """(broken, held): for each SKU of the family's devices whose catalog record names an interconnect and whose
    devices are joined by links all of kind ``other``, whether the name reads as none of the vocabulary's kinds."""
    broken, held = [], []
    label = family.labels.get("rayaccel.io/interconnect")
    for sku_id in sorted({device.sku for device in family.devices if device.sku}):
        sku = skus.get(sku_id)
        if sku is None or not sku.interconnect:
            continue
        ids = {device.id for device in family.devices if device.sku == sku_id}
        links = [link for link in family.topology.links if link.a in ids and link.b in ids]
        kinds = {link.kind for link in links}
        best = next((kind for kind in LINK_PREFERENCE if kind in kinds), None)
        if best is None:
            continue
        named = named_link_kind(sku.interconnect)
        if best != "other":
            continue  # the label names the links' kind, whatever the catalog calls the product's fabric
        if named is None:
            held.append(f"SKU {sku_id}'s {len(links)} links of kind 'other' are named {sku.interconnect!r}, no kind "
                        "the vocabulary has")
        else:
            speeds = sorted({f"{link.bandwidth_gbps:g} GB/s" for link in links if link.bandwidth_gbps})
            broken.append(
                f"{INVARIANT}, {fixture}: the {len(links)} links joining SKU {sku_id}'s {len(ids)} devices are all "
                f"of kind 'other' ({', '.join(speeds) or 'no bandwidth stated'}), a fabric the link vocabulary has "
                f"no kind for, yet the catalog names that fabric {sku.interconnect!r}, which reads as the kind "
                f"{named!r}: the node is labelled rayaccel.io/interconnect={label!r}, saying its devices talk over "
                f"{named} where its topology joins them by a fabric of their own. Either the catalog's interconnect "
                f"names something else than the devices' fabric (the card's host bus, the node's network: name the "
                f"fabric the links are, or 'other'), or the links are {named} links reported as 'other' (report "
                f"them as kind {named!r})")
    return broken, held
