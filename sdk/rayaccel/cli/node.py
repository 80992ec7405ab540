"""``rayaccel start`` and ``rayaccel stop``: ``ray start`` / ``ray stop`` with the inventory's resources.

``rayaccel start`` builds the node's inventory (this machine, or ``--simulate FIXTURE``), runs
``ray start`` with every option it does not know passed through, in the env of
:func:`rayaccel.ray.node_config` and with ``RAY_AUTH_MODE`` decided explicitly
(:mod:`rayaccel.ray.auth`), then starts the node's health monitor, and returns once ``ray status``
lists the node (bounded), so the user's next command works right away. This command never imports Ray:
the process that runs Ray's ``ray start`` (:class:`rayaccel.ray.node_start.NodeStart`) is started first,
loads Ray while the inventory is built, starts the node once the inventory's env is there, and joins it
(monitor, listing); this command prints what it reports.

``rayaccel stop`` IS ``ray stop`` (every Ray node on this machine) unless ``--address`` names one
cluster: then only the processes of that cluster on this machine are stopped.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from rayaccel.cli import app, err_console
from rayaccel.cli.policy_option import HealthPolicyOption, use_health_policy, warn_policy
from rayaccel.errors import RayaccelError
from rayaccel.ray.auth import EXPORT_TOKEN_LINE
from rayaccel.ray.node_start import (
    MONITOR_UP_TIMEOUT_S,
    NODE_VISIBLE_TIMEOUT_S,
    RAY_START_TIMEOUT_S,
    Join,
    NodeStart,
    canonical_address,
    option,
    ray_command,
)
from rayaccel.ray.processes import cluster_members, created_fault_files, stop_processes
from rayaccel.support.monitor_interval import DEFAULT_MONITOR_INTERVAL
from rayaccel.support.polling import WaitTimeout
from rayaccel.support.ports import free_port

if TYPE_CHECKING:
    from rayaccel.ray.node import NodeConfig

_PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}

__all__ = ["canonical_address", "ray_error_line", "start", "stop"]


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
    # Declared here, not taken from rayaccel.cli.inventory: importing that module (the inventory builder and
    # its records, ~0.15 s) would delay starting the `ray start` process, whose Ray import is the longest step.
    plugin: Annotated[list[str] | None, typer.Option(help="Only these plugins (repeatable)")] = None,
    monitor: Annotated[bool, typer.Option(help="Start the node's health monitor")] = True,
    monitor_interval: Annotated[float, typer.Option(help="Seconds between health polls")] = DEFAULT_MONITOR_INTERVAL,
    health_policy: HealthPolicyOption = None,
) -> None:
    """Start a Ray node whose resources and labels come from the inventory. Other options go to `ray start`."""
    args = [str(a) for a in ctx.args]
    # Checked before anything starts; then in the env of the plugins' workers, `ray start` and the monitor.
    policy = use_health_policy(health_policy)
    if "--head" not in args and not option(args, "--address"):
        raise RayaccelError("ray start needs --head (start a cluster) or --address=HOST:PORT (join one)")
    if option(args, "--node-manager-port") is None:
        # A known raylet port is how the node is found among others on the same IP.
        args.append(f"--node-manager-port={free_port()}")
    node_start = NodeStart(args)  # loads Ray while the inventory is built
    try:
        from rayaccel.ray.node import unhealthy_devices
        from rayaccel.support.monitor_interval import interval_error

        why = interval_error(monitor_interval)
        if why is not None:
            raise typer.BadParameter(why, param_hint="--monitor-interval")
        config = _prepare(simulate, plugin, fault or [], fault_file)
        if policy is not None:
            warn_policy(policy, config.inventory)
    except BaseException:
        node_start.call_off()
        raise
    join = Join(node_manager_port=int(option(args, "--node-manager-port") or 0),
                monitor_interval=monitor_interval if monitor else None, plugins=plugin,
                baseline=unhealthy_devices(config.inventory))
    node_start.begin({**os.environ, **config.env}, join)
    try:
        _report(node_start, config, fault_file, monitor_interval if monitor else None)
    finally:
        node_start.close()


def _prepare(simulate: str | None, plugins: list[str] | None, faults: list[str], fault_file: str | None,
             ) -> NodeConfig:
    """The node's config (its inventory's problems printed). The plugins are imported only in their worker
    processes, forked from this one; this process imports the fixture readers meanwhile, and never Ray (the
    installed Ray is checked where it is loaded, in the process that runs `ray start`)."""
    from rayaccel.isolation.pool import WorkerPool
    from rayaccel.ray.driver import node_config_on
    from rayaccel.simulation.host_factory import node_host

    with WorkerPool.load(plugins or None, meanwhile=_load_fixture_readers) as pool:
        for name in plugins or []:
            pool.manager.plugin(name)  # a clear error for an unknown plugin, before a fault file is made
        # The host is chosen here, at the edge; the plugins read it, the inventory is built of what they read,
        # and the node (its monitor too) is configured from that inventory.
        node = node_host(simulate, faults, fault_file, pool.manager)
        try:
            config = node_config_on(node, pool.manager, plugins, pool=pool, check_installed_ray=False)
        except BaseException:
            node.discard()
            raise
    for problem in config.inventory.problems:
        if problem.severity != "info":
            err_console.print(problem.render(), markup=False, highlight=False)
    return config


def _load_fixture_readers() -> None:
    # Imported while the plugins' workers import their plugins, not after them.
    import jsonschema  # noqa: F401
    import yaml  # noqa: F401


def _report(node_start: NodeStart, config: NodeConfig, fault_file: str | None, monitor_interval: float | None,
            ) -> None:
    """Print what the process running `ray start` reports, until the node is up (or a step failed)."""
    args = node_start.args
    started = node_start.event(None if node_start.block else RAY_START_TIMEOUT_S, f"`ray start {' '.join(args)}`")
    failed = started["event"] in ("refused", "ended") or started["returncode"] != 0
    if failed and config.fault_file and config.fault_file != fault_file:  # the one this command created
        with contextlib.suppress(FileNotFoundError):
            os.unlink(config.fault_file)
    if started["event"] == "refused":  # before anything was started
        error = RayaccelError(started["message"])
        error.exit_code = int(started.get("exit_code") or 2)
        raise error
    if started["event"] == "ended" or started["returncode"] != 0:
        returncode = started["returncode"]
        if node_start.block:
            raise typer.Exit(returncode)
        if started["event"] == "ended":
            raise RayaccelError(f"`ray start {' '.join(args)}` failed: its process ended (exit code {returncode}) "
                                "before it reported; run it yourself to see why")
        raise RayaccelError(f"`ray start {' '.join(args)}` failed: {ray_error_line(started['stderr'])}")
    if node_start.block:  # `ray start --block` has ended: the node ran, and is gone
        raise typer.Exit(started["returncode"])
    if started["stderr"]:
        sys.stderr.write(started["stderr"])
    address = started["address"]
    resources = ", ".join(f"{k}={v:g}" for k, v in sorted(config.resources.items()))
    typer.echo(f"rayaccel: node started with {resources or 'no accelerator resources'}")
    auth_mode, why = started["auth"]
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
    # The process's own waits are bounded (register, then the monitor and the listing); this bounds them all.
    bound = NODE_VISIBLE_TIMEOUT_S + max(NODE_VISIBLE_TIMEOUT_S, MONITOR_UP_TIMEOUT_S) + 60
    while True:
        try:
            event = node_start.event(bound, "the new node to be up")
        except WaitTimeout as e:
            raise RayaccelError(f"the node started, but {e} {stop_hint}") from None
        if event["event"] == "dashboard":
            typer.echo(f"rayaccel: Grafana dashboard of the accelerators written beside Ray's: {event['path']}")
        elif event["event"] == "up":
            node_id = event["node_id"]
            if event["monitor"]:
                typer.echo(f"rayaccel: health monitor polling every {monitor_interval:g}s on node "
                           f"{node_id}; a fatal device fault cordons that device alone on this node until it "
                           "recovers (Ray 2.60 cannot undo a drain, so the node is never drained)")
            if event.get("metrics"):
                typer.echo(f"rayaccel: accelerator metrics (ray_rayaccel_*) served beside Ray's at "
                           f"http://{event['metrics']}/metrics (the node's metrics export port)")
            typer.echo(f"rayaccel: node {node_id} is up: `ray status --address={address}` lists it")
            return
        elif event["event"] == "failed":
            if event["step"] == "listed":
                raise RayaccelError(f"the node started, but {event['message']} {stop_hint}")
            step = "its health monitor did not" if event["step"] == "monitor" else "it did not register"
            raise RayaccelError(f"the node started, but {step}: {event['message']} {stop_hint}")
        else:  # ended without a word more
            raise RayaccelError(f"the node started, but the process joining it ended (exit code "
                                f"{event.get('returncode')}) before the node was up {stop_hint}")


def ray_error_line(stderr: str) -> str:
    """The one line that says why a Ray command failed: the exception its traceback ends with (with the
    advice line Ray prints after it, if any), else its last line of output."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception): ", lines[i]):
            advice = lines[-1] if i < len(lines) - 1 and lines[-1].startswith(("If ", "Please ", "Try ")) else ""
            return f"{lines[i][:400]}{' ' + advice[:200] if advice else ''}"
    return lines[-1][:400] if lines else "it printed nothing; run it yourself to see why"


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
        done = subprocess.run([*ray_command(), "stop", *ctx.args], check=False)
        raise typer.Exit(done.returncode)
    if ctx.args:
        raise typer.BadParameter(f"with --address, no ray stop options are used: {' '.join(ctx.args)}")
    if ":" not in address:
        raise typer.BadParameter("give HOST:PORT, e.g. 10.0.0.1:6379", param_hint="--address")
    given, address = address, canonical_address(address)  # localhost:6390 names the node's IP:6390
    members = cluster_members(address)
    if not members:
        raise RayaccelError(f"no Ray processes of cluster {given} run on this machine")
    fault_files = created_fault_files(members)  # read from the processes' environment while they run
    stop_processes(members, 10.0 if grace is None else grace)
    for path in fault_files:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    typer.echo(f"rayaccel: stopped {len(members)} processes of cluster {address}")
