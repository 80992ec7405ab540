"""ACME release 1.0, as the registry sees a vendor's releases (issue 45): the ``acme_wired`` plugin (its own
``ACME_FILE`` transport and ``ACME_GLOO`` backend) under a version. Installed by the tests as
``RAYACCEL_PLUGINS=acme=rayaccel_testplugins.acme_release_1``; release 1.1 is ``acme_release_2``."""

from __future__ import annotations

from rayaccel_testplugins import acme_wired
from rayaccel_testplugins.derived import copy_hooks

copy_hooks(acme_wired, globals())  # ACME's hooks and its transport and backend

__version__ = "1.0"
