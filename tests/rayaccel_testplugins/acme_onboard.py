"""ACME with day-zero onboarding: the ACME test plugin plus ``rayaccel_fixture_for_sku``.

Its catalog and fixtures are found beside this file, so a test copies the file, ``acme-skus.yaml`` and
``fixtures/`` into a temporary directory and runs ``rayaccel sku add`` against the copy: the repository's
own catalog is never written.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from rayaccel import SkuCatalog, SkuRecord, hookimpl
from rayaccel.catalog import load_catalog
from rayaccel_testplugins.acme import (  # noqa: F401  (hooks re-exported: they read only the host)
    SYSFS,
    rayaccel_discover,
    rayaccel_family,
    rayaccel_health,
    rayaccel_metrics,
    rayaccel_resources,
    rayaccel_topology,
)

HERE = Path(__file__).parent


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return [str(HERE / "acme_fixtures")]


@hookimpl
def rayaccel_sku_catalog() -> SkuCatalog:
    return load_catalog(HERE / "acme-skus.yaml")


@hookimpl
def rayaccel_fixture_for_sku(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    """Every card's sysfs ``product`` (and ``memory_mib``) becomes the SKU's."""
    data = copy.deepcopy(fixture)
    files: dict[str, str] = data["host"]["files"]
    name = sku.match.product_names[0] if sku.match.product_names else sku.marketing_name
    for path in list(files):
        if not path.startswith(f"{SYSFS}/acme"):
            continue
        if path.endswith("/product"):
            files[path] = name + "\n"
        elif path.endswith("/memory_mib") and sku.memory_mib is not None:
            files[path] = f"{sku.memory_mib}\n"
    return data
