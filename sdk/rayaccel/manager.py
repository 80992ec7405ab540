"""The plugin manager: loads plugins, refuses bad ones, and calls hooks with each plugin isolated.

Loading: entry points of the ``rayaccel`` group (unless ``RAYACCEL_NO_AUTOLOAD=1``), minus the names
in ``RAYACCEL_DISABLE`` (comma-separated), plus plugins registered explicitly. A plugin is refused,
with a :class:`~rayaccel.records.Problem`, when it fails to import, implements an unknown hook, lacks a
required hook, declares an invalid family, was written for another major spec version, or collides with
another plugin or with Ray.

Calling: each hook runs for one plugin at a time in a worker thread bounded by a timeout
(``RAYACCEL_HOOK_TIMEOUT`` seconds, default 10). An exception, a hang or a malformed result becomes a
problem attributed to that plugin and hook; the caller gets ``None`` and carries on with the others.
Inside :meth:`PluginManager.deadline` (a whole inventory) all calls share one deadline
(``RAYACCEL_INVENTORY_TIMEOUT``, default 30 s), and a plugin whose hook hung is not called again. What a
hook prints, and any change it makes to ``os.environ``, is kept from the caller (:mod:`rayaccel.containment`).
"""

from __future__ import annotations

import importlib.metadata
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import pluggy
from pydantic import TypeAdapter, ValidationError

from rayaccel import containment, hookspec
from rayaccel.errors import HookError, PluginError
from rayaccel.raycompat import RAY_ACCELERATOR_RESOURCES, ray_family_for, reserved_resource_problem
from rayaccel.records import (
    CloudHint,
    Device,
    FamilyDeclaration,
    FamilyInventory,
    HealthReport,
    MetricSample,
    Problem,
    ResourceContribution,
    SkuCatalog,
    Topology,
    TransportSpec,
)
from rayaccel.reporting import ReportSink, collect_problems

if TYPE_CHECKING:
    from rayaccel.host import Host

T = TypeVar("T")

ENTRY_POINT_GROUP = hookspec.PROJECT_NAME
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
#: Devices one plugin's discovery may report; more is garbage, and would make every later step slow.
MAX_DEVICES = 4096

#: What each hook's result is validated into.
HOOK_RESULTS: dict[str, Any] = {
    "rayaccel_family": FamilyDeclaration,
    "rayaccel_fixture_dirs": list[str],
    "rayaccel_discover": list[Device],
    "rayaccel_topology": Topology,
    "rayaccel_labels": dict[str, str],
    "rayaccel_resources": ResourceContribution,
    "rayaccel_parse_visible": list[str] | None,
    "rayaccel_visible_env": dict[str, str],
    "rayaccel_transports": list[TransportSpec],
    "rayaccel_health": list[HealthReport],
    "rayaccel_metrics": list[MetricSample],
    "rayaccel_sku_catalog": SkuCatalog,
    "rayaccel_cloud_hints": CloudHint | None,
    "rayaccel_fixture_for_sku": dict[str, Any],
}
_ADAPTERS = {hook: TypeAdapter(kind) for hook, kind in HOOK_RESULTS.items()}

_FIX_FOR_HOOK = {
    "rayaccel_family": "return rayaccel.FamilyDeclaration(...)",
    "rayaccel_discover": "return a list of rayaccel.Device records",
    "rayaccel_topology": "return rayaccel.Topology(links=[...], affinities=[...], domains=[...])",
    "rayaccel_health": "return a list of rayaccel.HealthReport records",
    "rayaccel_metrics": "return a list of rayaccel.MetricSample records with standard names and units",
    "rayaccel_sku_catalog": "return rayaccel.catalog.load_catalog(<path of your catalog file>)",
}


class _Missing:
    """The plugin does not implement the hook (distinct from a hook that returned None)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


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


def disabled_plugins() -> set[str]:
    return {name.strip() for name in os.environ.get(DISABLE_ENV, "").split(",") if name.strip()}


def describe_validation_error(e: ValidationError) -> str:
    parts = []
    for err in e.errors()[:3]:
        loc = ".".join(str(p) for p in err["loc"]) or "(the result itself)"
        parts.append(f"field {loc}: {err['msg']}")
    more = f" (and {e.error_count() - 3} more)" if e.error_count() > 3 else ""
    return "; ".join(parts) + more


@dataclass
class LoadedPlugin:
    name: str
    distribution: str | None
    version: str | None
    module: object
    family: FamilyDeclaration


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
class PluginManager:
    """Typed access to the plugins' hooks, one plugin at a time."""

    autoload: bool | None = None
    timeout: float | None = None
    problems: list[Problem] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._pm = _RayaccelPluggy(hookspec.PROJECT_NAME)
        self._pm.add_hookspecs(hookspec)
        self._plugins: dict[str, LoadedPlugin] = {}
        self._deadline: float | None = None
        self._hung: set[str] = set()
        if self.timeout is None:
            self.timeout = hook_timeout()
        if self.autoload is None:
            self.autoload = os.environ.get(NO_AUTOLOAD_ENV, "") not in ("1", "true", "yes")
        with self.deadline():  # loading every plugin is bounded as a whole too, like an inventory
            if self.autoload:
                self.load_entrypoints()
            self.load_from_env()

    # Loading -------------------------------------------------------------------------------------

    def load_entrypoints(self) -> None:
        blocked = disabled_plugins()
        entry_points = sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
        seen: dict[str, str] = {}
        for ep in entry_points:
            dist = ep.dist.name if ep.dist else None
            version = ep.dist.version if ep.dist else None
            if ep.name in seen:
                self._problem(ep.name, dist, None, "duplicate-name",
                              f"two distributions register a plugin named {ep.name!r}: {seen[ep.name]} and {dist}",
                              f"uninstall one of them, or disable both with {DISABLE_ENV}={ep.name}")
                self.unregister(ep.name)
                continue
            seen[ep.name] = str(dist)
            if ep.name in blocked:
                self._problem(ep.name, dist, None, "disabled", f"disabled by {DISABLE_ENV}",
                              f"remove {ep.name!r} from {DISABLE_ENV} to enable it", severity="info")
                continue
            ok, loaded = self._bounded(ep.load, {}, ep.name, dist, "import")
            if ok:
                self.register(loaded, ep.name, distribution=dist, version=version)

    def load_from_env(self) -> None:
        import importlib

        for item in filter(None, (part.strip() for part in os.environ.get(PLUGINS_ENV, "").split(","))):
            name, sep, target = item.partition("=")
            if not sep or not name or not target:
                raise PluginError(f"{PLUGINS_ENV}: {item!r} is not name=module[:attr]")
            if name in self._plugins:
                continue
            module_name, _, attr = target.partition(":")

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
        if name in disabled_plugins():
            self._problem(name, distribution, None, "disabled", f"disabled by {DISABLE_ENV}",
                          f"remove {name!r} from {DISABLE_ENV} to enable it", severity="info")
            return False
        if name in self._plugins:
            raise PluginError(f"a plugin named {name!r} is already registered")
        unknown = sorted(
            attr for attr in dir(plugin)
            if attr.startswith("rayaccel_") and callable(getattr(plugin, attr, None)) and attr not in HOOK_RESULTS
        )
        if unknown:
            self._problem(name, distribution, unknown[0], "unknown-hook",
                          f"implements {', '.join(unknown)}, which the rayaccel {hookspec.SPEC_VERSION} hook spec "
                          "does not define",
                          f"check the spelling against docs/hooks.md; known hooks: {', '.join(sorted(HOOK_RESULTS))}")
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
                          "every plugin must implement rayaccel_family and rayaccel_discover")
            return False
        family = self._call(name, distribution, "rayaccel_family", {})
        if family is None or family is MISSING:
            self._pm.unregister(name=name)
            return False
        if not self._compatible(name, distribution, family):
            self._pm.unregister(name=name)
            return False
        self._plugins[name] = LoadedPlugin(name, distribution, version, plugin, family)
        self._check_collisions(name)
        return name in self._plugins

    def unregister(self, name: str) -> None:
        if self._pm.get_plugin(name) is not None:
            self._pm.unregister(name=name)
        self._plugins.pop(name, None)

    def _compatible(self, name: str, dist: str | None, family: FamilyDeclaration) -> bool:
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
    def _may_share(a: FamilyDeclaration, b: FamilyDeclaration) -> bool:
        # Ray itself lets several GPU families share "GPU", each with its own env var (NVIDIA, AMD, Intel).
        return (a.resource_name in RAY_ACCELERATOR_RESOURCES
                and ray_family_for(a.resource_name, a.visible_devices_env_var) is not None
                and ray_family_for(b.resource_name, b.visible_devices_env_var) is not None)

    # Queries -------------------------------------------------------------------------------------

    def plugin_names(self) -> list[str]:
        return list(self._plugins)

    def plugin(self, name: str) -> LoadedPlugin:
        try:
            return self._plugins[name]
        except KeyError:
            raise PluginError(f"unknown plugin {name!r}; installed: {', '.join(self._plugins) or 'none'} "
                              "(run 'rayaccel plugins')") from None

    def family(self, name: str) -> FamilyDeclaration:
        return self.plugin(name).family

    def implements(self, plugin: str, hook: str) -> bool:
        return bool(self._impls(plugin, hook))

    # Calling -------------------------------------------------------------------------------------

    @contextmanager
    def deadline(self, seconds: float | None = None) -> Iterator[None]:
        """Bound every hook call inside to ``seconds`` in total (default: RAYACCEL_INVENTORY_TIMEOUT).

        Inside, a plugin one of whose hooks timed out is not called again (its thread still runs, most
        likely stuck on the same device), so a plugin hanging in every hook costs one hook timeout, not
        seven. Calls after the deadline are not made; each becomes a problem.
        """
        previous = (self._deadline, self._hung)
        self._deadline = time.monotonic() + (inventory_timeout() if seconds is None else seconds)
        self._hung = set()
        try:
            yield
        finally:
            self._deadline, self._hung = previous

    def _impls(self, plugin: str, hook: str) -> list[pluggy.HookImpl]:
        caller = getattr(self._pm.hook, hook)
        return [impl for impl in caller.get_hookimpls() if impl.plugin_name == plugin]

    def call(self, plugin: str, hook: str, problems: list[Problem] | None = None, **kwargs: Any) -> Any:
        """Call one plugin's hook, isolated. Returns MISSING when not implemented, None on a problem."""
        dist = self._plugins[plugin].distribution if plugin in self._plugins else None
        return self._call(plugin, dist, hook, kwargs, problems)

    def _call(self, plugin: str, dist: str | None, hook: str, kwargs: Mapping[str, Any],
              problems: list[Problem] | None = None) -> Any:
        impls = self._impls(plugin, hook)
        if not impls:
            return MISSING
        impl = impls[0]
        accepted = {k: kwargs[k] for k in impl.argnames if k in kwargs}
        ok, result = self._bounded(impl.function, accepted, plugin, dist, hook, problems)
        if not ok:
            return None
        try:
            return _ADAPTERS[hook].validate_python(result)
        except ValidationError as e:
            self._problem(plugin, dist, hook, "invalid-record",
                          f"returned a malformed result: {describe_validation_error(e)}",
                          _FIX_FOR_HOOK.get(hook, f"return what docs/hooks.md specifies for {hook}"),
                          sink=problems)
            return None

    def _bounded(self, fn: Callable[..., Any], kwargs: Mapping[str, Any], plugin: str, dist: str | None,
                 hook: str, problems: list[Problem] | None = None) -> tuple[bool, Any]:
        """Run fn in a daemon thread; a hang past the timeout is abandoned, never waited on."""
        timeout = self._call_timeout(plugin, dist, hook, problems)
        if timeout is None:
            return False, None
        outcome: dict[str, Any] = {}
        reported = ReportSink()
        output = containment.HookOutput()

        def target() -> None:
            # what the hook reports with rayaccel.report_problem, and what it prints
            with collect_problems(reported), containment.captured_output(output):
                try:
                    outcome["value"] = fn(**kwargs)
                except BaseException as e:  # a plugin's SystemExit must not end the caller either
                    outcome["error"] = e

        environ = containment.environ_snapshot()
        thread = threading.Thread(target=target, name=f"rayaccel-{plugin}-{hook}", daemon=True)
        with containment.routed_streams():
            thread.start()
            thread.join(timeout)
        self._contain(plugin, dist, hook, environ, output, problems)
        if not thread.is_alive():
            for report in reported.drain():
                self._problem(plugin, dist, None if hook == "import" else hook, report.code, report.message,
                              report.fix, severity=report.severity, sink=problems)
        if thread.is_alive():
            if self._deadline is not None:
                self._hung.add(plugin)
            self._problem(plugin, dist, hook, "hook-timeout", f"did not return within {timeout:g}s",
                          "bound every vendor call with a timeout (host.run(..., timeout=...)); raise the limit "
                          f"with {HOOK_TIMEOUT_ENV} only if the hardware is known to be slow", sink=problems)
            return False, None
        if "error" in outcome:
            e = outcome["error"]
            if isinstance(e, HookError):
                self._problem(plugin, dist, hook, e.code, str(e), e.fix, sink=problems)
                return False, None
            where = "failed to import" if hook == "import" else "raised"
            self._problem(plugin, dist, None if hook == "import" else hook, "hook-raised",
                          f"{where} {type(e).__name__}: {e}",
                          "catch vendor errors inside the plugin and report zero devices or a health reason",
                          sink=problems)
            return False, None
        return True, outcome.get("value")

    def _call_timeout(self, plugin: str, dist: str | None, hook: str, problems: list[Problem] | None) -> float | None:
        """This call's timeout within the deadline, or None (and a problem) when it must not be made."""
        assert self.timeout is not None
        if self._deadline is None:
            return self.timeout
        if plugin in self._hung:
            self._problem(plugin, dist, hook, "hook-skipped", "not called: an earlier hook of this plugin did not "
                          "return", "bound every vendor call with a timeout (host.run(..., timeout=...))",
                          severity="warning", sink=problems)
            return None
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            self._problem(plugin, dist, hook, "inventory-deadline",
                          "not called: the deadline for all hooks of this inventory, or of loading the plugins "
                          f"({INVENTORY_TIMEOUT_ENV}), had passed",
                          "find the plugin whose hooks are slow (its hook-timeout problems), or raise "
                          f"{INVENTORY_TIMEOUT_ENV}", sink=problems)
            return None
        return min(self.timeout, remaining)

    def _contain(self, plugin: str, dist: str | None, hook: str, environ: Mapping[Any, Any],
                 output: containment.HookOutput, problems: list[Problem] | None) -> None:
        """Undo and report what a hook changed outside its result: os.environ, the output streams."""
        where = None if hook == "import" else hook
        changed = containment.restore_environ(environ)
        if changed:
            shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
            self._problem(plugin, dist, where, "environ-changed",
                          f"changed the process environment ({shown}); the change was undone",
                          "pass an env to the vendor call instead of changing os.environ", sink=problems)
        if output.chars:
            self._problem(plugin, dist, where, "printed",
                          f"wrote {output.chars} characters to stdout/stderr, kept out of the caller's output "
                          f"(first line: {output.first_line()!r})",
                          "log with the logging module, or report with rayaccel.report_problem",
                          severity="warning", sink=problems)

    def _problem(self, plugin: str, dist: str | None, hook: str | None, code: str, message: str,
                 fix: str | None, severity: str = "error", sink: list[Problem] | None = None) -> None:
        problem = Problem(plugin=plugin, distribution=dist, hook=hook, code=code, message=message, fix=fix,
                          severity=severity)
        (self.problems if sink is None else sink).append(problem)

    # Typed hook wrappers -------------------------------------------------------------------------

    def fixture_dirs(self, plugin: str) -> list[str]:
        result = self.call(plugin, "rayaccel_fixture_dirs")
        return [] if result is MISSING or result is None else list(result)

    def discover(self, plugin: str, host: Host, problems: list[Problem]) -> list[Device] | None:
        result = self.call(plugin, "rayaccel_discover", problems, host=host)
        if result is MISSING:
            return None
        if result is not None and len(result) > MAX_DEVICES:
            dist = self._plugins[plugin].distribution if plugin in self._plugins else None
            self._problem(plugin, dist, "rayaccel_discover", "too-many-devices",
                          f"reported {len(result)} devices, more than the {MAX_DEVICES} one node can hold; the "
                          f"first {MAX_DEVICES} are kept", "check the vendor tool's output for garbage",
                          sink=problems)
            return list(result[:MAX_DEVICES])
        return result  # type: ignore[no-any-return]

    def topology(self, plugin: str, host: Host, devices: Sequence[Device], problems: list[Problem]) -> Topology:
        result = self.call(plugin, "rayaccel_topology", problems, host=host, devices=list(devices))
        return Topology() if result is MISSING or result is None else result

    def health(self, plugin: str, host: Host, devices: Sequence[Device],
               problems: list[Problem]) -> list[HealthReport] | None:
        result = self.call(plugin, "rayaccel_health", problems, host=host, devices=list(devices))
        return None if result is MISSING else result

    def metrics(self, plugin: str, host: Host, devices: Sequence[Device],
                problems: list[Problem]) -> list[MetricSample]:
        result = self.call(plugin, "rayaccel_metrics", problems, host=host, devices=list(devices))
        return [] if result is MISSING or result is None else result

    def resources(self, plugin: str, host: Host, devices: Sequence[Device], topology: Topology,
                  problems: list[Problem]) -> ResourceContribution:
        result = self.call(plugin, "rayaccel_resources", problems, host=host, devices=list(devices),
                           topology=topology)
        return ResourceContribution() if result is MISSING or result is None else result

    def labels(self, plugin: str, host: Host, inventory: FamilyInventory,
               problems: list[Problem]) -> dict[str, str]:
        result = self.call(plugin, "rayaccel_labels", problems, host=host, inventory=inventory)
        return {} if result is MISSING or result is None else result

    def sku_catalog(self, plugin: str, problems: list[Problem] | None = None) -> SkuCatalog | None:
        result = self.call(plugin, "rayaccel_sku_catalog", problems)
        return None if result is MISSING else result

    def transports(self, plugin: str, problems: list[Problem] | None = None) -> list[TransportSpec]:
        result = self.call(plugin, "rayaccel_transports", problems)
        return [] if result is MISSING or result is None else result

    def cloud_hint(self, plugin: str, provider: str, instance_type: str,
                   problems: list[Problem] | None = None) -> CloudHint | None:
        result = self.call(plugin, "rayaccel_cloud_hints", problems, provider=provider,
                           instance_type=instance_type)
        return None if result is MISSING else result

    def parse_visible(self, plugin: str, value: str) -> list[str]:
        """Unit ids named by a visible-devices env var value (the plugin's parser, else comma-split)."""
        result = self.call(plugin, "rayaccel_parse_visible", value=value)
        if result is MISSING or result is None:
            return [part.strip() for part in value.split(",") if part.strip()]
        return list(result)

    def visible_env(self, plugin: str, unit_ids: Sequence[str]) -> dict[str, str]:
        """Env that makes a process see exactly unit_ids (the plugin's, else the env var alone)."""
        env_var = self.family(plugin).visible_devices_env_var
        result = self.call(plugin, "rayaccel_visible_env", unit_ids=list(unit_ids))
        if result is MISSING or result is None or env_var not in result:
            return {env_var: ",".join(unit_ids)}
        return dict(result)


def load_module_plugins(modules: Sequence[ModuleType | object], autoload: bool = False) -> PluginManager:
    """A manager holding exactly the given plugin modules/objects (tests and embedding)."""
    manager = PluginManager(autoload=autoload)
    for module in modules:
        manager.register(module)
    return manager
