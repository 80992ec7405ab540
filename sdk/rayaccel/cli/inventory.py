"""``rayaccel inspect``, ``rayaccel fixtures`` and ``rayaccel plugins``.

They run every plugin as a node does: in worker processes of their own (:meth:`WorkerPool.load`), never
imported into this process, so a plugin that exits, hangs, spawns, prints or monkeypatches the SDK costs only
its own entry. ``--in-process`` (this module's commands, and every other command that runs plugins, through
:func:`plugin_workers`) calls the hooks here instead, for debugging a plugin.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel

from rayaccel.cli import app, check_output_path, console, err_console, output_path, print_json
from rayaccel.cli.policy_option import HealthPolicyOption, use_health_policy, warn_policy
from rayaccel.files.atomic import write_atomically
from rayaccel.hosts.fixtures import Fixture, installed_fixtures, load_fixture
from rayaccel.hosts.seam import Host
from rayaccel.inventory.builder import collect_inventory
from rayaccel.isolation.pool import WorkerPool
from rayaccel.outputs.inspect_json import InspectOutput
from rayaccel.plugins.manager import PluginManager, default_manager
from rayaccel.records import IdleFamily, NodeInventory
from rayaccel.simulation.host_factory import make_host

SimulateOption = Annotated[str | None, typer.Option(
    "--simulate", metavar="FIXTURE", help="Fixture name (plugin/name) or fixture file; default: this machine")]
PluginsOption = Annotated[list[str] | None, typer.Option(help="Only these plugins (repeatable)")]
#: What running the hooks in this process gives up: said by the option's help and on stderr when it is used.
IN_PROCESS_LIMITS = ("a plugin calling os._exit, exhausting memory, holding stdout open through a child, "
                     "leaving processes behind or monkeypatching the SDK then affects this command and the "
                     "other plugins")
InProcessOption = Annotated[bool, typer.Option(
    "--in-process", help="Debug a plugin: call its hooks in this process (a thread and a timeout per hook) "
                         f"instead of a worker process; {IN_PROCESS_LIMITS}")]


def build_host(manager: PluginManager, simulate: str | None, faults: list[str] | None = None) -> Host:
    if simulate is None and faults:
        raise typer.BadParameter("--fault needs --simulate")
    return make_host(simulate, faults or [], manager=manager)


@contextmanager
def plugin_workers(plugins: list[str] | None = None, simulate: str | None = None, in_process: bool = False,
                   models: Sequence[type[BaseModel]] = ()) -> Iterator[WorkerPool]:
    """The configured plugins (or the named ones), each imported and described in a worker process of its
    own, which stays up for the command (closed, with every process it started, at the end). ``simulate``:
    the fixture the command will read (the file itself is found through the plugins' fixture directories,
    known once they answer). While the workers import their plugins, this process builds the validators of
    the records it will make once they answer: the fixture's (with ``simulate``), the node inventory's and
    ``models`` (pydantic builds each at first use: ~20-40 ms, otherwise spent after the answers).
    ``in_process``: the plugins loaded in this process instead, their hooks called here (``--in-process``:
    says what it gives up)."""
    if in_process:
        manager = in_process_manager()
        for name in plugins or []:
            manager.plugin(name)  # a clear error for an unknown name
        with WorkerPool.in_process(manager, plugins or None) as pool:
            yield pool
        return
    built: list[type[BaseModel]] = [*([Fixture] if simulate else []), NodeInventory, IdleFamily, *models]
    with WorkerPool.load(plugins or None, meanwhile=functools.partial(_build_validators, built)) as pool:
        yield pool


def _build_validators(models: Sequence[type[BaseModel]]) -> None:
    for model in models:
        model.model_rebuild()  # builds a deferred model's validator; nothing for one built already


def node_inventory(manager: PluginManager | None, simulate: str | None, faults: list[str] | None,
                   plugins: list[str] | None, models: Sequence[type[BaseModel]] = ()) -> NodeInventory:
    """The inventory a command shows: of this machine or a fixture, of every plugin or the named ones.

    ``manager``: None runs each plugin in a worker process (what a node does); a manager runs its plugins'
    hooks in this process (``--in-process``, or a caller that already holds loaded plugins). ``models``: what
    the command will make of the inventory (:func:`plugin_workers`)."""
    if simulate is None and faults:
        raise typer.BadParameter("--fault needs --simulate")
    if manager is None:
        with plugin_workers(plugins, simulate, models=models) as pool:
            return pool.build(build_host(pool.manager, simulate, faults))
    for name in plugins or []:
        manager.plugin(name)  # a clear error for an unknown name
    return collect_inventory(manager, build_host(manager, simulate, faults), plugins=plugins or None)


def in_process_manager() -> PluginManager:
    """The plugins loaded in this process, for ``--in-process``; says on stderr what that gives up."""
    err_console.print(f"warning: --in-process: the plugins' hooks run in this process; {IN_PROCESS_LIMITS}")
    return default_manager()


@app.command()
def inspect(
    simulate: SimulateOption = None,
    fault: Annotated[list[str] | None, typer.Option(help="Activate a fault the fixture declares (repeatable)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object")] = False,
    plugin: PluginsOption = None,
    in_process: InProcessOption = False,
    html: Annotated[Path | None, typer.Option(
        "--html", metavar="OUT.html", parser=output_path,
        help="Write the node as a picture: one self-contained HTML page (docs/observability.md)")] = None,
    svg: Annotated[Path | None, typer.Option(
        "--svg", metavar="OUT.svg", parser=output_path, help="Write the node as a picture: one SVG file")] = None,
    health_policy: HealthPolicyOption = None,
) -> None:
    """Show this node's accelerator inventory: devices, topology, health, Ray resources and labels."""
    policy = use_health_policy(health_policy)
    for option, path in (("--html", html), ("--svg", svg)):
        if path is not None:
            check_output_path(path, option, f"node.{option[2:]}")
    models = InspectOutput.models() if as_json else ()
    inventory = node_inventory(in_process_manager() if in_process else None, simulate, fault, plugin, models)
    if policy is not None:
        warn_policy(policy, inventory)
    for line in ignored_visible_devices(inventory, os.environ):
        err_console.print(line, markup=False, highlight=False, soft_wrap=True)
    if html is not None or svg is not None:
        write_pictures(inventory, html, svg)
        if not as_json:
            return
    if as_json:
        print_json(InspectOutput.of(inventory, policy.source if policy else None).to_json())
        return
    render_inventory(inventory)
    if policy is not None:
        render_policy(inventory, policy.source or "")


def ignored_visible_devices(inventory: NodeInventory, environ: Mapping[str, str]) -> list[str]:
    """A note per family whose visible-devices variable is set here: inspect shows the whole node (what the
    hardware has), while ``rayaccel start`` and ``rayaccel export`` offer only the units the variable names."""
    notes = []
    for family in inventory.families:
        env_var = family.family.visible_devices_env_var
        if env_var in environ:
            notes.append(f"note: {env_var}={environ[env_var]!r} is set; inspect shows every {family.family.name} "
                         f"device of the node, ignoring it (`rayaccel start` and `rayaccel export` offer only the "
                         "units it names)")
    return notes


def write_pictures(inventory: NodeInventory, html: Path | None, svg: Path | None) -> None:
    """The node's picture as an HTML page and/or an SVG file, each written whole or not at all."""
    from rich.text import Text

    from rayaccel.outputs.node_picture import NodePicture

    picture = NodePicture(inventory)
    for path, text in ((html, picture.html), (svg, picture.svg)):
        if path is not None:
            write_atomically(path, text())
            err_console.print(Text(f"rayaccel: wrote the picture of {inventory.host} to {path}"))


def render_inventory(inventory: NodeInventory) -> None:
    from rich.table import Table  # Rich only for the tables: --json never imports it
    from rich.text import Text

    from rayaccel.support.safe_text import terminal_lines as shown

    kind = "simulated" if inventory.simulated else "real"
    # Every string from a plugin or a vendor tool is printed as data: the console reads no markup, and a control
    # character (a terminal escape in a product name) prints escaped.
    console.print(Text.assemble((shown(inventory.host), "bold"), f" ({kind} host)"))
    if not inventory.families:
        console.print("no accelerators found")
    for family in inventory.families:
        table = Table(title=f"{family.family.vendor} {family.family.name}: {len(family.devices)} devices, "
                            f"type {family.accelerator_type}", title_justify="left")
        for column in ("index", "id", "product", "sku", "memory MiB", "PCI", "NUMA", "health"):
            table.add_column(column)
        states = {h.device: h for h in family.health}
        for d in family.devices:
            report = states.get(d.id)
            health: str = report.state if report else "unknown"
            if report and report.reasons:
                health += " (" + ", ".join(r.code for r in report.reasons) + ")"
            product = shown(d.product_name) if d.product_name else Text("none printed", style="dim")
            table.add_row(str(d.index), shown(d.id), product, d.sku or Text("unknown", style="yellow"),
                          str(d.memory_mib or ""), shown(d.pci_bus_id or ""),
                          "" if d.numa_node is None else str(d.numa_node), shown(health))
        console.print(table)
        if family.topology.links:
            kinds: dict[str, int] = {}
            for link in family.topology.links:
                kinds[link.kind] = kinds.get(link.kind, 0) + 1
            console.print("links: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))
        for domain in family.topology.domains:
            console.print(shown(f"scale-up domain: {domain.kind} {domain.id} (size {domain.size})"))
    console.print("resources: " + json.dumps(inventory.resources))
    for key, value in sorted(inventory.labels.items()):
        console.print(shown(f"  label {key}={value}"))
    for problem in inventory.problems:
        console.print(shown(problem.render()), style="red" if problem.severity == "error" else "yellow")


def render_policy(inventory: NodeInventory, source: str) -> None:
    """The health policy and what it did to each reason a device reports."""
    from rich.text import Text

    decisions = [(f.family.name, d) for f in inventory.families for d in f.decisions]
    console.print(Text(f"health policy {source}: " + ("no device reports a reason" if not decisions else
                                                      f"{len(decisions)} reason(s) acted on")))
    for family, d in decisions:
        counted = f", {d.occurrences} occurrence(s) in its window" if d.rule == "drain-after" else ""
        console.print(Text(f"  {family} device {d.device}: {d.code} -> {d.action} (rule {d.rule}{counted})"))


@app.command()
def fixtures(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
    in_process: InProcessOption = False,
) -> None:
    """List the simulated-host fixtures that installed plugins ship."""
    from rich.table import Table

    rows: list[dict[str, Any]] = []
    with plugin_workers(in_process=in_process) as pool:  # each plugin says where its fixtures are, from its worker
        found = installed_fixtures(pool.manager)
    for ref, path in found.items():
        fixture = load_fixture(path)
        rows.append({"name": ref, "path": str(path), "description": fixture.description,
                     "devices": fixture.expected.devices, "faults": [f.name for f in fixture.faults]})
    if as_json:
        print_json(rows)
        return
    table = Table("fixture", "devices", "faults", "description")
    for row in rows:
        table.add_row(row["name"], str(row["devices"]), ", ".join(row["faults"]), row["description"])
    console.print(table)


@app.command()
def plugins(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
    in_process: InProcessOption = False,
) -> None:
    """List installed plugins with their versions, families, spec versions and problems."""
    from rich.table import Table

    with plugin_workers(in_process=in_process) as pool:  # each plugin imported and checked in a worker of its own
        manager = pool.manager
    rows = []
    for name in manager.plugin_names():
        loaded = manager.plugin(name)
        rows.append({"name": name, "distribution": loaded.distribution, "version": loaded.version,
                     "family": loaded.family.name, "vendor": loaded.family.vendor,
                     "resource": loaded.family.resource_name, "env_var": loaded.family.visible_devices_env_var,
                     "spec_version": loaded.family.spec_version})
    problems = [p.model_dump(mode="json") for p in manager.problems]
    from rayaccel.ray.activation import state as activation_state

    activation = activation_state()
    if as_json:
        print_json({"plugins": rows, "problems": problems,
                    "ray_activation": {"on": activation.on, "path": str(activation.path)}})
        return
    table = Table("plugin", "distribution", "version", "family", "resource", "env var", "spec")
    for row in rows:
        table.add_row(row["name"], str(row["distribution"]), str(row["version"]), row["family"], row["resource"],
                      row["env_var"], row["spec_version"])
    console.print(table)
    for problem in manager.problems:
        console.print(problem.render())
    console.print(f"Ray activation: {activation.describe()}", markup=False, highlight=False)
