"""Names a package exports, loaded from their modules on first use (PEP 562).

Every Ray worker of a node imports ``rayaccel`` and ``rayaccel.ray``; importing a package must not import
pydantic, Ray or the inventory for names the worker never touches.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, tuple[str, ...]], namespace: MutableMapping[str, Any], *,
                 submodules: bool = False) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` and ``__dir__``: ``exports`` maps each module to the names it gives
    the package; a name is imported once, then kept in ``namespace`` (the package's globals). With
    ``submodules``, ``package.<submodule>`` imports it too (as an eager ``__init__`` used to allow)."""
    where = {name: module for module, names in exports.items() for name in names}

    def getattr_(name: str) -> Any:
        module = where.get(name)
        if module is None:
            if submodules:
                try:
                    return importlib.import_module(f"{package}.{name}")
                except ModuleNotFoundError as e:
                    if e.name != f"{package}.{name}":
                        raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(where))

    return getattr_, dir_
