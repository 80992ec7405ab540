"""Names a package exports, loaded from their modules on first use (PEP 562).

Every Ray worker of a node imports ``rayaccel`` and ``rayaccel.ray``; importing a package must not import
pydantic, Ray or the inventory for names the worker never touches.

A package declares its public API once, as the ``from module import Name as Name`` lines of its
``if TYPE_CHECKING:`` block (what type checkers and editors read); :func:`lazy_exports` reads the same lines
from the package's source to know where each name lives, and sets ``__all__`` from them.

A class whose module is costly to import (the records: pydantic alone is ~110 ms) can be handed out as a
:class:`DeferredClass` stand-in, so ``from rayaccel import Device`` in a plugin's module imports nothing: the
first use (``Device(...)``, ``Device.model_validate``, subclassing) imports the module, and the stand-in then
forwards everything to the real class. Its instances are the real class's; nothing is validated by the stand-in.
"""

from __future__ import annotations

import ast
import importlib
import sys
import types
from collections.abc import Callable, Collection, MutableMapping
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


class DeferredClass(type):
    """The type of a stand-in for a class not imported yet: calling the stand-in, reading an attribute it does
    not have itself (``model_validate``, ``model_fields``, ``__signature__``) or subclassing it imports the real
    class and hands on to it; ``isinstance`` and ``issubclass`` answer for the real class (False while its
    module is not imported: no instance can exist yet)."""

    _real_module: str
    _real: type

    @classmethod
    def standing_in_for(mcs, module: str, name: str, package: str) -> DeferredClass:
        """The stand-in for ``module.name``, exported by ``package`` (where pickle finds it by name)."""
        stand_in = type.__new__(mcs, name, (), {"__module__": package, "__qualname__": name,
                                                "__doc__": f"Stand-in for {module}.{name}, imported at first use."})
        stand_in._real_module = module
        return stand_in

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> Any:
        # `class MyDevice(Device)` with Device a stand-in: the subclass is made of the real classes instead.
        real_bases = tuple(base.real_class if isinstance(base, DeferredClass) else base for base in bases)
        return types.new_class(name, real_bases, kwargs, lambda body: body.update(namespace))

    @property
    def real_class(cls) -> type:
        """The class this stands in for, imported at the first call and kept (every ``Device(...)`` asks)."""
        real: type | None = cls.__dict__.get("_real")
        if real is None:
            real = getattr(importlib.import_module(cls._real_module), cls.__name__)
            cls._real = real
            cls.__doc__ = real.__doc__  # help() and editors show the real class's documentation from now on
        return real

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.real_class(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name not in _FORWARDED_DUNDERS:
            raise AttributeError(name)  # protocols probed on any class (copy, pickle, typing) stay the stand-in's
        return getattr(cls.real_class, name)

    def __instancecheck__(cls, instance: Any) -> bool:
        return cls._real_module in sys.modules and isinstance(instance, cls.real_class)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return subclass is cls or (cls._real_module in sys.modules and issubclass(subclass, cls.real_class))

    def __dir__(cls) -> list[str]:
        return dir(cls.real_class)

    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        # A stand-in in a pydantic annotation (a plugin's own model with a `Device` field, TypeAdapter(list[Device]))
        # validates as the real class.
        return handler.generate_schema(cls.real_class)

    def __repr__(cls) -> str:
        return f"<class {cls.__module__}.{cls.__qualname__} (stand-in for {cls._real_module}.{cls.__qualname__})>"


#: Dunder attributes a stand-in hands on to its real class: pydantic's class attributes and the signature
#: (``inspect.signature(Device)`` shows the record's fields).
_FORWARDED_DUNDERS = frozenset({"__signature__", "__pydantic_complete__", "__pydantic_fields__",
                                "__pydantic_validator__", "__pydantic_serializer__"})


def lazy_exports(namespace: MutableMapping[str, Any], *, submodules: bool = False,
                 deferred: Collection[str] = ()) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` and ``__dir__``, given its globals; sets its ``__all__``.

    A name is imported from its module once, then kept in ``namespace``. With ``submodules``,
    ``package.<submodule>`` imports it too (as an eager ``__init__`` used to allow). A name from a module in
    ``deferred`` (each a class) is a :class:`DeferredClass` stand-in when first asked for before that module is
    imported, and the real class when asked for after; either way the package keeps handing out the same object.
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
        if module in deferred and module not in sys.modules:
            value: Any = DeferredClass.standing_in_for(module, name, package)
        else:
            value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(where))

    return getattr_, dir_


def import_object(path: str) -> Any:
    """The object a ``module:attr.sub`` path names (a plugin's ``TransportSpec.manager_class``,
    ``CollectiveBackend.group_class``), imported now. Whatever the import raises propagates: callers word it
    for the plugin that declared the path."""
    module_name, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class DeclaredClassError(ValueError):
    """A class a plugin declares by path does not import or is not of the kind it must be; the message names the
    field and the fix, for the caller to prefix with the plugin and the declaration."""


def import_declared_class(path: str, base: type, base_name: str, field: str, hook: str) -> type:
    """The class ``path`` names (a plugin's ``field`` in its ``hook`` answer), imported now and checked to be a
    subclass of ``base`` (``base_name``: where the plugin author finds it). Raises :class:`DeclaredClassError`."""
    try:
        obj = import_object(path)
    except Exception as e:  # whatever the plugin's module raises is the finding
        raise DeclaredClassError(f"{field.replace('_', ' ')} {path} does not import ({type(e).__name__}: {e}); "
                                 f"fix {field} in its {hook}") from None
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise DeclaredClassError(f"{path} is not a subclass of {base_name}; point {field} at the subclass")
    return obj
