"""Vendor plugins baked from the template with the real cookiecutter and imported from their ``src/``, as a
vendor's plugin is after ``pip install -e``: the third-party shape beside the reference plugins, for tests that
run every plugin kind (tests/cli/test_record.py, tests/hosts/test_fault_matrix.py)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import types
from collections.abc import Mapping
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parents[1] / "templates" / "vendor-plugin"


def bake_plugins(root: Path, bakes: Mapping[str, str]) -> dict[str, types.ModuleType]:
    """One bake under ``root`` per family (family name -> probe kind); each family's plugin module, imported."""
    modules = {}
    for family, kind in bakes.items():
        done = subprocess.run(
            [sys.executable, "-m", "cookiecutter", "--no-input", str(TEMPLATE), "-o", str(root),
             f"vendor_name={family} devices", f"family_name={family}", f"probe_kind={kind}"],
            capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(root / "home")})
        assert done.returncode == 0, done.stderr[-2000:]
        sys.path.insert(0, str(root / f"rayaccel-{family}" / "src"))
        modules[family] = importlib.import_module(f"rayaccel_{family.replace('-', '_')}.plugin")
    return modules
