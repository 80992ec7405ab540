"""The plugin manager: loads plugins, refuses bad ones, and calls each plugin's hooks isolated.

Loading: entry points of the ``rayaccel`` group (unless ``RAYACCEL_NO_AUTOLOAD=1``), plus the plugins
named in ``RAYACCEL_PLUGINS``, plus plugins registered explicitly; the names in ``RAYACCEL_DISABLE``
(comma-separated) are blocked in pluggy when the manager is made. A plugin is refused, with a
:class:`~rayaccel.records.Problem`, when it fails to import, implements an unknown hook, lacks a required
hook, declares an invalid family, was written for another major spec version, or collides with another
plugin or with Ray.

Calling: each call goes through pluggy's hook execution with that one plugin's implementations, so the
plugin's own wrappers, ``tryfirst``/``trylast`` ordering and pluggy's tracing and call monitoring run as
in any pluggy host; other plugins' code never runs inside it. It runs in a worker thread bounded by a
timeout (``RAYACCEL_HOOK_TIMEOUT`` seconds, default 10; :func:`rayaccel.run_bounded`). An exception, a hang
or a malformed result becomes a problem attributed to that plugin and hook, and the caller gets the spec's
default (:data:`rayaccel.hookspec.HOOKS`). Inside :meth:`PluginManager.deadline` (a whole inventory) all
calls share one deadline (``RAYACCEL_INVENTORY_TIMEOUT``, default 30 s), and a plugin whose hook hung is not
called again. What a hook prints, and any change it makes to ``os.environ``, is kept from the caller
(:mod:`rayaccel.plugins.containment`). Whoever must see every call (the conformance suite's side-effect
guard) registers a :class:`HookCallWatcher`.

One manager serves a process: :func:`default_manager`.
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
import time
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, overload

import pluggy
from pydantic import TypeAdapter, ValidationError

from rayaccel import (
    hookspec,
    records as rec,  # the hooks' result types, as in rayaccel.hookspec
)
from rayaccel.errors import HookError, PluginError
from rayaccel.plugins import containment
from rayaccel.plugins.configuration import (
    DISABLE_ENV,
    HOOK_TIMEOUT_ENV,
    INVENTORY_TIMEOUT_ENV,
    NO_AUTOLOAD_ENV,
    PLUGINS_ENV,
    autoload_enabled,
    disabled_plugins,
    entry_points,
    env_plugins,
    hook_timeout,
    inventory_timeout,
)
from rayaccel.plugins.conventions import conventional_hooks
from rayaccel.plugins.transport_classes import ask_classes
from rayaccel.reporting import ReportSink, collect_problems, shown
from rayaccel.schemas import describe_validation_error, first_difference, value_at
from rayaccel.support.bounded import BoundedTimeout, run_bounded
from rayaccel.support.raycompat import RAY_ACCELERATOR_RESOURCES, ray_family_for, reserved_resource_problem

AnswerT = TypeVar("AnswerT")

#: Each hook's answer is validated with the adapter of the type its spec names.
_ADAPTERS = {name: TypeAdapter(info.result) for name, info in hookspec.HOOKS.items()}
#: Hooks answering a list of records (devices, health reports, metric samples, transports) are validated record
#: by record, with the adapter of the item type.
_ITEM_ADAPTERS = {name: TypeAdapter(typing.get_args(info.result)[0]) for name, info in hookspec.HOOKS.items()
                  if typing.get_origin(info.result) is list and isinstance(typing.get_args(info.result)[0], type)
                  and issubclass(typing.get_args(info.result)[0], rec.Record)}


def raised_fix(error: BaseException) -> str:
    """The fix of a hook that raised. A vendor interface that failed (a tool that hung past its timeout, a
    driver error) may raise on purpose, as the template's probes do: the hook is reported failed and its
    devices left out, which says more than zero devices would; the fix is then on the node, not in the code."""
    from rayaccel.hosts.seam import CommandTimeout, HostError

    text = str(error)
    if isinstance(error, CommandTimeout) or "did not finish within" in text:
        return ("the vendor tool did not answer within its timeout: check the tool and the driver on this node "
                "(run the command by hand). Raising is right here: the hook is reported failed and its devices "
                "left out, never silently reported as none")
    if isinstance(error, HostError):
        return ("the vendor interface failed: check the tool, library or driver on this node; raising reports the "
                "hook failed (catch the error in the plugin only where no devices is the true answer)")
    return ("a bug or an unexpected vendor answer: fix the plugin, or catch the vendor error inside it and report "
            "it (rayaccel.report_problem) with zero devices or a health reason")


def _item_name(index: int, item: Any) -> str:
    """How a problem names a list answer's item: its position, and its id or device when it has one."""
    fields = item if isinstance(item, dict) else getattr(item, "__dict__", {})
    named = next((f"{key} {shown(fields[key])}" for key in ("id", "device", "name")
                  if isinstance(fields.get(key), str)), None)
    return f"item {index}" + (f" ({named})" if named else "")


class _Missing:
    """The plugin does not implement the hook (distinct from a hook that returned None)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

#: What one bounded call ended with: (it returned, its value); (False, None) after a problem.
CallOutcome = tuple[bool, Any]


@dataclass(frozen=True)
class HookCall:
    """One call the manager is about to make of one plugin's code (a hook, or importing the plugin)."""

    plugin: str
    distribution: str | None
    hook: str  # a hook name, or "import" while the plugin is loaded
    fn: Callable[..., Any]
    kwargs: Mapping[str, Any]
    problems: list[rec.Problem]  # where this call's problems go


class HookCallWatcher(Protocol):
    """Sees every call the manager makes of plugin code, around the bounded, contained run.

    ``around`` must call ``proceed`` exactly once, with the call or a copy of it (other ``fn`` or
    ``kwargs``), and return what it returned: it may watch the call, never answer in the plugin's place.
    """

    def around(self, call: HookCall, proceed: Callable[[HookCall], CallOutcome]) -> CallOutcome: ...


#: Devices one plugin's discovery may report; more is garbage, and would make every later step slow.
MAX_DEVICES = 4096


#: How an adopted plugin's worker answers one hook: (hook, arguments, problems) -> its answer as JSON, or None.
RemoteCall = Callable[[str, Mapping[str, Any], list[rec.Problem]], Any]


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
class PluginManager:
    """The loaded plugins, and typed access to their hooks, one plugin at a time, isolated.

    Problems go to ``problems``, or to the list a call is given.
    """

    autoload: bool | None = None
    timeout: float | None = None
    problems: list[rec.Problem] = field(default_factory=list)
    #: False: load nothing (neither entry points nor RAYACCEL_PLUGINS); the caller registers or adopts plugins.
    load: bool = True

    def __post_init__(self) -> None:
        self._pm = _RayaccelPluggy(hookspec.PROJECT_NAME)
        self._pm.add_hookspecs(hookspec)
        for name in disabled_plugins():  # read once: a plugin changing the env cannot disable the next one
            self._pm.set_blocked(name)
        self._plugins: dict[str, LoadedPlugin] = {}
        #: Per plugin, the hooks its file layout answers (:mod:`rayaccel.plugins.conventions`), for those it lacks.
        self._conventions: dict[str, dict[str, Callable[[], Any]]] = {}
        #: Per adopted plugin, how its worker answers a hook, and which hooks it answers (:meth:`adopt`).
        self._remote: dict[str, tuple[RemoteCall, frozenset[str]]] = {}
        self._deadline: float | None = None  # of the innermost deadline(); None outside
        self._hung: set[str] = set()  # plugins with a hook that did not return, inside deadline()
        #: (plugin, host) with a call abandoned at its timeout that has still not returned (any deadline): the
        #: hook and when. Not called again on that host until it returns, so polling a hung plugin adds no
        #: thread (or child). The abandoned call holds the host, so its id names no other host meanwhile.
        self._abandoned: dict[tuple[str, int], tuple[str, float, threading.Event]] = {}
        self._watchers: list[HookCallWatcher] = []
        if self.timeout is None:
            self.timeout = hook_timeout()
        if self.autoload is None:
            self.autoload = autoload_enabled()
        if not self.load:
            return
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
        except ValueError:  # pluggy's own words name the object's repr: say what it means instead
            other = self._pm.get_name(plugin)
            self._problem(name, distribution, None, "duplicate-plugin",
                          f"is the same module as plugin {other!r}, already registered" if other is not None
                          else f"its name {name!r} is taken by another plugin",
                          "list each plugin once, under one name (RAYACCEL_PLUGINS, entry points)")
            return False
        except pluggy.PluginValidationError as e:
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

    def adopt(self, name: str, family: rec.FamilyDeclaration, *, distribution: str | None = None,
              version: str | None = None, answers: Mapping[str, Any] | None = None,
              remote: RemoteCall | None = None, remote_hooks: Sequence[str] = ()) -> bool:
        """Know a plugin loaded and checked in another process (a worker of :mod:`rayaccel.isolation.pool`) by
        its declaration, without importing its code here. ``answers``: hook name -> what the plugin answered
        there, for hooks that take no arguments (``rayaccel_fixture_dirs``); ``remote_hooks``: the hooks it
        answers there one call at a time, through ``remote(hook, arguments, problems)`` (its answer as JSON,
        validated here as any answer is; None when it had none). Collisions with the plugins known here are
        refused as in :meth:`register`. Returns False (and records why) when it is refused."""
        if self._pm.is_blocked(name):
            self._disabled(name, distribution)
            return False
        if name in self._plugins:
            raise PluginError(f"a plugin named {name!r} is already registered")
        self._plugins[name] = LoadedPlugin(name, distribution, version, None, family)
        self._conventions[name] = {hook: functools.partial(lambda answer: answer, answer)
                                   for hook, answer in (answers or {}).items()}
        if remote is not None:
            self._remote[name] = (remote, frozenset(remote_hooks))
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
        self._remote.pop(name, None)

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

    # Calling ------------------------------------------------------------------------------------

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
        """The plugin's implementations of the hook (its wrappers of it not counted)."""
        caller = getattr(self._pm.hook, hook)
        return [impl for impl in caller.get_hookimpls()
                if impl.plugin_name == plugin and not (impl.wrapper or impl.hookwrapper)]

    def _caller(self, plugin: str, hook: str) -> Callable[..., Any]:
        """pluggy's call of the hook for this plugin alone: its implementations and its own wrappers, in
        pluggy's order, through the manager's hook executor (so tracing and call monitoring see it).
        ``subset_hook_caller`` would do the same but needs hashable plugins, and a plugin may be any object."""
        impls = [impl for impl in getattr(self._pm.hook, hook).get_hookimpls() if impl.plugin_name == plugin]

        def call(**kwargs: Any) -> Any:
            return self._pm._hookexec(hook, impls, kwargs, True)  # True: one answer (the specs' firstresult)

        return call

    def call(self, plugin: str, hook: str, problems: list[rec.Problem] | None = None, **kwargs: Any) -> Any:
        """Call one plugin's hook, isolated. Returns MISSING when not implemented, None on a problem."""
        return self._call(plugin, self._distribution(plugin), hook, kwargs, problems)

    @overload
    def answer(self, plugin: str, hook: hookspec.Hook[AnswerT], problems: list[rec.Problem] | None = None,
               **kwargs: Any) -> AnswerT: ...

    @overload
    def answer(self, plugin: str, hook: str, problems: list[rec.Problem] | None = None, **kwargs: Any) -> Any: ...

    def answer(self, plugin: str, hook: str | hookspec.Hook[Any], problems: list[rec.Problem] | None = None,
               **kwargs: Any) -> Any:
        """The plugin's validated answer, or the spec's default when it has none (the hook is not
        implemented, its call failed, or it answered None). Given a :class:`hookspec.Hook` (``hookspec.TOPOLOGY``
        ...), the answer is typed as that hook's record."""
        name = hook.name if isinstance(hook, hookspec.Hook) else hook
        result = self.call(plugin, name, problems, **kwargs)
        if result is MISSING or result is None:
            return hookspec.HOOKS[name].default(family=self._family_or_none(plugin), **kwargs)
        return result

    def _call(self, plugin: str, dist: str | None, hook: str, kwargs: Mapping[str, Any],
              problems: list[rec.Problem] | None = None) -> Any:
        remote, remote_hooks = self._remote.get(plugin, (None, frozenset()))
        if self._impls(plugin, hook):
            ok, result = self._bounded(self._caller(plugin, hook), kwargs, plugin, dist, hook, problems)
        elif (conventional := self._conventions.get(plugin, {}).get(hook)) is not None:
            # takes no arguments: the conventional hooks have none
            ok, result = self._bounded(conventional, kwargs, plugin, dist, hook, problems)
        elif remote is not None and hook in remote_hooks:
            # the plugin's worker bounds and contains the call; its process's deadline bounds the wait here
            result = remote(hook, kwargs, self.problems if problems is None else problems)
            ok = result is not None
        else:
            return MISSING
        if not ok:
            return None
        if hook == "rayaccel_discover" and isinstance(result, list | tuple) and len(result) > MAX_DEVICES:
            # Cut before anything is done per device: validating 100,000 garbage records takes seconds.
            self._problem(plugin, dist, hook, "too-many-devices",
                          f"reported {len(result)} devices, more than the {MAX_DEVICES} one node can hold; the "
                          f"first {MAX_DEVICES} are kept", "check the vendor tool's output for garbage",
                          sink=problems)
            result = list(result[:MAX_DEVICES])
        built = result
        if _holds_records(result):  # a record the plugin built without validation is validated like any answer
            result = as_data(result)
        item_adapter = _ITEM_ADAPTERS.get(hook)
        if item_adapter is not None and isinstance(result, list | tuple):
            valid = self._valid_items(plugin, dist, hook, item_adapter, result, problems)
            self._say_unvalidated(plugin, dist, hook, built, result, valid, problems)
            if hook == hookspec.TRANSPORTS.name:
                return self._sdk_fields_dropped(plugin, dist, valid, problems)
            return valid
        try:
            validated = _kept_private(built, _ADAPTERS[hook].validate_python(result))
            self._say_unvalidated(plugin, dist, hook, built, result, validated, problems)
            return validated
        except ValidationError as e:
            self._problem(plugin, dist, hook, "invalid-record",
                          f"returned a malformed result: {describe_validation_error(e)}",
                          hookspec.HOOKS[hook].fix, sink=problems)
            return None

    def _say_unvalidated(self, plugin: str, dist: str | None, hook: str, built: Any, data: Any, validated: Any,
                         problems: list[rec.Problem] | None) -> None:
        """A warning where validating the records the plugin built changed a value: it built them without
        validation (``model_construct``, ``model_copy(update=...)``). The validated value is what is used."""
        if data is built:
            return  # data (dicts, text) is validated as it comes: lax coercion there is the contract
        validated_data = as_data(validated)
        where = first_difference(data, validated_data)
        if where is None:
            return
        was, now = value_at(data, where), value_at(validated_data, where)
        self._problem(plugin, dist, hook, "unvalidated-record",
                      f"{hook} returned a record built without validation (model_construct?), which its own model "
                      f"changes: {'.'.join(map(str, where))} is {was!r} ({type(was).__name__}), not {now!r}; the "
                      "validated value is used", "build records with their constructors, which validate",
                      severity="warning", sink=problems)

    def _sdk_fields_dropped(self, plugin: str, dist: str | None, specs: list[rec.TransportSpec],
                            problems: list[rec.Problem] | None) -> list[rec.TransportSpec]:
        """``specs`` without the value of the field the SDK fills (``moved_device_types``: its class's answer, asked
        where the plugin runs): a declaration's own would stand in for the class's and decide path selection."""
        claimed = [spec.name for spec in specs if spec.moved_device_types is not None]
        if not claimed:
            return specs
        self._problem(plugin, dist, hookspec.TRANSPORTS.name, "sdk-filled-field",
                      f"transport {', '.join(claimed)} sets moved_device_types, which the SDK fills from the manager "
                      "class's own moved_device_types(); the declaration's value is dropped",
                      "leave moved_device_types out; answer it from the class (override moved_device_types())",
                      severity="warning", sink=problems)
        return [spec.model_copy(update={"moved_device_types": None}) for spec in specs]

    def transports(self, plugin: str, problems: list[rec.Problem] | None = None) -> list[rec.TransportSpec]:
        """The plugin's validated transport declarations (``rayaccel_transports``), each with what its manager
        class says it moves (``moved_device_types``), asked here when the plugin's code runs in this process. For
        a plugin adopted from a worker the declarations are its describe answer, none of its classes asked:
        ask its worker (:meth:`rayaccel.isolation.pool.WorkerPool.transports`), never import its classes here."""
        specs = self.answer(plugin, hookspec.TRANSPORTS, problems)
        loaded = self._plugins.get(plugin)
        if loaded is None or loaded.module is None:
            return specs
        return ask_classes(specs)

    def _valid_items(self, plugin: str, dist: str | None, hook: str, adapter: TypeAdapter[Any],
                     items: Sequence[Any], problems: list[rec.Problem] | None) -> list[Any]:
        """A list answer item by item: a malformed record costs itself (one problem naming it, the field and
        the value), never the records beside it (one GPU's bad memory size must not hide the other seven)."""
        valid = []
        for i, item in enumerate(items):
            try:
                valid.append(adapter.validate_python(item))
            except ValidationError as e:
                self._problem(plugin, dist, hook, "invalid-record",
                              f"returned a malformed record, left out: {_item_name(i, item)} "
                              f"{describe_validation_error(e, with_input=True)}",
                              hookspec.HOOKS[hook].fix, sink=problems)
        return valid

    def watch_calls(self, watcher: HookCallWatcher) -> None:
        """Have ``watcher`` see every later call of plugin code (once, however often it is added)."""
        if watcher not in self._watchers:
            self._watchers.append(watcher)

    def watchers(self) -> tuple[HookCallWatcher, ...]:
        return tuple(self._watchers)

    def _bounded(self, fn: Callable[..., Any], kwargs: Mapping[str, Any], plugin: str, dist: str | None,
                 hook: str, problems: list[rec.Problem] | None = None) -> CallOutcome:
        """Run ``fn(**kwargs)`` bounded (:func:`rayaccel.run_bounded`), through the watchers; a hang past the
        timeout is abandoned, never waited on."""
        call = HookCall(plugin, dist, hook, fn, kwargs, self.problems if problems is None else problems)
        proceed: Callable[[HookCall], CallOutcome] = self._run_contained
        for watcher in reversed(self._watchers):
            proceed = functools.partial(watcher.around, proceed=proceed)
        return proceed(call)

    def _run_contained(self, call: HookCall) -> CallOutcome:
        fn, kwargs, plugin, dist, hook, problems = (call.fn, call.kwargs, call.plugin, call.distribution, call.hook,
                                                    call.problems)
        timeout = self._call_timeout(plugin, dist, hook, problems, id(kwargs.get("host")))
        if timeout is None:
            return False, None
        reported = ReportSink()
        output = containment.HookOutput()

        def contained() -> tuple[bool, Any]:
            # what the hook reports with rayaccel.report_problem, and what it prints
            with collect_problems(reported), containment.captured_output(output):
                try:
                    return True, fn(**kwargs)
                except BaseException as e:  # a plugin's SystemExit must not end the caller either
                    return False, e

        environ = containment.environ_snapshot()
        try:
            with containment.routed_streams():
                returned, value = run_bounded(contained, timeout, name=f"rayaccel-{plugin}-{hook}")
        except BoundedTimeout as e:
            self._contain(plugin, dist, hook, environ, output, problems)
            self._abandoned[(plugin, id(kwargs.get("host")))] = (hook, time.monotonic(), e.returned)
            if self._deadline is not None:
                self._hung.add(plugin)
            self._problem(plugin, dist, hook, "hook-timeout", f"did not return within {timeout:g}s",
                          "bound every vendor call with a timeout (host.run(..., timeout=...)); raise the limit "
                          f"with {HOOK_TIMEOUT_ENV} only if the hardware is known to be slow", sink=problems)
            return False, None
        self._contain(plugin, dist, hook, environ, output, problems)
        where = None if hook == "import" else hook
        for report in reported.drain():
            self._problem(plugin, dist, where, report.code, report.message, report.fix, severity=report.severity,
                          sink=problems)
        if returned:
            return True, value
        if isinstance(value, HookError):
            self._problem(plugin, dist, hook, value.code, str(value), value.fix, sink=problems)
            return False, None
        raised = (f"ValidationError building a record, {describe_validation_error(value, with_input=True)}"
                  if isinstance(value, ValidationError) else f"{type(value).__name__}: {value}")  # one line, not a dump
        self._problem(plugin, dist, where, "hook-raised",
                      f"{'failed to import' if hook == 'import' else 'raised'} {raised}", raised_fix(value),
                      sink=problems)
        return False, None

    def _call_timeout(self, plugin: str, dist: str | None, hook: str,
                      problems: list[rec.Problem] | None, host: int = 0) -> float | None:
        """This call's timeout within the deadline, or None (and a problem) when it must not be made."""
        assert self.timeout is not None
        abandoned = self._abandoned.get((plugin, host))
        if abandoned is not None and not abandoned[2].is_set():
            earlier, since, _ = abandoned
            self._problem(plugin, dist, hook, "hook-skipped",
                          f"not called: its {earlier} call, abandoned {time.monotonic() - since:.0f}s ago at its "
                          "timeout, has not returned yet", "bound every vendor call with a timeout "
                          "(host.run(..., timeout=...))", severity="warning", sink=problems)
            return None
        self._abandoned.pop((plugin, host), None)
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
                 output: containment.HookOutput, problems: list[rec.Problem] | None) -> None:
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
                 fix: str | None, severity: str = "error", sink: list[rec.Problem] | None = None) -> None:
        problem = rec.Problem(plugin=plugin, distribution=dist, hook=hook, code=code, message=message, fix=fix,
                          severity=severity)
        (self.problems if sink is None else sink).append(problem)

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
        """The plugin answers the hook: it implements it, or its file layout does
        (:mod:`rayaccel.plugins.conventions`), or (adopted) its worker said it does."""
        return (bool(self._impls(plugin, hook)) or hook in self._conventions.get(plugin, {})
                or hook in self._remote.get(plugin, (None, frozenset()))[1])

    # Typed hook calls: the answer, or the spec's default ------------------------------------------

    def fixture_dirs(self, plugin: str) -> list[str]:
        return list(self.answer(plugin, "rayaccel_fixture_dirs"))

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


def as_data(answer: Any) -> Any:
    """A hook's answer with every record in it turned back into data (its fields, nested records too), for the
    hook's validation to see every value: pydantic takes a model instance as valid as it stands, and one a plugin
    built with ``model_construct`` or ``model_copy(update=...)`` never ran its validators (a memory size left as
    text, a CPU list the SDK refuses). Validating the data builds the records again, as the worker's JSON does."""
    if isinstance(answer, rec.Record):  # the fields it was given: a default left unset stays a default (reach)
        return answer.model_dump(by_alias=True, exclude_unset=True, warnings=False)
    if isinstance(answer, list | tuple):
        return [as_data(item) for item in answer]
    if isinstance(answer, dict):
        return {key: as_data(value) for key, value in answer.items()}
    return answer


def _holds_records(answer: Any) -> bool:
    if isinstance(answer, rec.Record):
        return True
    if isinstance(answer, list | tuple):
        return any(_holds_records(item) for item in answer)
    if isinstance(answer, dict):
        return any(_holds_records(value) for value in answer.values())
    return False


def _kept_private(built: Any, validated: Any) -> Any:
    """``validated`` with the private attributes ``built`` carried (a SKU catalog's file, which its fields do not
    hold): turning a record into data leaves them behind."""
    private = getattr(built, "__pydantic_private__", None) if isinstance(built, rec.Record) else None
    if private and isinstance(validated, rec.Record):
        object.__setattr__(validated, "__pydantic_private__", dict(private))
    return validated


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
