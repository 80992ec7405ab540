"""A visible-devices variable in a process decides what a Ray node started there offers: the node says so, and
the suite fails a test that leaves one behind (the repository's conftest.py), since a later test's node in the
same pytest-xdist worker would offer only those devices (a trn1 node once offered 1 NeuronCore, not 32)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_a_test_that_leaves_a_visible_devices_variable_set_fails_naming_it(tmp_path: Path) -> None:
    (tmp_path / "test_leaky.py").write_text(
        "import os\n\n"
        "def test_lets_ray_write_it():\n"
        "    os.environ['NEURON_RT_VISIBLE_CORES'] = '0'  # what Ray's manager does in a worker\n\n"
        "def test_after_it():\n"
        "    assert 'NEURON_RT_VISIBLE_CORES' not in os.environ\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "NEURON_RT_VISIBLE_CORES"}
    # The repository's conftest.py, loaded as a plugin by name, and the suite watchdog it loads from tests/.
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests")])
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider",
                           "test_leaky.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "ERROR at teardown of test_lets_ray_write_it" in done.stdout
    assert "NEURON_RT_VISIBLE_CORES='0' (was '<unset>')" in done.stdout
    assert "2 passed, 1 error" in done.stdout  # put back: the next test runs in a clean environment


@pytest.mark.ray
def test_a_node_started_where_a_visible_devices_variable_is_set_says_what_it_held_back(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import ray

    import rayaccel.ray

    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "0")
    with caplog.at_level(logging.WARNING, logger="rayaccel.ray.driver"):
        rayaccel.ray.init(simulate="neuron/trn1.32xlarge", plugins=["neuron"], num_cpus=1, include_dashboard=False)
    try:
        assert ray.cluster_resources()["neuron_cores"] == 1
    finally:
        rayaccel.ray.shutdown()
    (said,) = [r.getMessage() for r in caplog.records if "NEURON_RT_VISIBLE_CORES" in r.getMessage()]
    assert "NEURON_RT_VISIBLE_CORES='0' is set: the node offers 1 of its 32 healthy neuron units" in said
