"""``rayaccel inspect --json`` as an operator runs it, with one faulty plugin beside a healthy one: each plugin
runs in a worker process of its own (rayaccel.isolation.pool.WorkerPool.load), so the faulty one costs only its
own entry. Each case is the real command in a subprocess: it ends within the inventory budget with valid JSON,
the healthy plugin's devices and a problem naming the faulty one, and leaves no process of its own behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from typing import Any

import marked_processes
import psutil
import pytest

from rayaccel.isolation.pool import WorkerPool
from rayaccel.plugins.configuration import INVENTORY_TIMEOUT_ENV, NO_AUTOLOAD_ENV, PLUGINS_ENV
from rayaccel.plugins.manager import MAX_DEVICES
from rayaccel_testplugins.hostile import FLOOD

ACME_DEVICES = 4
#: The whole inventory's budget in these runs (RAYACCEL_INVENTORY_TIMEOUT): the command must end within it.
BUDGET = 30
#: Set in the command's environment: every process it starts inherits it, which is how leftovers are found.
MARK = "RAYACCEL_TEST_INSPECT_RUN"


def leftovers(mark: str) -> list[psutil.Process]:
    return marked_processes.leftovers(MARK, mark)


def inspect_json(hostile: str, budget: int = BUDGET) -> tuple[dict[str, Any], str, list[psutil.Process]]:
    """Run ``rayaccel inspect --simulate acme/acme-4 --json`` with acme and ``hostile-<hostile>`` installed,
    within ``budget`` seconds (RAYACCEL_INVENTORY_TIMEOUT)."""
    mark = uuid.uuid4().hex
    module = hostile.replace("-", "_")
    env = {**os.environ, MARK: mark, NO_AUTOLOAD_ENV: "1", INVENTORY_TIMEOUT_ENV: str(budget),
           PLUGINS_ENV: f"acme=rayaccel_testplugins.acme,hostile-{hostile}=rayaccel_testplugins.hostile_{module}"}
    proc = subprocess.Popen([sys.executable, "-m", "rayaccel", "inspect", "--simulate", "acme/acme-4", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        # The budget, and what the slowest machine needs to start the command and print (never a timing assert).
        out, err = proc.communicate(timeout=budget + 15)  # reads stdout to its end: a child holding it would hang this
    except subprocess.TimeoutExpired:
        for stray in [proc, *leftovers(mark)]:
            stray.kill()
        proc.communicate()
        pytest.fail(f"inspect with hostile-{hostile} did not end within its budget of {budget}s")
    left = leftovers(mark)
    for stray in left:  # leave the machine clean whatever the assertions say
        stray.kill()
    assert proc.returncode == 0, err.decode()
    return json.loads(out), err.decode(), left


def devices_by_family(output: dict[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for device in output["devices"]:
        counts[device["family"]] = counts.get(device["family"], 0) + 1
    return counts


def problems_of(output: dict[str, Any], plugin: str) -> dict[str, str]:
    return {p["code"]: p["message"] for p in output["problems"] if p["plugin"] == plugin}


@pytest.mark.parametrize(("hostile", "code", "says", "own_devices"), [
    ("import-exit", "worker-failed", "exited with code 9", 0),
    ("import-hang", "worker-failed", "did not answer within", 0),
    ("exit", "worker-failed", "exited with code 7", 0),
    ("stdout", "worker-leak", "1 child process", ACME_DEVICES),
    ("spawn", "worker-leak", "1 thread and 1 child process", ACME_DEVICES),
    ("patch", "sdk-patched", "rayaccel.inventory.builder.InventoryBuilder._devices", 0),
    ("flood", "too-many-devices", f"reported {FLOOD} devices", MAX_DEVICES),
], ids=["exit-at-import", "hang-at-import", "exit-in-discovery", "child-holding-stdout", "stray-child",
        "monkeypatches-sdk", "100000-devices"])
def test_a_faulty_plugin_costs_only_its_own_entry(hostile: str, code: str, says: str, own_devices: int) -> None:
    output, _, left = inspect_json(hostile, budget=5 if hostile == "import-hang" else BUDGET)
    assert left == [], f"processes left behind: {[p.cmdline() for p in left]}"
    expected = {"acme": ACME_DEVICES, **({f"hostile-{hostile}": own_devices} if own_devices else {})}
    assert devices_by_family(output) == expected
    assert output["resources"]["ACME"] == ACME_DEVICES
    assert says in problems_of(output, f"hostile-{hostile}")[code]
    assert not problems_of(output, "acme").keys() - {"several-families"}


def test_in_process_says_what_it_does_not_defend(tmp_path: Any) -> None:
    # The old way, for contrast: the stray child is the command's own and inherits its stdout, so the output
    # goes to a file (a pipe would stay open for ten minutes) and the child is still there when it returns.
    mark = uuid.uuid4().hex
    env = {**os.environ, MARK: mark, NO_AUTOLOAD_ENV: "1",
           PLUGINS_ENV: "acme=rayaccel_testplugins.acme,hostile-spawn=rayaccel_testplugins.hostile_spawn"}
    out, err = tmp_path / "out.json", tmp_path / "err.txt"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        done = subprocess.run([sys.executable, "-m", "rayaccel", "inspect", "--simulate", "acme/acme-4", "--json",
                               "--in-process"], stdout=stdout, stderr=stderr, env=env, timeout=BUDGET, check=False)
    left = leftovers(mark)
    for stray in left:
        stray.kill()
    assert done.returncode == 0
    assert devices_by_family(json.loads(out.read_text())) == {"acme": ACME_DEVICES, "hostile-spawn": ACME_DEVICES}
    said = err.read_text()
    assert said.count("\n") == 1 and "--in-process" in said and "leaving processes behind" in said
    assert left, "the hostile plugin's child outlives an in-process inspect (what --in-process gives up)"


def test_plugins_are_never_imported_by_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NO_AUTOLOAD_ENV, "1")
    monkeypatch.setenv(PLUGINS_ENV, "acme=rayaccel_testplugins.acme,hostile-patch=rayaccel_testplugins.hostile_patch")
    sys.modules.pop("rayaccel_testplugins.acme", None)
    with WorkerPool.load() as pool:
        assert pool.manager.plugin_names() == ["acme", "hostile-patch"]
        assert pool.manager.family("acme").resource_name == "ACME"
    assert "rayaccel_testplugins.acme" not in sys.modules and "rayaccel_testplugins.hostile_patch" not in sys.modules


def test_transports_runs_the_plugins_in_workers_too() -> None:
    env = {**os.environ, NO_AUTOLOAD_ENV: "1",
           PLUGINS_ENV: "acme=rayaccel_testplugins.acme,hostile-import-exit=rayaccel_testplugins.hostile_import_exit"}
    done = subprocess.run([sys.executable, "-m", "rayaccel", "transports", "--simulate", "acme/acme-4", "--json"],
                          capture_output=True, env=env, timeout=BUDGET, check=False)
    assert done.returncode == 0, done.stderr.decode()
    output = json.loads(done.stdout)
    assert set(output["declared"]) == {"acme"}
    assert len(output["pairs"]) == ACME_DEVICES * (ACME_DEVICES - 1) // 2


HOST_COPY_CLASS = "rayaccel_testplugins.host_copy_class"
HOST_COPY_PLUGIN = "nvidia=rayaccel_testplugins.nvidia_host_copy"
PASSED_OVER = "scale-up over nvlink: NV_HOST_COPY moves CPU tensors only"


def test_a_transport_class_is_asked_what_it_moves_in_its_plugins_worker_only(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """A declaration's class says what it moves (the SDK's shared-memory class: host memory alone, whatever it is
    declared for), and path selection decides by that answer; the class is the plugin's code, so it is imported and
    asked in the plugin's worker and the answer travels in the record: the pool's process never imports it."""
    imports = tmp_path / "imports.txt"
    monkeypatch.setenv(NO_AUTOLOAD_ENV, "1")
    monkeypatch.setenv(PLUGINS_ENV, HOST_COPY_PLUGIN)
    monkeypatch.setenv("HOST_COPY_IMPORTS", str(imports))
    sys.modules.pop(HOST_COPY_CLASS, None)
    with WorkerPool.load() as pool:
        described = pool.manager.answer("nvidia", "rayaccel_transports")
        asked = pool.transports()
        worker = pool.worker_pids()["nvidia"]
        problems = [p.render() for p in pool.manager.problems]
    assert [s.moved_device_types for s in described] == [None]  # described: the declaration alone, nothing imported
    assert [(s.name, s.devices, s.moved_device_types) for s in asked["nvidia"]] == [
        ("NV_HOST_COPY", ["cpu", "cuda"], ["cpu"])], asked
    assert imports.read_text().split() == [str(worker)] and worker != os.getpid()
    assert HOST_COPY_CLASS not in sys.modules and problems == [], problems


def test_the_transports_command_chooses_by_the_class_asked_in_the_plugins_worker(tmp_path: Any) -> None:
    """``rayaccel transports`` passes the host copy over for NVLink pairs by its class's answer, and the class's
    module is imported in the plugin's worker, never in the command's process."""
    imports = tmp_path / "imports.txt"
    env = {**os.environ, NO_AUTOLOAD_ENV: "1", PLUGINS_ENV: HOST_COPY_PLUGIN, "HOST_COPY_IMPORTS": str(imports)}
    command = subprocess.Popen([sys.executable, "-m", "rayaccel", "transports", "--simulate", "nvidia/dgx-h100",
                                "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = command.communicate(timeout=BUDGET)
    assert command.returncode == 0, err.decode()
    pairs = json.loads(out)["pairs"]
    assert len(pairs) == 28 and all(p["path"] == "host" and PASSED_OVER in p["reason"] for p in pairs), pairs[0]
    importers = imports.read_text().split()
    assert importers and str(command.pid) not in importers, (command.pid, importers)


@pytest.mark.parametrize("command", ["plugins", "fixtures"])
def test_listing_commands_survive_a_plugin_that_exits_at_import(command: str) -> None:
    env = {**os.environ, NO_AUTOLOAD_ENV: "1",
           PLUGINS_ENV: "acme=rayaccel_testplugins.acme,hostile-import-exit=rayaccel_testplugins.hostile_import_exit"}
    done = subprocess.run([sys.executable, "-m", "rayaccel", command, "--json"], capture_output=True, env=env,
                          timeout=BUDGET, check=False)
    assert done.returncode == 0, done.stderr.decode()
    output = json.loads(done.stdout)
    if command == "plugins":
        assert [row["name"] for row in output["plugins"]] == ["acme"]
        [failed] = output["problems"]
        assert failed["plugin"] == "hostile-import-exit" and "exited with code 9" in failed["message"]
    else:
        assert "acme/acme-4" in {row["name"] for row in output}
