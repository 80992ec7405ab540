"""The Ray bridge: a node's inventory becomes Ray resources, labels, per-unit ids and health.

How it hooks into Ray, and which Ray internals it relies on, is in ``docs/ray-bridge.md``. Importing this
package imports neither Ray nor the inventory: every Ray worker of a node imports ``rayaccel.ray.worker_preload``,
so names load on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rayaccel.support.lazy import lazy_exports

if TYPE_CHECKING:
    from rayaccel.ray.collectives import (
        CollectiveRegistrationError as CollectiveRegistrationError,
        register_collective_backends as register_collective_backends,
    )
    from rayaccel.ray.driver import (
        add_node as add_node,
        configure_node as configure_node,
        connect as connect,
        init as init,
        install_driver as install_driver,
        shutdown as shutdown,
    )
    from rayaccel.ray.internals import (
        ALLOW_UNTESTED_ENV as ALLOW_UNTESTED_ENV,
        UnsupportedRayError as UnsupportedRayError,
        check_ray as check_ray,
    )
    from rayaccel.ray.node import (
        NodeConfig as NodeConfig,
        node_config as node_config,
        node_configs as node_configs,
    )
    from rayaccel.ray.placement import (
        ScaleUpDomain as ScaleUpDomain,
        best_connected as best_connected,
        best_connected_bundles as best_connected_bundles,
        best_connected_units as best_connected_units,
        domain_bundle_selectors as domain_bundle_selectors,
        find_scale_up_domain as find_scale_up_domain,
        pending_reason as pending_reason,
        scale_up_domain_placement_group as scale_up_domain_placement_group,
        scale_up_domains as scale_up_domains,
    )
    from rayaccel.ray.registry import (
        FamilySpec as FamilySpec,
        family_specs as family_specs,
    )
    from rayaccel.ray.transports import (
        TransportRegistrationError as TransportRegistrationError,
        declared_transports as declared_transports,
        register_transports as register_transports,
        transport_between as transport_between,
    )
    from rayaccel.support.monitor_interval import DEFAULT_MONITOR_INTERVAL as DEFAULT_MONITOR_INTERVAL

# Names load on first use (PEP 562): `import rayaccel` costs a few ms, and a Ray worker's preload, a plugin or a
# CLI command imports only the modules it uses. The block above is the one list of public names.
__getattr__, __dir__ = lazy_exports(globals())
