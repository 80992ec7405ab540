"""hostile-calls: ACME devices, and the hooks a command calls beyond an inventory end the process that calls them
(``os._exit(7)``): its SKU catalog and its cloud hints (a hook with arguments). What ``rayaccel sku`` and
``rayaccel export --format autoscaler`` must contain as ``inspect`` does (tests/cli/test_cli_isolation.py)."""

from __future__ import annotations

import os

from rayaccel import CloudHint, FamilyDeclaration, hookimpl
from rayaccel_testplugins.broken_base import declare, inherit

inherit(globals())
FAMILY = declare("hostile-calls")
#: The one instance type it lists; asking about it (or any other) ends the process.
INSTANCE_TYPE = "acme.4xlarge"


@hookimpl
def rayaccel_family() -> FamilyDeclaration:
    return FAMILY


@hookimpl
def rayaccel_sku_catalog() -> None:
    os._exit(7)


@hookimpl
def rayaccel_cloud_instance_types() -> list[CloudHint]:
    return [CloudHint(provider="aws", instance_type=INSTANCE_TYPE, family=FAMILY.name, count=4,
                      accelerator_type="ACME-X1")]


@hookimpl
def rayaccel_cloud_hints(provider: str, instance_type: str) -> CloudHint | None:
    os._exit(7)
