"""A plugin's cloud instance types as data: ``instance-types.yaml`` beside its module, beside ``skus.yaml``.

Every plugin that helps an autoscaler scale from zero keeps the same table (provider -> instance type -> units of
its resource and Ray accelerator type) and answers two hooks from it. The SDK owns both: a plugin that ships the
file (validated by the shipped schema ``instance-types.schema.json``) and implements neither hook gets
``rayaccel_cloud_hints`` and ``rayaccel_cloud_instance_types`` answered from it
(:mod:`rayaccel.plugins.conventions`), so the two always agree.

A name is looked up without regard to case or surrounding blanks (``P5.48XLARGE`` is ``p5.48xlarge``); a hint
names the instance type as it was asked for, and the listing names each as the table writes it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import Field

from rayaccel.errors import PluginError
from rayaccel.files.checked import load_checked
from rayaccel.records import CloudHint, Record
from rayaccel.schemas import validate_document

INSTANCE_TYPES_SCHEMA_ID = "rayaccel-instance-types/1"
Provider = Literal["aws", "gcp", "azure", "oci", "other"]


class InstanceType(Record):
    """What one instance type carries of the family."""

    count: float = Field(ge=0, description="Units of the family's resource on one instance")
    accelerator_type: str | None = Field(None, description="Ray's accelerator type, as discovery reports it")
    extra_resources: dict[str, float] = Field(default_factory=dict)


class InstanceTypeTable(Record):
    """A plugin's instance types, by provider, as the providers name them."""

    schema_: Literal["rayaccel-instance-types/1"] = Field(alias="schema")
    family: str = Field(description="The family the hints are of (the plugin's rayaccel_family name)")
    instance_types: dict[Provider, dict[str, InstanceType]]

    model_config = Record.model_config | {"populate_by_name": True}

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        """The hint for one instance type (None when the table does not list it)."""
        by_name = self._lookup().get((provider.strip().lower(), instance_type.strip().lower()))
        if by_name is None:
            return None
        listed_provider, entry = by_name
        return CloudHint(provider=listed_provider, instance_type=instance_type, family=self.family,
                         count=entry.count, accelerator_type=entry.accelerator_type,
                         extra_resources=entry.extra_resources)

    def hints(self) -> list[CloudHint]:
        """Every instance type of the table, as :meth:`hint` answers for it, in the table's order."""
        return [CloudHint(provider=provider, instance_type=name, family=self.family, count=entry.count,
                          accelerator_type=entry.accelerator_type, extra_resources=entry.extra_resources)
                for provider, types in self.instance_types.items() for name, entry in types.items()]

    def _lookup(self) -> dict[tuple[str, str], tuple[Provider, InstanceType]]:
        return {(provider, name.strip().lower()): (provider, entry)
                for provider, types in self.instance_types.items() for name, entry in types.items()}


@cache
def load_instance_types(path: Path) -> InstanceTypeTable:
    """The table in ``path``, checked against the schema and the model (a clear PluginError naming the file
    otherwise); read once per process."""
    data = load_checked(path, "instance-type table", "instance-types", PluginError)
    return validate_document(data, InstanceTypeTable, schema="instance-types", what="instance-type table",
                             origin=str(path), error=PluginError, schema_checked=True)


def cloud_hint(path: Path, provider: str, instance_type: str) -> CloudHint | None:
    """``rayaccel_cloud_hints`` answered from the table in ``path``."""
    return load_instance_types(path).hint(provider, instance_type)


def instance_type_hints(path: Path) -> list[CloudHint]:
    """``rayaccel_cloud_instance_types`` answered from the table in ``path``."""
    return load_instance_types(path).hints()
