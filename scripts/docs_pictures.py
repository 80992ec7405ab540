"""Regenerate the node pictures shown in README.md and docs/observability.md (docs/img/node-*.png).

Each is ``rayaccel inspect --simulate FIXTURE --html`` opened by headless Chromium (Debian's ``chromium``)
at the drawing's own size. Run from the repository root: ``.venv/bin/python scripts/docs_pictures.py``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ["nvidia/dgx-h100", "nvidia/gb200-nvl72-tray", "tpu/v5p-16-worker0", "neuron/trn2.48xlarge",
            "amd/mi300x-cpx-nps4"]


def picture(fixture: str, work: Path, out: Path) -> Path:
    page, svg = work / "node.html", work / "node.svg"
    subprocess.run([sys.executable, "-m", "rayaccel", "inspect", "--simulate", fixture, "--html", str(page),
                    "--svg", str(svg)], check=True, timeout=300)
    size = re.search(r'<svg[^>]*width="([\d.]+)"[^>]*height="([\d.]+)"', svg.read_text(encoding="utf-8"))
    if size is None:
        raise SystemExit(f"{svg}: no width and height on the drawing")
    width, height = (round(float(v)) for v in size.groups())
    shot = out / f"node-{fixture.replace('/', '-')}.png"
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--no-first-run", f"--user-data-dir={work / 'profile'}",
                    "--hide-scrollbars", f"--window-size={width},{height}", f"--screenshot={shot}", page.as_uri()],
                   check=True, timeout=120, capture_output=True)
    return shot


def main() -> None:
    out = ROOT / "docs" / "img"
    out.mkdir(exist_ok=True)
    for fixture in FIXTURES:
        with tempfile.TemporaryDirectory() as work:
            print(picture(fixture, Path(work), out).relative_to(ROOT))


if __name__ == "__main__":
    main()
