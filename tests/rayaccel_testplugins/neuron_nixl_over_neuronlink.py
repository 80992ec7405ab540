"""The Neuron reference plugin with held-out round 11's ``e1`` edit, as a module the CLI loads
(``RAYACCEL_PLUGINS=neuron=rayaccel_testplugins.neuron_nixl_over_neuronlink``): Ray's NIXL, devices ``cpu``, declared
to carry ``neuronlink`` beside EFA. Every other hook is the shipped plugin's, and its fixtures and SKU catalog are the
package's (a module outside the package has no ``fixtures/`` or ``skus.yaml`` beside it)."""

from __future__ import annotations

from pathlib import Path

import rayaccel_neuron
import rayaccel_neuron.plugin
from rayaccel import SkuCatalog, TransportSpec, hookimpl
from rayaccel.catalog import load_catalog
from rayaccel_neuron.plugin import (
    rayaccel_discover,
    rayaccel_family,
    rayaccel_health,
    rayaccel_labels,
    rayaccel_parse_visible,
    rayaccel_resources,
    rayaccel_topology,
)

__all__ = ["rayaccel_discover", "rayaccel_family", "rayaccel_fixture_dirs", "rayaccel_health", "rayaccel_labels",
           "rayaccel_parse_visible", "rayaccel_resources", "rayaccel_sku_catalog", "rayaccel_topology",
           "rayaccel_transports"]

HOME = Path(rayaccel_neuron.__file__).parent


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return [str(HOME / "fixtures")]


@hookimpl
def rayaccel_sku_catalog() -> SkuCatalog:
    return load_catalog(HOME / "skus.yaml")


@hookimpl
def rayaccel_transports() -> list[TransportSpec]:
    (nixl,) = rayaccel_neuron.plugin.rayaccel_transports()  # the module's, not a hook of this one
    return [nixl.model_copy(update={"link_kinds": ["efa", "neuronlink"]})]
