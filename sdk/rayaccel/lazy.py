"""Names a package exports, loaded from their modules on first use (PEP 562).

Every Ray worker of a node imports ``rayaccel`` and ``rayaccel.ray``; importing a package must not import
pydantic, Ray or the inventory for names the worker never touches.

A package declares its public API once, as the ``from module import Name as Name`` lines of its
``if TYPE_CHECKING:`` block (what type checkers and editors read); :func:`lazy_exports` reads the same lines
from the package's source to know where each name lives, and sets ``__all__`` from them.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any


def declared_exports(source: str) -> dict[str, str]:
    """Each name the ``if TYPE_CHECKING:`` blocks of a module's source import, mapped to its module."""
    where: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.module and statement.level == 0:
                for alias in statement.names:
                    where[alias.asname or alias.name] = statement.module
    return where


def lazy_exports(namespace: MutableMapping[str, Any], *,
                 submodules: bool = False) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` and ``__dir__``, given its globals; sets its ``__all__``.

    A name is imported from its module once, then kept in ``namespace``. With ``submodules``,
    ``package.<submodule>`` imports it too (as an eager ``__init__`` used to allow).
    """
    package: str = namespace["__name__"]
    where = declared_exports(Path(namespace["__file__"]).read_text(encoding="utf-8"))
    namespace["__all__"] = sorted(where) + [name for name in ("__version__",) if name in namespace]

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
