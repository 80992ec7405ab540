"""The environment that decides which plugins load and how long their hooks may take.

Read in one place, validated once, so the in-process manager and the worker processes of
:mod:`rayaccel.isolation.pool` agree on it.
"""

from __future__ import annotations

import importlib.metadata
import math
import os

from rayaccel.errors import PluginError
from rayaccel.hookspec import PROJECT_NAME

ENTRY_POINT_GROUP = PROJECT_NAME
DISABLE_ENV = "RAYACCEL_DISABLE"
NO_AUTOLOAD_ENV = "RAYACCEL_NO_AUTOLOAD"
#: Extra plugins by import path, ``name=module[:attr],...``: registered like entry points (tests, and
#: plugins not yet packaged). Ray nodes started by the SDK pass it on to every process on the node.
PLUGINS_ENV = "RAYACCEL_PLUGINS"
HOOK_TIMEOUT_ENV = "RAYACCEL_HOOK_TIMEOUT"
DEFAULT_HOOK_TIMEOUT = 10.0
INVENTORY_TIMEOUT_ENV = "RAYACCEL_INVENTORY_TIMEOUT"
DEFAULT_INVENTORY_TIMEOUT = 30.0
#: Largest value either timeout may be set to: a node start or a health poll must end.
MAX_TIMEOUT = 600.0


def _seconds_from_env(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT):
        raise PluginError(f"{name}={raw[:40]!r} is not a number of seconds > 0 and <= {MAX_TIMEOUT:g}; "
                          f"set it to one (e.g. {name}={default:g}) or unset it")
    return value


def hook_timeout() -> float:
    """Seconds one hook call may take (RAYACCEL_HOOK_TIMEOUT, validated)."""
    return _seconds_from_env(HOOK_TIMEOUT_ENV, DEFAULT_HOOK_TIMEOUT)


def inventory_timeout() -> float:
    """Seconds all hook calls of one inventory may take together (RAYACCEL_INVENTORY_TIMEOUT, validated)."""
    return _seconds_from_env(INVENTORY_TIMEOUT_ENV, DEFAULT_INVENTORY_TIMEOUT)


def autoload_enabled() -> bool:
    """Whether installed entry points load (unless RAYACCEL_NO_AUTOLOAD=1)."""
    return os.environ.get(NO_AUTOLOAD_ENV, "") not in ("1", "true", "yes")


def disabled_plugins() -> set[str]:
    """The plugin names in RAYACCEL_DISABLE (comma-separated)."""
    return {name.strip() for name in os.environ.get(DISABLE_ENV, "").split(",") if name.strip()}


def env_plugins() -> list[tuple[str, str, str]]:
    """The plugins named in RAYACCEL_PLUGINS, as (name, module, attribute or "")."""
    found = []
    for item in filter(None, (part.strip() for part in os.environ.get(PLUGINS_ENV, "").split(","))):
        name, sep, target = item.partition("=")
        if not sep or not name or not target:
            raise PluginError(f"{PLUGINS_ENV}: {item!r} is not name=module[:attr]")
        module, _, attr = target.partition(":")
        found.append((name, module, attr))
    return found


def entry_points() -> list[importlib.metadata.EntryPoint]:
    """The installed plugins' entry points, by name."""
    return sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
