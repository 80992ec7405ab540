"""One worker process of :mod:`rayaccel.isolation.pool`, from the parent's side: started, sent requests, read
with a deadline, and killed with its whole process group.

A worker starts one of three ways. Spawned (``python -m rayaccel.isolation.plugin_worker``), it pays for an
interpreter and for importing the SDK (~0.3 s of CPU). Forked from the caller, it starts with the SDK already
imported and pays only for its own plugin: a one-shot command (``rayaccel inspect``, ``rayaccel start``) forks its
workers. Forking is only safe from a process with one thread, so it is used only when asked for and when the
caller has no other thread; a caller that asked for it and has others (a process running Ray, a test runner's
worker) has its workers forked by the process's helper instead (:mod:`rayaccel.isolation.fork_server`), and
spawns them only where that helper cannot serve.
"""

from __future__ import annotations

import contextlib
import gc
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Collection, Sequence
from typing import IO

from pydantic import ValidationError

from rayaccel.isolation.fork_server import ForkServer, ServedProcess, close_fds_from
from rayaccel.isolation.protocol import HostSpec, PluginTarget, Reply, Request, Setup
from rayaccel.plugins.configuration import DISABLE_ENV, PLUGINS_ENV
from rayaccel.schemas import describe_validation_error
from rayaccel.support.signalling import held, kill_group, signal_held

#: Hooks one family request may call (discover, SKU catalog, topology, health, resources, labels,
#: metrics) plus importing and registering the plugin: with the hook timeout, the worker's deadline.
_CALLS_PER_REQUEST = 9
_STARTUP_SLACK = 20.0  # seconds: a Python process importing pydantic on a loaded machine
_MAX_REPLY = 64 * 2**20
#: What a worker process runs.
WORKER_MODULE = "rayaccel.isolation.plugin_worker"


def _worker_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (PLUGINS_ENV, DISABLE_ENV)}
    # The plugin's module was importable here: make it importable there (tests extend sys.path).
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in sys.path if p))
    return env


def _spawn() -> tuple[subprocess.Popen[bytes], IO[bytes]]:
    """A new worker process (an interpreter importing the SDK), waiting for its set-up line."""
    log = tempfile.TemporaryFile(prefix="rayaccel-worker-")  # noqa: SIM115 (closed by WorkerProcess.kill)
    proc = subprocess.Popen([sys.executable, "-m", WORKER_MODULE], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=log, env=_worker_env(), start_new_session=True,
                            close_fds=True)
    return proc, log


class ForkedProcess:
    """A worker forked from this process: the parts of :class:`subprocess.Popen` a :class:`WorkerProcess` uses."""

    def __init__(self, pid: int, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.pid, self.stdin, self.stdout = pid, stdin, stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by someone else (as Popen takes it): its number is no longer its own
                self.returncode = 0
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        until = time.monotonic() + (timeout if timeout is not None else 1e9)
        while self.poll() is None:
            if time.monotonic() >= until:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(0.005)  # polls a child already killed or exiting: a few rounds at most
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:  # once reaped, its number may be a stranger's (Popen.send_signal checks too)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


#: A worker process as :class:`WorkerProcess` drives it.
Proc = subprocess.Popen[bytes] | ForkedProcess | ServedProcess


def _unreaped(proc: Proc) -> bool:
    """Whether ``proc``'s number is still its own: nobody has reaped it (it may have ended: a zombie's number is)."""
    if isinstance(proc, ServedProcess):
        return proc.unreaped()
    return proc.returncode is None  # Popen and ForkedProcess set it as they reap


def can_fork() -> bool:
    """Whether a worker may be forked from this process now: a POSIX fork, and no thread but this one (threads
    a C library started count too, where /proc shows them)."""
    if not hasattr(os, "fork") or threading.active_count() != 1:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return True


def _fork(env: dict[str, str]) -> tuple[ForkedProcess, IO[bytes]]:
    """A worker forked from this process (see the module's docstring); ``env`` becomes its environment."""
    from rayaccel.isolation import plugin_worker  # imported once here, not in every worker

    plugin_worker.build_validators()  # once here too (the first fork), not in every worker

    log = tempfile.TemporaryFile(prefix="rayaccel-worker-")  # noqa: SIM115 (closed by WorkerProcess.kill)
    request_read, request_write = os.pipe()
    answer_read, answer_write = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # nothing buffered here may be written twice by the child
        with contextlib.suppress(Exception):
            stream.flush()
    gc.freeze()  # the worker's collector leaves the caller's objects alone: their pages stay shared, not copied
    pid = os.fork()
    if pid != 0:
        gc.unfreeze()
    else:  # the worker: never returns into the caller's code
        code = 1
        try:
            os.setsid()
            os.dup2(request_read, 0)
            os.dup2(answer_write, 1)
            os.dup2(log.fileno(), 2)
            close_fds_from(3)  # the caller's other pipes and files are not the plugin's
            os.environ.clear()
            os.environ.update(env)
            from rayaccel.isolation.plugin_worker import worker_main

            code = worker_main()
        finally:
            os._exit(code)
    os.close(request_read)
    os.close(answer_write)
    return ForkedProcess(pid, os.fdopen(request_write, "wb"), os.fdopen(answer_read, "rb")), log


class WorkerProcess:
    """The worker process of one or more plugins, started on demand and killed (with its process group)
    on misbehaviour. Its plugins are served in order; a plugin's answer must come within its deadline."""

    def __init__(self, targets: Sequence[PluginTarget], timeout: float, fork: bool = False,
                 server: ForkServer | None = None) -> None:
        self.targets = list(targets)
        self.timeout = timeout
        self.fork = fork  # forked from this process when it can be (can_fork), else by ``server``, else spawned
        self.server = server
        self.proc: Proc | None = None
        self._log: IO[bytes] | None = None
        self._buffer = b""
        self.started = 0  # how many processes this worker has had (replacements + 1)
        self._dying: list[tuple[Proc | None, IO[bytes] | None]] = []  # killed, not yet reaped (kill(wait=False))
        self._host_sent: HostSpec | None = None  # the host this process has (a request without one keeps it)

    @property
    def deadline(self) -> float:
        """Seconds one plugin's answer may take (its hooks, its import, and a process start)."""
        return self.timeout * _CALLS_PER_REQUEST + _STARTUP_SLACK

    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def start(self) -> None:
        env = _worker_env()
        started: tuple[Proc, IO[bytes]] | None = None
        if self.fork and can_fork():
            started = _fork(env)
        elif self.fork and self.server is not None:
            log = tempfile.TemporaryFile(prefix="rayaccel-worker-")  # noqa: SIM115 (closed by kill)
            served = self.server.start(env, log)
            if served is None:
                log.close()
            else:
                started = served, log
        self.proc, self._log = started or _spawn()
        self._buffer = b""
        self._host_sent = None
        self.started += 1
        self._send(Setup(plugins=self.targets, timeout=self.timeout).model_dump_json())

    def _send(self, line: str) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, request: Request) -> str | None:
        """Send a request (starting the process first if needed); a failure to send is returned as a reason."""
        try:
            if self.proc is None or self.proc.poll() is not None:
                self.kill()
                self.start()
            host = request.host
            if host is not None and host is self._host_sent:  # sent once per process: a fixture is ~35 KB of JSON
                request = request.model_copy(update={"host": None})
            self._send(request.model_dump_json())
            self._host_sent = host or self._host_sent
        except OSError as e:
            return f"could not be sent the request ({type(e).__name__}: {e})"
        return None

    def answers(self, until: float | None = None, names: Collection[str] | None = None,
                ) -> tuple[dict[str, Reply | str], list[PluginTarget]]:
        """Each plugin's answer (of the plugins ``names``, the request's, default all), or why there is none;
        on a failure the worker is killed, and the plugins after the failed one are returned unanswered (to be
        asked again in a fresh worker). ``until``: a :func:`time.monotonic` time no answer is waited for past
        (a command's whole budget)."""
        answers: dict[str, Reply | str] = {}
        targets = [t for t in self.targets if names is None or t.name in names]
        for i, target in enumerate(targets):
            due = time.monotonic() + self.deadline
            answer = self.receive(due if until is None else min(due, until))
            if isinstance(answer, Reply) and answer.plugin != target.name:
                answer = f"answered for {answer.plugin!r} when {target.name!r} was due"
            answers[target.name] = answer
            if not isinstance(answer, Reply):
                self.kill()
                return answers, targets[i + 1:]
        return answers, []

    def receive(self, until: float) -> Reply | str:
        """The worker's next answer, or why there is none (it died, timed out, answered garbage)."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        waited = max(0.0, until - time.monotonic())
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = until - time.monotonic()
                # Past the deadline, an answer already in the pipe is still taken: the time may have gone on
                # another worker's hang while this one answered (read one worker after the other).
                if not selector.select(max(0.0, left)):
                    if left <= 0:
                        return f"did not answer within {waited:.3g}s"
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

    def kill(self, wait: bool = True) -> None:
        """Kill the worker, its process group and every process it started; reap it. ``wait=False`` leaves
        the reaping to :meth:`reap`: a pool closing kills all its workers before it waits for any."""
        proc, self.proc = self.proc, None
        log, self._log = self._log, None
        if proc is not None:
            from rayaccel.isolation.plugin_worker import descendant_pids

            # Its number names it only until it is reaped (poll and wait reap it); after, the number may be a
            # stranger's, and so would the children found under it. Descendants are found before the kill
            # (orphans are nobody's) and held by identity: one may end, and its number be taken, meanwhile.
            unreaped = _unreaped(proc)
            descendants = held(descendant_pids(proc.pid)) if unreaped else []
            kill_group(proc.pid, unreaped)
            signal_held(descendants)  # those that left the group (setsid) too
        self._dying.append((proc, log))
        if wait:
            self.reap()

    def reap(self) -> None:
        """Wait for the worker processes killed, and close what they used."""
        dying, self._dying = self._dying, []
        for proc, log in dying:
            if proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)
                for stream in (proc.stdin, proc.stdout):
                    with contextlib.suppress(OSError):
                        if stream is not None:
                            stream.close()
            if log is not None:
                with contextlib.suppress(OSError):
                    log.close()
