"""The ACME example plugin with ``import ray`` at module level, as a transport module copied from the template's
example once had: Ray's own import (RAY_CLIENT_MODE, warning filters, excepthook, its time) is not the plugin's."""

from __future__ import annotations

import ray  # noqa: F401

from rayaccel_testplugins import acme
from rayaccel_testplugins.derived import copy_hooks

copy_hooks(acme, globals())
