"""``rayaccel cluster``: every node's accelerators as the running cluster sees them (labels, resources, state)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from rayaccel.cli import app, check_output_path, console, err_console, output_path, print_json
from rayaccel.errors import RayaccelError
from rayaccel.files.atomic import write_atomically
from rayaccel.outputs.node_picture import clip

#: Seconds to wait for the cluster's GCS port to accept a connection before saying nothing listens there.
CONNECT_TIMEOUT = 5.0


def checked_address(address: str) -> str:
    """``auto``, or HOST:PORT whose port accepts a connection now (one line, exit 2 otherwise)."""
    address = address.strip()
    if address == "auto":
        return address
    host, _, port = address.rpartition(":")
    if not host or len(host) > 253 or not port.isdigit() or not 0 < int(port) < 65536:
        raise typer.BadParameter(f"{clip(address, 60)!r} is not HOST:PORT; give the cluster's GCS address, "
                                 "e.g. 10.0.0.1:6379, or 'auto'", param_hint="--address")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT):
            pass
    except OSError as e:
        raise RayaccelError(f"--address {address}: no Ray cluster answers there ({e.strerror or e}); "
                            "start one (rayaccel start --head) or give its GCS address") from None
    return address


@app.command()
def cluster(
    address: Annotated[str, typer.Option(
        "--address", metavar="ADDR", help="The cluster's GCS address (host:port); 'auto' finds a local one")] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object")] = False,
    html: Annotated[Path | None, typer.Option(
        "--html", metavar="OUT.html", parser=output_path,
        help="Write the cluster as a picture: one self-contained HTML page")] = None,
) -> None:
    """Show the cluster's accelerators per family and SKU, draining and cordoned nodes, and the scale-up
    domains that span nodes, from what the nodes published to Ray (no SSH, no plugin calls): health and device
    counts live from each node's health monitor, else as the node started."""
    from rayaccel.ray.cluster_view import read_cluster

    if html is not None:
        check_output_path(html, "--html", "cluster.html")
    view = read_cluster(checked_address(address))
    if html is not None:
        from rayaccel.outputs.cluster_picture import cluster_html

        write_atomically(html, cluster_html(view))
        err_console.print(Text(f"rayaccel: wrote the picture of the cluster at {view.address} to {html}"))
    if as_json:
        print_json(view.to_json())
        return
    if html is not None:
        return
    # Labels come from plugins through the nodes: printed as data, never read as markup.
    groups = Table(title=f"cluster {view.address}: accelerators by family and SKU", title_justify="left")
    for column in ("family", "SKU", "type", "nodes", "devices taking work", "fully healthy nodes", "draining"):
        groups.add_column(column)
    for g in view.groups():
        groups.add_row(g.family, g.sku or "unknown", g.accelerator_type or "", str(g.nodes), str(g.devices),
                       str(g.healthy_nodes), str(g.draining_nodes))
    console.print(groups)
    nodes = Table(title="nodes", title_justify="left")
    for column in ("node", "address", "state", "family", "SKU", "devices", "health", "cordoned", "domain"):
        nodes.add_column(column)
    for n in view.nodes:
        devices = f"{n.devices}/{n.total_devices}" if n.total_devices is not None else str(n.devices)
        health = f"{n.health or '?'} ({'live' if n.health_source == 'monitor' else 'at start'})" if n.family else ""
        if n.drained:
            health += ", drained"
        nodes.add_row(n.node_id[:12], n.address, n.state, n.family or "", n.sku or "", devices, health,
                      str(len(n.cordoned)) if n.cordoned else "", n.domain or "")
    console.print(nodes)
    for d in view.domains:
        console.print(Text(f"scale-up domain {d.id} ({d.kind}): {d.size} devices on {len(d.nodes)} nodes"
                           + (f", TPU slice {d.tpu_slice}" if d.tpu_slice else "")
                           + (f", topology {d.topology}" if d.topology else "")))
