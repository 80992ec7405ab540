"""Calling one plugin's hook, isolated: through pluggy, in a thread bounded by a timeout, contained.

Each call goes through pluggy's hook execution with that one plugin's implementations, so the
plugin's own wrappers, ``tryfirst``/``trylast`` ordering and pluggy's tracing and call monitoring run as
in any pluggy host; other plugins' code never runs inside it. It runs in a worker thread bounded by a timeout
(``RAYACCEL_HOOK_TIMEOUT`` seconds, default 10; :func:`rayaccel.run_bounded`). An exception, a hang or a
malformed result becomes a problem attributed to that plugin and hook; the caller gets ``None`` and
carries on with the others. Inside :meth:`HookCalls.deadline` (a whole inventory) all calls share one
deadline (``RAYACCEL_INVENTORY_TIMEOUT``, default 30 s), and a plugin whose hook hung is not called again.
What a hook prints, and any change it makes to ``os.environ``, is kept from the caller
(:mod:`rayaccel.containment`). The answer is validated into the type its spec names
(:data:`rayaccel.hookspec.HOOKS`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pluggy
from pydantic import TypeAdapter, ValidationError

from rayaccel import containment, hookspec
from rayaccel.bounded import BoundedTimeout, run_bounded
from rayaccel.errors import HookError
from rayaccel.pluginconfig import HOOK_TIMEOUT_ENV, INVENTORY_TIMEOUT_ENV, inventory_timeout
from rayaccel.records import FamilyDeclaration, Problem
from rayaccel.reporting import ReportSink, collect_problems
from rayaccel.schemas import describe_validation_error as describe_validation_error  # the one formatter; re-exported

#: Each hook's answer is validated with the adapter of the type its spec names.
_ADAPTERS = {name: TypeAdapter(info.result) for name, info in hookspec.HOOKS.items()}


class _Missing:
    """The plugin does not implement the hook (distinct from a hook that returned None)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class HookCalls:
    """The calling half of :class:`rayaccel.manager.PluginManager`: one plugin's hook at a time, isolated.

    Problems go to ``problems`` (the caller's list when given one). The loading half provides ``_pm``
    (the pluggy manager) and ``_distribution``.
    """

    timeout: float | None
    problems: list[Problem]
    _pm: pluggy.PluginManager
    _deadline: float | None  # of the innermost deadline(); None outside
    _hung: set[str]  # plugins with a hook that did not return, inside deadline()
    #: Per plugin, the hooks its file layout answers (:mod:`rayaccel.conventions`), for those it lacks.
    _conventions: dict[str, dict[str, Callable[[], Any]]]

    def _distribution(self, plugin: str) -> str | None:
        raise NotImplementedError

    def _family_or_none(self, plugin: str) -> FamilyDeclaration | None:
        raise NotImplementedError

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

    def call(self, plugin: str, hook: str, problems: list[Problem] | None = None, **kwargs: Any) -> Any:
        """Call one plugin's hook, isolated. Returns MISSING when not implemented, None on a problem."""
        return self._call(plugin, self._distribution(plugin), hook, kwargs, problems)

    def answer(self, plugin: str, hook: str, problems: list[Problem] | None = None, **kwargs: Any) -> Any:
        """The plugin's validated answer, or the spec's default when it has none (the hook is not
        implemented, its call failed, or it answered None)."""
        result = self.call(plugin, hook, problems, **kwargs)
        if result is MISSING or result is None:
            return hookspec.HOOKS[hook].default(family=self._family_or_none(plugin), **kwargs)
        return result

    def _call(self, plugin: str, dist: str | None, hook: str, kwargs: Mapping[str, Any],
              problems: list[Problem] | None = None) -> Any:
        if self._impls(plugin, hook):
            fn = self._caller(plugin, hook)
        elif (conventional := self._conventions.get(plugin, {}).get(hook)) is not None:
            fn = conventional  # takes no arguments: the conventional hooks have none
        else:
            return MISSING
        ok, result = self._bounded(fn, kwargs, plugin, dist, hook, problems)
        if not ok:
            return None
        try:
            return _ADAPTERS[hook].validate_python(result)
        except ValidationError as e:
            self._problem(plugin, dist, hook, "invalid-record",
                          f"returned a malformed result: {describe_validation_error(e)}",
                          hookspec.HOOKS[hook].fix, sink=problems)
            return None

    def _bounded(self, fn: Callable[..., Any], kwargs: Mapping[str, Any], plugin: str, dist: str | None,
                 hook: str, problems: list[Problem] | None = None) -> tuple[bool, Any]:
        """Run ``fn(**kwargs)`` bounded (:func:`rayaccel.run_bounded`); a hang past the timeout is abandoned,
        never waited on. (The conformance suite wraps this method to watch each call.)"""
        timeout = self._call_timeout(plugin, dist, hook, problems)
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
        except BoundedTimeout:
            self._contain(plugin, dist, hook, environ, output, problems)
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
        self._problem(plugin, dist, where, "hook-raised",
                      f"{'failed to import' if hook == 'import' else 'raised'} {type(value).__name__}: {value}",
                      "catch vendor errors inside the plugin and report zero devices or a health reason",
                      sink=problems)
        return False, None

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
