"""rayaccel: the vendor device-plugin SDK for Ray.

A vendor implements the hooks in :mod:`rayaccel.hookspec` and registers the module under the ``rayaccel``
entry-point group; the SDK turns what the plugin finds into Ray resources, labels and health. Importing
this package imports no Ray, torch or vendor library: those load where they are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rayaccel.support.lazy import lazy_exports

if TYPE_CHECKING:
    from rayaccel.cpus import (
        CpuListError as CpuListError,
        canonical_cpu_list as canonical_cpu_list,
        cpus_from_mask as cpus_from_mask,
        cpus_from_mask_words as cpus_from_mask_words,
        format_cpu_list as format_cpu_list,
        parse_cpu_list as parse_cpu_list,
    )
    from rayaccel.errors import (
        CatalogError as CatalogError,
        FixtureError as FixtureError,
        HookError as HookError,
        PluginError as PluginError,
        RayaccelError as RayaccelError,
    )
    from rayaccel.hookspec import (
        SPEC_VERSION as SPEC_VERSION,
        hookimpl as hookimpl,
    )
    from rayaccel.hosts.seam import (
        CommandNotFound as CommandNotFound,
        CommandResult as CommandResult,
        CommandTimeout as CommandTimeout,
        Host as Host,
        HostError as HostError,
        HttpResponse as HttpResponse,
        HttpUnavailable as HttpUnavailable,
        LibraryAdapter as LibraryAdapter,
        LibraryUnavailable as LibraryUnavailable,
        OutputTooLarge as OutputTooLarge,
        RealHost as RealHost,
    )
    from rayaccel.labels import (
        to_label_value as to_label_value,
    )
    from rayaccel.records import (
        Affinity as Affinity,
        CloudHint as CloudHint,
        CollectiveBackend as CollectiveBackend,
        Device as Device,
        Domain as Domain,
        FamilyDeclaration as FamilyDeclaration,
        FamilyInventory as FamilyInventory,
        HealthReason as HealthReason,
        HealthReport as HealthReport,
        Link as Link,
        MetricSample as MetricSample,
        NodeInventory as NodeInventory,
        Partition as Partition,
        PartitionCapacity as PartitionCapacity,
        PerformanceBaseline as PerformanceBaseline,
        Problem as Problem,
        QuantityRule as QuantityRule,
        ReasonCode as ReasonCode,
        ResourceContribution as ResourceContribution,
        SchedulerNames as SchedulerNames,
        SkuCatalog as SkuCatalog,
        SkuMatch as SkuMatch,
        SkuRecord as SkuRecord,
        SupportInfo as SupportInfo,
        Topology as Topology,
        TransportSpec as TransportSpec,
    )
    from rayaccel.reporting import (
        collect_problems as collect_problems,
        malformed as malformed,
        plain_int as plain_int,
        record_or_report as record_or_report,
        report_problem as report_problem,
        shown as shown,
        vendor_float as vendor_float,
        vendor_int as vendor_int,
    )
    from rayaccel.support.bounded import (
        BoundedTimeout as BoundedTimeout,
        run_bounded as run_bounded,
        simulated_hang as simulated_hang,
    )
    from rayaccel.support.raycompat import (
        RAY_BUILTIN_FAMILIES as RAY_BUILTIN_FAMILIES,
    )
    from rayaccel.transports.shared_memory import (
        SharedMemoryTransport as SharedMemoryTransport,
    )
    from rayaccel.vocabulary import (
        DEVICE_FILE as DEVICE_FILE,
        HEALTH_ORDER as HEALTH_ORDER,
        ID_FALLBACK as ID_FALLBACK,
        HealthState as HealthState,
    )

__version__ = "0.1.0"

# Names load on first use (PEP 562): `import rayaccel` costs a few ms, and a Ray worker's preload, a plugin or a
# CLI command imports only the modules it uses. The block above is the one list of public names. A record class
# asked for before rayaccel.records is imported is a stand-in that imports it (and pydantic) at its first use, so a
# plugin's `from rayaccel import Device, hookimpl` loads no pydantic (rayaccel.support.lazy.DeferredClass).
__getattr__, __dir__ = lazy_exports(globals(), submodules=True, deferred=("rayaccel.records",))
