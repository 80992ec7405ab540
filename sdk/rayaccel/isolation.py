"""Plugin hooks out of process: worker processes answering with validated records, one per plugin.

In-process isolation (a thread and a timeout per hook, :mod:`rayaccel.manager`) cannot stop a plugin
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
(anything but :class:`~rayaccel.host.RealHost` and :class:`~rayaccel.simulated.SimulatedHost`), runs in
process, as before.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from types import ModuleType
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rayaccel.host import Host, RealHost
from rayaccel.inventory import InventoryBuilder
from rayaccel.manager import DISABLE_ENV, PLUGINS_ENV, PluginManager
from rayaccel.records import FamilyInventory, NodeInventory, Problem

WORKER_MEMORY_ENV = "RAYACCEL_WORKER_MEMORY_MIB"
DEFAULT_WORKER_MEMORY_MIB = 4096
#: Hooks one family request may call (discover, SKU catalog, topology, health, resources, labels,
#: metrics) plus importing and registering the plugin: with the hook timeout, the worker's deadline.
_CALLS_PER_REQUEST = 9
_STARTUP_SLACK = 20.0  # seconds: a Python process importing pydantic on a loaded machine
_MAX_REPLY = 64 * 2**20


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HostSpec(_Message):
    """How a worker rebuilds the host: this machine (under a root), or a simulated fixture."""

    kind: Literal["real", "simulated"]
    root: str = "/"
    env: dict[str, str] | None = None
    fixture: dict[str, Any] | None = None
    faults: list[str] = Field(default_factory=list)
    fault_file: str | None = None


class PluginTarget(_Message):
    name: str
    module: str
    distribution: str | None = None
    version: str | None = None


class Setup(_Message):
    plugins: list[PluginTarget]
    host: HostSpec
    timeout: float


class Request(_Message):
    with_metrics: bool = True


class Reply(_Message):
    """One plugin's answer; a worker serving several plugins answers one line per plugin, in order."""

    plugin: str
    family: FamilyInventory | None = None
    problems: list[Problem] = Field(default_factory=list)
    #: Set when the worker is left with threads or child processes it did not start with.
    leaked: str | None = None


def host_spec(host: Host) -> HostSpec | None:
    """The spec a worker rebuilds ``host`` from, or None when it cannot be rebuilt in another process."""
    from rayaccel.simulated import SimulatedHost

    if type(host) is RealHost:
        return HostSpec(kind="real", root=host._root, env=dict(host._env) if host._env is not None else None)
    if type(host) is SimulatedHost:
        return HostSpec(kind="simulated", fixture=host.fixture.model_dump(mode="json", by_alias=True),
                        faults=list(host._faults), fault_file=host._fault_file)
    return None


def plugin_target(manager: PluginManager, name: str) -> PluginTarget | None:
    """What a worker imports to load plugin ``name``; None for a plugin that is not an importable module."""
    loaded = manager.plugin(name)
    module = loaded.module
    if not isinstance(module, ModuleType) or sys.modules.get(module.__name__) is not module:
        return None
    return PluginTarget(name=name, module=module.__name__, distribution=loaded.distribution, version=loaded.version)


def worker_memory_mib() -> int:
    raw = os.environ.get(WORKER_MEMORY_ENV, "")
    if not raw.strip():
        return DEFAULT_WORKER_MEMORY_MIB
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        from rayaccel.errors import PluginError

        raise PluginError(f"{WORKER_MEMORY_ENV}={raw!r} must be a whole number of MiB (0: no limit)")
    return value


# The parent side --------------------------------------------------------------------------------


# Spares remember the environment they were started with: one started before a setting changed (a memory
# limit, a path) is never handed out for a request made under the new one.
_spares: list[tuple[subprocess.Popen[bytes], IO[bytes], dict[str, str]]] = []
_spares_lock = threading.Lock()


def _worker_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (PLUGINS_ENV, DISABLE_ENV)}
    # The plugin's module was importable here: make it importable there (tests extend sys.path).
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in sys.path if p))
    return env


def _spawn(preload: Sequence[str] = (), env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], IO[bytes]]:
    """A new worker process, importing ``preload`` (module names) while it waits for its set-up line."""
    env = env if env is not None else _worker_env()
    log = tempfile.TemporaryFile(prefix="rayaccel-worker-")  # noqa: SIM115 (closed by _Worker.kill)
    proc = subprocess.Popen([sys.executable, "-m", "rayaccel.isolation", *preload], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=log, env=env, start_new_session=True, close_fds=True)
    return proc, log


def _spare() -> tuple[subprocess.Popen[bytes], IO[bytes]] | None:
    wanted = _worker_env()
    with _spares_lock:
        while _spares:
            proc, log, env = _spares.pop()
            if proc.poll() is None and env == wanted:
                return proc, log
            proc.kill()
            proc.wait()
            log.close()
    return None


def plugin_modules(names: Sequence[str] | None = None) -> list[str]:
    """The modules of the plugins a manager would load (entry points unless disabled or autoload is off,
    and ``RAYACCEL_PLUGINS``), or of the plugins ``names``, found without importing any of them."""
    import importlib.metadata

    from rayaccel.manager import ENTRY_POINT_GROUP, NO_AUTOLOAD_ENV, disabled_plugins

    found: dict[str, str] = {}
    if os.environ.get(NO_AUTOLOAD_ENV, "") not in ("1", "true", "yes"):
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            found.setdefault(ep.name, ep.module)
    for item in os.environ.get(PLUGINS_ENV, "").split(","):
        name, _, target = item.strip().partition("=")
        if name and target:
            found.setdefault(name, target.partition(":")[0])
    blocked = disabled_plugins()
    return sorted({module for name, module in found.items()
                   if name not in blocked and (names is None or name in names)})


def prestart(count: int, preload: Sequence[str] = ()) -> None:
    """Start ``count`` workers now, before the plugins are known, importing ``preload`` (the plugins'
    modules, :func:`plugin_modules`): their start-up then overlaps with the caller's own (``rayaccel
    start`` calls this first). Unused ones exit with their parent."""
    env = _worker_env()
    spawned = [(*_spawn(preload, env), env) for _ in range(max(0, count))]
    with _spares_lock:
        _spares.extend(spawned)


class _Worker:
    """The worker process of one or more plugins, started on demand and killed (with its process group)
    on misbehaviour. Its plugins are served in order; a plugin's answer must come within its deadline."""

    def __init__(self, targets: Sequence[PluginTarget], timeout: float) -> None:
        self.targets = list(targets)
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.host: HostSpec | None = None
        self._log: IO[bytes] | None = None
        self._buffer = b""
        self.started = 0  # how many processes this worker has had (replacements + 1)

    @property
    def deadline(self) -> float:
        """Seconds one plugin's answer may take (its hooks, its import, and a process start)."""
        return self.timeout * _CALLS_PER_REQUEST + _STARTUP_SLACK

    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def start(self, host: HostSpec) -> None:
        self.proc, self._log = _spare() or _spawn()
        self.host = host
        self._buffer = b""
        self.started += 1
        self._send(Setup(plugins=self.targets, host=host, timeout=self.timeout).model_dump_json())

    def _send(self, line: str) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, host: HostSpec, request: Request) -> str | None:
        """Send a request (starting the process first if needed); a failure to send is returned as a reason."""
        try:
            if self.proc is None or self.proc.poll() is not None or host != self.host:
                self.kill()
                self.start(host)
            self._send(request.model_dump_json())
        except OSError as e:
            return f"could not be sent the request ({type(e).__name__}: {e})"
        return None

    def answers(self) -> tuple[dict[str, Reply | str], list[PluginTarget]]:
        """Each plugin's answer, or why there is none; on a failure the worker is killed, and the plugins
        after the failed one are returned unanswered (to be asked again in a fresh worker)."""
        answers: dict[str, Reply | str] = {}
        for i, target in enumerate(self.targets):
            answer = self.receive(time.monotonic() + self.deadline)
            if isinstance(answer, Reply) and answer.plugin != target.name:
                answer = f"answered for {answer.plugin!r} when {target.name!r} was due"
            answers[target.name] = answer
            if not isinstance(answer, Reply):
                self.kill()
                return answers, self.targets[i + 1:]
        return answers, []

    def receive(self, until: float) -> Reply | str:
        """The worker's next answer, or why there is none (it died, timed out, answered garbage)."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = until - time.monotonic()
                if left <= 0:
                    return f"did not answer within {self.deadline:g}s"
                if not selector.select(left):
                    continue
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return self._death()
                self._buffer += chunk
                if len(self._buffer) > _MAX_REPLY:
                    return f"answered more than {_MAX_REPLY >> 20} MiB"
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            return Reply.model_validate_json(line)
        except ValidationError as e:
            return f"answered a malformed record ({e.error_count()} errors)"

    def _death(self) -> str:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "closed its answer pipe without exiting"
        how = f"was killed by signal {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        tail = self.stderr_tail()
        return how + (f"; its last output: {tail}" if tail else "")

    def stderr_tail(self) -> str:
        if self._log is None:
            return ""
        try:
            self._log.seek(max(0, self._log.seek(0, os.SEEK_END) - 2000))
            lines = [ln.strip() for ln in self._log.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return lines[-1][:300] if lines else ""

    def kill(self) -> None:
        """Kill the worker, its process group and every process it started; reap it."""
        proc, self.proc = self.proc, None
        if proc is not None:
            descendants = []
            with contextlib.suppress(Exception):
                import psutil

                descendants = psutil.Process(proc.pid).children(recursive=True)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            for child in descendants:  # those that left the group (setsid) too
                with contextlib.suppress(Exception):
                    child.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            for stream in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError):
                    if stream is not None:
                        stream.close()
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None


class WorkerPool:
    """Builds a node's inventory with the plugins' hooks in worker processes.

    ``workers``: how many processes share the plugins (each plugin always in one of them, the plugins of
    a process served in turn); default one per plugin. Workers start on the first :meth:`build` and stay
    up until :meth:`close` (use the pool as a context manager), so a monitor polling through one pool pays
    the start-up once. When a worker fails, the plugin it was serving gets a problem and the plugins after
    it in that worker are asked again in a fresh one: a dying plugin never loses the others' results.
    """

    def __init__(self, manager: PluginManager, plugins: Sequence[str] | None = None,
                 workers: int | None = None) -> None:
        self.manager = manager
        self.builder = InventoryBuilder(manager, plugins)
        self._lock = threading.Lock()
        self._timeout = float(manager.timeout or 0)
        targets = [t for t in (plugin_target(manager, name) for name in self.builder.plugins) if t is not None]
        count = max(1, min(len(targets), workers if workers is not None else len(targets)))
        self._workers = [_Worker(targets[i::count], self._timeout) for i in range(count) if targets[i::count]]
        self._isolated = {t.name for t in targets}
        self._replaced: dict[str, int] = {}

    @property
    def plugins(self) -> list[str]:
        return list(self.builder.plugins)

    def worker_pids(self) -> dict[str, int]:
        """Plugin name -> pid of the live worker process serving it."""
        return {t.name: pid for w in self._workers if (pid := w.pid()) is not None for t in w.targets}

    def restarts(self) -> dict[str, int]:
        """Plugin name -> how many times a worker was replaced because of it."""
        return {name: self._replaced.get(name, 0) for name in self._isolated}

    def _ask(self, spec: HostSpec, request: Request) -> dict[str, Reply | str]:
        answers: dict[str, Reply | str] = {}
        sent = []
        for worker in self._workers:  # all requests first: the workers answer in parallel
            why = worker.request(spec, request)
            if why is None:
                sent.append(worker)
            else:
                answers.update({t.name: why for t in worker.targets})
                worker.kill()
        for worker in sent:
            got, rest = worker.answers()
            answers.update(got)
            while rest:  # the plugins after a failed one, in a fresh worker of their own
                retry = _Worker(rest, self._timeout)
                why = retry.request(spec, request)
                if why is not None:
                    answers.update({t.name: why for t in rest})
                    retry.kill()
                    break
                got, rest = retry.answers()
                answers.update(got)
                retry.kill()
        return answers

    def build(self, host: Host, with_metrics: bool = True) -> NodeInventory:
        with self._lock:
            spec = host_spec(host)
            problems: list[Problem] = list(self.manager.problems)
            answers = self._ask(spec, Request(with_metrics=with_metrics)) if spec is not None else {}
            results: dict[str, FamilyInventory | None] = {}
            leaky: set[str] = set()
            for name in self.builder.plugins:
                answer = answers.get(name)
                if answer is None:  # not isolable (an object plugin, a custom host): in process
                    results[name] = self.builder.family(name, host, problems, with_metrics)
                elif isinstance(answer, Reply):
                    results[name] = answer.family
                    problems.extend(answer.problems)
                    if answer.leaked:
                        leaky.add(name)
                        problems.append(self._problem(
                            name, "worker-leak", f"left {answer.leaked} behind in its worker process; the "
                            "worker was replaced", "join the threads and wait for the processes a hook starts",
                            severity="warning"))
                else:
                    results[name] = None
                    self._replaced[name] = self._replaced.get(name, 0) + 1
                    problems.append(self._problem(
                        name, "worker-failed", f"its worker process {answer}; the plugin's devices are "
                        "left out of this inventory and the worker is replaced",
                        "catch vendor errors inside the plugin and bound every vendor call with a timeout"))
            for worker in self._workers:
                leaked = [t.name for t in worker.targets if t.name in leaky]
                if leaked and worker.pid() is not None:
                    worker.kill()
                    for name in leaked:
                        self._replaced[name] = self._replaced.get(name, 0) + 1
            families = [f for f in (results[name] for name in self.builder.plugins) if f is not None]
            resources = self.builder._node_resources(families, problems)
            labels = self.builder._node_labels(families, problems)
            return NodeInventory(host=host.name, simulated=host.simulated, families=families,
                                 resources=resources, labels=labels, problems=problems)

    def _problem(self, plugin: str, code: str, message: str, fix: str, severity: str = "error") -> Problem:
        return Problem(plugin=plugin, distribution=self.manager.plugin(plugin).distribution, hook=None, code=code,
                       message=message, fix=fix, severity=severity)

    def close(self) -> None:
        with self._lock:
            for worker in self._workers:
                worker.kill()

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


# The worker side --------------------------------------------------------------------------------


def _make_host(spec: HostSpec) -> Host:
    if spec.kind == "real":
        return RealHost(spec.root, spec.env)
    from rayaccel.fixtures import Fixture
    from rayaccel.simulated import SimulatedHost

    return SimulatedHost(Fixture.model_validate(spec.fixture), faults=spec.faults, fault_file=spec.fault_file)


def _watch_parent(parent: int) -> None:
    # A worker never outlives its parent, even when a hook holds it in C code and EOF goes unread.
    while True:
        time.sleep(1)
        if os.getppid() != parent:
            os._exit(3)


def _footprint() -> tuple[int, int]:
    import psutil

    return threading.active_count(), len(psutil.Process().children(recursive=True))


def _leaks(before: tuple[int, int], after: tuple[int, int]) -> str | None:
    threads, children = after[0] - before[0], after[1] - before[1]
    parts = []
    if threads > 0:
        parts.append(f"{threads} thread{'s' if threads > 1 else ''}")
    if children > 0:
        parts.append(f"{children} child process{'es' if children > 1 else ''}")
    return " and ".join(parts) or None


def worker_main() -> int:
    """Entry point of a worker process (``python -m rayaccel.isolation``): see the module docstring."""
    requests = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # whatever a plugin prints lands in the worker's log, never on the protocol
    limit = worker_memory_mib()
    if limit:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit * 2**20, limit * 2**20))
    threading.Thread(target=_watch_parent, args=(os.getppid(),), name="rayaccel-parent-watch", daemon=True).start()
    for module in sys.argv[1:]:  # prestarted: import the likely plugins while the parent gets ready
        with contextlib.suppress(BaseException):  # a failure is reported when the plugin is loaded for real
            importlib.import_module(module)
    first = requests.readline()
    if not first.strip():
        return 0  # a spare worker whose parent never needed it
    setup = Setup.model_validate_json(first)
    manager = PluginManager(autoload=False, timeout=setup.timeout)
    host = _make_host(setup.host)
    builder = InventoryBuilder(manager, [])
    loaded: dict[str, list[Problem] | None] = {}  # plugin -> its load problems; None: not loaded yet
    baseline = _footprint()
    for line in requests:
        request = Request.model_validate_json(line)
        for target in setup.plugins:
            environ = dict(os.environ)  # restored after each turn: plugins sharing a worker never see
            if loaded.get(target.name) is None:  # imported at its first turn: a hang is blamed on it
                loaded[target.name] = _load(manager, target)
            problems = list(loaded[target.name] or [])
            family = None
            if target.name in manager.plugin_names():
                try:
                    family = builder.family(target.name, host, problems, request.with_metrics)
                except Exception as e:  # an SDK-side failure on this plugin's data: say so, keep the worker
                    problems.append(Problem(plugin=target.name, distribution=target.distribution, hook=None,
                                            code="inventory-failed", message=f"{type(e).__name__}: {e}",
                                            fix="report this to the plugin's maintainers with the inventory input"))
            if dict(os.environ) != environ:  # one another's environment changes
                os.environ.clear()
                os.environ.update(environ)
            now = _footprint()
            leaked = _leaks(baseline, now)
            baseline = now if leaked else baseline  # blame each leak on one plugin only
            reply = Reply(plugin=target.name, family=family, problems=problems, leaked=leaked)
            answers.write(reply.model_dump_json().encode() + b"\n")
            answers.flush()
    return 0


def _load(manager: PluginManager, target: PluginTarget) -> list[Problem]:
    before = len(manager.problems)
    try:
        module: object = importlib.import_module(target.module)
    except BaseException as e:  # reported with every answer, like a plugin that failed to load
        return [Problem(plugin=target.name, distribution=target.distribution, hook=None, code="hook-raised",
                        message=f"failed to import {type(e).__name__}: {e}", fix="make the plugin importable")]
    manager.register(module, target.name, distribution=target.distribution, version=target.version)
    return manager.problems[before:]


if __name__ == "__main__":
    sys.exit(worker_main())
