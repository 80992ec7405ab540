"""The node as a picture: one self-contained SVG (or an HTML page holding it) drawn from the inventory.

What it shows, family by family: each device with its index, product, SKU, memory and a health colour;
partitions inside their device (MIG instances, AMD compute partitions: ``Device.partitions``, each with its
profile and drawn red when its own health is unhealthy) or, without partitions, its schedulable units
(NeuronCores); devices grouped by NUMA node with the node's CPUs and NICs; links drawn by kind (colour)
and bandwidth (width, label or legend); the scale-up domain around its
members, with its size beyond this host (a TPU slice's hosts as a row of cells, this one marked); the
node's problems beside. Drawn with drawsvg; nothing is fetched from the network. Every vendor string is
text content (escaped by drawsvg) or an attribute escaped here, so a product name that is markup or
script renders as text.

Stable hooks for tests and tools: ``g.device`` (``id="device-<family>-<index>"``, ``data-device`` the
device id), ``path.link`` (``id="link-<family>-<n>"``, ``data-kind``), ``g.partition``, ``g.numa``,
``g.domain``, ``g.problem``.
"""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rayaccel.records import (
    Device,
    Domain,
    FamilyInventory,
    HealthReport,
    Link,
    NodeInventory,
    Problem,
    partition_resource_name,
)
from rayaccel.support.safe_text import terminal_text

#: Health state -> (fill, stroke): light fill to read text on, a strong edge and stripe.
HEALTH_COLOURS: dict[str, tuple[str, str]] = {
    "healthy": ("#e6f4ea", "#1e8e3e"), "degraded": ("#fef7e0", "#e37400"),
    "unhealthy": ("#fce8e6", "#c5221f"), "unknown": ("#f1f3f4", "#5f6368"),
}
LINK_COLOURS: dict[str, str] = {
    "nvlink": "#76b900", "nvswitch": "#4e7a00", "xgmi": "#ed1c24", "ici": "#4285f4", "neuronlink": "#ff9900",
    "pcie": "#b0b8bc", "roce": "#8e44ad", "infiniband": "#16a085", "efa": "#d35400", "ethernet": "#2c3e50",
    "gaudi-roce": "#0071c5", "other": "#455a64",
}  # PCIe the palest: a vendor fabric (even one of kind "other") is the faster link and must not look fainter
SEVERITY_COLOURS = {"error": "#c5221f", "warning": "#e37400", "info": "#1a73e8"}
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"

MAX_WIDTH = 1480  # the drawing's content width: rows of devices wrap here
MARGIN = 24
GAP = 14
NUMA_GAP = 40  # room for the links that run between NUMA nodes
NUMA_HEADER = 26  # a NUMA group's title line, above its devices
#: Up to this many links each carry a bandwidth label; more are summarised in the legend (and every link's
#: tooltip) so a full NVLink mesh stays readable.
LABELLED_LINKS = 12


@dataclass(frozen=True)
class CellSize:
    width: int
    height: int
    compact: bool


NORMAL = CellSize(176, 104, False)
COMPACT = CellSize(118, 78, True)


def attr(value: object) -> str:
    """An attribute value holding data: drawsvg writes attributes verbatim, so quote and escape it here (control
    characters, which no XML document may hold, as visible escapes)."""
    return html.escape(terminal_text(str(value)), quote=True)


def memory_text(mib: int | None) -> str:
    if mib is None:
        return "memory ?"
    gib = mib / 1024
    return f"{gib:.0f} GiB" if gib >= 10 else f"{gib:.1f} GiB"


def bandwidth_text(link: Link) -> str:
    if link.bandwidth_gbps is None:
        return f"{link.lanes} lane{'s' if link.lanes != 1 else ''}" if link.lanes > 1 else "bandwidth ?"
    return f"{link.bandwidth_gbps:g} GB/s"


#: Width of one character of an 11-pixel link label (DejaVu Sans averages about 0.6 em), for placing labels.
LABEL_CHAR_WIDTH = 6.6


def label_box(words: str, x: float, baseline: float) -> tuple[float, float, float, float]:
    """The box (x, y, width, height) an 11-pixel label centred on ``x`` covers, with a margin."""
    width = LABEL_CHAR_WIDTH * len(words) + 6
    return (x - width / 2, baseline - 12, width, 16)


def overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def clip(text: str, chars: int) -> str:
    """Text content cut to ``chars``; control characters (invalid in XML) as visible escapes."""
    text = terminal_text(text)
    return text if len(text) <= chars else text[: max(chars - 1, 1)] + "…"


@dataclass
class Placed:
    """A device's box once laid out."""

    device: Device
    x: float
    y: float
    size: CellSize

    @property
    def centre(self) -> tuple[float, float]:
        return self.x + self.size.width / 2, self.y + self.size.height / 2


@dataclass
class Box:
    """A rectangle a group occupies (NUMA node, domain)."""

    x: float
    y: float
    width: float
    height: float


@dataclass
class FamilyLayout:
    family: FamilyInventory
    top: float
    height: float = 0.0
    devices: dict[str, Placed] = field(default_factory=dict)
    numa: list[tuple[str, str, Box]] = field(default_factory=list)  # (title, detail, box)


def _numa_groups(family: FamilyInventory) -> list[tuple[int | None, list[Device]]]:
    affinity = {a.device: a for a in family.topology.affinities}
    groups: dict[int | None, list[Device]] = {}
    for device in sorted(family.devices, key=lambda d: d.index):
        a = affinity.get(device.id)
        numa = a.numa_node if a is not None and a.numa_node is not None else device.numa_node
        groups.setdefault(numa, []).append(device)
    return sorted(groups.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))


def _numa_detail(family: FamilyInventory, devices: Sequence[Device]) -> str:
    affinity = {a.device: a for a in family.topology.affinities}
    cpus = {affinity[d.id].cpus for d in devices if d.id in affinity and affinity[d.id].cpus}
    nics = sorted({nic for d in devices if d.id in affinity for nic in affinity[d.id].nics})
    parts = [f"{len(devices)} device{'s' if len(devices) != 1 else ''}"]
    if len(cpus) == 1:
        parts.append(f"CPUs {next(iter(cpus))}")
    elif cpus:
        parts.append(f"CPUs {', '.join(sorted(c for c in cpus if c))}")
    if nics:
        parts.append("NICs " + ", ".join(nics))
    return " · ".join(parts)


def layout_family(family: FamilyInventory, top: float) -> FamilyLayout:
    """Place the family's devices: NUMA groups stacked, devices flowing in rows within each."""
    size = COMPACT if len(family.devices) > 16 else NORMAL
    placed = FamilyLayout(family, top)
    y = top
    inner = 12
    for numa, devices in _numa_groups(family):
        header = NUMA_HEADER
        x0, y0 = MARGIN, y
        x, row_y = float(x0 + inner), float(y0 + header)
        right = x
        fits = max(int((MAX_WIDTH - 2 * inner + GAP) // (size.width + GAP)), 1)
        # Wider than tall for the family as a whole (8 GPUs: 4 a row), never one long row.
        fits = min(fits, max(2, math.ceil(math.sqrt(2 * len(family.devices)))))
        per_row = math.ceil(len(devices) / math.ceil(len(devices) / fits))  # rows balanced: 4 + 4, not 7 + 1
        for n, device in enumerate(devices):
            if n and n % per_row == 0:
                x, row_y = x0 + inner, row_y + size.height + GAP
            placed.devices[device.id] = Placed(device, x, row_y, size)
            x += size.width + GAP
            right = max(right, x - GAP)
        bottom = row_y + size.height + inner
        title = f"NUMA node {numa}" if numa is not None else "NUMA node not reported"
        placed.numa.append((title, _numa_detail(family, devices), Box(x0, y0, max(right + inner - x0, 320),
                                                                           bottom - y0)))
        y = bottom + NUMA_GAP
    placed.height = y - NUMA_GAP + GAP - top
    return placed


class NodePicture:
    """Draws one inventory; :meth:`svg` and :meth:`html` give the document."""

    def __init__(self, inventory: NodeInventory) -> None:
        import drawsvg

        self.dw: Any = drawsvg
        self.inventory = inventory
        self.elements: list[Any] = []
        self.right: float = 880.0  # the widest content drawn so far: the drawing is as wide as it needs
        self.y: float = MARGIN
        self._header()
        for family in inventory.families:
            self._family(family)
        self._problems(inventory.problems)
        self.height = self.y + MARGIN
        self.width = self.right + 2 * MARGIN

    # building blocks ---------------------------------------------------------------------------------------

    def text(self, value: str, x: float, y: float, size: float = 13, **kw: Any) -> Any:
        kw.setdefault("font_family", FONT)
        kw.setdefault("fill", "#202124")
        return self.dw.Text(value, size, x, y, **kw)

    def _header(self) -> None:
        inv = self.inventory
        kind = "simulated host" if inv.simulated else "host"
        self.elements.append(self.text(inv.host, MARGIN, self.y + 20, 22, font_weight="bold", class_="host"))
        families = ", ".join(f"{len(f.devices)} × {f.accelerator_type or f.family.name} ({f.family.vendor})"
                             for f in inv.families) or "no accelerators found"
        self.elements.append(self.text(f"{kind} · {families}", MARGIN, self.y + 42, 14, fill="#5f6368"))
        resources = ", ".join(f"{k}: {v:g}" for k, v in sorted(inv.resources.items()))
        self.elements.append(self.text(f"Ray resources: {resources or 'none'}", MARGIN, self.y + 60, 12,
                                       fill="#5f6368", font_family=MONO))
        self._health_legend(MARGIN, self.y + 80)
        self.y += 98

    def _health_legend(self, x: float, y: float) -> None:
        self.elements.append(self.text("health:", x, y, 12, fill="#5f6368"))
        x += 52
        for state, (fill, stroke) in HEALTH_COLOURS.items():
            self.elements.append(self.dw.Rectangle(x, y - 11, 14, 14, rx=3, fill=fill, stroke=stroke, stroke_width=2))
            self.elements.append(self.text(state, x + 20, y, 12))
            x += 104

    def _family(self, family: FamilyInventory) -> None:
        name = family.family.name
        resource = family.family.resource_name
        profiles: dict[str, int] = {}
        for partition in (p for d in family.devices for p in d.partitions):
            key = partition_resource_name(resource, partition.kind, partition.profile)
            profiles[key] = profiles.get(key, 0) + 1
        offered = [f"{count} partitions as {key}" for key, count in profiles.items()]
        if family.schedulable_units or not offered:
            offered.insert(0, f"{len(family.schedulable_units)} schedulable {resource} units")
        title = (f"{family.family.vendor} {name}: {len(family.devices)} devices, {', '.join(offered)}, type "
                 f"{family.accelerator_type or 'unknown'}")
        self.elements.append(self.text(title, MARGIN, self.y + 18, 16, font_weight="bold", class_="family"))
        self.y += 30
        domain_band = self._domains_band(family, self.y)
        self.y += domain_band
        layout = layout_family(family, self.y + (12 if family.topology.domains else 0))
        self.right = max(self.right, *(box.x + box.width for _, _, box in layout.numa))
        self._domain_outline(family, layout)
        for title_, detail, box in layout.numa:
            group = self.dw.Group(class_="numa")
            group.append(self.dw.Rectangle(box.x, box.y, box.width, box.height, rx=8, fill="#f8f9fa",
                                           stroke="#dadce0", stroke_width=1.5))
            group.append(self.text(title_, box.x + 12, box.y + 18, 13, font_weight="bold"))
            group.append(self.text(detail, box.x + 22 + 9 * len(title_), box.y + 18, 12, fill="#5f6368"))
            self.elements.append(group)
        labels = self._links(family, layout)  # under the devices; their bandwidth labels above them
        health = {h.device: h for h in family.health}
        for placed in layout.devices.values():
            self._device(name, placed, health)
        self.elements.extend(labels)
        self.y = layout.top + layout.height + 4
        self._link_legend(family)

    def _domains_band(self, family: FamilyInventory, y: float) -> float:
        """Each scale-up domain in words; a multi-host domain also as a row of host cells, this one marked."""
        used = 0.0
        for domain in family.topology.domains:
            group = self.dw.Group(class_="domain", data_kind=attr(domain.kind))
            here = len(domain.members)
            words = f"scale-up domain: {domain.kind} {domain.id} · {domain.size} in all, {here} on this host"
            topology = family.labels.get("ray.io/tpu-topology") or self.inventory.labels.get("ray.io/tpu-topology")
            if topology and domain.kind == "tpu-slice":
                words += f" · topology {topology}"
            if domain.hosts:
                position = f"this host is #{domain.host_index} of {domain.hosts} hosts" \
                    if domain.host_index is not None else f"{domain.hosts} hosts"
                words += f" · {position}"
            group.append(self.text(words, MARGIN, y + used + 14, 13, fill="#3c4043"))  # one line per domain
            used += 22
            if domain.hosts and domain.hosts > 1:
                used += self._host_cells(group, domain, y + used)
            self.elements.append(group)
        return used

    def _host_cells(self, group: Any, domain: Domain, y: float) -> float:
        hosts = domain.hosts or 1
        per_row = min(hosts, 32)
        cell, gap = 38, 4
        for h in range(hosts):
            x = MARGIN + (h % per_row) * (cell + gap)
            cy = y + (h // per_row) * (22 + gap)
            mine = h == domain.host_index
            group.append(self.dw.Rectangle(x, cy, cell, 22, rx=3, class_="domain-host",
                                           fill="#1a73e8" if mine else "#e8f0fe", stroke="#1a73e8"))
            group.append(self.text(str(h), x + cell / 2, cy + 15, 11, text_anchor="middle",
                                   fill="#ffffff" if mine else "#1a73e8"))
        return math.ceil(hosts / per_row) * (22 + gap) + 6

    def _domain_outline(self, family: FamilyInventory, layout: FamilyLayout) -> None:
        for domain in family.topology.domains:
            members = [layout.devices[m] for m in domain.members if m in layout.devices]
            boxes = [box for _, _, box in layout.numa
                     if any(box.x <= p.x <= box.x + box.width and box.y <= p.y <= box.y + box.height for p in members)]
            if not boxes:
                continue
            x0 = min(b.x for b in boxes) - 8
            y0 = min(b.y for b in boxes) - 8
            x1 = max(b.x + b.width for b in boxes) + 8
            y1 = max(b.y + b.height for b in boxes) + 8
            self.elements.append(self.dw.Rectangle(x0, y0, x1 - x0, y1 - y0, rx=12, fill="#e8f0fe", fill_opacity=0.45,
                                                   stroke="#1a73e8", stroke_width=2, stroke_dasharray="8 5",
                                                   class_="domain-outline"))

    def _links(self, family: FamilyInventory, layout: FamilyLayout) -> list[Any]:
        links = family.topology.links
        widest = max((link.bandwidth_gbps or 0) for link in links) if links else 0
        labels: list[Any] = []
        # Boxes a label must not cover: the devices, then each label placed (the fastest links are labelled first).
        taken: list[tuple[float, float, float, float]] = [(p.x, p.y, p.size.width, p.size.height)
                                                          for p in layout.devices.values()]
        taken += [(box.x, box.y, box.width, NUMA_HEADER) for _, _, box in layout.numa]  # "NUMA node 1 ..." lines
        candidates: list[tuple[float, str, float, float]] = []
        # The slowest drawn first, so the fastest lie on top; each drawn bolder the faster it is.
        for n, link in sorted(enumerate(links), key=lambda item: item[1].bandwidth_gbps or 0):
            a, b = layout.devices.get(link.a), layout.devices.get(link.b)
            if a is None or b is None:
                continue  # a link to a device this picture does not hold (not on the node)
            (ax, ay), (bx, by) = a.centre, b.centre
            dist = math.hypot(bx - ax, by - ay) or 1.0
            # Bow longer links more, so a full mesh fans out instead of stacking on the straight lines.
            bow = 0 if dist < a.size.width + GAP + 1 else min(0.18 * dist, 90)
            mx, my = (ax + bx) / 2 - (by - ay) / dist * bow, (ay + by) / 2 + (bx - ax) / dist * bow
            share = link.bandwidth_gbps / widest if widest and link.bandwidth_gbps else 0.5
            width = 1.5 + 3.0 * share
            path = self.dw.Path(stroke=LINK_COLOURS.get(link.kind, "#95a5a6"), stroke_width=round(width, 2),
                                stroke_opacity=round(0.35 + 0.6 * share, 2), fill="none",
                                id=f"link-{family.family.name}-{n}",
                                class_=f"link link-{link.kind}", data_kind=attr(link.kind))
            path.M(ax, ay).Q(mx, my, bx, by)
            path.append_title(f"{a.device.index} ↔ {b.device.index}: {link.kind}, {link.lanes} lane(s), "
                              f"{bandwidth_text(link)}")
            self.elements.append(path)
            side_by_side = abs(by - ay) < 1 and not bow  # a 14-pixel gap: no room for a label
            if link.bandwidth_gbps is not None and not side_by_side:
                candidates.append((link.bandwidth_gbps, bandwidth_text(link), (ax + 2 * mx + bx) / 4,
                                   (ay + 2 * my + by) / 4))
        for _, words, lx, ly in sorted(candidates, key=lambda c: -c[0]):
            box = label_box(words, lx, ly - 4)
            if len(labels) < LABELLED_LINKS and not any(overlaps(box, other) for other in taken):
                taken.append(box)
                labels.append(self.text(words, lx, ly - 4, 11, text_anchor="middle", fill="#202124",
                                        stroke="#ffffff", stroke_width=3, paint_order="stroke", class_="link-label"))
        return labels

    def _device(self, family: str, placed: Placed, health: dict[str, HealthReport]) -> None:
        d, size = placed.device, placed.size
        report = health.get(d.id)
        state = report.state if report is not None else "unknown"
        fill, stroke = HEALTH_COLOURS.get(state, HEALTH_COLOURS["unknown"])
        group = self.dw.Group(id=f"device-{family}-{d.index}", class_=f"device health-{state}",
                              data_device=attr(d.id))
        rect = self.dw.Rectangle(placed.x, placed.y, size.width, size.height, rx=6, fill=fill, stroke=stroke,
                                 stroke_width=2)
        reasons = "; ".join(f"{r.code}: {r.message}" for r in (report.reasons if report is not None else []))
        rect.append_title(f"{d.index} {d.product_name or 'no product name'} ({d.id}) sku {d.sku or 'unknown'}, "
                          f"{memory_text(d.memory_mib)}, {state}" + (f": {reasons}" if reasons else ""))
        group.append(rect)
        group.append(self.dw.Rectangle(placed.x, placed.y + size.height - 6, size.width, 6, fill=stroke))
        x, y = placed.x + 8, placed.y
        chars = 17 if size.compact else 26
        group.append(self.text(f"#{d.index}", x, y + 17, 13, font_weight="bold"))
        group.append(self.text(memory_text(d.memory_mib), placed.x + size.width - 8, y + 17, 12,
                               text_anchor="end", font_weight="bold", fill="#3c4043"))
        group.append(self.text(clip(d.product_name or "no product name", chars), x, y + 33, 11, class_="product"))
        group.append(self.text(clip(d.sku or "SKU unknown", chars - 3), x, y + 48, 10.5, font_family=MONO,
                               fill="#3c4043" if d.sku else "#c5221f"))
        if not size.compact:
            group.append(self.text(clip(d.pci_bus_id or d.id, chars), x, y + 62, 10, fill="#5f6368",
                                   font_family=MONO))
        if state != "healthy":
            codes = ", ".join(r.code for r in report.reasons) if report is not None and report.reasons else state
            group.append(self.text(clip(codes, chars), x, y + size.height - 12, 11, fill=stroke, font_weight="bold"))
        self._inner_parts(group, placed, health)
        self.elements.append(group)

    def _inner_parts(self, group: Any, placed: Placed, health: dict[str, HealthReport]) -> None:
        """Partitions (MIG instances, AMD compute partitions) inside their device, each with its profile, up to
        four a row; else the schedulable units (cores) when there are several."""
        d, size = placed.device, placed.size
        parts: list[tuple[str, str, str]] = [(p.profile, f"{p.kind} {p.profile} {p.id}", p.id) for p in d.partitions]
        if not parts and len(d.units) > 1:
            parts = [(u, f"unit {u}", u) for u in d.units]
        if not parts:
            return
        per_row = min(len(parts), 4) if d.partitions else len(parts)
        rows = math.ceil(len(parts) / per_row)
        top = min(placed.y + (52 if size.compact else 68), placed.y + size.height - rows * 16 - 4)
        available = size.width - 16
        cell_w = max(min(available / per_row - 3, 56), 10)
        for i, (label, title, part_id) in enumerate(parts):
            x = placed.x + 8 + (i % per_row) * (cell_w + 3)
            y = top + (i // per_row) * 16
            if x + cell_w > placed.x + size.width - 4:
                continue  # more units than fit on the row: the rest are not drawn
            own = health.get(part_id) if d.partitions else None
            bad = own is not None and own.state == "unhealthy"
            part = self.dw.Group(class_="partition" + (" health-unhealthy" if bad else ""))
            box = self.dw.Rectangle(x, y, cell_w, 14, rx=2, fill="#fce8e6" if bad else "#ffffff",
                                    stroke="#c5221f" if bad else "#5f6368", stroke_width=1)
            box.append_title(title)
            part.append(box)
            if cell_w >= 24:
                part.append(self.text(clip(label, int(cell_w // 6)), x + cell_w / 2, y + 11, 9,
                                      text_anchor="middle", font_family=MONO))
            group.append(part)

    def _link_legend(self, family: FamilyInventory) -> None:
        kinds: dict[str, list[Link]] = {}
        for link in family.topology.links:
            kinds.setdefault(link.kind, []).append(link)
        if not kinds:
            self.elements.append(self.text("links: none reported", MARGIN, self.y + 14, 12, fill="#5f6368"))
            self.y += 26
            return
        x = MARGIN
        for kind, links in sorted(kinds.items()):
            bandwidths = sorted({link.bandwidth_gbps for link in links if link.bandwidth_gbps is not None})
            lanes = sorted({link.lanes for link in links})
            each = ("bandwidth not reported" if not bandwidths else f"{bandwidths[0]:g} GB/s each"
                    if len(bandwidths) == 1 else f"{bandwidths[0]:g}–{bandwidths[-1]:g} GB/s")
            lane_text = f", {lanes[0]} lanes" if lanes == [lanes[0]] and lanes[0] > 1 else ""
            words = f"{kind}: {len(links)} link{'s' if len(links) != 1 else ''}{lane_text}, {each}"
            group = self.dw.Group(class_="link-legend")
            group.append(self.dw.Line(x, self.y + 10, x + 28, self.y + 10, stroke=LINK_COLOURS.get(kind, "#95a5a6"),
                                      stroke_width=5))
            group.append(self.text(words, x + 36, self.y + 14, 12))
            self.elements.append(group)
            x += 48 + 7 * len(words)
        self.y += 34

    def _problems(self, problems: Sequence[Problem]) -> None:
        self.y += 6
        title = f"problems: {len(problems)}" if problems else "problems: none"
        self.elements.append(self.text(title, MARGIN, self.y + 16, 15, font_weight="bold"))
        self.y += 26
        for problem in problems:
            where = " / ".join(p for p in (problem.plugin, problem.hook) if p)
            message = f"{problem.severity} {problem.code} ({where}): {problem.message}"
            if problem.fix:
                message += f" Fix: {problem.fix}"
            group = self.dw.Group(class_=f"problem severity-{problem.severity}")
            colour = SEVERITY_COLOURS.get(problem.severity, "#5f6368")
            lines = textwrap.wrap(message, int((self.right - MARGIN) / 6.8)) or [message]
            group.append(self.dw.Rectangle(MARGIN, self.y, 5, 16 * len(lines) + 4, fill=colour))
            for i, line in enumerate(lines):
                group.append(self.text(line, MARGIN + 12, self.y + 14 + 16 * i, 12))
            self.elements.append(group)
            self.y += 16 * len(lines) + 10

    # documents ---------------------------------------------------------------------------------------------

    def drawing(self) -> Any:
        drawing = self.dw.Drawing(self.width, self.height, id_prefix="rayaccel")
        drawing.append(self.dw.Rectangle(0, 0, self.width, self.height, fill="#ffffff"))
        for element in self.elements:
            drawing.append(element)
        return drawing

    def svg(self) -> str:
        return str(self.drawing().as_svg())

    def html(self) -> str:
        svg = self.svg().split("?>", 1)[-1].strip()  # inline: no XML declaration inside HTML
        title = html.escape(f"rayaccel: {self.inventory.host}")
        return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                f"<title>{title}</title>\n"
                "<style>body{margin:0;background:#fff;font-family:" + FONT + "}"
                "svg{display:block;max-width:100%;height:auto}</style>\n"
                f"</head>\n<body>\n{svg}\n</body>\n</html>\n")


def node_svg(inventory: NodeInventory) -> str:
    """The node's picture as a standalone SVG document."""
    return NodePicture(inventory).svg()


def node_html(inventory: NodeInventory) -> str:
    """The node's picture as one self-contained HTML page (the SVG inline, no scripts, nothing fetched)."""
    return NodePicture(inventory).html()
