"""``rayaccel start`` and ``rayaccel stop``: ``ray start`` / ``ray stop`` with the inventory's resources.

``rayaccel start`` builds the node's inventory (this machine, or ``--simulate FIXTURE``), runs
``ray start`` with every option it does not know passed through, in the env of
:func:`rayaccel.ray.node_config`, then starts the node's health monitor.

``rayaccel stop`` IS ``ray stop`` (every Ray node on this machine) unless ``--address`` names one
cluster: then only the processes of that cluster on this machine are stopped.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any

import typer

from rayaccel.cli import app, err_console
from rayaccel.errors import RayaccelError

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
    return f"{ip}:{_option(args, '--port') or '6379'}"


@app.command(context_settings=_PASSTHROUGH)
def start(
    ctx: typer.Context,
    simulate: Annotated[str | None, typer.Option(
        "--simulate", metavar="FIXTURE", help="Fixture name (plugin/name) or file; default: this machine")] = None,
    fault: Annotated[list[str] | None, typer.Option(help="Fault of the fixture active from the start (repeatable)")
                     ] = None,
    fault_file: Annotated[str | None, typer.Option(
        help="File of fault names the node's monitor re-reads (simulated nodes; created when not given)")] = None,
    plugin: Annotated[list[str] | None, typer.Option(help="Only these plugins (repeatable)")] = None,
    monitor: Annotated[bool, typer.Option(help="Start the node's health monitor")] = True,
    monitor_interval: Annotated[float, typer.Option(help="Seconds between health polls")] = 5.0,
) -> None:
    """Start a Ray node whose resources and labels come from the inventory. Other options go to `ray start`."""
    from rayaccel.ray.driver import configure_node

    args = [str(a) for a in ctx.args]
    if monitor_interval <= 0:
        raise typer.BadParameter("must be positive", param_hint="--monitor-interval")
    address = gcs_address(args)
    config = configure_node(simulate, plugin, fault or [], fault_file)
    for problem in config.inventory.problems:
        if problem.severity != "info":
            err_console.print(problem.render(), markup=False, highlight=False)
    if _option(args, "--node-manager-port") is None:
        # A known raylet port is how the monitor finds this node among others on the same IP.
        args.append(f"--node-manager-port={_free_port()}")
    node_manager_port = int(_option(args, "--node-manager-port") or 0)
    _agree_on_token_auth()
    done = subprocess.run([*_ray_command(), "start", *args], env={**os.environ, **config.env}, check=False)
    if done.returncode != 0:
        raise typer.Exit(done.returncode)
    resources = ", ".join(f"{k}={v:g}" for k, v in sorted(config.resources.items()))
    typer.echo(f"rayaccel: node started with {resources or 'no accelerator resources'}")
    if config.fault_file:
        typer.echo(f"rayaccel: simulated node; switch a fault on with: echo <fault> >> {config.fault_file}")
    if monitor:
        try:
            _start_monitor(address, node_manager_port, monitor_interval, plugin, config)
        except Exception as e:  # the node runs: say so, and how to stop it
            raise RayaccelError(f"the node started, but its health monitor did not: {type(e).__name__}: {e} "
                                f"(stop the node with: rayaccel stop --address={address})") from None


def _agree_on_token_auth() -> None:
    # `ray start` turns token auth on when RAY_AUTH_MODE is unset and a token exists, but a driver given
    # an explicit address does not (Ray 2.60): decide once here so the monitor's driver can connect.
    if "RAY_AUTH_MODE" in os.environ:
        return
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def _start_monitor(address: str, node_manager_port: int, interval: float, plugins: list[str] | None,
                   config: object) -> None:
    import ray

    from rayaccel.ray.monitor import start_monitor
    from rayaccel.ray.node import NodeConfig

    assert isinstance(config, NodeConfig)
    ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
    list_nodes: Callable[[], list[dict[str, Any]]] = ray.nodes
    try:
        deadline = time.monotonic() + 30
        node_id = None
        while node_id is None and time.monotonic() < deadline:
            node_id = next((n["NodeID"] for n in list_nodes()
                            if n.get("Alive") and n.get("NodeManagerPort") == node_manager_port), None)
            if node_id is None:
                time.sleep(0.2)
        if node_id is None:
            raise RayaccelError(f"the new node (raylet port {node_manager_port}) did not register with {address}")
        baseline = [h.device for f in config.inventory.families for h in f.health if h.state == "unhealthy"]
        handle = start_monitor(node_id, interval, plugins, baseline)
        ray.get(handle.status.remote(), timeout=60)  # the first poll has run: the monitor is up
        typer.echo(f"rayaccel: health monitor polling every {interval:g}s on node {node_id}")
    finally:
        ray.shutdown()


_SESSION_DIR = re.compile(r"(/[^\s=,]*/session_\d{4}-\d\d-\d\d_[\d_-]+)")


def _proc_table() -> dict[int, tuple[int, list[str]]]:
    """pid -> (parent pid, argv) for every process we may read."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().decode("utf-8", "replace").split("\0")
            with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                ppid = int(f.read().rsplit(")", 1)[-1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        table[int(entry)] = (ppid, argv)
    return table


def _uses_dir(pid: int, directory: str) -> bool:
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return False
    return any(link == directory or link.startswith(directory + "/") for link in links)


def _core_processes(address: str, table: dict[int, tuple[int, list[str]]]) -> set[int]:
    port = address.rsplit(":", 1)[-1]
    markers = (f"--gcs-address={address}", f"--gcs_address={address}", f"--gcs_server_port={port}",
               f"--address={address}")
    return {pid for pid, (_, argv) in table.items() if any(arg in markers for arg in argv)}


def _sessions(pids: set[int], table: dict[int, tuple[int, list[str]]]) -> set[str]:
    return {m.group(1) for pid in pids for arg in table[pid][1] for m in [_SESSION_DIR.search(arg)] if m}


def cluster_session_dirs(address: str) -> set[str]:
    """The session directories (``/tmp/ray/session_...``) of the cluster's processes on this machine."""
    table = _proc_table()
    return _sessions(_core_processes(address, table), table)


def cluster_processes(address: str) -> list[int]:
    """Pids of this machine's Ray processes that belong to the cluster at ``address`` (HOST:PORT).

    A node's core processes name the cluster on their command line (``--gcs-address=HOST:PORT``, the
    GCS ``--gcs_server_port=PORT``). Its agents rename themselves (``ray::DashboardAgent``), so their
    children and every process holding a file in the cluster's session directory count too. Read from
    /proc: Linux only.
    """
    table = _proc_table()
    table.pop(os.getpid(), None)
    found = _core_processes(address, table)
    sessions = _sessions(found, table)
    for pid, (_, argv) in table.items():
        if pid in found:
            continue
        in_session = any(arg == d or d + "/" in arg for arg in argv for d in sessions)
        if in_session or any(_uses_dir(pid, d) for d in sessions):
            found.add(pid)
    grew = True
    while grew:  # children of what was found (workers, agents)
        more = {pid for pid, (ppid, _) in table.items() if ppid in found and pid not in found}
        found |= more
        grew = bool(more)
    return sorted(found)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


@app.command(context_settings=_PASSTHROUGH)
def stop(
    ctx: typer.Context,
    address: Annotated[str | None, typer.Option(
        help="Stop only this cluster's processes on this machine (HOST:PORT); default: `ray stop`, which "
             "stops EVERY Ray node on this machine")] = None,
    grace: Annotated[float, typer.Option(help="Seconds to wait after SIGTERM before SIGKILL (--address)")] = 10.0,
) -> None:
    """Stop Ray on this machine (`ray stop`; other options go to it), or one cluster with --address."""
    if address is None:
        done = subprocess.run([*_ray_command(), "stop", *ctx.args], check=False)
        raise typer.Exit(done.returncode)
    if ctx.args:
        raise typer.BadParameter(f"with --address, no ray stop options are used: {' '.join(ctx.args)}")
    if ":" not in address:
        raise typer.BadParameter("give HOST:PORT, e.g. 10.0.0.1:6379", param_hint="--address")
    pids = cluster_processes(address)
    if not pids:
        raise RayaccelError(f"no Ray processes of cluster {address} run on this machine")
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    for pid in pids:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    typer.echo(f"rayaccel: stopped {len(pids)} processes of cluster {address}")
