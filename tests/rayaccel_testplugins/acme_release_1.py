"""ACME release 1.0, as the registry sees a vendor's releases (issue 45): the ``acme_wired`` plugin (its own
``ACME_FILE`` transport and ``ACME_GLOO`` backend) under a version. Installed by the tests as
``RAYACCEL_PLUGINS=acme=rayaccel_testplugins.acme_release_1``; release 1.1 is ``acme_release_2``."""

from __future__ import annotations

from rayaccel_testplugins.acme import (  # noqa: F401  (the hooks this module registers)
    rayaccel_discover,
    rayaccel_family,
    rayaccel_fixture_dirs,
    rayaccel_health,
    rayaccel_metrics,
    rayaccel_resources,
    rayaccel_sku_catalog,
    rayaccel_topology,
)
from rayaccel_testplugins.acme_wired import (  # noqa: F401  (the hooks this module registers)
    rayaccel_collective_backends,
    rayaccel_transports,
)

__version__ = "1.0"
