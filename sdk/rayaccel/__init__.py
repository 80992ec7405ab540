"""rayaccel: the vendor device-plugin SDK for Ray.

A vendor implements the hooks in :mod:`rayaccel.hookspec` and registers the module under the ``rayaccel``
entry-point group; the SDK turns what the plugin finds into Ray resources, labels and health. Importing
this package imports no Ray, torch or vendor library: those load where they are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rayaccel.lazy import lazy_exports

if TYPE_CHECKING:
    from rayaccel.bounded import BoundedTimeout, run_bounded
    from rayaccel.errors import CatalogError, FixtureError, HookError, PluginError, RayaccelError
    from rayaccel.hookspec import SPEC_VERSION, hookimpl
    from rayaccel.host import (
        CommandNotFound,
        CommandResult,
        CommandTimeout,
        Host,
        HostError,
        HttpResponse,
        HttpUnavailable,
        LibraryAdapter,
        LibraryUnavailable,
        RealHost,
    )
    from rayaccel.records import (
        Affinity,
        CloudHint,
        Device,
        Domain,
        FamilyDeclaration,
        FamilyInventory,
        HealthReason,
        HealthReport,
        Link,
        MetricSample,
        NodeInventory,
        Partition,
        Problem,
        QuantityRule,
        ResourceContribution,
        SkuCatalog,
        SkuMatch,
        SkuRecord,
        SupportInfo,
        Topology,
        TransportSpec,
    )
    from rayaccel.reporting import report_problem

# Names load on first use (PEP 562): `import rayaccel` costs a few ms, and a Ray worker's preload,
# a plugin or a CLI command imports only the modules it uses.
_EXPORTS = {
    "rayaccel.bounded": ("BoundedTimeout", "run_bounded"),
    "rayaccel.errors": ("CatalogError", "FixtureError", "HookError", "PluginError", "RayaccelError"),
    "rayaccel.hookspec": ("SPEC_VERSION", "hookimpl"),
    "rayaccel.host": (
        "CommandNotFound", "CommandResult", "CommandTimeout", "Host", "HostError", "HttpResponse",
        "HttpUnavailable", "LibraryAdapter", "LibraryUnavailable", "RealHost"),
    "rayaccel.records": (
        "Affinity", "CloudHint", "Device", "Domain", "FamilyDeclaration", "FamilyInventory", "HealthReason",
        "HealthReport", "Link", "MetricSample", "NodeInventory", "Partition", "Problem", "QuantityRule",
        "ResourceContribution", "SkuCatalog", "SkuMatch", "SkuRecord", "SupportInfo", "Topology", "TransportSpec"),
    "rayaccel.reporting": ("report_problem",),
}

__version__ = "0.1.0"

__all__ = [
    "SPEC_VERSION",
    "Affinity",
    "BoundedTimeout",
    "CatalogError",
    "CloudHint",
    "CommandNotFound",
    "CommandResult",
    "CommandTimeout",
    "Device",
    "Domain",
    "FamilyDeclaration",
    "FamilyInventory",
    "FixtureError",
    "HealthReason",
    "HealthReport",
    "HookError",
    "Host",
    "HostError",
    "HttpResponse",
    "HttpUnavailable",
    "LibraryAdapter",
    "LibraryUnavailable",
    "Link",
    "MetricSample",
    "NodeInventory",
    "Partition",
    "PluginError",
    "Problem",
    "QuantityRule",
    "RayaccelError",
    "RealHost",
    "ResourceContribution",
    "SkuCatalog",
    "SkuMatch",
    "SkuRecord",
    "SupportInfo",
    "Topology",
    "TransportSpec",
    "__version__",
    "hookimpl",
    "report_problem",
    "run_bounded",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), submodules=True)
