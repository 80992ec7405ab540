"""Register the plugins' collective backends with ``ray.util.collective``, in drivers and in every worker.

Ray's ``register_collective_backend(name, group_cls)`` fills a registry of the process that calls it, and a
group's actors look the backend up in their own: a backend must be registered in the driver and in every actor
before ``create_collective_group``. The bridge does both, with no user call:

- **drivers**: ``rayaccel.ray.init``/``connect``/``install_driver`` call :func:`register_collective_backends`,
  which imports each class declared by ``rayaccel_collective_backends``, checks it and registers it; a bad
  declaration raises :class:`CollectiveRegistrationError` naming the plugin;
- **workers**: a node the SDK starts lists its plugins' declarations in ``RAYACCEL_RAY_COLLECTIVES`` (read from
  the inventory: no discovery, no plugin hook in a worker); the worker preload calls
  :func:`register_in_worker`, which registers them when the worker first imports ``ray.util.collective``
  (importing it, and torch with it, costs about a second: a worker that uses no collective pays nothing), so
  no task can reach Ray's registry before they are in it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import inspect
import json
import logging
import os
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from rayaccel.errors import DeclarationError
from rayaccel.support.lazy import DeclaredClassError, import_declared_class

if TYPE_CHECKING:  # records (pydantic) load on first use: every Ray worker of a node imports this module
    from rayaccel.plugins.manager import PluginManager
    from rayaccel.records import FamilyInventory, IdleFamily

logger = logging.getLogger(__name__)

#: JSON list of :class:`Declared`, set on nodes the SDK starts; workers register them.
COLLECTIVES_ENV = "RAYACCEL_RAY_COLLECTIVES"
#: The backends Ray registers itself (``ray.util.collective.collective``).
RAY_BACKENDS = ("NCCL", "GLOO")
_PACKAGE = "ray.util.collective"


class CollectiveRegistrationError(DeclarationError):
    """A declared collective backend cannot be registered: the message names the plugin and the fix."""


@dataclass(frozen=True)
class Declared:
    """One plugin's collective backend, as a process needs it to register the backend."""

    plugin: str
    name: str
    group_class: str


def declared_backends(manager: PluginManager | None = None, plugins: Sequence[str] | None = None) -> list[Declared]:
    """Every backend the plugins declare (``rayaccel_collective_backends``), in plugin order."""
    from rayaccel import hookspec
    from rayaccel.plugins.manager import default_manager

    manager = manager or default_manager()
    names = list(plugins) if plugins is not None else manager.plugin_names()
    return [Declared(plugin, spec.name, spec.group_class) for plugin in names
            for spec in manager.answer(plugin, hookspec.COLLECTIVE_BACKENDS)]


def node_declarations(families: Iterable[FamilyInventory | IdleFamily]) -> list[Declared]:
    """The backends a node's families declare, read from the inventory (``family.worker``)."""
    return [Declared(family.plugin, spec.name, spec.group_class) for family in families
            for spec in family.worker.collective_backends]


def dump(declared: Iterable[Declared]) -> str:
    return json.dumps([asdict(d) for d in declared], sort_keys=True)


def load(text: str) -> list[Declared]:
    return [Declared(**item) for item in json.loads(text)]


def declaration_problems(declared: Sequence[Declared]) -> list[str]:
    """What is wrong with a set of declarations, before any import: Ray's own names, one name twice."""
    wrong = []
    owner: dict[str, Declared] = {}
    for d in declared:
        if d.name in RAY_BACKENDS:
            wrong.append(f"plugin {d.plugin}: collective backend name {d.name} is Ray's own backend; give yours "
                         "another name (the family's, e.g. ACME_CCL)")
            continue
        first = owner.setdefault(d.name, d)
        if first is not d and first.group_class != d.group_class:
            wrong.append(f"plugin {d.plugin}: collective backend name {d.name} is already declared by plugin "
                         f"{first.plugin} with {first.group_class}; rename one of them")
    return wrong


def group_class(d: Declared) -> type:
    """Import the declared class and check it is a concrete ``BaseGroup`` subclass (imports
    ``ray.util.collective``)."""
    from ray.util.collective.collective_group.base_collective_group import BaseGroup

    try:
        obj = import_declared_class(d.group_class, BaseGroup,
                                    "ray.util.collective.collective_group.base_collective_group.BaseGroup",
                                    "group_class", "rayaccel_collective_backends")
    except DeclaredClassError as e:
        raise CollectiveRegistrationError(f"plugin {d.plugin}: collective backend {d.name}: {e}") from None
    if inspect.isabstract(obj):
        missing = ", ".join(sorted(getattr(obj, "__abstractmethods__", ())))
        raise CollectiveRegistrationError(
            f"plugin {d.plugin}: collective backend {d.name}: {d.group_class} leaves BaseGroup's {missing} "
            "unimplemented; implement them (raise NotImplementedError in one your library lacks)")
    return obj


def register(declared: Sequence[Declared]) -> list[str]:
    """Register the declared backends with Ray in this process (idempotent); return their names. Raises
    :class:`CollectiveRegistrationError` naming the plugin for any bad declaration, before registering any."""
    wrong = declaration_problems(declared)
    if wrong:
        raise CollectiveRegistrationError("; ".join(wrong))
    from ray.util.collective.backend_registry import BackendRegistry, register_collective_backend

    registry = BackendRegistry()  # type: ignore[no-untyped-call]  # Ray's per-process singleton
    classes: dict[str, tuple[Declared, type]] = {}
    for d in declared:
        classes.setdefault(d.name, (d, group_class(d)))
    for name, (d, cls) in classes.items():
        if registry.is_registered(name):
            known = registry.get(name)
            if known is not cls:
                raise CollectiveRegistrationError(
                    f"plugin {d.plugin}: collective backend name {name} is already registered in this process "
                    f"with {known.__module__}:{known.__qualname__}; rename the backend")
            continue
        register_collective_backend(name, cls)
    return list(classes)


def register_collective_backends(manager: PluginManager | None = None,
                                 plugins: Sequence[str] | None = None) -> list[str]:
    """Register every collective backend the plugins declare in this driver; return their names (none: Ray's
    ``ray.util.collective`` is not even imported)."""
    declared = declared_backends(manager, plugins)
    return register(declared) if declared else []


class _RegisterOnImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Registers the declarations right after ``ray.util.collective`` executes (before its importer gets it)."""

    def __init__(self, declared: list[Declared]) -> None:
        self.declared = declared
        self.loader: Any = None

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != _PACKAGE or self.loader is not None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        self.loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self.loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        _unhook(self)
        _register_loudly(self.declared)


_hook_lock = threading.Lock()


def _unhook(finder: _RegisterOnImport) -> None:
    with _hook_lock:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)


def _register_loudly(declared: list[Declared]) -> None:
    try:
        register(declared)
    except Exception as e:  # a worker must still run: say why the backends are missing, loudly, in its log
        message = f"rayaccel: collective backends NOT registered in this worker: {e}"
        logger.error(message)
        print(message, file=sys.stderr, flush=True)


def register_in_worker(environ: dict[str, str] | None = None) -> list[str]:
    """Register the node's declared backends in this worker (``RAYACCEL_RAY_COLLECTIVES``): now if
    ``ray.util.collective`` is loaded, else when it is first imported. Returns the names declared."""
    text = (environ if environ is not None else os.environ).get(COLLECTIVES_ENV) or "[]"
    declared = load(text)
    if not declared:
        return []
    if _PACKAGE in sys.modules:
        _register_loudly(declared)
    else:
        with _hook_lock:
            sys.meta_path.insert(0, _RegisterOnImport(declared))
    return [d.name for d in declared]
