"""A day-zero NVIDIA SKU: ``rayaccel sku add`` for a B300 on a copy of the NVIDIA reference plugin makes
``rayaccel inspect --simulate`` on the new fixture report the B300, and conformance still passes.

The copy shadows the installed plugin through PYTHONPATH (the editable install is a plain path entry,
after PYTHONPATH), so the entry point ``nvidia`` loads the copy and the repository's catalog is never written.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NVIDIA = REPO / "reference_plugins" / "nvidia" / "src" / "rayaccel_nvidia"
TIERS = ("experimental", "supported", "certified")
# The B300 as NVML names it ("NVIDIA B300 SXM6 AC", compute capability 10.3). The PCI device id and the
# memory NVML reports are this test's assumptions: the onboarding path does not depend on them being exact.
B300 = ["--plugin", "nvidia", "--id", "b300-sxm6-288gb", "--marketing-name", "NVIDIA B300 SXM6 288GB",
        "--accelerator-type", "B300", "--product-name", "NVIDIA B300 SXM6 AC", "--pci-device-id", "0x3182",
        "--memory-mib", "275040", "--architecture", "blackwell", "--interconnect", "nvlink5-nvswitch",
        "--from-fixture", "nvidia/hgx-b200"]

pytestmark = pytest.mark.skipif(not (NVIDIA / "plugin.py").exists(), reason="the NVIDIA reference plugin is absent")


def run(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**os.environ, "RAY_AUTH_MODE": "disabled", **env})


def tree_digest(root: Path) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(root.rglob("*"))
                                   if p.is_file() and "__pycache__" not in p.parts)).hexdigest()


@pytest.mark.ray
@pytest.mark.slow
def test_b300_onboarded_on_a_copy_is_reported_and_passes_conformance(tmp_path: Path) -> None:
    shutil.copytree(NVIDIA, tmp_path / "site" / "rayaccel_nvidia", ignore=shutil.ignore_patterns("__pycache__"))
    copy = tmp_path / "site" / "rayaccel_nvidia"
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])}
    real_catalog = tree_digest(NVIDIA)

    added = run([sys.executable, "-m", "rayaccel", "sku", "add", *B300], env)
    assert added.returncode == 0, added.stderr
    assert f"to {copy / 'skus.yaml'}" in added.stdout
    assert (copy / "fixtures" / "b300-sxm6-288gb.yaml").exists()

    inspected = run([sys.executable, "-m", "rayaccel", "inspect", "--simulate", "nvidia/b300-sxm6-288gb", "--json",
                     "--plugin", "nvidia"], env)
    assert inspected.returncode == 0, inspected.stderr
    out = json.loads(inspected.stdout)
    assert out["families"][0]["accelerator_type"] == "B300"
    assert out["resources"] == {"GPU": 8.0, "accelerator_type:B300": 1.0}
    assert out["labels"]["rayaccel.io/sku"] == "b300-sxm6-288gb"
    assert out["labels"]["ray.io/accelerator-type"] == "B300"
    assert {d["product_name"] for d in out["devices"]} == {"NVIDIA B300 SXM6 AC"}
    assert out["problems"] == []

    report = tmp_path / "conformance.json"
    graded = run([sys.executable, "-m", "pytest", "-q", "--conformance", "--conformance-plugin", "nvidia",
                  "--conformance-fixture", "nvidia/b300-sxm6-288gb", "--conformance-report", str(report)],
                 env, cwd=tmp_path)
    assert report.exists(), graded.stdout[-3000:] + graded.stderr[-2000:]
    [plugin] = json.loads(report.read_text())["plugins"]
    assert plugin["fixtures"] == ["nvidia/b300-sxm6-288gb"]
    assert plugin["tier"] in TIERS[1:], graded.stdout[-3000:]  # deriving a fixture keeps the plugin supported
    assert tree_digest(NVIDIA) == real_catalog  # the repository's plugin was not touched


def test_b300_without_pci_id_or_architecture_through_the_cli(tmp_path: Path) -> None:
    """As the issue tried it: no --pci-device-id, no --architecture, the default base fixture. The base's
    catalogued PCI id must not survive in the new fixture (it would resolve to the base SKU)."""
    shutil.copytree(NVIDIA, tmp_path / "site" / "rayaccel_nvidia", ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])}
    added = run([sys.executable, "-m", "rayaccel", "sku", "add", "--plugin", "nvidia", "--id", "b300-sxm6-288gb",
                 "--marketing-name", "NVIDIA B300 SXM6 288GB", "--accelerator-type", "B300",
                 "--product-name", "NVIDIA B300 SXM6 AC"], env)
    assert added.returncode == 0, added.stderr
    inspected = run([sys.executable, "-m", "rayaccel", "inspect", "--simulate", "nvidia/b300-sxm6-288gb", "--json",
                     "--plugin", "nvidia"], env)
    assert inspected.returncode == 0, inspected.stderr
    out = json.loads(inspected.stdout)
    assert out["families"][0]["accelerator_type"] == "B300"
    assert out["labels"]["rayaccel.io/sku"] == "b300-sxm6-288gb"
    assert [p for p in out["problems"] if p["severity"] != "info"] == []
