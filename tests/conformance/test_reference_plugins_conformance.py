"""The five reference plugins pass every conformance check that needs no Ray node, on every fixture they ship.

`make demo` grades them whole; this keeps the suite from passing while a reference plugin regresses (a hook
that starts reading outside the Host seam, a fixture whose expectation drifted). The checks that start Ray
nodes (RAC108, RAC208, RAC301) run on them in the demo and in the Ray tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rayaccel_conformance.checks import all_checks

REFERENCE = ("amd", "gaudi", "neuron", "nvidia", "tpu")


def test_every_reference_plugin_passes_every_check_without_ray_on_every_fixture(tmp_path: Path) -> None:
    with_ray = sorted(check.id for check in all_checks() if check.uses_ray)
    assert with_ray, "no check is marked as starting Ray: the selection below would be wrong"
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--conformance",
         *(arg for plugin in REFERENCE for arg in ("--conformance-plugin", plugin)),
         "-k", " and ".join(f"not {check_id}" for check_id in with_ray), f"--conformance-report={report}"],
        capture_output=True, text=True, timeout=900, cwd=tmp_path)
    checks = json.loads(report.read_text(encoding="utf-8"))["checks"]
    failed = [f"{c['id']} {c['plugin']} {c['fixture']}" for c in checks if c["outcome"] not in ("passed", "skipped")]
    assert not failed, f"{failed[:10]}\n{done.stdout[-3000:]}"
    assert {c["plugin"] for c in checks} == set(REFERENCE)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
