"""Plugins made from another test plugin: its hooks, registered from a module of their own.

A module that is ACME plus one change (a release, a wired transport, a defect) copies ACME's hooks into its
namespace and defines only what differs; pluggy registers whatever hook functions a module holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any


def copy_hooks(source: ModuleType, namespace: dict[str, Any], *, own: Iterable[str] = ()) -> None:
    """Put ``source``'s hooks into the module whose ``globals()`` is ``namespace``, except the ones it defines
    itself (``own``)."""
    skipped = set(own)
    for name in dir(source):
        if name.startswith("rayaccel_") and name not in skipped:
            namespace[name] = getattr(source, name)
