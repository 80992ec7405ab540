"""The Ray bridge: a node's inventory becomes Ray resources, labels, per-unit ids and health.

How it hooks into Ray, and which Ray internals it relies on, is in ``docs/ray-bridge.md``. Importing this
package imports neither Ray nor the inventory: every Ray worker of a node imports ``rayaccel.ray.worker``,
so names load on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rayaccel.lazy import lazy_exports

if TYPE_CHECKING:
    from rayaccel.ray.compat import ALLOW_UNTESTED_ENV, UnsupportedRayError, check_ray
    from rayaccel.ray.driver import (
        DEFAULT_MONITOR_INTERVAL,
        add_node,
        configure_node,
        connect,
        init,
        install_driver,
        node_configs,
        shutdown,
    )
    from rayaccel.ray.node import NodeConfig, node_config
    from rayaccel.ray.placement import (
        ScaleUpDomain,
        best_connected_units,
        domain_bundle_selectors,
        find_scale_up_domain,
        scale_up_domain_placement_group,
        scale_up_domains,
    )
    from rayaccel.ray.registry import FamilySpec, family_specs
    from rayaccel.ray.transports import (
        TransportRegistrationError,
        declared_transports,
        register_transports,
        transport_between,
    )

_EXPORTS = {
    "rayaccel.ray.compat": ("ALLOW_UNTESTED_ENV", "UnsupportedRayError", "check_ray"),
    "rayaccel.ray.driver": ("DEFAULT_MONITOR_INTERVAL", "add_node", "configure_node", "connect", "init",
                            "install_driver", "node_configs", "shutdown"),
    "rayaccel.ray.node": ("NodeConfig", "node_config"),
    "rayaccel.ray.placement": ("ScaleUpDomain", "best_connected_units", "domain_bundle_selectors",
                               "find_scale_up_domain", "scale_up_domain_placement_group", "scale_up_domains"),
    "rayaccel.ray.registry": ("FamilySpec", "family_specs"),
    "rayaccel.ray.transports": ("TransportRegistrationError", "declared_transports", "register_transports",
                                "transport_between"),
}

__all__ = [
    "ALLOW_UNTESTED_ENV",
    "DEFAULT_MONITOR_INTERVAL",
    "FamilySpec",
    "NodeConfig",
    "ScaleUpDomain",
    "TransportRegistrationError",
    "UnsupportedRayError",
    "add_node",
    "best_connected_units",
    "check_ray",
    "configure_node",
    "connect",
    "declared_transports",
    "domain_bundle_selectors",
    "family_specs",
    "find_scale_up_domain",
    "init",
    "install_driver",
    "node_config",
    "node_configs",
    "register_transports",
    "scale_up_domain_placement_group",
    "scale_up_domains",
    "shutdown",
    "transport_between",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
