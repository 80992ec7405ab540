"""Plugin workers forked by a helper process of their pool, for a caller that cannot fork them itself.

A worker forked from the caller starts with the SDK imported and pays only for its own plugin; a spawned one pays
for an interpreter and the SDK each (~0.3 s of CPU). Forking is safe only from a process with one thread, and many
callers have more (a test runner's I/O thread, the thread torch starts at import, Ray's): they spawned every worker,
five a command with the five reference plugins installed. A :class:`ForkServer` spawns one process instead
(``python -m rayaccel.isolation.fork_server``): one thread, the SDK imported, which forks each worker on request and
says when one exits. A worker it forks is a spawned worker in all but the start-up: a process that never ran the
caller's code or imported a plugin, in a session of its own, with the caller's environment and working directory of
the moment. The helper's modules were imported with the environment it started with: it says which variables its
start-up read (:class:`ReadNames`), and a worker whose environment differs from its start in one of those, or in one
the interpreter reads as it starts (:data:`INTERPRETER_PREFIXES`, :data:`INTERPRETER_NAMES`), is forked by a helper
started again for it (when none of the old one's workers runs) or spawned, as before; so is every worker once the
helper failed to start or answer.

One helper serves every pool of the process (:func:`process_server`; each start-up is ~0.2 s of CPU, and a test
runner's worker makes a pool per command it runs). It ends with the process: closed at its exit (``atexit``), or when
the caller's end of its socket closes (the caller died, or replaced itself with ``exec``); a child the caller forks
starts without it.

What crosses the Unix socket (``SOCK_SEQPACKET``: one message a send): a request is a JSON object (``cwd``,
``env``) with the worker's three descriptors (its requests, its answers, its log) attached; the helper first says
``ready NAMES`` (a JSON list of the variables its start-up read, or null where it read them all), then answers
``pid PID`` with a pidfd of the worker attached (the caller asks the kernel whether it has ended, as a parent asks
``waitpid``), and ``exit PID CODE`` once it has reaped it (``CODE`` as :attr:`subprocess.Popen.returncode`).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, MutableMapping
from typing import IO

from rayaccel.support.signalling import pidfd_signal

#: The largest message either side sends (a request carries the worker's whole environment).
MAX_MESSAGE = 1 << 20
#: Seconds the helper may take to answer a start (the first waits for its own start-up: a Python process
#: importing pydantic on a loaded machine).
ANSWER_TIMEOUT_S = 20.0
#: Seconds the helper gets to end once closed, before it is killed.
CLOSE_TIMEOUT_S = 5.0
#: Variables the interpreter reads as it starts, before any module of the helper's: its own settings (PYTHONPATH
#: makes sys.path, ...), the locale (the encodings of streams and file names), the time zone (``time``'s constants),
#: the home of the user's site-packages. A worker whose values differ is never forked by a helper started with others.
INTERPRETER_PREFIXES = ("PYTHON", "LC_")
INTERPRETER_NAMES = frozenset({"LANG", "LANGUAGE", "TZ", "HOME"})


class ReadNames(MutableMapping[str, str]):
    """``os.environ`` as the helper's start-up sees it: the same variables, and every name looked up kept in
    :attr:`names` (None once the whole environment was walked or copied: then every name counts)."""

    def __init__(self, environ: MutableMapping[str, str]) -> None:
        self.environ = environ
        self.names: set[str] | None = set()

    def _all(self) -> None:
        self.names = None

    def __getitem__(self, name: str) -> str:
        if self.names is not None:
            self.names.add(name)
        return self.environ[name]

    def __setitem__(self, name: str, value: str) -> None:
        self.environ[name] = value

    def __delitem__(self, name: str) -> None:
        del self.environ[name]

    def __iter__(self) -> Iterator[str]:
        self._all()
        return iter(self.environ)

    def __len__(self) -> int:
        self._all()
        return len(self.environ)

    def copy(self) -> dict[str, str]:
        self._all()
        return dict(self.environ)


class ForkServer:
    """A helper process, started at the first worker asked of it; :meth:`start` gives a worker it forked, or None
    (the caller then spawns the worker itself). Thread-safe; :func:`process_server` is the process's own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._socket: socket.socket | None = None
        self._env: dict[str, str] = {}
        self._read: set[str] | None = None  # the variables the helper's start-up read (None: all of them)
        self._exits: dict[int, int] = {}
        self._running: set[int] = set()  # workers the helper forked and has not said ended
        self._started: tuple[int, int] | None = None  # the last worker the helper answered: pid, pidfd
        self._ready = False
        self._broken = not (hasattr(os, "pidfd_open") and hasattr(socket, "send_fds"))

    @property
    def pid(self) -> int | None:
        """The helper's pid while it runs (None before its first worker, and once closed)."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    def serves(self, env: dict[str, str]) -> bool:
        """Whether a worker with ``env`` is what a worker spawned with it would be: the helper started with the same
        values of what it read at its start-up and of what the interpreter reads."""
        if self._read is None:
            return env == self._env
        names = self._read | {name for name in (*env, *self._env)
                              if name.startswith(INTERPRETER_PREFIXES) or name in INTERPRETER_NAMES}
        return all(env.get(name) == self._env.get(name) for name in names)

    def start(self, env: dict[str, str], log: IO[bytes]) -> ServedProcess | None:
        """A worker forked by the helper with ``env``, its stderr ``log``; None where the helper cannot serve it."""
        with self._lock:
            if self._broken:
                return None
            if self._socket is not None and not self.serves(env) and not self._busy():
                self._stop()  # started for another environment, and none of its workers runs: started again
            if self._process is None:
                self._launch(env)
            if self._socket is None or not self.serves(env):
                return None
            request_read, request_write = os.pipe()
            answer_read, answer_write = os.pipe()
            try:
                message = json.dumps({"cwd": os.getcwd(), "env": env}).encode()
                socket.send_fds(self._socket, [message], [request_read, answer_write, log.fileno()])
                started: tuple[int, int] | None = self._next_pid(time.monotonic() + ANSWER_TIMEOUT_S)
            except (OSError, ValueError, TimeoutError):
                started = None
            finally:
                os.close(request_read)
                os.close(answer_write)
            if started is None:  # the helper failed: every later worker of the process is spawned
                os.close(request_write)
                os.close(answer_read)
                self._broken = True
                self._stop()
                return None
            return ServedProcess(self, *started, os.fdopen(request_write, "wb"), os.fdopen(answer_read, "rb"))

    def _launch(self, env: dict[str, str]) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "rayaccel.isolation.fork_server", str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, pass_fds=(theirs.fileno(),), env=env,
                start_new_session=True)
        except OSError:
            mine.close()
            self._broken = True
            return
        finally:
            theirs.close()
        self._socket, self._env, self._ready = mine, dict(env), False
        try:  # what its start-up read, before anything is asked of it
            until = time.monotonic() + ANSWER_TIMEOUT_S
            while not self._ready:
                if not self._receive(until - time.monotonic()) and time.monotonic() >= until:
                    raise TimeoutError("the fork server did not start")
        except (OSError, ValueError, TimeoutError):
            self._broken = True
            self._stop()

    def _busy(self) -> bool:
        """Whether a worker the helper forked may still run (what it said meanwhile read first)."""
        with contextlib.suppress(OSError):
            while self._socket is not None and self._receive(0):
                pass
        return bool(self._running)

    def _receive(self, timeout: float) -> bool:
        """Read one message within ``timeout`` seconds (an exit is recorded); False when none came."""
        assert self._socket is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._socket, selectors.EVENT_READ)
            if not selector.select(max(0.0, timeout)):
                return False
        data, fds, _, _ = socket.recv_fds(self._socket, MAX_MESSAGE, 1)
        if not data:
            raise OSError("the fork server closed its socket")
        kind, _, rest = data.decode().partition(" ")
        numbers = rest.split()
        if kind == "exit":
            self._exits[int(numbers[0])] = int(numbers[1])
            self._running.discard(int(numbers[0]))
        elif kind == "pid" and fds:
            self._started = int(numbers[0]), fds[0]
            self._running.add(self._started[0])
        elif kind == "ready":
            read = json.loads(rest)
            self._read = None if read is None else set(read)
            self._ready = True
        return True

    def _next_pid(self, until: float) -> tuple[int, int]:
        self._started = None
        while self._started is None:
            if not self._receive(until - time.monotonic()) and time.monotonic() >= until:
                raise TimeoutError("the fork server did not answer")
        return self._started

    def exit_code(self, pid: int, timeout: float = 0.0) -> int | None:
        """The worker's exit code, once the helper has said it ended (waiting up to ``timeout`` seconds)."""
        until = time.monotonic() + timeout
        with self._lock:
            with contextlib.suppress(OSError):  # the helper gone: a worker it did not report stays unknown
                while pid not in self._exits and self._socket is not None:
                    if not self._receive(until - time.monotonic()) and time.monotonic() >= until:
                        break
            return self._exits.pop(pid, None)

    def _stop(self) -> None:
        if self._socket is not None:
            self._socket.close()  # the helper reads the end of its socket and exits
            self._socket = None
        if self._process is not None:
            try:
                self._process.wait(timeout=CLOSE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None
        self._running.clear()  # the helper is gone: nobody is left to say when they end (their pidfds do)

    def close(self) -> None:
        """End the helper (the workers it forked keep running until their pools end them)."""
        with self._lock:
            self._stop()


_process_lock = threading.Lock()
_process_server: list[ForkServer] = []


def process_server() -> ForkServer:
    """The helper every pool of this process shares (not started until a worker is asked of it)."""
    with _process_lock:
        if not _process_server:
            _process_server.append(ForkServer())
        return _process_server[0]


def _close_process_server() -> None:
    with _process_lock:
        for server in _process_server:
            server.close()


def _forget_process_server() -> None:
    """In a child this process forked: the parent's helper is not the child's, and the child's copy of its socket
    must not keep it running once the parent has ended."""
    global _process_lock
    _process_lock = threading.Lock()
    for server in _process_server:
        if server._socket is not None:
            server._socket.close()
    _process_server.clear()


atexit.register(_close_process_server)
os.register_at_fork(after_in_child=_forget_process_server)


class ServedProcess:
    """A worker the helper forked: the parts of :class:`subprocess.Popen` a :class:`WorkerProcess` uses. Whether it
    has ended is asked of the kernel (a pidfd the helper opened at the fork), as a parent's ``waitpid`` would; its
    exit code comes from the helper, which reaps it."""

    def __init__(self, server: ForkServer, pid: int, pidfd: int, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self._server = server
        self._pidfd: int | None = pidfd
        self.pid, self.stdin, self.stdout = pid, stdin, stdout
        self.returncode: int | None = None

    def _ended(self, timeout: float) -> bool:
        if self._pidfd is None:
            return True
        with selectors.DefaultSelector() as selector:
            selector.register(self._pidfd, selectors.EVENT_READ)
            return bool(selector.select(max(0.0, timeout)))

    def _code(self) -> int:
        """Once it has ended: the code the helper reports (it says so as it reaps the worker)."""
        code = self._server.exit_code(self.pid, ANSWER_TIMEOUT_S)
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        return code if code is not None else 1  # the helper ended first, without saying: a failure of unknown cause

    def poll(self) -> int | None:
        if self.returncode is None and self._ended(0):
            self.returncode = self._code()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not self._ended(timeout if timeout is not None else 1e9):
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            self.returncode = self._code()
        return self.returncode

    def unreaped(self) -> bool:
        """Whether its number is still its own: the helper has not reaped it (it may have ended)."""
        return pidfd_signal(self._pidfd, 0)

    def kill(self) -> None:
        # Through the pidfd, never by number: the helper reaps it, and may have done so already.
        pidfd_signal(self._pidfd, signal.SIGKILL)


# The helper's side ------------------------------------------------------------------------------------------


def close_fds_from(low: int) -> None:
    """Close every descriptor of this process from ``low`` up (in a worker just forked: the caller's other pipes
    and files are not the plugin's)."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(low, 1024))
    for fd in fds:
        if fd >= low:
            with contextlib.suppress(OSError):
                os.close(fd)


def _worker(request: dict[str, object], fds: list[int]) -> None:
    """In the forked child: become the worker (as :func:`rayaccel.isolation.process._fork` makes one); never
    returns."""
    code = 1
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        close_fds_from(3)  # the helper's socket and the other workers' descriptors are not this plugin's
        os.chdir(str(request["cwd"]))
        sys.path[0] = str(request["cwd"])  # the helper's start-up directory, as `python -m` put it: the worker's own
        env = request["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update(env)
        from rayaccel.isolation.plugin_worker import worker_main

        code = worker_main()
    except BaseException:
        import traceback

        traceback.print_exc()  # into the worker's log, which the pool quotes
    finally:
        os._exit(code)


def serve(sock: socket.socket) -> int:
    """Say what the start-up read, fork a worker for each request on ``sock``, answer its pid, and say when each
    ends; return once the caller's end closes."""
    import gc

    read = ReadNames(os.environ)
    setattr(os, "environ", read)  # noqa: B010 (os.getenv and os.environ.get read it: every name they look up is kept)
    try:
        from rayaccel.isolation import plugin_worker

        plugin_worker.build_validators()  # once here, not in every worker
    finally:
        setattr(os, "environ", read.environ)  # noqa: B010
    sock.send(f"ready {json.dumps(None if read.names is None else sorted(read.names))}".encode())
    gc.freeze()  # the workers' collectors leave these objects alone: their pages stay shared
    running: dict[int, int] = {}  # pidfd -> pid
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is sock:
                    data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 3)
                    if not data:
                        return 0
                    pid = os.fork()
                    if pid == 0:
                        _worker(json.loads(data), fds)
                    for fd in fds:
                        os.close(fd)
                    pidfd = os.pidfd_open(pid)  # before any reaping: this very process, whatever happens to it
                    running[pidfd] = pid
                    selector.register(pidfd, selectors.EVENT_READ)
                    socket.send_fds(sock, [f"pid {pid}".encode()], [pidfd])
                else:
                    pidfd = int(key.fd)
                    selector.unregister(pidfd)
                    os.close(pidfd)
                    pid = running.pop(pidfd)
                    _, status = os.waitpid(pid, 0)
                    with contextlib.suppress(OSError):  # the caller gone: nobody to tell
                        sock.send(f"exit {pid} {os.waitstatus_to_exitcode(status)}".encode())


if __name__ == "__main__":
    sys.exit(serve(socket.socket(fileno=int(sys.argv[1]))))
