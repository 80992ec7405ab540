"""``rayaccel transports``: the tensor transport chosen for every device pair, and why."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from rayaccel.cli import app, console, print_json
from rayaccel.cli.inventory import InProcessOption, PluginsOption, SimulateOption, build_host, plugin_workers
from rayaccel.inventory.transport_paths import Endpoint, transport_matrix


@app.command()
def transports(
    simulate: SimulateOption = None,
    across_nodes: Annotated[bool, typer.Option(
        "--across-nodes", help="Also pair each device with the same device on a second node like this one")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
    plugin: PluginsOption = None,
    in_process: InProcessOption = False,
) -> None:
    """Show the tensor transport chosen for each device pair (scale-up > PCIe peer > RDMA > host) and why."""
    with plugin_workers(plugin, in_process=in_process) as pool:  # each plugin in a worker of its own, as inspect
        inventory = pool.build(build_host(pool.manager, simulate))
        # what each transport's class moves, asked in its plugin's worker: nothing of a plugin is imported here
        declared = pool.transports([f.plugin for f in inventory.families])
    peer = inventory.model_copy(update={"host": inventory.host + " (peer)"}) if across_nodes else None
    rows = transport_matrix(inventory, declared, peer)
    if as_json:
        print_json({"host": inventory.host,
                    "declared": {p: [s.name for s in specs] for p, specs in declared.items()},
                    "pairs": [{"a": {"family": a.family, "device": a.device},
                               "b": {"family": b.family, "device": b.device, "same_node": b.inventory is inventory},
                               "transport": c.transport, "path": c.path, "link": c.link, "reason": c.reason}
                              for a, b, c in rows]})
        return
    # Device ids and reasons come from plugins and vendor tools: the console reads them as data, not markup.
    table = Table(title=f"{inventory.host}: {len(rows)} device pairs", title_justify="left")
    for column in ("a", "b", "path", "transport", "why"):
        table.add_column(column)
    index = {(f.family.name, d.id): d.index for f in inventory.families for d in f.devices}

    def label(e: Endpoint) -> str:
        return f"{e.family} {index.get((e.family or '', e.device or ''), e.device)}"

    for a, b, c in rows:
        table.add_row(label(a), label(b) + ("" if b.inventory is inventory else " (other node)"), c.path, c.transport,
                      c.reason)
    if not rows:
        console.print(f"{inventory.host}: no device pairs (fewer than two devices)")
        return
    console.print(table)
