"""The map stays true: docs/architecture.md describes every package and top-level module of the SDK, and its
picture (docs/img/architecture.svg) is what the import contracts in pyproject.toml draw now."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdk" / "rayaccel"
DOC = ROOT / "docs" / "architecture.md"
PICTURE = ROOT / "docs" / "img" / "architecture.svg"
SVG = "{http://www.w3.org/2000/svg}"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_architecture", ROOT / "docs" / "gen_architecture.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def sections() -> dict[str, str]:
    """Heading ``### `name``` -> the text under it, up to the next heading."""
    text = DOC.read_text(encoding="utf-8")
    found: dict[str, str] = {}
    for match in re.finditer(r"^#{3,4} `([\w.]+)`\n(.*?)(?=^#{1,4} |\Z)", text, re.M | re.S):
        found[match.group(1)] = match.group(2).strip()
    return found


def packages() -> dict[str, Path]:
    """Every package of the SDK (sub-packages too), by dotted name."""
    return {".".join(("rayaccel", *d.relative_to(SDK).parts)).rstrip("."): d
            for d in [SDK, *sorted(SDK.rglob("*"))] if d.is_dir() and (d / "__init__.py").is_file()}


def top_level_modules() -> list[str]:
    return [f"rayaccel.{p.stem}" for p in sorted(SDK.glob("*.py")) if p.name != "__init__.py"]


def test_every_package_and_top_level_module_of_the_sdk_has_its_paragraph() -> None:
    described = sections()
    missing = [name for name in [*packages(), *top_level_modules()] if len(described.get(name, "")) < 40]
    assert missing == [], f"docs/architecture.md: give each a heading ### `name` and a short paragraph: {missing}"


def test_each_package_paragraph_names_every_module_and_sub_package_of_it() -> None:
    described = sections()
    unnamed = []
    for name, folder in packages().items():
        if name == "rayaccel":  # its modules and packages have headings of their own (above)
            continue
        members = [p.stem for p in folder.glob("*.py") if p.name != "__init__.py"]
        members += [d.name for d in folder.iterdir() if (d / "__init__.py").is_file()]
        unnamed += [f"{name}.{m}" for m in members if f"`{m}`" not in described.get(name, "")]
    assert unnamed == [], "name each in its package's paragraph of docs/architecture.md"


def test_the_map_describes_nothing_that_is_gone() -> None:
    known = {*packages(), *top_level_modules(), "rayaccel_conformance"}
    assert sorted(set(sections()) - known) == []


def test_the_committed_picture_is_what_the_contracts_draw_now() -> None:
    assert PICTURE.read_text(encoding="utf-8") == generator().render(), "stale: run python docs/gen_architecture.py"
    assert "](img/architecture.svg)" in DOC.read_text(encoding="utf-8")


def test_the_picture_shows_every_layer_and_every_contract() -> None:
    """Each module a layers contract names is a box, and each contract is named, in the order pyproject.toml
    gives; a forbidden contract whose target lies below its source is drawn as an arrow naming it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    tree = ET.parse(PICTURE)
    boxes = ["".join(g.itertext()).strip() for g in tree.iter(f"{SVG}g") if g.get("class") == "module"]
    texts = ["".join(t.itertext()).strip() for t in tree.iter(f"{SVG}text")]
    for contract in config["contracts"]:
        assert any(t.startswith(f"{contract['id']} ({contract['type']})") for t in texts), contract["id"]
        for layer in contract.get("layers", []):
            for module in re.split(r"[:|]", layer):
                module = module.strip()
                assert module.split(".", 1)[-1] in boxes or module in boxes, module
    assert any("outputs.exporters must not import" in t for t in texts)  # exporters-are-pure, drawn
    assert "(exporters-are-pure)" in texts


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
MEASURE = """<!doctype html><html><body>{svg}<pre id="result"></pre><script>
const out = [];
for (const g of document.querySelectorAll("g.module")) {{
  const box = g.querySelector("rect").getBBox(), name = g.querySelector("text").getBBox();
  if (name.width <= 0 || name.x < box.x || name.x + name.width > box.x + box.width) out.push(g.textContent.trim());
}}
document.getElementById("result").textContent = "modules " + document.querySelectorAll("g.module").length +
  " overflowing [" + out.join(",") + "]";
</script></body></html>"""


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs chromium (make system-deps)")
def test_chromium_draws_every_module_name_inside_its_box(tmp_path: Path) -> None:
    """The widths are computed without a font at hand: a browser lays the picture out and measures each name."""
    svg = PICTURE.read_text(encoding="utf-8").split("?>", 1)[1]
    page = tmp_path / "map.html"
    page.write_text(MEASURE.format(svg=svg), encoding="utf-8")
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
                           "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    result = re.search(r"<pre id=\"result\">(.*?)</pre>", done.stdout, re.S)
    assert result is not None, done.stdout[-2000:]
    boxes = len(list(ET.parse(PICTURE).iter(f"{SVG}g")))
    assert result.group(1) == f"modules {boxes} overflowing []"
