"""The ACME example plugin with ``import ray`` at module level, as a transport module copied from the template's
example once had: Ray's own import (RAY_CLIENT_MODE, warning filters, excepthook, its time) is not the plugin's."""

from __future__ import annotations

import ray  # noqa: F401

from rayaccel_testplugins.acme import (  # noqa: F401
    rayaccel_discover,
    rayaccel_family,
    rayaccel_fixture_dirs,
    rayaccel_health,
    rayaccel_metrics,
    rayaccel_resources,
    rayaccel_sku_catalog,
    rayaccel_topology,
)
