"""``rayaccel export``: the node's inventory in a cluster manager's vocabulary (docs/exporters.md).

The inventory is the one ``rayaccel inspect`` shows, built with every plugin in a worker process of its own;
the autoscaler's cloud hints are asked of the same workers (hooks with arguments, one call at a time). Each
format is a pure function of the inventory (:mod:`rayaccel.outputs.exporters`). Everything that can be
wrong with the request (the format, the output path, a family without the names a format needs) is
refused before anything is written, and ``-o`` writes by rename: a reader (NFD, kubectl, slurmd) sees the
old file or the new one, never half of one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rayaccel.cli import app, check_output_path, err_console, output_path, print_json, strict_json
from rayaccel.cli.inventory import InProcessOption, PluginsOption, SimulateOption, build_host, plugin_workers
from rayaccel.files.atomic import write_atomically
from rayaccel.outputs.exporters import DEFAULT_IMAGE, FORMATS, ExportOptions, export_format
from rayaccel.outputs.exporters.kuberay import KUBERAY_STARTS
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import NodeInventory
from rayaccel.support.monitor_interval import DEFAULT_MONITOR_INTERVAL, interval_error

#: The most workers of one node type `--min-workers`/`--max-workers` take (beyond any real cluster).
MAX_WORKERS = 100_000


def _formats_help() -> str:
    return "; ".join(f"{row.name}: {row.summary}" for row in FORMATS.values())


@app.command("export")
def export_command(
    format_name: Annotated[str, typer.Option("--format", metavar="FORMAT", help=f"One of: {_formats_help()}",
                                             show_default=False)],
    simulate: SimulateOption = None,
    fault: Annotated[list[str] | None, typer.Option(help="Activate a fault the fixture declares (repeatable)")] = None,
    plugin: PluginsOption = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", metavar="FILE", parser=output_path,
                                                help="Write to FILE (atomically) instead of stdout")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The export as one JSON document")] = False,
    node_name: Annotated[str | None, typer.Option(
        help="Kubernetes node name (dra); default: the host name, lower-cased")] = None,
    image: Annotated[str, typer.Option(help="Container image of the KubeRay worker group (kuberay); it must "
                                            "have rayaccel and the plugins installed")] = DEFAULT_IMAGE,
    kuberay_start: Annotated[str, typer.Option(
        "--kuberay-start", metavar="|".join(KUBERAY_STARTS),
        help="How a KubeRay pod starts its node (kuberay): 'rayaccel' replaces the container's command with "
             "rayaccel start (health monitor included); 'activation' keeps KubeRay's generated ray start, in an "
             "image where `rayaccel enable` was run (no health monitor)")] = "rayaccel",
    monitor_interval: Annotated[float, typer.Option(
        help="Seconds between rewrites of the file (nfd: it expires after three)")] = DEFAULT_MONITOR_INTERVAL,
    device_root: Annotated[str | None, typer.Option(
        help="Directory standing for /dev in Slurm's File= paths (slurm)")] = None,
    instance_type: Annotated[list[str] | None, typer.Option(
        metavar="PROVIDER:TYPE", help="Cloud instance type to ask the plugins about, e.g. aws:p5.48xlarge "
        "(autoscaler; repeatable)")] = None,
    min_workers: Annotated[int, typer.Option(min=0, max=MAX_WORKERS,
                                             help="Workers of each node type kept running (autoscaler)")] = 0,
    max_workers: Annotated[int, typer.Option(min=0, max=MAX_WORKERS,
                                             help="Most workers of each node type (autoscaler)")] = 2,
    in_process: InProcessOption = False,
) -> None:
    """Write this node's inventory for a cluster manager: Ray, KubeRay, Kubernetes DRA, NFD, Slurm, ..."""
    row = export_format(format_name)
    if output is not None:
        check_output_path(output)

    why = interval_error(monitor_interval)
    if why is not None:
        raise typer.BadParameter(why, param_hint="--monitor-interval")
    if min_workers > max_workers:
        raise typer.BadParameter(f"--min-workers {min_workers} is more than --max-workers {max_workers}",
                                 param_hint="--min-workers")
    if simulate is None and fault:
        raise typer.BadParameter("--fault needs --simulate")
    if row.needs_cloud_catalog:
        from rayaccel.inventory.cloud import collect_cloud_catalog, parse_instance_type

        asked = [parse_instance_type(t) for t in instance_type or []]
    cloud = None
    # As a node builds it: every plugin in a worker process of its own, which also answers the cloud hints.
    with plugin_workers(plugin, simulate, in_process=in_process) as pool:
        if row.needs_cloud_catalog:
            from rayaccel.simulation.host_factory import fixture_hosts

            cloud = collect_cloud_catalog(pool.manager, asked, plugin,
                                          family_of=lambda name, host, problems: pool.family(name, host, problems,
                                                                                             with_metrics=False),
                                          recordings=fixture_hosts(pool.manager, plugin or None))
        inventory = pool.build(build_host(pool.manager, simulate, fault))
        node_env: dict[str, str] = {}
        if row.needs_node_env:
            from rayaccel.ray.node import node_config

            node_env = node_config(visible_only(inventory, pool.manager), simulate=simulate, plugins=plugin).env
    options = ExportOptions(node_env=node_env, node_name=node_name, monitor_interval=monitor_interval, image=image,
                            plugins=tuple(plugin or ()), simulate=simulate, device_root=device_root, cloud=cloud,
                            min_workers=min_workers, max_workers=max_workers, kuberay_start=kuberay_start)
    exported = row.exporter()(inventory, options)
    for warning in exported.warnings:
        err_console.print(f"warning: {warning}")
    if row.name == "kuberay" and image == DEFAULT_IMAGE:  # said where it is used, not only in --help
        err_console.print(f"warning: the worker group runs {DEFAULT_IMAGE}, Ray's image without rayaccel or any "
                          "plugin: build one with them installed (pip install rayaccel <plugins>) and pass it with "
                          "--image", markup=False, highlight=False, soft_wrap=True)
    if output is None:
        if as_json:
            print_json(exported.data)
        else:
            typer.echo(exported.text, nl=False)
        return
    write_atomically(output, strict_json(exported.data, indent=2) + "\n" if as_json else exported.text)
    typer.echo(f"rayaccel: wrote {row.name} export of {inventory.host} to {output}", err=True)


def visible_only(inventory: NodeInventory, manager: PluginManager) -> NodeInventory:
    """The inventory limited to what an operator's visible-devices variables name, as ``rayaccel start`` offers
    it. Only the plugin can parse its own variable: ``manager``'s plugins answer from their workers."""
    import os

    if not any(f.family.visible_devices_env_var in os.environ for f in inventory.families):
        return inventory
    from rayaccel.inventory.visible_units import restrict_to_visible

    return restrict_to_visible(inventory, manager)
