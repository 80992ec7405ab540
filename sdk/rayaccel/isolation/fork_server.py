"""Plugin workers forked by a helper process of their pool, for a caller that cannot fork them itself.

A worker forked from the caller starts with the SDK imported and pays only for its own plugin; a spawned one pays
for an interpreter and the SDK each (~0.3 s of CPU). Forking is safe only from a process with one thread, and many
callers have more (a test runner's I/O thread, the thread torch starts at import, Ray's): they spawned every worker,
five a command with the five reference plugins installed. A :class:`ForkServer` spawns one process instead
(``python -m rayaccel.isolation.fork_server``): one thread, the SDK imported, which forks each worker of its pool on
request and says when one exits. A worker it forks is a spawned worker in all but the start-up: a process that never
ran the caller's code or imported a plugin, in a session of its own, with the caller's environment and working
directory of the moment. A worker whose environment is not the one the helper started with (the SDK reads some of it
at import) is spawned, as before; so is every worker where the helper cannot start or answer. The helper serves one
pool and ends with it (:meth:`ForkServer.close`), or when the caller's end of its socket closes (the caller died).

What crosses the Unix socket (``SOCK_SEQPACKET``: one message a send): a request is a JSON object (``cwd``,
``env``) with the worker's three descriptors (its requests, its answers, its log) attached; the helper answers
``pid PID`` with a pidfd of the worker attached (the caller asks the kernel whether it has ended, as a parent asks
``waitpid``), and ``exit PID CODE`` once it has reaped it (``CODE`` as :attr:`subprocess.Popen.returncode`).
"""

from __future__ import annotations

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
from typing import IO

#: The largest message either side sends (a request carries the worker's whole environment).
MAX_MESSAGE = 1 << 20
#: Seconds the helper may take to answer a start (the first waits for its own start-up: a Python process
#: importing pydantic on a loaded machine).
ANSWER_TIMEOUT_S = 20.0
#: Seconds the helper gets to end once its pool closes, before it is killed.
CLOSE_TIMEOUT_S = 5.0


class ForkServer:
    """The helper of one pool, started at its first worker; :meth:`start` gives a worker it forked, or None
    (the caller then spawns the worker itself). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._socket: socket.socket | None = None
        self._env: dict[str, str] | None = None
        self._exits: dict[int, int] = {}
        self._started: tuple[int, int] | None = None  # the last worker the helper answered: pid, pidfd
        self._broken = not (hasattr(os, "pidfd_open") and hasattr(socket, "send_fds"))

    def start(self, env: dict[str, str], log: IO[bytes]) -> ServedProcess | None:
        """A worker forked by the helper with ``env``, its stderr ``log``; None where the helper cannot serve it."""
        with self._lock:
            if self._broken:
                return None
            if self._process is None:
                self._launch(env)
            if env != self._env or self._socket is None:
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
            if started is None:  # the helper failed: every later worker of the pool is spawned
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
        self._socket, self._env = mine, dict(env)

    def _read(self, timeout: float) -> bool:
        """Read one message within ``timeout`` seconds (an exit is recorded); False when none came."""
        assert self._socket is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._socket, selectors.EVENT_READ)
            if not selector.select(max(0.0, timeout)):
                return False
        data, fds, _, _ = socket.recv_fds(self._socket, MAX_MESSAGE, 1)
        if not data:
            raise OSError("the fork server closed its socket")
        kind, *numbers = data.decode().split()
        if kind == "exit":
            self._exits[int(numbers[0])] = int(numbers[1])
        elif kind == "pid" and fds:
            self._started = int(numbers[0]), fds[0]
        return True

    def _next_pid(self, until: float) -> tuple[int, int]:
        self._started = None
        while self._started is None:
            if not self._read(until - time.monotonic()) and time.monotonic() >= until:
                raise TimeoutError("the fork server did not answer")
        return self._started

    def exit_code(self, pid: int, timeout: float = 0.0) -> int | None:
        """The worker's exit code, once the helper has said it ended (waiting up to ``timeout`` seconds)."""
        until = time.monotonic() + timeout
        with self._lock:
            with contextlib.suppress(OSError):  # the helper gone: a worker it did not report stays unknown
                while pid not in self._exits and self._socket is not None:
                    if not self._read(until - time.monotonic()) and time.monotonic() >= until:
                        break
            return self._exits.get(pid)

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

    def close(self) -> None:
        """End the helper (its pool's workers killed and reaped first)."""
        with self._lock:
            self._stop()
            self._process = None


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

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)


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
    """Fork a worker for each request on ``sock``, answer its pid, and say when each ends; return once the
    caller's end closes."""
    import gc

    from rayaccel.isolation import plugin_worker

    plugin_worker.build_validators()  # once here, not in every worker
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
