"""The CLI's other commands that call plugins run them as ``inspect`` does, each in a worker process of its own:
``record``, ``fixture expect``, ``sku check``, ``sku add`` and ``export`` (its cloud hints are hooks with
arguments, asked of the workers one call at a time). Each case is the real command in a subprocess with one
faulty plugin beside a healthy one: the command does its work for the healthy plugin, the faulty one costs only
its own entry (a problem naming it and what it did), and no process of the command is left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import marked_processes
import psutil
import pytest
import yaml

from rayaccel import hookspec
from rayaccel.isolation.pool import WorkerPool
from rayaccel.plugins.configuration import INVENTORY_TIMEOUT_ENV, NO_AUTOLOAD_ENV, PLUGINS_ENV
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_testplugins import acme, acme_onboard

#: The whole inventory's budget in these runs (RAYACCEL_INVENTORY_TIMEOUT).
BUDGET = 30
#: Set in each command's environment: every process it starts inherits it, which is how leftovers are found.
MARK = "RAYACCEL_TEST_CLI_ISOLATION_RUN"
#: Faulty plugins (tests/rayaccel_testplugins/hostile_*.py) by what they do.
EXITS_AT_IMPORT = "hostile-import-exit=rayaccel_testplugins.hostile_import_exit"
HANGS_AT_IMPORT = "hostile-import-hang=rayaccel_testplugins.hostile_import_hang"
EXITS_IN_DISCOVERY = "hostile-exit=rayaccel_testplugins.hostile_exit"
PATCHES_THE_SDK = "hostile-patch=rayaccel_testplugins.hostile_patch"
EXITS_WHEN_CALLED = "hostile-calls=rayaccel_testplugins.hostile_calls"  # in its SKU catalog and cloud hints
ACME = "acme=rayaccel_testplugins.acme"


def leftovers(mark: str) -> list[psutil.Process]:
    return marked_processes.leftovers(MARK, mark)


def rayaccel(*args: str, plugins: str, budget: int = BUDGET, cwd: Path | None = None,
             pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command with only ``plugins`` installed (RAYACCEL_PLUGINS); asserts it ended in time and left no
    process behind."""
    mark = uuid.uuid4().hex
    env = {**os.environ, MARK: mark, NO_AUTOLOAD_ENV: "1", INVENTORY_TIMEOUT_ENV: str(budget), PLUGINS_ENV: plugins}
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), os.environ.get("PYTHONPATH", "")])
    proc = subprocess.Popen([sys.executable, "-m", "rayaccel", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    try:
        # The budget twice (describing, then building) and what a loaded machine needs to start: not a timing assert.
        out, err = proc.communicate(timeout=2 * budget + 60)
    except subprocess.TimeoutExpired:
        for stray in [proc, *leftovers(mark)]:
            stray.kill()
        proc.communicate()
        pytest.fail(f"rayaccel {' '.join(args)} did not end within its budget")
    left = leftovers(mark)
    for stray in left:
        stray.kill()
    assert left == [], f"processes left behind: {[p.cmdline() for p in left]}"
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("faulty", [EXITS_AT_IMPORT, EXITS_IN_DISCOVERY, PATCHES_THE_SDK],
                         ids=["exit-at-import", "exit-in-discovery", "monkeypatches-sdk"])
def test_record_writes_the_healthy_plugins_fixture(faulty: str, tmp_path: Path) -> None:
    # Without --plugin: every plugin is recorded, so the faulty one is asked too, in its own worker.
    out = tmp_path / "acme-copy.yaml"
    done = rayaccel("record", "--simulate", "acme/acme-4", "-o", str(out), plugins=f"{ACME},{faulty}")
    assert done.returncode == 0, done.stderr
    fixture = yaml.safe_load(out.read_text())
    assert (fixture["plugin"], fixture["expected"]["devices"]) == ("acme", 4)
    assert fixture["host"]["files"], "what acme read of the machine is recorded"
    # What was recorded replays: the fixture is one inspect can read back.
    shown = rayaccel("inspect", "--simulate", str(out), "--json", "--plugin", "acme", plugins=ACME)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["resources"]["ACME"] == 4


def test_record_of_one_plugin_is_not_stopped_by_another_that_hangs_at_import(tmp_path: Path) -> None:
    out = tmp_path / "acme-again.yaml"
    done = rayaccel("record", "--simulate", "acme/acme-4", "--plugin", "acme", "-o", str(out),
                    plugins=f"{ACME},{HANGS_AT_IMPORT}", budget=5)
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(out.read_text())["expected"]["devices"] == 4


def test_fixture_expect_beside_a_plugin_that_exits_at_import() -> None:
    done = rayaccel("fixture", "expect", "acme/acme-4", plugins=f"{ACME},{EXITS_AT_IMPORT}")
    assert done.returncode == 0, done.stderr
    assert "expected is current" in done.stdout


def test_sku_check_costs_a_crashing_catalog_its_own_entry_only() -> None:
    done = rayaccel("sku", "check", "--json", plugins=f"{ACME},{EXITS_WHEN_CALLED}")
    assert done.returncode == 2  # one catalog is bad: said, and the exit code says so
    results = {row["plugin"]: row for row in json.loads(done.stdout)}
    assert results["acme"]["error"] is None and results["acme"]["skus"] > 0
    assert results["acme"]["path"] == str((acme.HERE / "acme-skus.yaml").resolve())  # where sku add appends
    assert "exited with code 7" in results["hostile-calls"]["error"]


def test_sku_add_beside_a_plugin_that_exits_at_import(tmp_path: Path) -> None:
    # The onboarding plugin loaded from a copy, so the repository's catalog is never written.
    shutil.copy(Path(acme_onboard.__file__), tmp_path / "acme_onboard_copy.py")
    shutil.copy(acme.HERE / "acme-skus.yaml", tmp_path / "acme-skus.yaml")
    shutil.copytree(acme.HERE / "acme_fixtures", tmp_path / "acme_fixtures")
    done = rayaccel("sku", "add", "--plugin", "acme", "--id", "acme-r2", "--marketing-name", "ACME Roadrunner R2",
                    "--accelerator-type", "R2", "--product-name", "ACME Roadrunner R2", "--dry-run",
                    plugins=f"acme=acme_onboard_copy,{EXITS_AT_IMPORT}", pythonpath=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "dry run: SKU acme-r2 (R2) would be added" in done.stdout


def test_export_asks_cloud_hints_of_the_workers() -> None:
    # rayaccel_cloud_hints takes arguments (provider, instance type): each call goes to the plugin's worker.
    done = rayaccel("export", "--format", "autoscaler", "--simulate", "nvidia/dgx-h100", "--json",
                    "--instance-type", "aws:p5.48xlarge", plugins=f"nvidia=rayaccel_nvidia.plugin,{EXITS_WHEN_CALLED}")
    assert done.returncode == 0, done.stderr
    exported = json.loads(done.stdout)
    types = exported["available_node_types"]
    assert types["aws-p5.48xlarge-nvidia"]["resources"] == {"GPU": 8.0, "accelerator_type:H100": 1.0}
    assert not any(name.endswith("-hostile-calls") for name in types)
    failed = [p["message"] for p in exported["problems"]
              if (p["plugin"], p["code"]) == ("hostile-calls", "worker-failed")]
    assert len(failed) == 1, failed  # said once: its hooks are not called again for this command
    assert "exited with code 7 when rayaccel_cloud_hints was called" in failed[0]


def test_hooks_with_arguments_are_answered_by_the_workers_never_imported_here(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the commands above rely on: the adopted manager routes any hook to the plugin's worker.
    monkeypatch.setenv(NO_AUTOLOAD_ENV, "1")
    monkeypatch.setenv(PLUGINS_ENV, ACME)
    sys.modules.pop("rayaccel_testplugins.acme", None)
    with WorkerPool.load() as pool:
        manager = pool.manager
        catalog = manager.answer("acme", hookspec.SKU_CATALOG)
        assert catalog is not None and catalog.source_path == str((acme.HERE / "acme-skus.yaml").resolve())
        host = simulated_host("acme/acme-4", manager=manager)
        devices = manager.answer("acme", hookspec.DISCOVER, host=host)  # a host crosses as its spec
        assert devices is not None and [d.index for d in devices] == [0, 1, 2, 3]
        topology = manager.answer("acme", hookspec.TOPOLOGY, host=host, devices=devices)  # records cross as JSON
        assert len(topology.links) == 6
        inventory, recorded = pool.record(host)
        assert inventory.resources["ACME"] == 4 and recorded["files"]
    assert "rayaccel_testplugins.acme" not in sys.modules
