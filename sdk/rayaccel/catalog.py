"""SKU catalogs: a chip SKU is data, so a new one is schedulable the day it ships.

A catalog is a YAML or JSON file validated by ``rayaccel/schemas/sku-catalog.schema.json``. Devices are
matched by PCI device id first, then exact product name, then product-name pattern.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rayaccel.errors import CatalogError
from rayaccel.files.checked import load_checked
from rayaccel.records import Device, SkuCatalog, SkuRecord
from rayaccel.schemas import validate_document


def parse_catalog(data: Any, origin: str, schema_checked: bool = False) -> SkuCatalog:
    catalog = validate_document(data, SkuCatalog, schema="sku-catalog", what="SKU catalog", origin=origin,
                                error=CatalogError, schema_checked=schema_checked)
    duplicate = _first_duplicate([s.id for s in catalog.skus])
    if duplicate:
        raise CatalogError(f"{origin}: SKU id {duplicate!r} appears twice; SKU ids must be unique")
    rules = [tuple(sorted(s.match.fields.items())) for s in catalog.skus if s.match.fields]
    twice = _first_duplicate([repr(r) for r in rules])
    if twice:
        raise CatalogError(f"{origin}: two SKUs match devices by the same fields {twice}; a device would resolve "
                           "to the first, so give one of them another field to tell them apart")
    for sku in catalog.skus:
        for pattern in sku.match.product_patterns:
            try:
                re.compile(pattern)
            except re.error as e:
                raise CatalogError(f"{origin}: SKU {sku.id}: bad product pattern {pattern!r}: {e}") from None
    return catalog


def load_catalog(path: str | Path) -> SkuCatalog:
    path = Path(path)
    data = load_checked(path, "SKU catalog", "sku-catalog", CatalogError)  # parsed and schema-checked once per content
    catalog = parse_catalog(data, str(path), schema_checked=True)
    catalog._source_path = str(path.resolve())
    return catalog


def _first_duplicate(items: list[str]) -> str | None:
    seen: set[str] = set()
    for item in items:
        if item in seen:
            return item
        seen.add(item)
    return None


#: Device fields a ``fields`` rule may not name: they are structure, not something a tool prints.
_NOT_MATCHABLE = frozenset({"attributes", "units", "partitions"})


def device_value(device: Device, name: str) -> str | None:
    """A device field (``memory_mib``) or, failing that, attribute (``model``) as text, for ``fields`` rules."""
    if name in Device.model_fields and name not in _NOT_MATCHABLE:
        value = getattr(device, name)
    else:
        value = device.attributes.get(name)
    return None if value is None else str(value)


def _by_pci_id(sku: SkuRecord, device: Device) -> bool:
    return (device.pci_device_id or "").lower() in {p.lower() for p in sku.match.pci_device_ids}


def _by_product_name(sku: SkuRecord, device: Device) -> bool:
    return bool(device.product_name) and device.product_name in sku.match.product_names


def _by_fields(sku: SkuRecord, device: Device) -> bool:
    return bool(sku.match.fields) and all(device_value(device, k) == v for k, v in sku.match.fields.items())


#: How a device finds its SKU, most specific first: the first rule any SKU matches decides, and within it
#: the catalog's order (two SKUs matching by the deciding rule is an ambiguous catalog: conformance RAC205
#: and `rayaccel sku add` refuse it).
MATCH_RULES: tuple[tuple[str, Callable[[SkuRecord, Device], bool]], ...] = (
    ("PCI device id", _by_pci_id),
    ("exact product name", _by_product_name),
    ("device fields", _by_fields),
    ("product pattern", lambda sku, device: bool(device.product_name) and any(
        re.search(p, device.product_name) for p in sku.match.product_patterns)),
)


def every_match(catalog: SkuCatalog, device: Device) -> list[tuple[str, SkuRecord]]:
    """Every SKU that matches the device, with the rule it matches by, most specific rule first: the first
    decides (:func:`resolve_sku`); a later one of another SKU is shadowed by it."""
    return [(how, sku) for how, matches in MATCH_RULES for sku in catalog.skus if matches(sku, device)]


def matching_skus(catalog: SkuCatalog, device: Device) -> tuple[str, list[SkuRecord]] | None:
    """The rule that decides the device's SKU and every SKU matching by it; None when none matches."""
    for how, matches in MATCH_RULES:
        hits = [sku for sku in catalog.skus if matches(sku, device)]
        if hits:
            return how, hits
    return None


def resolve_sku(catalog: SkuCatalog | None, device: Device) -> SkuRecord | None:
    if catalog is None:
        return None
    if device.sku:
        return next((s for s in catalog.skus if s.id == device.sku), None)
    found = matching_skus(catalog, device)
    return found[1][0] if found else None


def stating_sku(device: Device, sku: SkuRecord) -> Device:
    """``device`` as a card of ``sku`` reports itself where the SKU's rules name what a card reports (its first PCI
    device id and exact product name, its ``fields``), everything else as ``device`` reports it: a sibling card
    the catalog tells apart by those rules alone."""
    update: dict[str, Any] = {"sku": None, "attributes": dict(device.attributes)}
    if sku.match.pci_device_ids:
        update["pci_device_id"] = sku.match.pci_device_ids[0].lower()
    if sku.match.product_names:
        update["product_name"] = sku.match.product_names[0]
    for name, value in sku.match.fields.items():
        if name in Device.model_fields and name not in _NOT_MATCHABLE:
            update[name] = value
        else:
            update["attributes"][name] = value
    return Device.model_validate({**device.model_dump(), **update})


def unreachable_skus(catalog: SkuCatalog | None, devices: list[Device]) -> list[str]:
    """SKUs told apart by device ``fields`` that a sibling's more specific rule always takes: a card stating the
    SKU's fields (and its PCI id and product name where it states them), otherwise as one of ``devices`` reports
    itself, resolves to another SKU by a rule that outranks the fields (:data:`MATCH_RULES`), and no such card of
    any of ``devices`` resolves to the SKU. A fields rule tells apart cards alike in everything else (a tool printing
    one name, or one PCI id, for every card), so such a SKU can never be reached by a card of it. One line per SKU."""
    if catalog is None:
        return []
    found = []
    for sku in catalog.skus:
        if not sku.match.fields:
            continue
        shadowed: list[tuple[Device, Device, str, SkuRecord]] = []
        reached = False
        for device in devices:
            card = stating_sku(device, sku)
            matches = every_match(catalog, card)
            if not matches:
                continue
            how, winner = matches[0]
            if any(s.id == sku.id for rule, s in matches if rule == how):
                reached = True  # the SKU wins the card, or ties for it (an ambiguity RAC205 names on a device)
                break
            if any(s.id == sku.id for _, s in matches):
                shadowed.append((device, card, how, winner))
        if reached or not shadowed:
            continue
        device, card, how, winner = shadowed[0]
        found.append(f"SKU {sku.id} is matched by device fields {dict(sku.match.fields)}, but a card stating them, "
                     f"otherwise as {device.id} reports itself (PCI device id {card.pci_device_id or 'none'}, product "
                     f"{card.product_name!r}), resolves to SKU {winner.id} by {how}, which outranks device fields: "
                     f"{sku.id} can never be reached. Tell the two apart by what differs (a fields rule on "
                     f"{winner.id} too, instead of its {how}), or give {sku.id} the PCI device id and product name "
                     "its cards report")
    return found


def sku_disagreement(catalog: SkuCatalog | None, device: Device) -> str | None:
    """Why the device's PCI id and product name point at different SKUs of the catalog; None when they agree.

    :func:`resolve_sku` still takes the PCI id's SKU (the more specific match), but a catalog or a device
    that disagrees with itself (a stale fixture, a mistyped id) must be reported, not silently resolved.
    Only exact product names count: a pattern is meant to be broad."""
    if catalog is None or device.sku or not device.pci_device_id:
        return None
    pci = device.pci_device_id.lower()
    by_pci = next((s for s in catalog.skus if _by_pci_id(s, device)), None)
    by_name = next((s for s in catalog.skus if _by_product_name(s, device)), None)
    if by_pci is None or by_name is None or by_pci.id == by_name.id:
        return None
    return (f"device {device.id} has PCI device id {pci}, catalogued as SKU {by_pci.id!r}, but product name "
            f"{device.product_name!r}, catalogued as SKU {by_name.id!r}; it is resolved as {by_pci.id!r}")


def derive_accelerator_type(product_name: str | None, fallback: str = "unknown") -> str:
    """A type from a product name when nothing better is known: 'ACME Widget 9000' -> 'ACME-Widget-9000'."""
    from rayaccel.labels import to_label_value

    return to_label_value(product_name or "") or fallback


def suggest_sku_id(product_name: str | None) -> str:
    slug = re.sub(r"[^a-z0-9.]+", "-", (product_name or "").lower()).strip("-.")
    return slug or "new-sku"


#: Device facts that tell SKUs of one product apart when a catalog has no ``fields`` rule to follow and the
#: device has no product name (a tool that prints none): what a vendor tool prints about the card itself.
IDENTITY_FIELDS = ("model", "memory_mib", "architecture")


def distinguishing_fields(catalog: SkuCatalog | None, device: Device) -> dict[str, str]:
    """The ``fields`` rule that matches exactly this device's SKU: the fields the catalog already tells its
    SKUs apart by (all of them, with this device's values), else :data:`IDENTITY_FIELDS`. Empty when the
    device has none of them."""
    keys = sorted({k for sku in (catalog.skus if catalog else []) for k in sku.match.fields}) or IDENTITY_FIELDS
    values = {k: device_value(device, k) for k in keys}
    return {k: v for k, v in values.items() if v is not None and v != ""}


def _fields_suffix(fields: dict[str, str]) -> str:
    """'128G' for memory_mib=131072, the value otherwise: what the fields say, for a name."""
    parts = []
    for key, value in fields.items():
        if key == "memory_mib" and value.isdigit():
            parts.append(f"{int(value) / 1024:g}G")
        elif key != "architecture":
            parts.append(value)
    return " ".join(parts) or " ".join(fields.values())


def sku_add_command(plugin: str, device: Device, accelerator_type: str, catalog: SkuCatalog | None = None) -> str:
    """The exact command that onboards an unknown device's SKU, matching it by what tells it apart.

    A PCI device id is the most specific; without one, a product name, unless the catalog tells its SKUs apart
    by device fields (a tool that prints one name for every card) or the device has no product name: then the
    device's values of those fields, since a product-name rule outranks field rules and would take every card
    of the catalog's field-matched SKUs. ``rayaccel sku add`` refuses a SKU that takes devices another SKU
    matched before; this command is made so that it passes that check."""
    taken_ids = {s.id for s in catalog.skus} if catalog else set()
    by_fields = not device.pci_device_id and (
        not device.product_name or any(s.match.fields for s in (catalog.skus if catalog else [])))
    fields = distinguishing_fields(catalog, device) if by_fields else {}
    name = device.product_name or plugin.upper()
    if fields:
        name = f"{name} {_fields_suffix(fields)}"
        from rayaccel.labels import to_label_value

        accelerator_type = to_label_value(f"{accelerator_type}-{_fields_suffix(fields)}") or accelerator_type
    sku_id = suggest_sku_id(name)
    for n in range(2, 100):
        if sku_id not in taken_ids:
            break
        sku_id = f"{suggest_sku_id(name)}-{n}"
    argv = ["rayaccel", "sku", "add", "--plugin", plugin, "--id", sku_id, "--marketing-name", name,
            "--accelerator-type", accelerator_type]
    if fields:
        argv += [x for key, value in fields.items() for x in ("--match-field", f"{key}={value}")]
    elif device.product_name:
        argv += ["--product-name", device.product_name]
    if device.pci_device_id:
        argv += ["--pci-device-id", device.pci_device_id]
    if device.memory_mib:
        argv += ["--memory-mib", str(device.memory_mib)]
    if device.architecture:
        argv += ["--architecture", device.architecture]
    return shlex.join(argv)
