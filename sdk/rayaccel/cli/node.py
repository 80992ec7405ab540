"""``rayaccel start`` and ``rayaccel stop``: ``ray start`` / ``ray stop`` with the inventory's resources.

``rayaccel start`` builds the node's inventory (this machine, or ``--simulate FIXTURE``), runs
``ray start`` with every option it does not know passed through, in the env of
:func:`rayaccel.ray.node_config` and with ``RAY_AUTH_MODE`` decided explicitly
(:mod:`rayaccel.ray.auth`), then starts the node's health monitor, and returns once ``ray status``
lists the node (bounded), so the user's next command works right away. ``ray start``'s process is started
first and loads Ray while the inventory is built (:class:`RayStart`); the node itself starts only once the
inventory's env is there.

``rayaccel stop`` IS ``ray stop`` (every Ray node on this machine) unless ``--address`` names one
cluster: then only the processes of that cluster on this machine are stopped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from rayaccel.cli import app, err_console
from rayaccel.cli.inventory import PluginsOption
from rayaccel.errors import RayaccelError
from rayaccel.polling import WaitTimeout, wait_for
from rayaccel.ray.auth import EXPORT_TOKEN_LINE
from rayaccel.ray.processes import cluster_processes, created_fault_files, stop_processes

if TYPE_CHECKING:
    from rayaccel.ray.node import NodeConfig

_PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}


def _ray_command() -> list[str]:
    # The `ray` script of the interpreter running us, so the node runs the Ray the bridge checked.
    beside = os.path.join(os.path.dirname(sys.executable), "ray")
    if os.path.exists(beside):
        return [beside]
    found = shutil.which("ray")
    if found is None:
        raise RayaccelError("the 'ray' command is not installed: pip install 'ray[default]'")
    return [found]


#: Ray's own ``ray`` command, in a process that loads Ray first and starts the node once its environment
#: arrives on stdin (one JSON line; an empty line or EOF: the start was called off, nothing is started).
_RAY_START = """\
import json, os, sys
from ray.scripts.scripts import main
line = sys.stdin.readline()
if not line.strip():
    sys.exit(0)
os.environ.clear()
os.environ.update(json.loads(line))
import ray._raylet
ray._raylet.Config.initialize("")  # Ray read its RAY_* config at import: read the node's
sys.argv = ["ray", "start", *sys.argv[1:]]
sys.exit(main())
"""


class RayStart:
    """``ray start ARGS``, begun before its environment is known: Ray's import (about a second) overlaps the
    inventory, the only thing the node has to wait for. :meth:`run` hands over the env and waits for the
    command's end; :meth:`call_off` ends it unstarted (a refusal or a failed inventory)."""

    def __init__(self, args: list[str], capture: bool) -> None:
        self.args = args
        self.capture = capture
        # Ray's stderr is kept (and passed on once start ends) so that a refusal is one line, not its
        # traceback; with --block `ray start` never ends, so it writes where it likes.
        self.proc = subprocess.Popen([sys.executable, "-c", _RAY_START, *args], stdin=subprocess.PIPE,
                                     stderr=subprocess.PIPE if capture else None, text=True)

    def run(self, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        with contextlib.suppress(BrokenPipeError):  # it died loading Ray: its stderr says why
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(env) + "\n")
            self.proc.stdin.close()
        stderr = self.proc.stderr.read() if self.proc.stderr is not None else ""
        return subprocess.CompletedProcess(self.proc.args, self.proc.wait(), None, stderr)

    def call_off(self) -> None:
        self.proc.kill()  # it has started nothing yet: only Ray's import is lost
        self.proc.wait(timeout=30)
        for stream in (self.proc.stdin, self.proc.stderr):
            if stream is not None:
                stream.close()


def _option(args: list[str], name: str) -> str | None:
    """The value of a ``--name=value`` or ``--name value`` option in ray start's arguments."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def gcs_address(args: list[str]) -> str:
    """The cluster address a ``ray start`` with these arguments joins or creates."""
    address = _option(args, "--address")
    if address:
        return address
    if "--head" not in args:
        raise RayaccelError("ray start needs --head (start a cluster) or --address=HOST:PORT (join one)")
    import ray.util

    ray_util: Any = ray.util
    ip = _option(args, "--node-ip-address") or ray_util.get_node_ip_address()
    return canonical_address(f"{ip}:{_option(args, '--port') or '6379'}")


_LOCALHOST = ("localhost", "127.0.0.1", "::1", "[::1]")


def canonical_address(address: str) -> str:
    """HOST:PORT as Ray's processes name it: Ray replaces localhost (127.0.0.1, ::1) by the node's IP."""
    host, _, port = address.rpartition(":")
    if host in _LOCALHOST:
        import ray.util

        ray_util: Any = ray.util
        return f"{ray_util.get_node_ip_address()}:{port}"
    return address


def _quantity_rule_lines(env: dict[str, str]) -> list[str]:
    """Which processes enforce a day-zero family's quantity rule (Ray validates a request's quantity in the
    process that submits it, and only for the families in that process's accelerator registry)."""
    from rayaccel.ray.registry import FAMILIES_ENV

    try:
        specs = json.loads(env.get(FAMILIES_ENV) or "[]")
    except json.JSONDecodeError:
        return []
    lines = []
    for spec in specs if isinstance(specs, list) else []:
        rule = (spec.get("quantity_rule") or {}) if isinstance(spec, dict) else {}
        if rule.get("kind") in ("whole", "choices"):
            amounts = "whole numbers" if rule["kind"] == "whole" else ", ".join(map(str, rule.get("choices") or []))
            lines.append(f"rayaccel: {spec.get('resource_name')} requests must be {amounts}: refused in drivers "
                         "connected with rayaccel.ray.connect()/init() and in workers of rayaccel nodes; a plain "
                         "ray.init() driver is not checked (Ray checks quantities in the submitting process), "
                         "see docs/ray-bridge.md")
    return lines


@app.command(context_settings=_PASSTHROUGH)
def start(
    ctx: typer.Context,
    simulate: Annotated[str | None, typer.Option(
        "--simulate", metavar="FIXTURE", help="Fixture name (plugin/name) or file; default: this machine")] = None,
    fault: Annotated[list[str] | None, typer.Option(help="Fault of the fixture active from the start (repeatable)")
                     ] = None,
    fault_file: Annotated[str | None, typer.Option(
        help="File of fault names the node's monitor re-reads (simulated nodes; created when not given)")] = None,
    plugin: PluginsOption = None,
    monitor: Annotated[bool, typer.Option(help="Start the node's health monitor")] = True,
    monitor_interval: Annotated[float, typer.Option(help="Seconds between health polls")] = 5.0,
) -> None:
    """Start a Ray node whose resources and labels come from the inventory. Other options go to `ray start`."""
    from rayaccel.ray.monitor import interval_error

    why = interval_error(monitor_interval)
    if why is not None:
        raise typer.BadParameter(why, param_hint="--monitor-interval")
    args = [str(a) for a in ctx.args]
    if _option(args, "--node-manager-port") is None:
        # A known raylet port is how the monitor finds this node among others on the same IP.
        args.append(f"--node-manager-port={_free_port()}")
    node_manager_port = int(_option(args, "--node-manager-port") or 0)
    if "--head" not in args and not _option(args, "--address"):
        raise RayaccelError("ray start needs --head (start a cluster) or --address=HOST:PORT (join one)")
    ray_start = RayStart(args, capture="--block" not in args)  # loads Ray while the inventory is built
    try:
        config, auth_mode, why = _prepare(simulate, plugin, fault or [], fault_file, "--head" in args)
    except BaseException:
        ray_start.call_off()
        raise
    done = ray_start.run({**os.environ, **config.env})
    address = gcs_address(args)
    if done.returncode != 0:
        if config.fault_file and config.fault_file != fault_file:  # the one this command created
            with contextlib.suppress(FileNotFoundError):
                os.unlink(config.fault_file)
        if not ray_start.capture:
            raise typer.Exit(done.returncode)
        raise RayaccelError(f"`ray start {' '.join(args)}` failed: {ray_error_line(done.stderr)}")
    if done.stderr:
        sys.stderr.write(done.stderr)
    resources = ", ".join(f"{k}={v:g}" for k, v in sorted(config.resources.items()))
    typer.echo(f"rayaccel: node started with {resources or 'no accelerator resources'}")
    if auth_mode == "token":
        typer.echo(f"rayaccel: Ray token authentication is ON ({why}); before `ray status` or a driver, "
                   f"in every shell: {EXPORT_TOKEN_LINE}")
    else:
        typer.echo(f"rayaccel: Ray token authentication is OFF ({why}); `ray status` and drivers need no token")
    if config.fault_file:
        typer.echo(f"rayaccel: simulated node; switch a fault on with: echo <fault> >> {config.fault_file}")
    for line in _quantity_rule_lines(config.env):
        typer.echo(line)
    stop_hint = f"(stop the node with: rayaccel stop --address={address})"
    try:
        node_id = _join(address, node_manager_port, monitor_interval if monitor else None, plugin, config)
    except _NotListed as e:
        raise RayaccelError(f"the node started, but {e} {stop_hint}") from None
    except Exception as e:  # the node runs: say so, and how to stop it
        step = "its health monitor did not" if monitor else "it did not register"
        raise RayaccelError(f"the node started, but {step}: {type(e).__name__}: {e} {stop_hint}") from None
    typer.echo(f"rayaccel: node {node_id} is up: `ray status --address={address}` lists it")


def _prepare(simulate: str | None, plugins: list[str] | None, faults: list[str], fault_file: str | None,
             head: bool) -> tuple[NodeConfig, str, str]:
    """The node's config (its inventory's problems printed) and its auth mode with the reason. The plugins are
    imported only in their worker processes, forked from this one; this process loads Ray meanwhile."""
    from rayaccel.isolation.pool import WorkerPool
    from rayaccel.ray.driver import configure_node

    with WorkerPool.load(plugins or None, meanwhile=_load_ray) as pool:
        config = configure_node(simulate, plugins, faults, fault_file, manager=pool.manager, pool=pool)
    for problem in config.inventory.problems:
        if problem.severity != "info":
            err_console.print(problem.render(), markup=False, highlight=False)
    auth_mode, why = _decide_auth(head)
    return config, auth_mode, why


def _load_ray() -> None:
    # What this process needs of Ray once the node is up (the driver, `ray status`), and the fixture readers:
    # imported while the plugins' workers import their plugins, not after the inventory.
    import jsonschema  # noqa: F401
    import ray.scripts.scripts  # noqa: F401
    import yaml  # noqa: F401


def ray_error_line(stderr: str) -> str:
    """The one line that says why a Ray command failed: the exception its traceback ends with (with the
    advice line Ray prints after it, if any), else its last line of output."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception): ", lines[i]):
            advice = lines[-1] if i < len(lines) - 1 and lines[-1].startswith(("If ", "Please ", "Try ")) else ""
            return f"{lines[i][:400]}{' ' + advice[:200] if advice else ''}"
    return lines[-1][:400] if lines else "it printed nothing; run it yourself to see why"


#: Seconds `rayaccel start` waits for the new node to register, and then to show in `ray status`.
NODE_VISIBLE_TIMEOUT_S = 90.0


def _decide_auth(head: bool) -> tuple[str, str]:
    """The node's token-authentication mode, set for `ray start`, the monitor's driver and `ray status`.

    Ray's own rule for `ray start` (a token exists and RAY_AUTH_MODE is unset: token), made explicit,
    because `ray status` and drivers given an address follow RAY_AUTH_MODE alone.
    """
    from rayaccel.ray.auth import decide_auth_mode, set_auth_mode, token_available

    mode, why = decide_auth_mode()
    if mode == "token" and not token_available():
        if not head:
            raise RayaccelError(f"Ray token authentication is on ({why}) but this machine has no Ray token: copy "
                                "the head node's ~/.ray/auth_token here (or set RAY_AUTH_TOKEN), or set "
                                "RAY_AUTH_MODE=disabled to join a cluster that runs without authentication")
        made = subprocess.run([*_ray_command(), "get-auth-token", "--generate"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, timeout=120, check=False)
        if made.returncode != 0 or not token_available():
            raise RayaccelError(f"Ray token authentication is on ({why}) but `ray get-auth-token --generate` "
                                f"made no token: {made.stderr.strip()[-300:]}")
        why += "; no token existed, so one was generated in ~/.ray/auth_token"
    set_auth_mode(mode)
    return mode, why


class _NotListed(Exception):
    """`ray status` did not list the new node in time."""


def _join(address: str, node_manager_port: int, monitor_interval: float | None, plugins: list[str] | None,
          config: object) -> str:
    """Connect a short-lived driver, find the new node (by its raylet port), start its health monitor
    when ``monitor_interval`` is given, and wait until `ray status` lists the node (while the monitor's
    worker starts); returns the node id."""
    import ray

    from rayaccel.ray.grafana import install_dashboard, session_dir
    from rayaccel.ray.monitor import start_monitor
    from rayaccel.ray.node import NodeConfig, unhealthy_devices

    assert isinstance(config, NodeConfig)
    ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
    list_nodes: Callable[[], list[dict[str, Any]]] = ray.nodes
    try:
        node_id: str = wait_for(
            lambda: next((n["NodeID"] for n in list_nodes()
                          if n.get("Alive") and n.get("NodeManagerPort") == node_manager_port), ""),
            timeout=NODE_VISIBLE_TIMEOUT_S, interval=0.2,
            what=f"the new node (raylet port {node_manager_port}) to register with {address}")
        dashboard = install_dashboard(session_dir())  # on the head, beside Ray's own Grafana dashboards
        if dashboard is not None:
            typer.echo(f"rayaccel: Grafana dashboard of the accelerators written beside Ray's: {dashboard}")
        handle = None
        if monitor_interval is not None:
            handle = start_monitor(node_id, monitor_interval, plugins, unhealthy_devices(config.inventory))
        try:
            _wait_listed_by_ray_status(address, node_id)
        except WaitTimeout as e:
            raise _NotListed(str(e)) from None
        if handle is not None:
            ray.get(handle.status.remote(), timeout=60)  # the monitor is up; its first poll runs meanwhile
            typer.echo(f"rayaccel: health monitor polling every {monitor_interval:g}s on node {node_id}; a fatal "
                       "device fault cordons that device alone on this node until it recovers (Ray 2.60 "
                       "cannot undo a drain, so the node is never drained)")
        return node_id
    finally:
        ray.shutdown()


def ray_status(address: str) -> str:
    """What `ray status --address=ADDRESS` prints, from Ray's own command run in this process (the same
    code and the same GCS query as the subprocess, without a ~1 s Python and Ray start per look)."""
    import io

    from ray.scripts.scripts import status

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            status.main(["--address", address], standalone_mode=False)
    except SystemExit as e:  # a command may exit; here that is one more "not yet", not the end of start
        raise RuntimeError(f"`ray status` exited with {e.code}: {out.getvalue()[-300:]}") from None
    return out.getvalue()


def _wait_listed_by_ray_status(address: str, node_id: str) -> None:
    # `ray status` prints what Ray's autoscaler monitor last wrote (every few seconds): "No cluster
    # status" at first, then a list without the new node. Return only once the user's next command works.
    wait_for(lambda: ray_status(address), lambda out: node_id in out, timeout=NODE_VISIBLE_TIMEOUT_S,
             interval=0.25, retry_on=(Exception,), what=f"`ray status --address={address}` to list node {node_id}")


@app.command(context_settings=_PASSTHROUGH)
def stop(
    ctx: typer.Context,
    address: Annotated[str | None, typer.Option(
        help="Stop only this cluster's processes on this machine (HOST:PORT); default: `ray stop`, which "
             "stops EVERY Ray node on this machine")] = None,
    grace: Annotated[float | None, typer.Option(
        help="Seconds to wait after SIGTERM before SIGKILL (with --address; default 10)")] = None,
) -> None:
    """Stop Ray on this machine (`ray stop`; other options go to it), or one cluster with --address."""
    if grace is not None and not 0 <= grace <= 600:  # also refuses nan
        raise typer.BadParameter(f"{grace!r} is out of range: give seconds between 0 and 600", param_hint="--grace")
    if grace is not None and address is None:
        raise typer.BadParameter("--grace is for --address; `ray stop` has its own --grace-period",
                                 param_hint="--grace")
    if address is None:
        done = subprocess.run([*_ray_command(), "stop", *ctx.args], check=False)
        raise typer.Exit(done.returncode)
    if ctx.args:
        raise typer.BadParameter(f"with --address, no ray stop options are used: {' '.join(ctx.args)}")
    if ":" not in address:
        raise typer.BadParameter("give HOST:PORT, e.g. 10.0.0.1:6379", param_hint="--address")
    given, address = address, canonical_address(address)  # localhost:6390 names the node's IP:6390
    pids = cluster_processes(address)
    if not pids:
        raise RayaccelError(f"no Ray processes of cluster {given} run on this machine")
    fault_files = created_fault_files(pids)  # read from the processes' environment while they run
    stop_processes(pids, 10.0 if grace is None else grace)
    for path in fault_files:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    typer.echo(f"rayaccel: stopped {len(pids)} processes of cluster {address}")
