"""One worker process of :mod:`rayaccel.isolation.pool`, from the parent's side: started (or taken from the
spares started ahead), sent requests, read with a deadline, and killed with its whole process group."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import IO

from pydantic import ValidationError

from rayaccel.errors import PluginError
from rayaccel.isolation.protocol import HostSpec, PluginTarget, Reply, Request, Setup
from rayaccel.plugins.configuration import (
    DISABLE_ENV,
    PLUGINS_ENV,
    autoload_enabled,
    disabled_plugins,
    entry_points,
    env_plugins,
)
from rayaccel.schemas import describe_validation_error

#: Hooks one family request may call (discover, SKU catalog, topology, health, resources, labels,
#: metrics) plus importing and registering the plugin: with the hook timeout, the worker's deadline.
_CALLS_PER_REQUEST = 9
_STARTUP_SLACK = 20.0  # seconds: a Python process importing pydantic on a loaded machine
_MAX_REPLY = 64 * 2**20
#: What a worker process runs.
WORKER_MODULE = "rayaccel.isolation.worker"


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
    log = tempfile.TemporaryFile(prefix="rayaccel-worker-")  # noqa: SIM115 (closed by WorkerProcess.kill)
    proc = subprocess.Popen([sys.executable, "-m", WORKER_MODULE, *preload], stdin=subprocess.PIPE,
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
    found: dict[str, str] = {}
    if autoload_enabled():
        for ep in entry_points():
            found.setdefault(ep.name, ep.module)
    with contextlib.suppress(PluginError):  # a malformed RAYACCEL_PLUGINS is reported when the manager loads
        for name, module, _ in env_plugins():
            found.setdefault(name, module)
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


class WorkerProcess:
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
            return f"answered a malformed record: {describe_validation_error(e)}"

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
