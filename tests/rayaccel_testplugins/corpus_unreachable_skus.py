"""Corpus mutants whose catalog holds a SKU no card can reach (issue 46, held-out round 15's ``l2``: a python-library
bake adding a 64 GB variant matched by ``fields: {memory_mib: 65536}`` after the 96 GB SKU matched by the same PCI
device id; the SDK resolves a card by the first rule any SKU matches, PCI id before exact name before fields, so a
64 GB card resolves to the 96 GB SKU). No fixture has a card of the variant, so every device resolves as its fixture
says and the catalog is unambiguous: RAC205's ``every-sku-is-reachable`` asks how a card stating the variant's fields,
otherwise as the fixture's cards report themselves, resolves.

Two shapes: a 128 GiB R1 told apart by memory beside R1 matched by its exact product name (the name the tool prints
for every card), and beside R1 matched by its PCI device id (the cards' sysfs ``device``).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-sku-variant-under-name`` as ``c_sku_variant_under_name``).
"""

from __future__ import annotations

import copy
from typing import Any

from rayaccel_testplugins.corpus import Healthy, add_import_defect
from rayaccel_testplugins.corpus_day_zero_names import R1_PCI_ID, cards_with_pci_ids, device_with_pci_id


def _with_variant(data: dict[str, Any]) -> dict[str, Any]:
    """The catalog with a 128 GiB R1 after R1, told apart by its memory alone."""
    big = copy.deepcopy(data["skus"][0])
    big.update({"id": "acme-r1-128g", "marketing_name": "ACME Roadrunner R1 128G", "accelerator_type": "R1-128G",
                "memory_mib": 131072, "match": {"fields": {"memory_mib": "131072"}}})
    data["skus"].append(big)
    return data


class SkuVariantUnderName(Healthy):
    DEFECT = ("a 128 GiB R1 matched by memory alone, after R1 matched by the product name every R1 card prints: the "
              "exact name outranks the fields, so a 128 GiB card resolves to R1")
    KILLED_BY = ("RAC205", "invariant every-sku-is-reachable")

    def catalog_data(self) -> dict[str, Any]:
        return _with_variant(super().catalog_data())


class SkuVariantUnderPciId(Healthy):
    DEFECT = ("a 128 GiB R1 matched by memory alone, after R1 matched by the PCI device id every R1 card has: the "
              "PCI id outranks the fields, so a 128 GiB card resolves to R1")
    KILLED_BY = ("RAC205", "invariant every-sku-is-reachable")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        cards_with_pci_ids(self)

    device = device_with_pci_id

    def catalog_data(self) -> dict[str, Any]:
        data = super().catalog_data()
        data["skus"][0]["match"] = {"pci_device_ids": [R1_PCI_ID]}
        return _with_variant(data)


MUTANTS = (SkuVariantUnderName, SkuVariantUnderPciId)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
