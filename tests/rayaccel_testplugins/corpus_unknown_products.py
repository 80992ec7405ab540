"""Corpus mutants that leave a card out by its product's name (issue 46, held-out round 10's ``l1``: a python-library
bake keeping only the products it was qualified on; RAC230's day-zero fixture named only "expected 4, discovered
0"). RAC225's ``invariant an-unknown-product-is-a-device``: the product written as a newer one's wherever the host
states it, every card must still be found. Two shapes: an allow-list of product names (``{"ACME Roadrunner R1"}``),
and the SKU catalog taken for the family's cards (a card no SKU matches is skipped). Neither has the SKU rewrite
hook, so RAC230 does not reach them.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-cards-of-listed-products`` as ``c_cards_of_listed_products``) so a Ray node loads it by
``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

from rayaccel import Device, Host, report_problem
from rayaccel.catalog import resolve_sku
from rayaccel_testplugins.corpus import Healthy, add_import_defect

#: The products the first mutant's author qualified it on.
QUALIFIED = frozenset({"ACME Roadrunner R1"})


class CardsOfListedProducts(Healthy):
    DEFECT = ("discovery keeps the cards whose product is one the plugin was qualified on ({'ACME Roadrunner R1'}): "
              "a newer product's cards are never found")
    KILLED_BY = ("RAC225", "invariant an-unknown-product-is-a-device")

    def readable_device(self, host: Host, path: str, driver: str | None) -> Device | None:
        device = super().readable_device(host, path, driver)
        if device is not None and device.product_name not in QUALIFIED:  # the defect
            report_problem("unsupported-product", f"{path}: {device.product_name!r} is not a qualified product")
            return None
        return device


class CardsOfCataloguedSkus(Healthy):
    DEFECT = ("discovery keeps the cards a SKU of the plugin's catalog matches (the catalog taken for the family's "
              "cards): a card of a product the catalog does not list yet is silently left out")
    KILLED_BY = ("RAC225", "invariant an-unknown-product-is-a-device")

    def readable_device(self, host: Host, path: str, driver: str | None) -> Device | None:
        device = super().readable_device(host, path, driver)
        if device is not None and resolve_sku(self.rayaccel_sku_catalog(), device) is None:  # the defect
            return None
        return device


for _cls in (CardsOfListedProducts, CardsOfCataloguedSkus):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
