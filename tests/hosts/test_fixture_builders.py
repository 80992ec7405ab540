"""The fixtures some reference plugins generate are what their builders write today, byte for byte.

A fixture's expectations (reasons per fault, problems a healthy build reports) live in its builder; an edit
made to the YAML alone would be lost the next time the builder runs, so it fails here instead.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BUILDERS = {
    "nvidia/tools/build_fixtures.py": "nvidia/src/rayaccel_nvidia/fixtures",
    "amd/tools/build_partition_fixtures.py": "amd/src/rayaccel_amd/fixtures",
    "neuron/tools/build_lnc1_fixture.py": "neuron/src/rayaccel_neuron/fixtures",
    "neuron/tools/build_ultraserver_fixture.py": "neuron/src/rayaccel_neuron/fixtures",
}


@pytest.mark.parametrize("builder", sorted(BUILDERS))
def test_builder_reproduces_the_committed_fixtures(builder: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "reference_plugins" / builder), str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    written = sorted(tmp_path.glob("*.yaml"))
    assert written, f"{builder} wrote nothing"
    committed = ROOT / "reference_plugins" / BUILDERS[builder]
    for path in written:
        assert path.read_bytes() == (committed / path.name).read_bytes(), (
            f"{committed / path.name} differs from what {builder} writes: change the builder, then rerun it")
