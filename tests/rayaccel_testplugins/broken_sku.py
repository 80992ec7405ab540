"""broken-sku: ships a SKU catalog that lacks the card its own fixture records; fails RAC205."""

from __future__ import annotations

from rayaccel import SkuCatalog, SkuMatch, SkuRecord, hookimpl
from rayaccel_testplugins.broken_base import broken_plugin

PLUGIN = "broken-sku"
FAMILY = broken_plugin(globals(), PLUGIN, keep=("rayaccel_sku_catalog",))


@hookimpl
def rayaccel_sku_catalog() -> SkuCatalog:
    # The defect: only the next generation is listed, not the R1 the machine has.
    return SkuCatalog(family=PLUGIN, skus=[SkuRecord(id="acme-r2", marketing_name="ACME Roadrunner R2",
                                                     accelerator_type="R2",
                                                     match=SkuMatch(product_names=["ACME Roadrunner R2"]))])
