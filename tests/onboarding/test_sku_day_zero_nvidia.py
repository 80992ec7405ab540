"""A day-zero NVIDIA SKU: ``rayaccel sku add`` for a SKU the shipped catalog lacks, on a copy of the NVIDIA
reference plugin, makes ``rayaccel inspect --simulate`` on the new fixture report it, and conformance still passes.
(The SKU is one the shipped catalog does not list: the RTX PRO 4500 Blackwell Server Edition, PCI id 0x2C3A in
NVIDIA's open-gpu-kernel-modules table. It was the B300 until the catalog gained it.)

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

REPO = Path(__file__).resolve().parents[2]
NVIDIA = REPO / "reference_plugins" / "nvidia" / "src" / "rayaccel_nvidia"
TIERS = ("experimental", "supported", "certified")
# The SKU as NVML names it. The memory NVML reports is this test's assumption: the onboarding path does not
# depend on it being exact.
NAME = "NVIDIA RTX PRO 4500 Blackwell Server Edition"
SKU_ID, ACCEL = "rtx-pro-4500-blackwell-server", "RTX-PRO-4500"
NEW_SKU = ["--plugin", "nvidia", "--id", SKU_ID, "--marketing-name", NAME, "--accelerator-type", ACCEL,
           "--product-name", NAME, "--pci-device-id", "0x2c3a", "--memory-mib", "32623", "--architecture", "blackwell",
           "--interconnect", "pcie5", "--from-fixture", "nvidia/hgx-b200"]

pytestmark = pytest.mark.skipif(not (NVIDIA / "plugin.py").exists(), reason="the NVIDIA reference plugin is absent")


def run(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**os.environ, "RAY_AUTH_MODE": "disabled", **env})


def tree_digest(root: Path) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(root.rglob("*"))
                                   if p.is_file() and "__pycache__" not in p.parts)).hexdigest()


@pytest.mark.ray
@pytest.mark.slow
def test_new_sku_onboarded_on_a_copy_is_reported_and_passes_conformance(tmp_path: Path) -> None:
    shutil.copytree(NVIDIA, tmp_path / "site" / "rayaccel_nvidia", ignore=shutil.ignore_patterns("__pycache__"))
    copy = tmp_path / "site" / "rayaccel_nvidia"
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])}
    real_catalog = tree_digest(NVIDIA)

    added = run([sys.executable, "-m", "rayaccel", "sku", "add", *NEW_SKU], env)
    assert added.returncode == 0, added.stderr
    assert f"to {copy / 'skus.yaml'}" in added.stdout
    assert (copy / "fixtures" / f"{SKU_ID}.yaml").exists()

    inspected = run([sys.executable, "-m", "rayaccel", "inspect", "--simulate", f"nvidia/{SKU_ID}", "--json",
                     "--plugin", "nvidia"], env)
    assert inspected.returncode == 0, inspected.stderr
    out = json.loads(inspected.stdout)
    assert out["families"][0]["accelerator_type"] == ACCEL
    assert out["resources"] == {"GPU": 8.0, f"accelerator_type:{ACCEL}": 1.0}
    assert out["labels"]["rayaccel.io/sku"] == SKU_ID
    assert out["labels"]["ray.io/accelerator-type"] == ACCEL
    assert {d["product_name"] for d in out["devices"]} == {NAME}
    assert out["problems"] == []

    report = tmp_path / "conformance.json"
    graded = run([sys.executable, "-m", "pytest", "-q", "--conformance", "--conformance-plugin", "nvidia",
                  "--conformance-fixture", f"nvidia/{SKU_ID}", "--conformance-report", str(report)],
                 env, cwd=tmp_path)
    assert report.exists(), graded.stdout[-3000:] + graded.stderr[-2000:]
    [plugin] = json.loads(report.read_text())["plugins"]
    assert plugin["fixtures"] == [f"nvidia/{SKU_ID}"]
    assert plugin["tier"] in TIERS[1:], graded.stdout[-3000:]  # deriving a fixture keeps the plugin supported
    assert tree_digest(NVIDIA) == real_catalog  # the repository's plugin was not touched


def test_new_sku_without_pci_id_or_architecture_through_the_cli(tmp_path: Path) -> None:
    """As the issue tried it: no --pci-device-id, no --architecture, the default base fixture. The base's
    catalogued PCI id must not survive in the new fixture (it would resolve to the base SKU)."""
    shutil.copytree(NVIDIA, tmp_path / "site" / "rayaccel_nvidia", ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])}
    added = run([sys.executable, "-m", "rayaccel", "sku", "add", "--plugin", "nvidia", "--id", SKU_ID,
                 "--marketing-name", NAME, "--accelerator-type", ACCEL, "--product-name", NAME], env)
    assert added.returncode == 0, added.stderr
    inspected = run([sys.executable, "-m", "rayaccel", "inspect", "--simulate", f"nvidia/{SKU_ID}", "--json",
                     "--plugin", "nvidia"], env)
    assert inspected.returncode == 0, inspected.stderr
    out = json.loads(inspected.stdout)
    assert out["families"][0]["accelerator_type"] == ACCEL
    assert out["labels"]["rayaccel.io/sku"] == SKU_ID
    assert [p for p in out["problems"] if p["severity"] != "info"] == []
