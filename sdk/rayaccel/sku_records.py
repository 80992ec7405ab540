"""A plugin's SKU catalog as records: each SKU, how devices match it, and the catalog file's model."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, PrivateAttr

from rayaccel.record_rules import AcceleratorType, Record


class SkuMatch(Record):
    pci_device_ids: list[str] = Field(default_factory=list)
    product_names: list[str] = Field(default_factory=list, description="Exact product names")
    product_patterns: list[str] = Field(default_factory=list, description="Regular expressions (search)")


class SkuRecord(Record):
    """One chip SKU, as data: what the day-zero onboarding path appends to a catalog."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$", description="e.g. 'h100-sxm5-80gb'")
    marketing_name: str
    accelerator_type: AcceleratorType = Field(description="Ray accelerator type for this SKU, e.g. 'H100'")
    architecture: str | None = None
    memory_mib: int | None = Field(None, ge=0)
    interconnect: str | None = None
    match: SkuMatch


class SkuCatalog(Record):
    schema_: Literal["rayaccel-sku-catalog/1"] = Field("rayaccel-sku-catalog/1", alias="schema")
    family: str
    skus: list[SkuRecord]

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    #: The file it was loaded from (set by rayaccel.catalog.load_catalog); `rayaccel sku add` appends there.
    _source_path: str | None = PrivateAttr(default=None)

    @property
    def source_path(self) -> str | None:
        return self._source_path
