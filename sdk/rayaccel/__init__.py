"""rayaccel: the vendor device-plugin SDK for Ray.

A vendor implements the hooks in :mod:`rayaccel.hookspec` and registers the module under the ``rayaccel``
entry-point group; the SDK turns what the plugin finds into Ray resources, labels and health. Importing
this package imports no Ray, torch or vendor library: those load where they are used.
"""

from __future__ import annotations

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

__version__ = "0.1.0"

__all__ = [
    "SPEC_VERSION",
    "Affinity",
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
]
