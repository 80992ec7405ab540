"""The process that runs Ray's own ``ray start`` for ``rayaccel start``, and then joins the node it started.

``rayaccel start`` (:mod:`rayaccel.cli.node`) never imports Ray. It starts this process first thing
(:class:`NodeStart`), which imports Ray (about a second) while the command builds the node's inventory in its
plugin workers, and then takes the node's environment on stdin. In this one process, which has Ray loaded:

1. the node's token authentication is decided (:func:`decide_node_auth`) and the installed Ray is checked
   (:func:`rayaccel.ray.internals.check_ray`): a refusal starts nothing;
2. ``ray start ARGS`` runs (Ray's own command, in this process) in the node's environment;
3. the new node is found in the GCS by its raylet port, the Grafana dashboard is written beside Ray's (on
   the head), a short-lived driver creates the node's health monitor and disconnects as soon as the monitor
   has published its status, and the wait ends once ``ray status`` lists the node (Ray's autoscaler report,
   read from the GCS every :data:`LISTING_POLL_S` and confirmed with Ray's ``ray status`` itself).

Each step is reported to the command as one JSON line on a pipe, and the command prints it. This module's
top level imports no Ray and nothing heavy: the command imports it, and so does the process before Ray.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from rayaccel.errors import RayaccelError
from rayaccel.support.polling import WaitTimeout, wait_for

#: Seconds `rayaccel start` waits for the new node to register, and then to show in `ray status`.
NODE_VISIBLE_TIMEOUT_S = 90.0
#: Seconds it waits for the node's monitor to publish its status once created (a new Ray worker process
#: on a loaded machine can take a while).
MONITOR_UP_TIMEOUT_S = 150.0
#: Seconds `ray start` itself may take before `rayaccel start` gives up on it (it has its own, shorter, waits).
RAY_START_TIMEOUT_S = 600.0
#: Seconds between two reads of Ray's autoscaler report while waiting for the listing (one GCS key read).
LISTING_POLL_S = 0.05
#: The GCS key `ray status` reads (``ray._private.ray_constants.DEBUG_AUTOSCALING_STATUS``).
AUTOSCALING_STATUS_KEY = b"__autoscaling_status"

_CHILD = "from rayaccel.ray.node_start import child_main; child_main()"


def ray_command() -> list[str]:
    """Ray's ``ray`` script of the interpreter running us, so the node runs the Ray the bridge checked."""
    beside = os.path.join(os.path.dirname(sys.executable), "ray")
    if os.path.exists(beside):
        return [beside]
    found = shutil.which("ray")
    if found is None:
        raise RayaccelError("the 'ray' command is not installed: pip install 'ray[default]'")
    return [found]


def option(args: list[str], name: str) -> str | None:
    """The value of a ``--name=value`` or ``--name value`` option in ray start's arguments."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


_LOCALHOST = ("localhost", "127.0.0.1", "::1", "[::1]")


def canonical_address(address: str) -> str:
    """HOST:PORT as Ray's processes name it: Ray replaces localhost (127.0.0.1, ::1) by the node's IP."""
    host, _, port = address.rpartition(":")
    if host in _LOCALHOST:
        import ray.util

        ray_util: Any = ray.util
        return f"{ray_util.get_node_ip_address()}:{port}"
    return address


def gcs_address(args: list[str]) -> str:
    """The cluster address a ``ray start`` with these arguments joins or creates."""
    address = option(args, "--address")
    if address:
        return address
    if "--head" not in args:
        raise RayaccelError("ray start needs --head (start a cluster) or --address=HOST:PORT (join one)")
    import ray.util

    ray_util: Any = ray.util
    ip = option(args, "--node-ip-address") or ray_util.get_node_ip_address()
    return canonical_address(f"{ip}:{option(args, '--port') or '6379'}")


def decide_node_auth(head: bool) -> tuple[str, str]:
    """The node's token-authentication mode and why, set (``RAY_AUTH_MODE``) for `ray start`, the monitor's
    driver and `ray status`: Ray's own rule for `ray start` (a token exists and RAY_AUTH_MODE is unset: token),
    made explicit, because `ray status` and drivers given an address follow RAY_AUTH_MODE alone."""
    from rayaccel.ray.auth import decide_auth_mode, set_auth_mode, token_available

    mode, why = decide_auth_mode()
    if mode == "token" and not token_available():
        if not head:
            raise RayaccelError(f"Ray token authentication is on ({why}) but this machine has no Ray token: copy "
                                "the head node's ~/.ray/auth_token here (or set RAY_AUTH_TOKEN), or set "
                                "RAY_AUTH_MODE=disabled to join a cluster that runs without authentication")
        made = subprocess.run([*ray_command(), "get-auth-token", "--generate"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, timeout=120, check=False)
        if made.returncode != 0 or not token_available():
            raise RayaccelError(f"Ray token authentication is on ({why}) but `ray get-auth-token --generate` "
                                f"made no token: {made.stderr.strip()[-300:]}")
        why += "; no token existed, so one was generated in ~/.ray/auth_token"
    set_auth_mode(mode)  # also re-reads Ray's cached config from this (the node's) environment
    return mode, why


def gcs_client(address: str) -> Any:
    """Ray's own client of the cluster's GCS (what `ray status` uses): no driver, no worker."""
    import importlib

    raylet: Any = importlib.import_module("ray._raylet")
    return raylet.GcsClient(address=address)


def ray_status(address: str) -> str:
    """What `ray status --address=ADDRESS` prints, from Ray's own command run in this process (the same
    code and the same GCS query as the subprocess, without a ~1 s Python and Ray start per look)."""
    from ray.scripts.scripts import status

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            status.main(["--address", address], standalone_mode=False)
    except SystemExit as e:  # a command may exit; here that is one more "not yet", not the end of start
        raise RuntimeError(f"`ray status` exited with {e.code}: {out.getvalue()[-300:]}") from None
    return out.getvalue()


class Listing:
    """Whether `ray status` lists a node yet. `ray status` prints what Ray's autoscaler monitor last wrote to
    the GCS (every few seconds): "No cluster status" at first, then a report without the new node. Each look
    reads that report (one key, through one client); only a report naming the node is confirmed by running
    Ray's `ray status` itself, so the answer is what the user's next `ray status` prints."""

    def __init__(self, address: str, node_id: str, gcs: Any = None) -> None:
        self.address = address
        self.node_id = node_id
        self.gcs = gcs if gcs is not None else gcs_client(address)
        self._v2 = False  # Ray's v2 autoscaler writes no such report: then every look is a `ray status`
        self._checked: bytes | None = None  # the last report that named the node but `ray status` did not

    def __call__(self) -> bool:
        if not self._v2:
            report = self.gcs.internal_kv_get(AUTOSCALING_STATUS_KEY, None)
            if report is None:
                from ray.autoscaler.v2.utils import is_autoscaler_v2

                self._v2 = is_autoscaler_v2(fetch_from_server=True, gcs_client=self.gcs)
                if not self._v2:
                    return False
            elif report == self._checked or self.node_id.encode() not in report:
                return False
            else:
                self._checked = report
        return self.node_id in ray_status(self.address)

    def wait(self, timeout: float) -> None:
        try:
            wait_for(self, timeout=timeout, interval=LISTING_POLL_S, retry_on=(Exception,), what=self.what())
        except WaitTimeout:
            raise WaitTimeout(self.timed_out(timeout)) from None

    def what(self) -> str:
        return f"`ray status --address={self.address}` to list node {self.node_id}"

    def timed_out(self, timeout: float) -> str:
        try:
            seen = ray_status(self.address)
        except Exception as e:
            seen = f"{type(e).__name__}: {e}"
        return f"gave up after {timeout:g} s waiting for {self.what()}; last seen: {' '.join(seen.split())[-600:]}"


# The command's side ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Join:
    """What the process does once `ray start` has succeeded: find the node by its raylet port, start its
    monitor polling every ``monitor_interval`` seconds (None: no monitor) with these ``plugins`` (None: all)
    and ``baseline`` (devices already unhealthy), and wait until `ray status` lists it."""

    node_manager_port: int
    monitor_interval: float | None
    plugins: list[str] | None
    baseline: list[str]


class NodeStart:
    """``ray start ARGS`` in a process begun before the node's environment is known: Ray's import overlaps the
    inventory. :meth:`begin` hands over the environment, :meth:`event` reads what the process reports,
    :meth:`call_off` ends it unstarted (a refusal or a failed inventory), :meth:`close` waits for its end."""

    def __init__(self, args: list[str]) -> None:
        self.args = list(args)
        self.block = "--block" in self.args  # `ray start --block` never returns: no join, Ray writes where it likes
        read_end, write_end = os.pipe()
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(write_end), *self.args],
                                         stdin=subprocess.PIPE, pass_fds=(write_end,))
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        self._events = read_end
        self._buffer = b""

    def begin(self, env: Mapping[str, str], join: Join | None) -> None:
        order = json.dumps({"env": dict(env), "join": None if self.block or join is None else asdict(join)})
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it died loading Ray: its end is reported by event()
            self.proc.stdin.write(order.encode() + b"\n")
            self.proc.stdin.close()

    def event(self, timeout: float | None, what: str) -> dict[str, Any]:
        """The next step the process reports (``{"event": "ended", "returncode": N}`` when it ended without
        a word more); :class:`WaitTimeout` after ``timeout`` seconds (None: no bound, for ``--block``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise WaitTimeout(f"gave up after {timeout:g} s waiting for {what}")
            ready, _, _ = select.select([self._events], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._events, 1 << 16)
            if not chunk:
                return {"event": "ended", "returncode": self.proc.wait(timeout=60)}
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        reported: dict[str, Any] = json.loads(line)
        return reported

    def call_off(self) -> None:
        self.proc.kill()  # it has started nothing yet: only Ray's import is lost
        self.close()

    def close(self) -> None:
        try:
            self.proc.wait(timeout=30)  # it ends right after its last report
        except subprocess.TimeoutExpired:  # a step that outlived the command's bound: never left behind
            self.proc.kill()
            self.proc.wait(timeout=30)
        if self.proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        with contextlib.suppress(OSError):
            os.close(self._events)


# The process's side ----------------------------------------------------------------------------------------


class _Failed(Exception):
    """A step of the join failed: ``step`` is ``register``, ``monitor`` or ``listed``."""

    def __init__(self, step: str, message: str) -> None:
        super().__init__(message)
        self.step = step


def _reporter(fd: int) -> Callable[[dict[str, Any]], None]:
    def report(event: dict[str, Any]) -> None:
        # What Ray printed so far goes first: the command prints its own lines after this event.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        data = (json.dumps(event) + "\n").encode()
        while data:
            data = data[os.write(fd, data):]

    return report


def _run_ray_start(ray_main: Callable[[], Any], args: list[str], capture: bool) -> tuple[int, str]:
    """Ray's ``ray start ARGS`` in this process: its exit code, and what it wrote on stderr when ``capture``
    (so that a refusal becomes one line, not its traceback)."""
    sys.argv = ["ray", "start", *args]
    with contextlib.ExitStack() as stack:
        held = stack.enter_context(tempfile.TemporaryFile()) if capture else None
        if held is not None:
            sys.stderr.flush()
            saved = os.dup(2)
            os.dup2(held.fileno(), 2)
            stack.callback(os.close, saved)
            stack.callback(os.dup2, saved, 2)
            stack.callback(sys.stderr.flush)
        try:
            ray_main()
            code = 0
        except SystemExit as e:  # click ends every command with one
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:  # what `ray start` would have died of: its traceback, for the one line
            traceback.print_exc()
            code = 1
        if held is None:
            return code, ""
        sys.stderr.flush()
        held.seek(0)
        return code, held.read().decode("utf-8", errors="replace")
    raise AssertionError("unreachable")  # (mypy: ExitStack may swallow exceptions)


def _registered(gcs: Any, node_manager_port: int) -> tuple[str, str, str | None] | None:
    """The id, session directory and metrics address (``IP:metrics export port``, where the node's metrics
    agent serves the accelerators' metrics beside Ray's) of the live node with this raylet port (how the node
    is told apart from others on the same IP), once it has registered with the GCS."""
    for node_id, info in gcs.get_all_node_info(timeout=10).items():
        if info.node_manager_port == node_manager_port and info.state == 0:  # GcsNodeInfo.ALIVE
            port = getattr(info, "metrics_export_port", 0)
            metrics = f"{info.node_manager_address}:{port}" if port else None
            return str(node_id.hex()), str(info.session_dir), metrics
    return None


def _join(report: Callable[[dict[str, Any]], None], address: str, join: Join) -> None:
    import ray

    from rayaccel.ray.grafana import install_dashboard

    gcs = gcs_client(address)
    try:
        registered: tuple[str, str, str | None] | None = wait_for(
            lambda: _registered(gcs, join.node_manager_port), timeout=NODE_VISIBLE_TIMEOUT_S,
            interval=LISTING_POLL_S, retry_on=(Exception,),
            what=f"the new node (raylet port {join.node_manager_port}) to register with {address}")
    except WaitTimeout as e:
        raise _Failed("register", f"WaitTimeout: {e}") from None
    assert registered is not None
    node_id, session, metrics = registered
    dashboard = install_dashboard(session)  # on the head, beside Ray's own Grafana dashboards
    if dashboard is not None:
        report({"event": "dashboard", "path": str(dashboard)})
    listed = Listing(address, node_id, gcs)
    monitor = join.monitor_interval is not None
    connected = False
    if monitor:
        from rayaccel.ray.monitor import monitor_status, start_monitor

        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
            connected = True
            start_monitor(node_id, join.monitor_interval or 0.0, join.plugins, join.baseline)
        except Exception as e:
            if connected:
                ray.shutdown()
            raise _Failed("monitor", f"{type(e).__name__}: {e}") from None
    seen = {"listed": False}
    began = time.monotonic()

    def pending() -> list[str]:
        """What is still awaited, each under its own bound; the driver disconnects as soon as the monitor is
        up (while the listing may still be awaited: Ray's driver shutdown takes ~0.3 s)."""
        nonlocal connected
        if connected:
            try:
                up = monitor_status(node_id) is not None
            except Exception as e:  # reading the monitor's status failed
                raise _Failed("monitor", f"{type(e).__name__}: {e}") from None
            if up:
                connected = False
                ray.shutdown()
            elif time.monotonic() - began > MONITOR_UP_TIMEOUT_S:
                raise _Failed("monitor", f"WaitTimeout: gave up after {MONITOR_UP_TIMEOUT_S:g} s waiting for the "
                                         f"health monitor of node {node_id} to start")
        if not seen["listed"]:
            try:
                seen["listed"] = listed()
            except Exception:  # Ray's services still starting: one more "not yet"
                seen["listed"] = False
            if not seen["listed"] and time.monotonic() - began > NODE_VISIBLE_TIMEOUT_S:
                raise _Failed("listed", listed.timed_out(NODE_VISIBLE_TIMEOUT_S))
        return [name for name, waiting in (("monitor", connected), ("listed", not seen["listed"])) if waiting]

    try:  # (each step raises when its own bound has passed; this bound is only the outer one)
        wait_for(pending, lambda left: not left, timeout=max(NODE_VISIBLE_TIMEOUT_S, MONITOR_UP_TIMEOUT_S) + 30,
                 interval=LISTING_POLL_S, what=f"the health monitor of node {node_id} to start and {listed.what()}")
    except WaitTimeout as e:
        raise _Failed("monitor" if connected else "listed", f"WaitTimeout: {e}") from None
    finally:
        if connected:
            ray.shutdown()
    report({"event": "up", "node_id": node_id, "monitor": monitor, "metrics": metrics})


def child_main() -> None:
    """The process :class:`NodeStart` starts: ``argv`` is the events pipe's fd and ray start's arguments.

    It ends without the interpreter's teardown once it has said everything: its driver has disconnected,
    and Ray's daemons, which it started, are not its to stop (as when `ray start` returns). With ``--block``
    it ends normally: then Ray's own exit handlers stop the node, as `ray start --block` does when it ends."""
    try:
        _child(_reporter(int(sys.argv[1])), sys.argv[2:])
    finally:
        if "--block" not in sys.argv[2:]:
            logging.shutdown()
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(0)


def _child(report: Callable[[dict[str, Any]], None], args: list[str]) -> None:
    try:
        from ray.scripts.scripts import main as ray_main  # Ray's import: overlaps the command's inventory
    except BaseException as e:
        report({"event": "refused", "message": f"Ray cannot be imported: {type(e).__name__}: {e}", "exit_code": 1})
        return
    line = sys.stdin.readline()
    if not line.strip():
        return  # called off: nothing was started
    order = json.loads(line)
    os.environ.clear()
    os.environ.update(order["env"])
    try:
        from rayaccel.ray.internals import check_ray

        auth_mode, auth_why = decide_node_auth("--head" in args)
        check_ray()  # a node must never start with hooks Ray does not have
    except RayaccelError as e:
        report({"event": "refused", "message": str(e), "exit_code": e.exit_code})
        return
    returncode, stderr = _run_ray_start(ray_main, args, capture=order["join"] is not None)
    try:
        address = gcs_address(args) if returncode == 0 else ""
    except Exception as e:
        report({"event": "started", "returncode": returncode, "stderr": stderr, "address": "",
                "auth": [auth_mode, auth_why]})
        report({"event": "failed", "step": "register", "message": f"{type(e).__name__}: {e}"})
        return
    report({"event": "started", "returncode": returncode, "stderr": stderr, "address": address,
            "auth": [auth_mode, auth_why]})
    if returncode != 0 or order["join"] is None:
        return
    try:
        _join(report, address, Join(**order["join"]))
    except _Failed as e:
        report({"event": "failed", "step": e.step, "message": str(e)})
    except Exception as e:  # a bug: still one line, and the node runs
        report({"event": "failed", "step": "other", "message": f"{type(e).__name__}: {e}"})
