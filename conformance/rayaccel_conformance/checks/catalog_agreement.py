"""RAC231-RAC232 (supported tier): what the plugin reads of a device agrees with what its SKU's catalog record
declares: the PCI device id it reports is one the SKU lists, and the links of a healthy node reach the
fastest link the SKU declares. Both were found by ``make mutation``: a PCI id read from the wrong bits of a
register, or a link bandwidth that lost its lanes, stayed plausible and self-consistent, so no check saw it.
RAC254: a SKU's product pattern matches its own model, not the next one of the line (held-out grading).
"""

from __future__ import annotations

from rayaccel.errors import RayaccelError
from rayaccel.hosts.fixtures import HostState
from rayaccel.onboarding.catalog_file import catalog_of
from rayaccel.records import FamilyInventory, SkuCatalog, SkuRecord
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.fabric_names import answered_skus, fabric_name_findings
from rayaccel_conformance.checks.pci_id_forms import FORMS, host_with_id_in_form
from rayaccel_conformance.checks.value_relations import plain_ratio, ratio_mixup
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: How far below the SKU's declared fastest link the fastest link of a healthy node may be (rounding).
LINK_TOLERANCE = 0.05


def plugin_catalog(subject: Subject) -> SkuCatalog:
    """The plugin's SKU catalog; a check comparing with it does not apply where it does not load (RAC208's)."""
    try:
        return catalog_of(subject.manager, subject.name)
    except RayaccelError as e:
        raise NotApplicable(f"the plugin's SKU catalog does not load ({e}): RAC208 grades it") from None


def _family_and_skus(subject: Subject, fixture: str | None) -> tuple[str, FamilyInventory, dict[str, SkuRecord]]:
    if fixture is None:
        raise NotApplicable("the plugin ships no fixtures")
    catalog = plugin_catalog(subject)
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

    And the id read in another form (``invariant pci-id-in-another-form``): tools print one id as ``0x2330``
    (sysfs), ``0x233010DE`` (nvidia-smi) or ``10de:2330`` (lspci -n). Each id a device reports is written, wherever
    the fixture's vendor answers state it whole as text (a file, a command's or HTTP answer, a string in a
    library's data), in upper-case hex, without ``0x`` and with five hex digits, one build per form: each device
    must be kept with the id or none (refused), and no hook may raise. Not a decimal form: read as hex without the
    prefix it is a valid other id. Fix: read the id as a hex number of at most 16 bits and write it as ``0x`` and
    four lower-case digits, or refuse it (``rayaccel.malformed``).
    """
    fixture, family, skus = _family_and_skus(subject, fixture)
    forms, tried = other_forms_findings(subject, fixture, family)
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
    wrong += forms
    if wrong:
        raise CheckFailed(wrong[:4] + ([f"(and {len(wrong) - 4} more)"] if len(wrong) > 4 else []))
    if not checked and not tried:
        raise NotApplicable(f"{fixture}: no device reports a PCI device id its SKU could list, or one its vendor "
                            "answers state as text")
    return (f"{fixture}: the PCI device id of {checked} device(s) is one their SKU lists"
            + (f"; printed as {', '.join(tried)}, each id normalised or unknown, every device kept" if tried else ""))


def other_forms_findings(subject: Subject, fixture: str, family: FamilyInventory) -> tuple[list[str], list[str]]:
    """Each PCI device id the devices report, printed in each other form wherever the fixture's vendor answers state
    it as text (one build per id and form): every device keeps its id or has none, is kept, and no hook raises.
    Returns the findings and the forms tried."""
    fx = subject.fixture(fixture)
    host = fx.host.model_dump(mode="json")
    ids = {d.id: d.pci_device_id.lower() for d in family.devices if d.pci_device_id}
    wrong: list[str] = []
    tried: list[str] = []
    for pci in sorted(set(ids.values())):
        for name, form in FORMS:
            changed, places = host_with_id_in_form(host, pci, form(pci))
            if not places:
                continue
            shown = f"{name} ({form(pci)})"
            if shown not in tried:
                tried.append(shown)
            variant = fx.model_copy(update={"host": HostState.model_validate(changed), "faults": []})
            built = subject.build(simulated_host(variant))
            after = {d.id: d.pci_device_id for d in subject.devices(built)}
            where = (f"invariant pci-id-in-another-form broken on {fixture} with PCI device id {pci} printed as "
                     f"{shown} in {places} place(s)")
            problems = subject.plugin_problems(built, severities=("error", "warning"))
            raised = [p for p in problems if p.code == "hook-raised"]
            wrong += [f"{where}: {p.hook or 'a hook'} raised instead of refusing or normalising it: {p.message[:160]}"
                      for p in raised]
            of_id = [device for device, got in ids.items() if got == pci]
            lost = [device for device in of_id if device not in after]
            if lost:
                wrong.append(f"{where}: {len(lost)} device(s) lost ({', '.join(lost[:3])}): an id in another form must "
                             f"be normalised to {pci} or refused (unknown), the device kept")
            wrong += [f"{where}: {device} reports {after[device]}, neither {pci} nor unknown: another card's id"
                      for device in of_id if device in after and after[device] not in (None, pci)]
    return wrong, tried


@check("RAC232", scope="fixture")
def links_reach_the_skus_declared_bandwidth(subject: Subject, fixture: str | None) -> Evidence:
    """The fastest device-to-device link of a healthy node reaches the fastest link its SKU declares.

    A SKU's ``link_bandwidth_gbytes_per_s`` is the fastest device-to-device link of the product, one
    direction, all lanes (H100 SXM5: 450 GB/s over 18 NVLinks); RAC217 holds links below it. A bandwidth
    that lost its lanes, was divided once too often or counted one lane of a switched fabric stays under
    that maximum and looks plausible, and placement then weighs the fabric as slower than PCIe. On the
    recorded fixture (a healthy machine, no fault), when every device is of one SKU that declares a link
    bandwidth and the topology has links other than PCIe, the fastest of them must be within 5% of the
    declared figure; the failure names the SKU, its figure, the fastest link found and the mix-up their ratio
    points to (1/N of N lanes, N more than 2: one lane's figure; half is said as half, no cause). Fix: multiply the
    per-link bandwidth by the lanes (links) between the two devices, through a switch too.

    And the fabric the SKU names (``invariant interconnect-names-the-links-fabric``): where the links joining a
    SKU's devices are all of kind ``other`` (a fabric the vocabulary has no kind for), the node's
    ``rayaccel.io/interconnect`` label is the catalog's ``interconnect``, so that name must not read as one of the
    vocabulary's kinds (``pcie5-x16`` -> ``pcie``: the card's host bus, not its fabric). The failure names the SKU,
    its links, the name, the kind it reads as and the label. Fix: name the devices' own fabric in the catalog (or
    ``other``), or report the links by the kind they are.
    """
    if fixture is None:
        raise NotApplicable("the plugin ships no fixtures")
    family = subject.inventory(fixture).family(subject.family().name)
    broken, held = fabric_name_findings(fixture, family, answered_skus(subject)) if family else ([], [])
    if broken:
        raise CheckFailed(broken)
    try:
        fixture, family, skus = _family_and_skus(subject, fixture)
        return _bandwidth_evidence(fixture, family, skus) + "".join(f"; {line}" for line in held)
    except NotApplicable:
        if not held:
            raise
        return f"{fixture}: " + "; ".join(held)


def _bandwidth_evidence(fixture: str, family: FamilyInventory, skus: dict[str, SkuRecord]) -> str:
    """RAC232's bandwidth invariant on ``fixture``: its evidence, or NotApplicable where it holds nothing."""
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
        mixup = (ratio_mixup(fastest.bandwidth_gbps or 0.0, declared, "GB/s", lanes=fastest.lanes)
                 or plain_ratio(fastest.bandwidth_gbps or 0.0, declared, "GB/s"))
        raise CheckFailed(
            f"invariant 'the fastest link of a healthy node reaches its SKU's declared link bandwidth' broken on "
            f"{fixture}: SKU {sku.id} declares {declared:g} GB/s one way, the fastest {fastest.kind} link "
            f"({fastest.a}-{fastest.b}, {fastest.lanes} lane(s)) is {fastest.bandwidth_gbps} GB/s"
            + (f": {mixup}" if mixup else ""))
    return (f"{fixture}: the fastest {fastest.kind} link is {fastest.bandwidth_gbps:g} GB/s, the {declared:g} GB/s "
            f"SKU {sku.id} declares")


#: What a sibling model's name adds to the last word of a SKU's name (R1 -> R10, R1X; MI300 -> MI3000, MI300X).
SIBLING_SUFFIXES = ("0", "X")


def sibling_names(name: str) -> list[str]:
    """Names of other models of the same line: the last word of ``name`` extended, as vendors number models."""
    words = name.split()
    return [" ".join([*words[:-1], words[-1] + suffix]) for suffix in SIBLING_SUFFIXES] if words else []


@check("RAC254")
def product_pattern_matches_one_model(subject: Subject) -> Evidence:
    """A SKU's product pattern matches its own product and not a sibling model's name (its last word extended:
    ``R1`` -> ``R10``, ``R1X``).

    ``match.product_patterns`` are searched in a device's product name (:data:`rayaccel.catalog.MATCH_RULES`),
    so a pattern without an end (``Roadrunner R1``, ``^ACME Roadrunner R1``, ``Roadrunner R\\d``) also matches
    the next model of the line (``ACME Roadrunner R10``, ``...R1X``), which then resolves to this SKU with its
    memory and accelerator type. RAC205 sees that only where the catalog ships the other model too; this check
    tries, for each SKU with product patterns, its marketing and exact names with their last word extended by
    ``0`` and by ``X``: no pattern of the SKU may match one (``invariant pattern-matches-one-model``, naming the
    SKU, the pattern and the sibling name). Not applicable where no SKU has a product pattern. Fix: anchor the
    pattern at the end (``Roadrunner R1$``, or ``R1\\b`` followed only by what the driver appends).
    """
    import re

    from rayaccel import hookspec
    from rayaccel.records import Problem

    subject.family()
    problems: list[Problem] = []
    catalog = subject.manager.answer(subject.name, hookspec.SKU_CATALOG, problems)
    if catalog is None:
        raise NotApplicable("the plugin answers no SKU catalog (RAC205 grades that)")
    wrong, tried = [], 0
    for sku in (s for s in catalog.skus if s.match.product_patterns):
        names = {sku.marketing_name, *sku.match.product_names} - {""}
        for sibling in sorted({n for name in names for n in sibling_names(name)} - names):
            tried += 1
            pattern = next((p for p in sku.match.product_patterns if re.search(p, sibling)), None)
            if pattern is not None:
                wrong.append(f"invariant pattern-matches-one-model: SKU {sku.id}'s product pattern {pattern!r} also "
                             f"matches {sibling!r}, another model's name: that card would resolve to {sku.id} "
                             f"({sku.memory_mib} MiB, type {sku.accelerator_type})")
    if wrong:
        raise CheckFailed(wrong[:8])
    if not tried:
        raise NotApplicable("no SKU of the catalog matches devices by a product pattern")
    return f"{tried} sibling model names, none matched by another model's product pattern"
