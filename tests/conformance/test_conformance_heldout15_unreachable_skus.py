"""Held-out grading, round 15 (issue 46, lane J1): every SKU of a catalog can be reached by a card of it (RAC205's
``invariant every-sku-is-reachable``, and ``rayaccel sku check``).

The python-library bake ``l2`` added a 64 GB variant matched by ``fields: {memory_mib: 65536}`` after the 96 GB SKU
matched by the same PCI device id and product name. The SDK resolves a device by the first rule any SKU matches, most
specific first (PCI id, exact name, fields, pattern: docs/onboarding.md), so a 64 GB card resolves to the 96 GB SKU,
and ``rayaccel sku add`` would have refused the entry (its day-zero fixture keeps the PCI id and resolves to the
sibling); written by hand, it graded ``supported``, no fixture having such a card. A fields rule tells apart cards
alike in everything else, so a card stating the SKU's fields, otherwise as the fixture's cards report themselves,
must resolve to it. The order stays the SDK's: two SKUs told apart by memory are matched by fields both.
"""

from __future__ import annotations

from typing import Any

import pytest
from mutant_grading import failure, graded, mutant

from rayaccel.catalog import parse_catalog, unreachable_skus
from rayaccel.onboarding.fleet import fleet_devices, resolution_findings
from rayaccel.records import Device
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_unreachable_skus import SkuVariantUnderName, SkuVariantUnderPciId

INVARIANT = "invariant every-sku-is-reachable"


@pytest.mark.parametrize(("shape", "pci", "how"), [(SkuVariantUnderName, "none", "exact product name"),
                                                   (SkuVariantUnderPciId, "0x0a01", "PCI device id")])
def test_a_variant_a_siblings_rule_always_takes_is_named(shape: type[Healthy], pci: str, how: str) -> None:
    said = failure(mutant(shape), "RAC205", "acme-4")
    assert INVARIANT in said and "SKU acme-r1-128g is matched by device fields {'memory_mib': '131072'}" in said, said
    assert f"(PCI device id {pci}, product 'ACME Roadrunner R1'), resolves to SKU acme-r1 by {how}" in said, said
    assert "acme-r1-128g can never be reached" in said and "expected" not in said, said


def test_sku_check_names_the_unreachable_sku() -> None:
    """The SDK's own door for a catalog edited by hand: ``rayaccel sku check`` reports the plugin's fleet's
    resolution findings (check_catalogs), an unreachable SKU among its errors."""
    plugin = mutant(SkuVariantUnderPciId)
    subject = graded(plugin)
    errors, _ = resolution_findings(plugin.rayaccel_sku_catalog(), fleet_devices(subject.manager, subject.name))
    assert [e for e in errors if e.startswith("SKU acme-r1-128g is matched by device fields")], errors


def catalog(*skus: dict[str, Any]) -> Any:
    return parse_catalog({"schema": "rayaccel-sku-catalog/1", "family": "lurgain", "skus": [
        {"marketing_name": s["id"], "accelerator_type": "LURGAIN-X1", **s} for s in skus]}, "test catalog")


CARD = Device(index=0, id="LURGAIN-0", pci_device_id="0x0a01", product_name="lurgain X1", memory_mib=98304)


def test_l2s_catalog_is_named_and_the_same_told_apart_by_fields_both_passes() -> None:
    l2 = catalog({"id": "lurgain-x1", "match": {"pci_device_ids": ["0x0a01"], "product_names": ["lurgain X1"]}},
                 {"id": "lurgain-x1-64g", "match": {"fields": {"memory_mib": "65536"}}})
    (said,) = unreachable_skus(l2, [CARD])
    assert said.startswith("SKU lurgain-x1-64g is matched by device fields") and "by PCI device id" in said, said
    apart = catalog({"id": "lurgain-x1", "match": {"fields": {"memory_mib": "98304"}}},
                    {"id": "lurgain-x1-64g", "match": {"fields": {"memory_mib": "65536"}}})
    assert unreachable_skus(apart, [CARD]) == []
    # A variant with a PCI id of its own is reached by it.
    own_id = catalog({"id": "lurgain-x1", "match": {"pci_device_ids": ["0x0a01"]}},
                     {"id": "lurgain-x1-64g",
                      "match": {"pci_device_ids": ["0x0a02"], "fields": {"memory_mib": "65536"}}})
    assert unreachable_skus(own_id, [CARD]) == []
    # The fixture's own card stating the fields already, and still taken by the sibling: named too.
    same = catalog({"id": "lurgain-x1", "match": {"pci_device_ids": ["0x0a01"]}},
                   {"id": "lurgain-x1-96g", "match": {"fields": {"memory_mib": "98304"}}})
    assert [line[:30] for line in unreachable_skus(same, [CARD])] == ["SKU lurgain-x1-96g is matched "]
    # Reached by one card of the fleet (a card without a product name), it is reachable.
    nameless = CARD.model_copy(update={"id": "LURGAIN-1", "pci_device_id": None, "product_name": ""})
    assert unreachable_skus(l2, [CARD, nameless]) == []
