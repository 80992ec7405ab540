"""Draw the SDK's layers and the arrows between them from the import contracts in pyproject.toml.

`python docs/gen_architecture.py` (or `make docs`) writes docs/img/architecture.svg; tests/docs/test_architecture_map.py
fails when the committed picture differs from what this draws now, so the map cannot drift from the contracts
that `lint-imports` enforces. Every box, arrow and line of text comes from `[tool.importlinter]`; nothing here
names a module.
"""

from __future__ import annotations

import sys
import textwrap
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import drawsvg

ROOT = Path(__file__).resolve().parents[1]
PICTURE = ROOT / "docs" / "img" / "architecture.svg"

FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace"
FONT_SIZE = 13
CHAR_W = 8.0  # a monospace character at FONT_SIZE, with room to spare across renderers
BOX_H = 26
BOX_PAD = 10
GAP_JOINED = 8  # `a : b`: siblings that may import each other
GAP_APART = 30  # `a | b`: siblings that must not
BAND_PAD = 10
BAND_GAP = 26  # room for the arrow from a layer to the one below
ROW_MAX_W = 700  # a layer wider than this wraps its boxes over several rows
MARGIN = 24
STACK_GAP = 40  # between the labels of the SDK's stack and the suite's stack
FORBIDDEN = "#c0392b"
ALLOWED = "#5d6d7e"
LINE_H = 17
CHANNEL_STEP = 12
LABEL_CHARS = 56


@dataclass
class Box:
    module: str
    label: str
    x: float = 0.0
    y: float = 0.0

    @property
    def w(self) -> float:
        return len(self.label) * CHAR_W + 2 * BOX_PAD

    def right(self) -> tuple[float, float]:
        return self.x + self.w, self.y + BOX_H / 2


@dataclass
class Band:
    """One layer: its siblings, in rows, each sibling joined to the one before by ':' or '|'."""

    boxes: list[Box]
    joins: list[str]  # joins[i]: how boxes[i] is joined to boxes[i - 1] (joins[0] is "")
    y: float = 0.0
    h: float = 0.0
    w: float = 0.0
    apart: list[tuple[float, float, float]] = field(default_factory=list)  # x, y0, y1 of each '|' mark


def contracts(pyproject: Path = ROOT / "pyproject.toml") -> list[dict[str, Any]]:
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["importlinter"]
    return list(config["contracts"])


def _band(layer: str, prefix: str) -> Band:
    boxes: list[Box] = []
    joins: list[str] = []
    token = ""
    for part in layer.replace("|", " | ").replace(":", " : ").split():
        if part in (":", "|"):
            token = part
            continue
        label = part[len(prefix):] if prefix and part.startswith(prefix) else part
        boxes.append(Box(part, label))
        joins.append(token)
        token = ""
    return Band(boxes, joins)


def _place(bands: list[Band], x0: float, y0: float) -> float:
    """Lay the layers out top to bottom from (x0, y0); returns the bottom."""
    y = y0
    for band in bands:
        x, row_y, rows = x0 + BAND_PAD, y + BAND_PAD, 1
        for box, join in zip(band.boxes, band.joins, strict=True):
            gap = GAP_APART if join == "|" else GAP_JOINED if join else 0
            if join and x + gap + box.w > x0 + BAND_PAD + ROW_MAX_W:
                x, row_y, rows = x0 + BAND_PAD, row_y + BOX_H + GAP_JOINED, rows + 1
            elif join:
                if join == "|":
                    band.apart.append((x + gap / 2, row_y - 4, row_y + BOX_H + 4))
                x += gap
            box.x, box.y = x, row_y
            x += box.w
        band.y = y
        band.h = rows * BOX_H + (rows - 1) * GAP_JOINED + 2 * BAND_PAD
        band.w = max(b.x + b.w for b in band.boxes) - x0 + BAND_PAD
        y += band.h + BAND_GAP
    width = max(b.w for b in bands)
    for band in bands:
        band.w = width
    return y - BAND_GAP


def _text(drawing: drawsvg.Drawing, text: str, x: float, y: float, **style: Any) -> None:
    drawing.append(drawsvg.Text(text, style.pop("size", FONT_SIZE), x, y, font_family=FONT, **style))


def _draw_stack(drawing: drawsvg.Drawing, bands: list[Band], x0: float, title: str, arrow_head: Any) -> None:
    _text(drawing, title, x0, bands[0].y - 10, font_weight="bold")
    for i, band in enumerate(bands):
        drawing.append(drawsvg.Rectangle(x0, band.y, band.w, band.h, rx=6, fill="#f4f6f7", stroke="#aab7b8"))
        for x, y0, y1 in band.apart:
            drawing.append(drawsvg.Line(x, y0, x, y1, stroke=FORBIDDEN, stroke_width=2, stroke_dasharray="4 3"))
        for box in band.boxes:  # a group per module, so a reader (or a test in a browser) finds box and name
            group = drawsvg.Group(class_="module")
            group.append(drawsvg.Rectangle(box.x, box.y, box.w, BOX_H, rx=4, fill="#ffffff", stroke="#2e4053"))
            group.append(drawsvg.Text(box.label, FONT_SIZE, box.x + BOX_PAD, box.y + BOX_H / 2 + FONT_SIZE * 0.35,
                                      font_family=FONT))
            drawing.append(group)
        if i + 1 < len(bands):  # a layer imports the layers below it
            x = x0 + band.w / 2
            drawing.append(drawsvg.Line(x, band.y + band.h + 2, x, bands[i + 1].y - 3, stroke=ALLOWED,
                                        stroke_width=2, marker_end=arrow_head))


def _box_of(module: str, boxes: list[Box]) -> Box | None:
    """The box a module lives in: the most specific box that is it or a package above it."""
    holding = [b for b in boxes if module == b.module or module.startswith(b.module + ".")]
    return max(holding, key=lambda b: len(b.module), default=None)


@dataclass
class Forbidden:
    """A forbidden contract's exception to 'a layer may import those below it': ``source`` (a module in
    ``source_box``) must not import ``parts`` of ``target_box`` ("" for the whole box)."""

    contract: str
    source: str
    source_box: Box
    target_box: Box
    parts: list[str]

    def text(self) -> str:
        whole = [self.target_box.label for p in self.parts if not p]
        inner = [p for p in self.parts if p]
        named = whole + ([f"{self.target_box.label}.{inner[0]}"] if len(inner) == 1 else
                         [f"{self.target_box.label}.{{{', '.join(inner)}}}"] if inner else [])
        return f"{self.source} must not import {', '.join(named)}"


def _forbidden_arrows(found: list[dict[str, Any]], bands: list[Band]) -> list[Forbidden]:
    """(contract id, source box, target box, what of the target is forbidden) for each forbidden contract whose
    target sits in a layer below its source: the exceptions to 'a layer may import those below it'."""
    boxes = [b for band in bands for b in band.boxes]
    band_of = {id(b): i for i, band in enumerate(bands) for b in band.boxes}
    arrows: dict[tuple[str, str, int], Forbidden] = {}
    for contract in found:
        if contract["type"] != "forbidden":
            continue
        for source in contract["source_modules"]:
            source_box = _box_of(source, boxes)
            for target in contract["forbidden_modules"]:
                target_box = _box_of(target, boxes)
                if source_box is None or target_box is None or band_of[id(target_box)] <= band_of[id(source_box)]:
                    continue
                key = (contract["id"], source, id(target_box))
                label = source.removeprefix("rayaccel.")
                entry = arrows.setdefault(key, Forbidden(contract["id"], label, source_box, target_box, []))
                entry.parts.append(target[len(target_box.module) + 1:] if target != target_box.module else "")
    return list(arrows.values())


def render(pyproject: Path = ROOT / "pyproject.toml") -> str:
    found = contracts(pyproject)
    stacks = [c for c in found if c["type"] == "layers"]
    main, *others = stacks
    sdk = [_band(layer, "rayaccel.") for layer in main["layers"]]
    top = MARGIN + 30
    bottom = _place(sdk, MARGIN, top)
    # The suite's own layers beside the SDK's, level with the box that stands for them.
    side: list[tuple[dict[str, Any], list[Band], Box | None]] = []
    arrows = _forbidden_arrows(found, sdk)
    channel_x = MARGIN + sdk[0].w + 16
    labels_x = channel_x + CHANNEL_STEP * len(arrows) + 6
    x = labels_x + (LABEL_CHARS * 11 / FONT_SIZE * CHAR_W if arrows else 0) + STACK_GAP
    for other in others:
        bands = [_band(layer, "") for layer in other["layers"]]
        root = bands[0].boxes[0].module.split(".")[0]
        prefix = root + "."
        bands = [_band(layer, prefix) for layer in other["layers"]]
        bottom = max(bottom, _place(bands, x, top))
        side.append((other, bands, _box_of(root, [b for band in sdk for b in band.boxes])))
        x += bands[0].w + MARGIN
    legend = [f"{c['id']} ({c['type']}): {c['name']}" for c in found]
    legend_y = bottom + 40
    width = max(x,
                MARGIN * 2 + max(len(line) for line in legend) * CHAR_W * 0.85)
    height = legend_y + LINE_H * (len(legend) + 2) + MARGIN
    drawing = drawsvg.Drawing(round(width), round(height), font_family=FONT)
    drawing.append(drawsvg.Rectangle(0, 0, round(width), round(height), fill="#ffffff"))
    head = drawsvg.Marker(-0.1, -0.5, 0.9, 0.5, scale=8, orient="auto")
    head.append(drawsvg.Lines(-0.1, -0.5, -0.1, 0.5, 0.9, 0, fill=ALLOWED, close=True))
    red_head = drawsvg.Marker(-0.1, -0.5, 0.9, 0.5, scale=8, orient="auto")
    red_head.append(drawsvg.Lines(-0.1, -0.5, -0.1, 0.5, 0.9, 0, fill=FORBIDDEN, close=True))
    _text(drawing, "rayaccel: layers (top imports bottom, never the reverse), from [tool.importlinter] in "
          "pyproject.toml", MARGIN, MARGIN, font_weight="bold", size=15)
    _draw_stack(drawing, sdk, MARGIN, main["id"], head)
    for other, bands, stands_for in side:
        _draw_stack(drawing, bands, bands[0].boxes[0].x - BAND_PAD, other["id"], head)
        if stands_for is not None:
            x0, y0 = stands_for.right()
            drawing.append(drawsvg.Line(x0, y0, bands[0].boxes[0].x - BAND_PAD - 2, bands[0].y + bands[0].h / 2,
                                        stroke=ALLOWED, stroke_dasharray="2 3"))
    stack_right = MARGIN + sdk[0].w
    for k, arrow in enumerate(arrows):
        sy, ty = arrow.source_box.right()[1], arrow.target_box.right()[1]
        cx = channel_x + CHANNEL_STEP * k
        drawing.append(drawsvg.Circle(stack_right, sy, 3, fill=FORBIDDEN))
        path = drawsvg.Path(stroke=FORBIDDEN, stroke_width=1.5, stroke_dasharray="5 3", fill="none",
                            marker_end=red_head)
        path.M(stack_right, sy).L(cx, sy).L(cx, ty).L(stack_right + 3, ty)
        drawing.append(path)
        for i, line in enumerate([*textwrap.wrap(arrow.text(), LABEL_CHARS), f"({arrow.contract})"]):
            _text(drawing, line, labels_x, ty + 4 + (i - 0.5) * 13, size=11, fill=FORBIDDEN)
    _text(drawing, "Contracts (a red dashed line between siblings: they must not import each other; a red arrow: "
          "forbidden although below)", MARGIN, legend_y, font_weight="bold")
    for i, line in enumerate(legend):
        _text(drawing, line, MARGIN, legend_y + LINE_H * (i + 1.3), size=11)
    return str(drawing.as_svg()) + "\n"


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else PICTURE
    out.write_text(render(), encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
