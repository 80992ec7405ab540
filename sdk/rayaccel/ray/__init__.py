"""The Ray bridge: a node's inventory becomes Ray resources, labels, per-unit ids and health.

How it hooks into Ray, and which Ray internals it relies on, is in ``docs/ray-bridge.md``. Importing this
package imports no Ray; each function imports it when called.
"""

from __future__ import annotations

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
    best_connected_units,
    domain_bundle_selectors,
    find_scale_up_domain,
    scale_up_domain_placement_group,
)
from rayaccel.ray.registry import FamilySpec, family_specs

__all__ = [
    "ALLOW_UNTESTED_ENV",
    "DEFAULT_MONITOR_INTERVAL",
    "FamilySpec",
    "NodeConfig",
    "UnsupportedRayError",
    "add_node",
    "best_connected_units",
    "check_ray",
    "configure_node",
    "connect",
    "domain_bundle_selectors",
    "family_specs",
    "find_scale_up_domain",
    "init",
    "install_driver",
    "node_config",
    "node_configs",
    "scale_up_domain_placement_group",
    "shutdown",
]
