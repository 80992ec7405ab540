"""Plugin hooks out of process: worker processes answering with validated records, one per plugin.

In-process isolation (a thread and a timeout per hook, :mod:`rayaccel.plugins.manager`) cannot stop a plugin
that calls ``os._exit``, exhausts memory, changes ``os.environ``, writes to the caller's stdout, or leaves
threads and child processes behind. Where that matters -- ``rayaccel start`` and the long-lived health
monitor -- the hooks of each plugin run in a worker process of their own:

- the worker imports only its plugin and builds that plugin's :class:`~rayaccel.records.FamilyInventory`;
  the family and its problems cross the process boundary as pydantic JSON (one line per answer), never
  as pickled plugin objects;
- the worker has an address-space limit (``RAYACCEL_WORKER_MEMORY_MIB``, default 4096; ``0``: none), its
  stdin is ``/dev/null`` and its stdout is its stderr (a temporary file the parent reads only to explain
  a dead worker), so nothing a plugin prints reaches the caller's output;
- the worker runs in its own session; a worker that dies, misses its deadline, or is left with extra
  threads or child processes after an answer is killed with its whole process group and replaced at the
  next request. Its answer, if any, still counts; the other plugins' answers are never affected;
- workers start side by side and answer in parallel; a worker may serve several plugins in turn (on a
  machine with fewer cores than plugins), and when one of them kills it the plugins after it are asked
  again in a fresh worker; :class:`WorkerPool` keeps workers warm between requests (the monitor polls
  through one pool, one worker per plugin, for its whole life).

A plugin registered as an object rather than an importable module, or a host the worker cannot rebuild
(anything but :class:`~rayaccel.hosts.seam.RealHost` and :class:`~rayaccel.hosts.simulated.SimulatedHost`), runs in
process, as before.

:meth:`WorkerPool.load` goes one step further, for the CLI's commands: this process never imports a plugin.
The plugins are found in the configuration (entry points, ``RAYACCEL_PLUGINS``) without importing them,
each worker imports its plugin and describes it (its declaration, its fixture directories, its load
problems), the parent knows the plugins only by those descriptions (:meth:`PluginManager.adopt`), and the
same workers then build the inventory. A plugin that exits or hangs at import, or monkeypatches the SDK,
does so in its own worker only. Those workers are forked from the caller (it has the SDK imported already),
so each pays only for its own plugin.

This module is the pool; :mod:`rayaccel.isolation.protocol` is what crosses the pipe,
:mod:`rayaccel.isolation.process` one worker process from the parent's side, and
:mod:`rayaccel.isolation.plugin_worker` the worker's own side.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic_core import to_jsonable_python

from rayaccel import hookspec
from rayaccel.errors import PluginError
from rayaccel.hosts.seam import Host
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.isolation.fork_server import process_server
from rayaccel.isolation.process import WorkerProcess
from rayaccel.isolation.protocol import (
    HostSpec,
    PluginTarget,
    Reply,
    Request,
    host_spec,
    plugin_target,
)
from rayaccel.plugins.configuration import (
    DISABLE_ENV,
    autoload_enabled,
    disabled_plugins,
    entry_points,
    env_plugins,
    inventory_timeout,
)
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import FamilyInventory, NodeInventory, Problem, SkuCatalog, TransportSpec, WorkerNeeds


class WorkerPool:
    """Builds a node's inventory with the plugins' hooks in worker processes.

    ``workers``: how many processes share the plugins (each plugin always in one of them, the plugins of
    a process served in turn); default one per plugin. Workers start on the first :meth:`build` and stay
    up until :meth:`close` (use the pool as a context manager), so a monitor polling through one pool pays
    the start-up once. When a worker fails, the plugin it was serving gets a problem and the plugins after
    it in that worker are asked again in a fresh one: a dying plugin never loses the others' results.
    """

    def __init__(self, manager: PluginManager, plugins: Sequence[str] | None = None,
                 workers: int | None = None, *, targets: Sequence[PluginTarget] | None = None,
                 fork: bool = False) -> None:
        self.manager = manager
        self._lock = threading.RLock()  # a hook answered while building (an idle plugin's env) asks again
        self._timeout = float(manager.timeout or 0)
        if targets is None:
            self.builder = InventoryBuilder(manager, plugins)
            targets = [t for t in (plugin_target(manager, name) for name in self.builder.plugins) if t is not None]
        count = max(1, min(len(targets), workers if workers is not None else len(targets)))
        # Where this process cannot fork (another thread), the process's helper forks the workers (fork_server).
        self._server = process_server() if fork else None
        self._workers = [WorkerProcess(targets[i::count], self._timeout, fork, self._server)
                         for i in range(count) if targets[i::count]]
        self._targets = {t.name: t for t in targets}
        self._isolated = set(self._targets)
        self._replaced: dict[str, int] = {}
        #: Seconds one request may take in all (None: each answer its worker's own deadline).
        self.budget: float | None = None
        #: Each build repeats the last one (a monitor's polls): a worker whose plugin's devices and health
        #: answer as before keeps the rest of its family and sends only the new metrics
        #: (:meth:`rayaccel.inventory.builder.InventoryBuilder.refresh`).
        self.refresh = False
        self._last: dict[str, FamilyInventory] = {}  # plugin -> the family its worker sent last (refresh builds)
        #: The plugins whose family the last build kept (a refresh whose devices and health answered as before).
        self.kept: set[str] = set()
        self._spec: tuple[Host, HostSpec | None] | None = None
        #: What idle plugins' workers need, as their worker processes said (their hooks are not here).
        self._idle_workers: dict[str, WorkerNeeds] = {}
        #: Plugins whose worker failed answering a call (:meth:`call`): not called again by this pool.
        self._failed_calls: set[str] = set()

    @classmethod
    def load(cls, plugins: Sequence[str] | None = None, fork: bool = True,
             meanwhile: Callable[[], object] | None = None) -> WorkerPool:
        """A pool whose plugins are never imported in this process: found in the configuration, each
        imported and described by its own worker (started side by side, forked when ``fork`` and this
        process allows it), known here by its description. ``plugins``: only these (a clear error for a
        name not configured). ``meanwhile``: what this process does while the workers import their plugins
        (after they are forked). The same workers then answer :meth:`build`. Close it (a context manager)."""
        manager = PluginManager(load=False)
        targets = configured_targets(manager, plugins)
        pool = cls(manager, targets=targets, fork=fork)
        pool.budget = inventory_timeout()  # describing, then building, each within a command's budget
        try:
            pool._describe(meanwhile)
            pool.builder = InventoryBuilder(manager, [t.name for t in targets if t.name in manager.plugin_names()])
        except BaseException:
            pool.close()
            raise
        return pool

    @classmethod
    def in_process(cls, manager: PluginManager, plugins: Sequence[str] | None = None) -> WorkerPool:
        """A pool without worker processes: every hook of ``manager``'s (loaded) plugins is called in this process,
        as :meth:`build` does for a plugin it cannot isolate (a command's ``--in-process``, for debugging a
        plugin: what that gives up is in docs/architecture.md)."""
        pool = cls(manager, targets=[])
        pool.builder = InventoryBuilder(manager, plugins)
        return pool

    def _describe(self, meanwhile: Callable[[], object] | None = None) -> None:
        """Ask every worker to import its plugins and describe them; adopt the accepted ones."""
        answers = self._ask(Request(kind="describe"), set(self._targets), meanwhile)
        for name, target in self._targets.items():
            answer = answers.get(name)
            if isinstance(answer, Reply) and answer.declaration is not None:
                # The plugin's load problems come again with each of its build answers: not kept here.
                given = {"rayaccel_fixture_dirs": answer.fixture_dirs, "rayaccel_transports": answer.transports}
                given = {k: v for k, v in given.items() if v}
                # Its other hooks (those with arguments too) are answered by its worker, one call at a time.
                remote = [hook for hook in answer.hooks if hook not in given and hook != "rayaccel_family"]
                self.manager.adopt(name, answer.declaration, distribution=target.distribution,
                                   version=target.version, answers=given,
                                   remote=functools.partial(self.call, name), remote_hooks=remote)
            elif isinstance(answer, Reply):
                self.manager.problems.extend(answer.problems)
            else:
                self._replaced[name] = self._replaced.get(name, 0) + 1
                self.manager.problems.append(self._failed(name, str(answer)))

    @property
    def plugins(self) -> list[str]:
        return list(self.builder.plugins)

    def worker_pids(self) -> dict[str, int]:
        """Plugin name -> pid of the live worker process serving it."""
        return {t.name: pid for w in self._workers if (pid := w.pid()) is not None for t in w.targets}

    def restarts(self) -> dict[str, int]:
        """Plugin name -> how many times a worker was replaced because of it."""
        return {name: self._replaced.get(name, 0) for name in self._isolated}

    def _ask(self, request: Request, wanted: set[str], meanwhile: Callable[[], object] | None = None,
             ) -> dict[str, Reply | str]:
        """Each plugin's answer to ``request``, from the workers serving any of the ``wanted`` plugins;
        ``meanwhile`` is called once every request is sent, before the answers are read."""
        answers: dict[str, Reply | str] = {}
        sent = []
        until = time.monotonic() + self.budget if self.budget is not None else None
        for worker in self._workers:  # all requests first: the workers answer in parallel
            names = [t.name for t in worker.targets if t.name in wanted]
            if not names:
                continue
            asked = request if len(names) == len(worker.targets) else request.model_copy(update={"plugins": names})
            why = worker.request(asked)
            if why is None:
                sent.append(worker)
            else:
                answers.update({name: why for name in names})
                worker.kill()
        if meanwhile is not None:
            meanwhile()
        for worker in sent:
            got, rest = worker.answers(until, wanted)
            answers.update(got)
            while rest:  # the plugins after a failed one, in a fresh worker of their own
                retry = WorkerProcess(rest, self._timeout, worker.fork, self._server)
                why = retry.request(request.model_copy(update={"plugins": None}))
                if why is not None:
                    answers.update({t.name: why for t in rest})
                    retry.kill()
                    break
                # Their own deadline each: the failed plugin may have used up the request's budget.
                got, rest = retry.answers(None)
                answers.update(got)
                retry.kill()
        return answers

    def transports(self, plugins: Sequence[str] | None = None,
                   problems: list[Problem] | None = None) -> dict[str, list[TransportSpec]]:
        """Plugin name -> its transport declarations with what each manager class says it moves
        (``TransportSpec.moved_device_types``), of every plugin of the pool or of ``plugins``: an isolated plugin's
        classes are imported and asked in its worker, an in-process plugin's here (:meth:`PluginManager.transports`).
        A worker that fails to answer leaves its plugin's declarations as described, none of its classes asked."""
        names = [name for name in (plugins if plugins is not None else self.manager.plugin_names())
                 if name in self.manager.plugin_names()]
        sink = self.manager.problems if problems is None else problems
        asked = {name for name in names if name in self._isolated}
        answers = self._ask(Request(kind="transports"), asked) if asked else {}
        declared: dict[str, list[TransportSpec]] = {}
        for name in names:
            answer = answers.get(name)
            if isinstance(answer, Reply):
                sink.extend(p for p in answer.problems if p not in self.manager.problems)
                declared[name] = answer.transports
                continue
            if answer is not None:  # its worker failed: what it declared at describe, none of its classes asked
                self._replaced[name] = self._replaced.get(name, 0) + 1
                sink.append(self._problem(
                    name, "worker-failed", f"its worker process {answer} when its transport classes were asked what "
                    "they move; its declared devices stand for path selection and the worker is replaced",
                    "keep a transport module's import free of side effects and bounded"))
            declared[name] = self.manager.transports(name, sink)  # asked here only where its code runs here
        return declared

    def build(self, host: Host, with_metrics: bool = True, plugins: Sequence[str] | None = None) -> NodeInventory:
        """The node's inventory on ``host``, of every plugin of the pool or of ``plugins`` (a subset)."""
        return self._build(host, with_metrics, plugins, record=False)[0]

    def record(self, host: Host, plugins: Sequence[str] | None = None) -> tuple[NodeInventory, dict[str, Any]]:
        """The inventory, and what the plugins read of ``host`` while building it, as fixture ``host`` data
        (``rayaccel record``): each plugin records in its own worker, the recordings are merged here. Raises
        :class:`RecordingError` for an answer a fixture cannot express, or for a host a worker cannot rebuild."""
        from rayaccel.hosts.call_log import RecordingError
        from rayaccel.hosts.recording import merge_host_states

        if self._isolated and host_spec(host) is None:
            raise RecordingError(f"cannot record a {type(host).__name__} in plugin worker processes: record this "
                                 "machine or a simulated fixture")
        inventory, recordings = self._build(host, True, plugins, record=True)
        errors = [why for why in recordings.values() if isinstance(why, str)]
        if errors:
            raise RecordingError(errors[0] + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""))
        return inventory, merge_host_states(host.name, [r for r in recordings.values() if isinstance(r, dict)])

    def family(self, plugin: str, host: Host, problems: list[Problem], with_metrics: bool = True,
               ) -> FamilyInventory | None:
        """One plugin's family on ``host`` (None: no devices, or its build failed), built in its worker; the
        problems of that build go to ``problems``."""
        inventory = self.build(host, with_metrics, [plugin])
        problems.extend(p for p in inventory.problems if p not in self.manager.problems)
        return inventory.family(plugin) if any(f.plugin == plugin for f in inventory.families) else None

    def _build(self, host: Host, with_metrics: bool, plugins: Sequence[str] | None, record: bool,
               ) -> tuple[NodeInventory, dict[str, dict[str, Any] | str]]:
        names = [name for name in self.builder.plugins if plugins is None or name in plugins]
        recordings: dict[str, dict[str, Any] | str] = {}
        with self._lock:
            spec = self._host_spec(host)
            problems: list[Problem] = list(self.manager.problems)
            request = Request(host=spec, with_metrics=with_metrics, record=record, refresh=self.refresh and not record)
            answers = (self._ask(request, set(names))
                       if spec is not None else {})
            results: dict[str, FamilyInventory | None] = {}
            leaky: set[str] = set()
            self.kept = set()
            for name in names:
                answer = answers.get(name)
                if answer is None:  # not isolable (an object plugin, a custom host): in process
                    results[name] = self._in_process(name, host, problems, with_metrics, recordings if record else None)
                elif isinstance(answer, Reply):
                    results[name] = self._family(name, answer)
                    if answer.kept and results[name] is not None:
                        self.kept.add(name)
                    problems.extend(answer.problems)
                    if record:
                        recordings[name] = answer.recording_error or answer.recording or {}
                    if answer.idle_worker is not None:
                        self._idle_workers[name] = answer.idle_worker
                    if answer.leaked:
                        leaky.add(name)
                        problems.append(self._leak(name, answer.leaked))
                else:
                    results[name] = None
                    self._replaced[name] = self._replaced.get(name, 0) + 1
                    problems.append(self._failed(name, answer))
            for worker in self._workers:
                leaked = [t.name for t in worker.targets if t.name in leaky]
                if leaked and worker.pid() is not None:
                    worker.kill()
                    for name in leaked:
                        self._replaced[name] = self._replaced.get(name, 0) + 1
            inventory = self.builder.node(host, {name: results[name] for name in names}, problems,
                                          idle_workers=self._idle_workers)
            return inventory, recordings

    def _in_process(self, plugin: str, host: Host, problems: list[Problem], with_metrics: bool,
                    recordings: dict[str, dict[str, Any] | str] | None) -> FamilyInventory | None:
        """One plugin's family built in this process; with ``recordings``, what it read of ``host`` goes there (its
        own recording host, as a worker makes one)."""
        if recordings is None:
            return self.builder.family(plugin, host, problems, with_metrics)
        from rayaccel.hosts.call_log import RecordingError
        from rayaccel.hosts.recording import RecordingHost

        recorder = RecordingHost(host)
        family = self.builder.family(plugin, recorder, problems, with_metrics)
        try:
            recordings[plugin] = recorder.host_state()
        except RecordingError as e:
            recordings[plugin] = str(e)
        return family

    def call(self, plugin: str, hook: str, arguments: Mapping[str, Any], problems: list[Problem]) -> Any:
        """``plugin``'s answer to ``hook`` with ``arguments``, from its worker (which bounds and contains the call
        as a process calling it would): the answer as JSON, for the caller to validate, or None (a problem in
        ``problems`` says why). A host argument travels as the spec the worker rebuilds it from."""
        worker = next(w for w in self._workers if any(t.name == plugin for t in w.targets))
        host = arguments.get("host")
        spec = host_spec(host) if isinstance(host, Host) else None
        if host is not None and spec is None:
            problems.append(self._problem(
                plugin, "call-refused", f"{hook} was not called: its host ({type(host).__name__}) cannot be rebuilt "
                "in the plugin's worker process", "call it with this machine's host or a simulated fixture's"))
            return None
        if plugin in self._failed_calls:  # said once: a one-shot command would restart it for every call
            return None
        request = Request(kind="call", plugins=[plugin], hook=hook, host=spec,
                          arguments={k: to_jsonable_python(v) for k, v in arguments.items() if k != "host"})
        with self._lock:
            until = time.monotonic() + (self.budget if self.budget is not None else worker.deadline)
            why = worker.request(request)
            answer: Reply | str = why if why is not None else worker.answers(until, {plugin})[0][plugin]
            if not isinstance(answer, Reply):
                worker.kill()
                self._replaced[plugin] = self._replaced.get(plugin, 0) + 1
                self._failed_calls.add(plugin)
                problems.append(self._problem(
                    plugin, "worker-failed", f"its worker process {answer} when {hook} was called; the plugin's "
                    "hooks are not called again for this command (its inventory is built in a fresh worker)",
                    "catch vendor errors inside the plugin and bound every vendor call with a timeout"))
                return None
            problems.extend(answer.problems)
            if answer.leaked:
                problems.append(self._leak(plugin, answer.leaked))
                worker.kill()
                self._replaced[plugin] = self._replaced.get(plugin, 0) + 1
            if answer.answer_source is not None and hook == hookspec.SKU_CATALOG.name:
                catalog = SkuCatalog.model_validate(answer.answer)
                catalog._source_path = answer.answer_source  # where `rayaccel sku add` appends
                return catalog
            return answer.answer

    def _leak(self, plugin: str, leaked: str) -> Problem:
        return self._problem(plugin, "worker-leak", f"left {leaked} behind in its worker process; the worker was "
                             "replaced", "join the threads and wait for the processes a hook starts",
                             severity="warning")

    def _family(self, plugin: str, answer: Reply) -> FamilyInventory | None:
        """The family an answer gives: its own, or for a kept one the family the plugin's worker sent last, with
        the answer's new metrics."""
        if answer.kept:
            last = self._last.get(plugin)
            return last.model_copy(update={"metrics": answer.metrics}) if last is not None else None
        if self.refresh:  # what the worker compares its next refresh with
            if answer.family is None:
                self._last.pop(plugin, None)
            else:
                self._last[plugin] = answer.family
        return answer.family

    def _host_spec(self, host: Host) -> HostSpec | None:
        """:func:`host_spec` of ``host``, made once per host: a poll does not dump a simulated host's fixture
        again (hosts do not change: a simulated one switches faults through its fault file)."""
        if self._spec is None or self._spec[0] is not host:
            self._spec = (host, host_spec(host))
        return self._spec[1]

    def _failed(self, plugin: str, why: str) -> Problem:
        return self._problem(plugin, "worker-failed", f"its worker process {why}; the plugin's devices are left "
                             "out of this inventory and the worker is replaced",
                             "catch vendor errors inside the plugin and bound every vendor call with a timeout")

    def _problem(self, plugin: str, code: str, message: str, fix: str, severity: str = "error") -> Problem:
        target = self._targets.get(plugin)
        distribution = target.distribution if target is not None else self.manager.plugin(plugin).distribution
        return Problem(plugin=plugin, distribution=distribution, hook=None, code=code,
                       message=message, fix=fix, severity=severity)

    def close(self) -> None:
        with self._lock:
            for worker in self._workers:  # all killed first, then reaped: they end side by side
                worker.kill(wait=False)
            for worker in self._workers:
                worker.reap()  # the helper, if any, stays for the process's next pool

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def default_workers(plugins: int) -> int:
    """Worker processes for a one-shot inventory: one per plugin where the machine has a core for each
    (they run side by side), fewer on a small machine (each worker costs an interpreter start-up)."""
    return max(1, min(plugins, (os.cpu_count() or 1) - 1))


def isolated_inventory(manager: PluginManager, host: Host, plugins: Sequence[str] | None = None,
                       with_metrics: bool = True, workers: int | None = None) -> NodeInventory:
    """One inventory with the plugins' hooks out of process (``workers`` processes, default
    :func:`default_workers`, started in parallel, then closed)."""
    names = list(plugins) if plugins is not None else manager.plugin_names()
    with WorkerPool(manager, names, workers if workers is not None else default_workers(len(names))) as pool:
        return pool.build(host, with_metrics)


def configured_targets(manager: PluginManager, names: Sequence[str] | None = None) -> list[PluginTarget]:
    """The plugins a manager would load (entry points unless autoload is off, then ``RAYACCEL_PLUGINS``), as
    targets for workers, found without importing any of them; ``names``: only these. What the manager would
    refuse before importing (two distributions with one name, a name in ``RAYACCEL_DISABLE``) becomes its
    problem here, as :meth:`PluginManager.load_entrypoints` words it."""
    found: dict[str, PluginTarget] = {}
    blocked = disabled_plugins()
    if autoload_enabled():
        seen: dict[str, str | None] = {}
        for ep in entry_points():
            dist = ep.dist.name if ep.dist else None
            if ep.name in seen:
                manager.problems.append(Problem(
                    plugin=ep.name, distribution=dist, hook=None, code="duplicate-name",
                    message=f"two distributions register a plugin named {ep.name!r}: {seen[ep.name]} and {dist}",
                    fix=f"uninstall one of them, or disable both with {DISABLE_ENV}={ep.name}"))
                found.pop(ep.name, None)
                continue
            seen[ep.name] = dist
            found[ep.name] = PluginTarget(name=ep.name, module=ep.module, attr=ep.attr or "", distribution=dist,
                                          version=ep.dist.version if ep.dist else None)
    for name, module, attr in env_plugins():
        found.setdefault(name, PluginTarget(name=name, module=module, attr=attr))
    for name in names or []:
        if name not in found:
            raise PluginError(f"unknown plugin {name!r}; installed: {', '.join(found) or 'none'} "
                              "(run 'rayaccel plugins')")
    targets = []
    for name, target in found.items():
        if names and name not in names:
            continue
        if name in blocked:
            manager.problems.append(Problem(plugin=name, distribution=target.distribution, hook=None,
                                            code="disabled", message=f"disabled by {DISABLE_ENV}",
                                            fix=f"remove {name!r} from {DISABLE_ENV} to enable it", severity="info"))
            continue
        targets.append(target)
    return targets
