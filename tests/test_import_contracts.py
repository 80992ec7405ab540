"""The layer rules are executable: `lint-imports` keeps the contracts in pyproject.toml [tool.importlinter]
(docs/architecture.md explains them). A broken contract names the import chain that breaks it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_lint_imports_keeps_every_contract() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_the_sdk_never_names_the_suite() -> None:
    """Not even in a docstring: the suite joins the SDK through entry points only."""
    named = [str(p.relative_to(ROOT)) for p in (ROOT / "sdk").rglob("*")
             if p.is_file() and p.suffix in (".py", ".json", ".md", ".txt")
             and "rayaccel_conformance" in p.read_text(encoding="utf-8", errors="replace")]
    assert named == []
