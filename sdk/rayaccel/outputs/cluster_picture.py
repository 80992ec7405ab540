"""The cluster as a picture and as JSON, from what its nodes published to Ray (labels, resources, state).

A :class:`ClusterView` is built by :func:`rayaccel.ray.cluster_view.read_cluster` from ``ray.nodes()``, the
GCS's draining nodes and the health monitors' cordon placement groups: no SSH, no plugin call. It groups the
nodes per family and SKU, marks draining, dead and cordoned nodes, and shows each scale-up domain that spans
nodes (an NVL72 NVLink domain over its trays, a TPU slice over its workers) as one unit holding its nodes.
Vendor strings are text content or escaped attributes, as in :mod:`rayaccel.outputs.node_picture`.
"""

from __future__ import annotations

import html
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from rayaccel.outputs.node_picture import FONT, HEALTH_COLOURS, MONO, attr, clip
from rayaccel.support.safe_text import terminal_text

NodeState = Literal["alive", "draining", "dead"]
STATE_COLOURS = {"alive": "#1e8e3e", "draining": "#c5221f", "dead": "#5f6368"}


@dataclass(frozen=True)
class ClusterNode:
    """One Ray node as its labels and resources describe it."""

    node_id: str
    address: str
    state: NodeState
    family: str | None = None
    vendor: str | None = None
    sku: str | None = None
    accelerator_type: str | None = None
    devices: int = 0  # devices of the family that take work: the monitor's live count, else rayaccel.io/count
    health: str | None = None  # the monitor's live rayaccel.io/health, else the label the node started with
    domain: str | None = None
    resources: dict[str, float] = field(default_factory=dict)  # accelerator resources only
    cordoned: tuple[str, ...] = ()  # the health monitor's cordon placement groups on the node
    drain_reason: str | None = None
    health_source: Literal["monitor", "labels"] = "labels"  # where devices and health come from
    total_devices: int | None = None  # the family's devices on the node (known from the monitor only)
    drained: bool = False  # no device of the family takes work any more (the monitor says so)
    monitor: str | None = None  # its health monitor's loop: running, stopped, silent (None: no status)


@dataclass(frozen=True)
class ClusterDomain:
    """A scale-up domain as the whole cluster sees it."""

    id: str
    kind: str | None
    size: int
    nodes: tuple[str, ...]
    tpu_slice: str | None = None
    topology: str | None = None


@dataclass(frozen=True)
class ClusterGroup:
    family: str
    sku: str | None
    accelerator_type: str | None
    nodes: int
    devices: int
    healthy_nodes: int
    draining_nodes: int


@dataclass(frozen=True)
class ClusterView:
    address: str
    nodes: tuple[ClusterNode, ...]
    domains: tuple[ClusterDomain, ...]

    def groups(self) -> list[ClusterGroup]:
        """Per family and SKU: how many nodes, devices, healthy and draining nodes."""
        keyed: dict[tuple[str, str | None], list[ClusterNode]] = {}
        for node in self.nodes:
            if node.family is not None and node.state != "dead":
                keyed.setdefault((node.family, node.sku), []).append(node)
        return [ClusterGroup(family, sku, next((n.accelerator_type for n in nodes if n.accelerator_type), None),
                             len(nodes), sum(n.devices for n in nodes),
                             sum(1 for n in nodes if n.health == "healthy" and n.state == "alive" and not n.cordoned),
                             sum(1 for n in nodes if n.state == "draining"))
                for (family, sku), nodes in sorted(keyed.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))]

    def to_json(self) -> dict[str, Any]:
        return {"address": self.address, "groups": [asdict(g) for g in self.groups()],
                "domains": [{**asdict(d), "nodes": list(d.nodes)} for d in self.domains],
                "nodes": [{**asdict(n), "cordoned": list(n.cordoned)} for n in self.nodes]}


# The picture --------------------------------------------------------------------------------------------

CARD_W, CARD_H, GAP, MARGIN = 230, 112, 14, 24
PER_ROW = 5


def _node_card(dw: Any, node: ClusterNode, x: float, y: float) -> Any:
    health = node.health if node.health in HEALTH_COLOURS else "unknown"
    fill, stroke = HEALTH_COLOURS[health]
    if node.state != "alive":
        fill = "#f1f3f4"
    # drawsvg writes attributes verbatim: the id keeps only what an XML id may hold (a node id is Ray's hex).
    group = dw.Group(id=f"node-{re.sub(r'[^A-Za-z0-9_-]', '_', node.node_id[:16])}", class_=f"node state-{node.state}",
                     data_node=attr(node.node_id))
    rect = dw.Rectangle(x, y, CARD_W, CARD_H, rx=8, fill=fill, stroke=STATE_COLOURS[node.state] if node.state != "alive"
                        else stroke, stroke_width=3 if node.state != "alive" else 2,
                        stroke_dasharray="7 4" if node.state == "draining" else None)
    rect.append_title(terminal_text(f"node {node.node_id} at {node.address}: {node.state}"
                                    + (f" ({node.drain_reason})" if node.drain_reason else "")))
    group.append(rect)
    text = [(terminal_text(node.address), 13, "bold", FONT), (f"node {clip(node.node_id, 13)}", 10.5, "normal", MONO)]
    if node.family:
        text.append((clip(f"{node.vendor or ''} {node.sku or node.accelerator_type or node.family}".strip(), 32),
                     12, "normal", FONT))
        units = ", ".join(f"{name} {amount:g}" for name, amount in sorted(node.resources.items()))
        counted = (f"{node.devices} of {node.total_devices} devices take work" if node.total_devices is not None
                   else f"{node.devices} devices at start (no live status)")
        text.append((clip(f"{counted} · {units}", 34), 11, "normal", FONT))
    else:
        text.append(("no accelerators", 12, "normal", FONT))
    for i, (line, size, weight, family) in enumerate(text):
        group.append(dw.Text(line, size, x + 10, y + 20 + 17 * i, font_family=family, font_weight=weight,
                             fill="#202124"))
    badges: list[tuple[str, str]] = [(node.state, STATE_COLOURS[node.state])] if node.state != "alive" else []
    if node.health and node.health != "healthy":
        badges.append((node.health, HEALTH_COLOURS.get(node.health, HEALTH_COLOURS["unknown"])[1]))
    if node.cordoned:
        badges.append((f"cordoned ×{len(node.cordoned)}", "#e37400"))
    if node.drained:
        badges.append(("drained", "#c5221f"))
    bx = x + 10
    for label, colour in badges:
        width = 8 + 6.6 * len(label)
        badge = dw.Group(class_=f"badge badge-{label.split()[0]}")
        badge.append(dw.Rectangle(bx, y + CARD_H - 24, width, 17, rx=8, fill=colour))
        badge.append(dw.Text(label, 11, bx + width / 2, y + CARD_H - 12, text_anchor="middle", fill="#ffffff",
                             font_family=FONT, font_weight="bold"))
        group.append(badge)
        bx += width + 6
    return group


def _grid_height(count: int) -> float:
    rows = max((count + PER_ROW - 1) // PER_ROW, 1)
    return rows * CARD_H + (rows - 1) * GAP


def cluster_svg(view: ClusterView) -> str:
    import drawsvg as dw

    elements: list[Any] = []
    y: float = MARGIN
    width = MARGIN * 2 + PER_ROW * CARD_W + (PER_ROW - 1) * GAP + 24
    alive = [n for n in view.nodes if n.state != "dead"]
    elements.append(dw.Text(f"Ray cluster {view.address}", 22, MARGIN, y + 20, font_family=FONT, font_weight="bold",
                            fill="#202124"))
    draining = sum(1 for n in view.nodes if n.state == "draining")
    elements.append(dw.Text(f"{len(alive)} live nodes, {draining} draining, {len(view.domains)} scale-up domains",
                            14, MARGIN, y + 42, font_family=FONT, fill="#5f6368"))
    y += 60
    for group in view.groups():
        words = (f"{group.family} · {group.sku or 'SKU unknown'} ({group.accelerator_type or '?'}): {group.nodes} "
                 f"nodes, {group.devices} devices taking work, {group.healthy_nodes} fully healthy, "
                 f"{group.draining_nodes} draining")
        row = dw.Group(class_="group")
        row.append(dw.Rectangle(MARGIN, y, 6, 16, fill="#1a73e8"))
        row.append(dw.Text(words, 13, MARGIN + 14, y + 13, font_family=FONT, fill="#202124"))
        elements.append(row)
        y += 22
    y += 10
    by_id = {n.node_id: n for n in view.nodes}
    in_domain: set[str] = set()
    for domain in view.domains:
        members = [by_id[n] for n in domain.nodes if n in by_id]
        in_domain.update(domain.nodes)
        height = _grid_height(len(members)) + 48
        box = dw.Group(class_="domain", data_domain=attr(domain.id))
        inner = 24 + min(max(len(members), 1), PER_ROW) * (CARD_W + GAP) - GAP
        box.append(dw.Rectangle(MARGIN, y, max(inner, 640), height, rx=12, fill="#e8f0fe", stroke="#1a73e8",
                                stroke_width=2, stroke_dasharray="8 5"))
        words = f"{domain.kind or 'scale-up domain'} {domain.id} · {domain.size} devices on {len(members)} nodes"
        if domain.tpu_slice:
            words += f" · TPU slice {domain.tpu_slice}"
        if domain.topology:
            words += f" · topology {domain.topology}"
        box.append(dw.Text(words, 13, MARGIN + 12, y + 22, font_family=FONT, font_weight="bold", fill="#1a73e8"))
        for i, node in enumerate(members):
            box.append(_node_card(dw, node, MARGIN + 12 + (i % PER_ROW) * (CARD_W + GAP),
                                  y + 36 + (i // PER_ROW) * (CARD_H + GAP)))
        elements.append(box)
        y += height + GAP
    rest = [n for n in view.nodes if n.node_id not in in_domain]
    if rest:
        elements.append(dw.Text("nodes outside any multi-node domain", 13, MARGIN, y + 14, font_family=FONT,
                                fill="#5f6368"))
        y += 24
        for i, node in enumerate(rest):
            elements.append(_node_card(dw, node, MARGIN + (i % PER_ROW) * (CARD_W + GAP),
                                       y + (i // PER_ROW) * (CARD_H + GAP)))
        y += _grid_height(len(rest)) + GAP
    drawing = dw.Drawing(width, y + MARGIN, id_prefix="rayaccel-cluster")
    drawing.append(dw.Rectangle(0, 0, width, y + MARGIN, fill="#ffffff"))
    for element in elements:
        drawing.append(element)
    return str(drawing.as_svg())


def cluster_html(view: ClusterView) -> str:
    """One self-contained page: the drawing inline, no script, nothing fetched."""
    svg = cluster_svg(view).split("?>", 1)[-1].strip()
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape('rayaccel cluster ' + view.address)}</title>\n"
            "<style>body{margin:0;background:#fff}svg{display:block;max-width:100%;height:auto}</style>\n"
            f"</head>\n<body>\n{svg}\n</body>\n</html>\n")

