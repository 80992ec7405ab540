"""The plugin manager: loads plugins, refuses bad ones, and calls hooks with each plugin isolated.

Loading: entry points of the ``rayaccel`` group (unless ``RAYACCEL_NO_AUTOLOAD=1``), plus the plugins
named in ``RAYACCEL_PLUGINS``, plus plugins registered explicitly; the names in ``RAYACCEL_DISABLE``
(comma-separated) are blocked in pluggy when the manager is made. A plugin is refused, with a
:class:`~rayaccel.records.Problem`, when it fails to import, implements an unknown hook, lacks a required
hook, declares an invalid family, was written for another major spec version, or collides with another
plugin or with Ray.

Calling (:mod:`rayaccel.hookcalls`): each hook runs for one plugin at a time, through pluggy, in a thread
bounded by a timeout; an exception, a hang or a malformed result becomes a problem attributed to that
plugin and hook, and the caller gets the spec's default (:data:`rayaccel.hookspec.HOOKS`).

One manager serves a process: :func:`default_manager`.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pluggy

from rayaccel import hookspec
from rayaccel import records as rec  # the hooks' result types, as in rayaccel.hookspec
from rayaccel.conventions import conventional_hooks
from rayaccel.errors import PluginError
from rayaccel.hookcalls import MISSING, HookCalls, describe_validation_error
from rayaccel.pluginconfig import (
    DEFAULT_HOOK_TIMEOUT,
    DEFAULT_INVENTORY_TIMEOUT,
    DISABLE_ENV,
    ENTRY_POINT_GROUP,
    HOOK_TIMEOUT_ENV,
    INVENTORY_TIMEOUT_ENV,
    MAX_TIMEOUT,
    NO_AUTOLOAD_ENV,
    PLUGINS_ENV,
    autoload_enabled,
    disabled_plugins,
    entry_points,
    env_plugins,
    hook_timeout,
    inventory_timeout,
)
from rayaccel.raycompat import RAY_ACCELERATOR_RESOURCES, ray_family_for, reserved_resource_problem

if TYPE_CHECKING:
    from rayaccel.host import Host

#: Names importers of this module have used; they live in pluginconfig and hookcalls now.
__all__ = [
    "DEFAULT_HOOK_TIMEOUT", "DEFAULT_INVENTORY_TIMEOUT", "DISABLE_ENV", "ENTRY_POINT_GROUP", "HOOK_TIMEOUT_ENV",
    "INVENTORY_TIMEOUT_ENV", "MAX_DEVICES", "MAX_TIMEOUT", "MISSING", "NO_AUTOLOAD_ENV", "PLUGINS_ENV",
    "LoadedPlugin", "PluginManager", "default_manager", "describe_validation_error", "disabled_plugins",
    "hook_timeout", "inventory_timeout", "reset_default_manager",
]

#: Devices one plugin's discovery may report; more is garbage, and would make every later step slow.
MAX_DEVICES = 4096


@dataclass
class LoadedPlugin:
    name: str
    distribution: str | None
    version: str | None
    module: object
    family: rec.FamilyDeclaration


class _RayaccelPluggy(pluggy.PluginManager):
    """Recognises ``rayaccel_*`` functions as hook implementations even without ``@hookimpl``,
    as pytest does for ``pytest_*``: a forgotten decorator must not silently disable a hook."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith("rayaccel_") and callable(getattr(plugin, name, None)):
            return {"wrapper": False, "hookwrapper": False, "optionalhook": False, "tryfirst": False,
                    "trylast": False, "specname": None}
        return opts


@dataclass
class PluginManager(HookCalls):
    """Typed access to the plugins' hooks, one plugin at a time."""

    autoload: bool | None = None
    timeout: float | None = None
    problems: list[rec.Problem] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._pm = _RayaccelPluggy(hookspec.PROJECT_NAME)
        self._pm.add_hookspecs(hookspec)
        for name in disabled_plugins():  # read once: a plugin changing the env cannot disable the next one
            self._pm.set_blocked(name)
        self._plugins: dict[str, LoadedPlugin] = {}
        self._conventions = {}
        self._deadline = None
        self._hung = set()
        if self.timeout is None:
            self.timeout = hook_timeout()
        if self.autoload is None:
            self.autoload = autoload_enabled()
        with self.deadline():  # loading every plugin is bounded as a whole too, like an inventory
            if self.autoload:
                self.load_entrypoints()
            self.load_from_env()

    # Loading -------------------------------------------------------------------------------------

    def load_entrypoints(self) -> None:
        seen: dict[str, str] = {}
        for ep in entry_points():
            dist = ep.dist.name if ep.dist else None
            version = ep.dist.version if ep.dist else None
            if ep.name in seen:
                self._problem(ep.name, dist, None, "duplicate-name",
                              f"two distributions register a plugin named {ep.name!r}: {seen[ep.name]} and {dist}",
                              f"uninstall one of them, or disable both with {DISABLE_ENV}={ep.name}")
                self.unregister(ep.name)
                continue
            seen[ep.name] = str(dist)
            if self._pm.is_blocked(ep.name):
                self._disabled(ep.name, dist)
                continue
            ok, loaded = self._bounded(ep.load, {}, ep.name, dist, "import")
            if ok:
                self.register(loaded, ep.name, distribution=dist, version=version)

    def load_from_env(self) -> None:
        for name, module_name, attr in env_plugins():
            if name in self._plugins:
                continue

            def load(module_name: str = module_name, attr: str = attr) -> object:
                module: object = importlib.import_module(module_name)
                return getattr(module, attr) if attr else module

            ok, loaded = self._bounded(load, {}, name, None, "import")
            if ok:
                self.register(loaded, name)

    def register(self, plugin: object, name: str | None = None, *, distribution: str | None = None,
                 version: str | None = None) -> bool:
        """Register a plugin module or object. Returns False (and records why) when it is refused."""
        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        if self._pm.is_blocked(name):
            self._disabled(name, distribution)
            return False
        if name in self._plugins:
            raise PluginError(f"a plugin named {name!r} is already registered")
        unknown = sorted(
            attr for attr in dir(plugin)
            if attr.startswith("rayaccel_") and callable(getattr(plugin, attr, None)) and attr not in hookspec.HOOKS
        )
        if unknown:
            self._problem(name, distribution, unknown[0], "unknown-hook",
                          f"implements {', '.join(unknown)}, which the rayaccel {hookspec.SPEC_VERSION} hook spec "
                          "does not define",
                          f"check the spelling against docs/hooks.md; known hooks: {', '.join(sorted(hookspec.HOOKS))}")
            return False
        try:
            self._pm.register(plugin, name=name)
        except (ValueError, pluggy.PluginValidationError) as e:
            self._problem(name, distribution, None, "invalid-plugin", str(e).splitlines()[0],
                          "fix the hook implementation's signature to match docs/hooks.md")
            return False
        missing = [h for h in hookspec.REQUIRED_HOOKS if not self._impls(name, h)]
        if missing:
            self._pm.unregister(name=name)
            self._problem(name, distribution, missing[0], "missing-hook", f"does not implement {', '.join(missing)}",
                          f"every plugin must implement {' and '.join(hookspec.REQUIRED_HOOKS)}")
            return False
        family = self._call(name, distribution, "rayaccel_family", {})
        if family is None or family is MISSING:
            self._pm.unregister(name=name)
            return False
        if not self._compatible(name, distribution, family):
            self._pm.unregister(name=name)
            return False
        self._plugins[name] = LoadedPlugin(name, distribution, version, plugin, family)
        self._conventions[name] = conventional_hooks(plugin, lambda hook: bool(self._impls(name, hook)))
        self._check_collisions(name)
        return name in self._plugins

    def _disabled(self, name: str, dist: str | None) -> None:
        self._problem(name, dist, None, "disabled", f"disabled by {DISABLE_ENV}",
                      f"remove {name!r} from {DISABLE_ENV} to enable it", severity="info")

    def unregister(self, name: str) -> None:
        if self._pm.get_plugin(name) is not None:
            self._pm.unregister(name=name)
        self._plugins.pop(name, None)
        self._conventions.pop(name, None)

    def _compatible(self, name: str, dist: str | None, family: rec.FamilyDeclaration) -> bool:
        want = hookspec.SPEC_VERSION.split(".")[0]
        got = family.spec_version.split(".")[0]
        if got != want:
            self._problem(name, dist, "rayaccel_family", "spec-version",
                          f"written for hook spec {family.spec_version}, but this rayaccel implements "
                          f"{hookspec.SPEC_VERSION} (major versions differ)",
                          f"install a version of the plugin written for spec {want}.x, or a rayaccel whose spec "
                          f"major version is {got}")
            return False
        reserved = reserved_resource_problem(family.resource_name, family.visible_devices_env_var)
        if reserved:
            self._problem(name, dist, "rayaccel_family", "reserved-name", reserved,
                          "choose a resource name of your own (e.g. the family name in upper case) and an env "
                          "var of your own, or use the exact pair Ray uses for that family")
            return False
        return True

    def _check_collisions(self, newcomer: str) -> None:
        """Refuse every party of a collision: which of two claimants is right is the operator's call."""
        new = self._plugins[newcomer].family
        parties = [newcomer]
        clashes = []
        for other in self._plugins.values():
            if other.name == newcomer:
                continue
            fam = other.family
            if fam.visible_devices_env_var == new.visible_devices_env_var:
                clashes.append(f"env var {new.visible_devices_env_var}")
                parties.append(other.name)
            elif fam.resource_name == new.resource_name and not self._may_share(fam, new):
                clashes.append(f"resource name {new.resource_name!r}")
                parties.append(other.name)
        if len(parties) == 1:
            return
        listing = ", ".join(f"{p} ({self._plugins[p].distribution or 'registered directly'})" for p in parties)
        for party in parties:
            dist = self._plugins[party].distribution
            self._problem(party, dist, "rayaccel_family", "collision",
                          f"claims the same {' and '.join(sorted(set(clashes)))} as another plugin; all parties: "
                          f"{listing}",
                          f"keep one: disable the others with {DISABLE_ENV}="
                          + ",".join(p for p in parties if p != party))
            self.unregister(party)

    @staticmethod
    def _may_share(a: rec.FamilyDeclaration, b: rec.FamilyDeclaration) -> bool:
        # Ray itself lets several GPU families share "GPU", each with its own env var (NVIDIA, AMD, Intel).
        return (a.resource_name in RAY_ACCELERATOR_RESOURCES
                and ray_family_for(a.resource_name, a.visible_devices_env_var) is not None
                and ray_family_for(b.resource_name, b.visible_devices_env_var) is not None)

    def _distribution(self, plugin: str) -> str | None:
        return self._plugins[plugin].distribution if plugin in self._plugins else None

    def _family_or_none(self, plugin: str) -> rec.FamilyDeclaration | None:
        return self._plugins[plugin].family if plugin in self._plugins else None

    # Queries -------------------------------------------------------------------------------------

    @property
    def pluggy(self) -> pluggy.PluginManager:
        """The pluggy manager underneath: for tracing (``enable_tracing``) and call monitoring."""
        return self._pm

    def plugin_names(self) -> list[str]:
        return list(self._plugins)

    def plugin(self, name: str) -> LoadedPlugin:
        try:
            return self._plugins[name]
        except KeyError:
            raise PluginError(f"unknown plugin {name!r}; installed: {', '.join(self._plugins) or 'none'} "
                              "(run 'rayaccel plugins')") from None

    def family(self, name: str) -> rec.FamilyDeclaration:
        return self.plugin(name).family

    def implements(self, plugin: str, hook: str) -> bool:
        """The plugin answers the hook: it implements it, or its file layout does (:mod:`rayaccel.conventions`)."""
        return bool(self._impls(plugin, hook)) or hook in self._conventions.get(plugin, {})

    # Typed hook calls: the answer, or the spec's default ------------------------------------------

    def fixture_dirs(self, plugin: str) -> list[str]:
        return list(self.answer(plugin, "rayaccel_fixture_dirs"))

    def discover(self, plugin: str, host: Host, problems: list[rec.Problem]) -> list[rec.Device] | None:
        result: list[rec.Device] | None = self.answer(plugin, "rayaccel_discover", problems, host=host)
        if result is not None and len(result) > MAX_DEVICES:
            self._problem(plugin, self._distribution(plugin), "rayaccel_discover", "too-many-devices",
                          f"reported {len(result)} devices, more than the {MAX_DEVICES} one node can hold; the "
                          f"first {MAX_DEVICES} are kept", "check the vendor tool's output for garbage",
                          sink=problems)
            return list(result[:MAX_DEVICES])
        return result

    def topology(self, plugin: str, host: Host, devices: Sequence[rec.Device],
                 problems: list[rec.Problem]) -> rec.Topology:
        result: rec.Topology = self.answer(plugin, "rayaccel_topology", problems, host=host, devices=list(devices))
        return result

    def health(self, plugin: str, host: Host, devices: Sequence[rec.Device],
               problems: list[rec.Problem]) -> list[rec.HealthReport] | None:
        result: list[rec.HealthReport] | None = self.answer(plugin, "rayaccel_health", problems, host=host,
                                                            devices=list(devices))
        return result

    def metrics(self, plugin: str, host: Host, devices: Sequence[rec.Device],
                problems: list[rec.Problem]) -> list[rec.MetricSample]:
        result: list[rec.MetricSample] = self.answer(plugin, "rayaccel_metrics", problems, host=host,
                                                     devices=list(devices))
        return result

    def resources(self, plugin: str, host: Host, devices: Sequence[rec.Device], topology: rec.Topology,
                  problems: list[rec.Problem]) -> rec.ResourceContribution:
        result: rec.ResourceContribution = self.answer(plugin, "rayaccel_resources", problems, host=host,
                                                       devices=list(devices), topology=topology)
        return result

    def labels(self, plugin: str, host: Host, inventory: rec.FamilyInventory,
               problems: list[rec.Problem]) -> dict[str, str]:
        result: dict[str, str] = self.answer(plugin, "rayaccel_labels", problems, host=host, inventory=inventory)
        return result

    def sku_catalog(self, plugin: str, problems: list[rec.Problem] | None = None) -> rec.SkuCatalog | None:
        result: rec.SkuCatalog | None = self.answer(plugin, "rayaccel_sku_catalog", problems)
        return result

    def transports(self, plugin: str, problems: list[rec.Problem] | None = None) -> list[rec.TransportSpec]:
        result: list[rec.TransportSpec] = self.answer(plugin, "rayaccel_transports", problems)
        return result

    def cloud_hint(self, plugin: str, provider: str, instance_type: str,
                   problems: list[rec.Problem] | None = None) -> rec.CloudHint | None:
        result: rec.CloudHint | None = self.answer(plugin, "rayaccel_cloud_hints", problems, provider=provider,
                                                   instance_type=instance_type)
        return result

    def parse_visible(self, plugin: str, value: str) -> list[str]:
        """Unit ids named by a visible-devices env var value (the plugin's parser, else comma-split)."""
        return list(self.answer(plugin, "rayaccel_parse_visible", value=value))

    def visible_env(self, plugin: str, unit_ids: Sequence[str]) -> dict[str, str]:
        """Env that makes a process see exactly unit_ids (the plugin's, else the env var alone)."""
        family = self.family(plugin)
        result: dict[str, str] = self.answer(plugin, "rayaccel_visible_env", unit_ids=list(unit_ids))
        if family.visible_devices_env_var not in result:  # the spec requires it: the SDK's default instead
            result = hookspec.HOOKS["rayaccel_visible_env"].default(unit_ids=list(unit_ids), family=family)
        return dict(result)


# One manager per process ----------------------------------------------------------------------------

#: The settings a manager is made from: a process that changes them (a test) gets a manager for the new ones.
_SETTINGS = (NO_AUTOLOAD_ENV, PLUGINS_ENV, DISABLE_ENV, HOOK_TIMEOUT_ENV)


@functools.lru_cache(maxsize=8)
def _manager_for(settings: tuple[str | None, ...]) -> PluginManager:
    return PluginManager()


def default_manager() -> PluginManager:
    """The process's plugin manager, made at first use (plugins imported and checked once, not per command).

    It is kept per value of the settings it was made from (RAYACCEL_NO_AUTOLOAD, RAYACCEL_PLUGINS,
    RAYACCEL_DISABLE, RAYACCEL_HOOK_TIMEOUT); :func:`reset_default_manager` forgets it (tests), and
    ``PluginManager()`` makes a private one.
    """
    return _manager_for(tuple(os.environ.get(name) for name in _SETTINGS))


def reset_default_manager() -> None:
    """Forget the default managers: the next :func:`default_manager` loads the plugins afresh."""
    _manager_for.cache_clear()
