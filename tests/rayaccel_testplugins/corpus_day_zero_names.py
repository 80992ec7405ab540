"""Corpus mutants whose day-zero fixture writes another name where the driver prints the product's (issue 46, held-out
round 15's ``s3``: a sysfs bake's ``rayaccel_fixture_for_sku`` writing the SKU's marketing name as each card's
``product``). The SKU still resolves by the PCI device id the rewrite also wrote, so every device is of the new SKU
and the fixture's expectation holds; only the SKU's own product rule, which the driver's name must match on the real
card, is never exercised, and the fixture misstates what the driver prints. ``rayaccel sku add`` (and RAC230, which
grades the rewrite as it does) names a product name the host states that the SKU's product rules do not match.

ACME cards here state their PCI device id (sysfs ``device``, ``0x0a01`` as the kernel prints it) and the catalog
matches acme-r1 by it and by its product name. Two shapes: the SKU's marketing name written as the product, and a
product name made of the vendor's words and the SKU's accelerator type.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-day-zero-marketing-name`` as ``c_day_zero_marketing_name``).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

from rayaccel import Device, Host, SkuCatalog, SkuRecord, report_problem
from rayaccel.catalog import load_catalog
from rayaccel.files.atomic import write_atomically
from rayaccel_testplugins.corpus import FIXTURE_ROOT, SYSFS, Healthy, add_import_defect, read_machine, write_machine

#: acme-r1's PCI device id, as sysfs ``device`` prints it.
R1_PCI_ID = "0x0a01"


def _catalog_path(name: str) -> Path:
    """The plugin's catalog file (``rayaccel sku add`` appends to a file), beside its fixtures."""
    return Path(FIXTURE_ROOT / f"{name}-skus.yaml")


def cards_with_pci_ids(plugin: Healthy) -> None:
    """acme-4 with each card's PCI device id (a card removed takes it with it), and the catalog's file."""
    data: dict[str, Any] = read_machine(plugin.name)
    files: dict[str, str | None] = data["host"]["files"]
    for card in sorted({path.rsplit("/", 1)[0] for path in files if path.endswith("/uuid")}):
        files[f"{card}/device"] = f"{R1_PCI_ID}\n"
    for variant in data.get("perturbations", []):
        patched = variant["patch"].get("files", {})
        for path in [p for p, v in patched.items() if v is None and p.endswith("/uuid")]:
            patched[path.rsplit("/", 1)[0] + "/device"] = None
    write_machine(plugin.name, "acme-4", data)
    write_atomically(_catalog_path(plugin.name), yaml.safe_dump(plugin.catalog_data(), sort_keys=False),
                     durable=False)


def device_with_pci_id(plugin: Healthy, host: Host, path: str, driver: str | None) -> Device:
    """The card with its PCI device id (sysfs ``device``): unknown where it is none, reported."""
    found = Healthy.device(plugin, host, path, driver)
    if not found.product_name:  # the PCI id still resolves the SKU: an empty name must not pass unsaid
        report_problem("unreadable-attribute", f"{path}/product is empty; the product name is unknown")
    pci = host.read_text(f"{path}/device").strip().lower() if host.exists(f"{path}/device") else ""
    if not re.fullmatch(r"0x[0-9a-f]{4}", pci):
        if pci:
            report_problem("unreadable-attribute", f"{path}/device is no PCI device id; read as unknown")
        return found
    return found.model_copy(update={"pci_device_id": pci})


def _catalog_data(plugin: Healthy) -> dict[str, Any]:
    """acme-r1 matched by its PCI device id and its product name."""
    data = Healthy.catalog_data(plugin)
    data["skus"][0]["match"]["pci_device_ids"] = [R1_PCI_ID]
    return data


def _rewritten(fixture: dict[str, Any], sku: SkuRecord, product: str) -> dict[str, Any]:
    """Every card's sysfs ``product`` written ``product``, its ``device`` and ``memory_mib`` the SKU's."""
    data = copy.deepcopy(fixture)
    files: dict[str, str] = data["host"]["files"]
    pci = sku.match.pci_device_ids[0].lower() if sku.match.pci_device_ids else None
    for path in list(files):
        if not path.startswith(f"{SYSFS}/acme"):
            continue
        if path.endswith("/product"):
            files[path] = product + "\n"
        elif path.endswith("/device") and pci:
            files[path] = pci + "\n"
        elif path.endswith("/memory_mib") and sku.memory_mib is not None:
            files[path] = f"{sku.memory_mib}\n"
    return data


class DayZeroOnboarding(Healthy):
    """ACME onboarding day-zero SKUs by PCI device id and product name, rightly: the rewrite writes the name the
    driver prints, the SKU's first product name (the control; not a mutant)."""

    DEFECT = "none: ACME onboarding day-zero SKUs by PCI device id and product name"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        cards_with_pci_ids(self)

    device = device_with_pci_id
    catalog_data = _catalog_data

    def rayaccel_sku_catalog(self) -> SkuCatalog:
        return load_catalog(_catalog_path(self.name))

    def rayaccel_fixture_for_sku(self, fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
        return _rewritten(fixture, sku, sku.match.product_names[0] if sku.match.product_names else sku.marketing_name)


class DayZeroMarketingName(Healthy):
    DEFECT = ("the day-zero fixture writes the SKU's marketing name as each card's product, where the driver prints "
              "the product name the SKU matches: the cards resolve by PCI id alone")
    KILLED_BY = ("RAC230", "which SKU zz-rac230-day-zero does not match by its product names")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        cards_with_pci_ids(self)

    device = device_with_pci_id
    catalog_data = _catalog_data

    def rayaccel_sku_catalog(self) -> SkuCatalog:
        return load_catalog(_catalog_path(self.name))

    def rayaccel_fixture_for_sku(self, fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
        return _rewritten(fixture, sku, sku.marketing_name)


class DayZeroNameFromType(Healthy):
    DEFECT = ("the day-zero fixture names each card's product from the vendor's words and the SKU's accelerator type "
              "('ACME Roadrunner <type>', as R1's is), not the product name the SKU matches")
    KILLED_BY = ("RAC230", "which SKU zz-rac230-day-zero does not match by its product names")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        cards_with_pci_ids(self)

    device = device_with_pci_id
    catalog_data = _catalog_data

    def rayaccel_sku_catalog(self) -> SkuCatalog:
        return load_catalog(_catalog_path(self.name))

    def rayaccel_fixture_for_sku(self, fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
        return _rewritten(fixture, sku, f"ACME Roadrunner {sku.accelerator_type}")


MUTANTS = (DayZeroMarketingName, DayZeroNameFromType)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
