"""Plugin hooks out of process (rayaccel.isolation.pool): what in-process isolation cannot contain stays in a
plugin's worker process, which is replaced; the other plugins' results are intact. No Ray here: the
pool is what ``rayaccel start`` and the health monitor use; tests/ray/test_ray_lifecycle.py runs them on Ray.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from rayaccel.inventory.builder import collect_inventory
from rayaccel.isolation.fork_server import ReadNames, process_server
from rayaccel.isolation.pool import WorkerPool, isolated_inventory
from rayaccel.isolation.process import can_fork
from rayaccel.isolation.protocol import WORKER_MEMORY_ENV
from rayaccel.plugins.configuration import PLUGINS_ENV
from rayaccel.plugins.manager import PluginManager
from rayaccel.simulation.host_factory import make_host
from rayaccel.support.polling import wait_for

ACME_DEVICES = 4


def manager_with(*hostile: str, timeout: float | None = None, autoload: bool = False) -> PluginManager:
    plugins = ["acme=rayaccel_testplugins.acme"] + [f"hostile-{h}=rayaccel_testplugins.hostile_{h}" for h in hostile]
    saved = os.environ.get(PLUGINS_ENV)
    os.environ[PLUGINS_ENV] = ",".join(plugins)
    try:
        return PluginManager(autoload=autoload, timeout=timeout)
    finally:
        if saved is None:
            os.environ.pop(PLUGINS_ENV)
        else:
            os.environ[PLUGINS_ENV] = saved


def acme_host(manager: PluginManager):  # type: ignore[no-untyped-def]
    host = make_host("acme/acme-4", fault_file=os.devnull, manager=manager)
    return host


def families(inventory):  # type: ignore[no-untyped-def]
    return {f.plugin: len(f.devices) for f in inventory.families}


def codes(inventory, plugin):  # type: ignore[no-untyped-def]
    return {p.code for p in inventory.problems if p.plugin == plugin}


def problem(inventory, plugin):  # type: ignore[no-untyped-def]
    found = [p for p in inventory.problems if p.plugin == plugin and p.severity != "info"]
    assert found, f"no problem recorded for {plugin}: {inventory.problems}"
    return found[0]


@pytest.mark.parametrize("fixture", ["acme/acme-4", "nvidia/dgx-h100"])
def test_out_of_process_inventory_equals_the_in_process_one(fixture):
    if fixture.startswith("nvidia"):
        pytest.importorskip("rayaccel_nvidia")
    manager = manager_with(autoload=True)  # every installed plugin, each in its own worker
    host = make_host(fixture, fault_file=os.devnull, manager=manager)
    assert isolated_inventory(manager, host).model_dump() == collect_inventory(manager, host).model_dump()


@pytest.mark.parametrize("workers", [1, 4], ids=["one-worker-for-all", "one-worker-per-plugin"])
def test_exit_memory_print_and_environ_stay_in_the_plugins_worker(workers, capfd, monkeypatch):
    monkeypatch.setenv(WORKER_MEMORY_ENV, "1024")
    manager = manager_with("exit", "memory", "noisy")  # acme first, then the hostile ones in this order
    environ_before = dict(os.environ)
    inventory = isolated_inventory(manager, acme_host(manager), workers=workers)
    out, err = capfd.readouterr()
    # The other plugins' results are intact, also those served after the exit in the same worker (asked
    # again in a fresh one); the noisy plugin's devices too (it only misbehaves).
    assert families(inventory) == {"acme": ACME_DEVICES, "hostile-noisy": ACME_DEVICES}
    assert inventory.resources["ACME"] == ACME_DEVICES
    exited = problem(inventory, "hostile-exit")
    assert exited.code == "worker-failed" and "exited with code 7" in exited.message
    memory = problem(inventory, "hostile-memory")
    assert memory.code == "hook-raised" and "MemoryError" in memory.message
    # Nothing the noisy plugin printed or set reached this process.
    assert "HOSTILE-" not in out and "HOSTILE-" not in err
    assert dict(os.environ) == environ_before


def test_a_plugin_that_exits_is_replaced_and_answers_again():
    manager = manager_with("exit")
    with WorkerPool(manager) as pool:
        host = acme_host(manager)
        first = pool.build(host)
        second = pool.build(host)
    assert families(first) == families(second) == {"acme": ACME_DEVICES}
    assert problem(second, "hostile-exit").code == "worker-failed"
    assert pool.restarts()["hostile-exit"] == 2  # replaced after each request; acme's worker stayed warm
    assert pool.restarts()["acme"] == 0


def test_polls_leave_no_threads_or_children_behind():
    """The monitor's case: a plugin that hangs and one that spawns, polled 6 times through one pool."""
    manager = manager_with("hang", "spawn", timeout=2)
    me = psutil.Process()
    threads_before = set(threading.enumerate())  # others' leftover threads may end meanwhile: that is fine
    counts = []
    with WorkerPool(manager) as pool:
        host = acme_host(manager)
        for _ in range(6):
            inventory = pool.build(host)
            assert families(inventory) == {"acme": ACME_DEVICES, "hostile-spawn": ACME_DEVICES}
            assert "hook-timeout" in codes(inventory, "hostile-hang")
            assert "worker-leak" in codes(inventory, "hostile-spawn")
            counts.append((set(threading.enumerate()) - threads_before, len(children_but_the_helper(me))))
        warm_acme = pool.worker_pids()["acme"]
        assert pool.restarts()["hostile-spawn"] >= 5 and pool.restarts()["hostile-hang"] >= 5
    # After each poll: this process's threads unchanged, and only the warm workers alive (the acme one;
    # the two replaced ones, with the children and threads they leaked, are gone).
    assert all(not new for new, _ in counts), counts
    assert all(children <= 1 for _, children in counts), counts
    assert not psutil.pid_exists(warm_acme) or psutil.Process(warm_acme).status() == psutil.STATUS_ZOMBIE
    assert children_but_the_helper(me) == []


def children_but_the_helper(me: psutil.Process) -> list[psutil.Process]:
    """This process's children, less the fork server helper its pools share (an earlier test's, in a test runner's
    worker: it ends with the process, as the tests of the helper below show)."""
    return [child for child in me.children(recursive=True) if child.pid != process_server().pid]


def test_plugins_sharing_a_worker_never_see_one_anothers_environment(monkeypatch):
    # hostile-noisy sets RAYACCEL_DISABLE=acme in discovery; acme is loaded after it in the same worker.
    monkeypatch.setenv(PLUGINS_ENV, "hostile-noisy=rayaccel_testplugins.hostile_noisy,acme=rayaccel_testplugins.acme")
    manager = PluginManager(autoload=False)
    assert manager.plugin_names() == ["hostile-noisy", "acme"]
    inventory = isolated_inventory(manager, acme_host(manager), workers=1)
    assert families(inventory) == {"hostile-noisy": ACME_DEVICES, "acme": ACME_DEVICES}
    assert not [p for p in inventory.problems if p.code == "disabled"]


# A caller that cannot fork (another thread runs): one helper process of the pool forks its workers
# (rayaccel.isolation.fork_server) instead of an interpreter spawned for each; they behave as spawned workers.


@contextlib.contextmanager
def another_thread() -> Iterator[None]:
    """A second thread in this process for the duration (as a test runner's I/O thread, or torch's)."""
    done = threading.Event()
    thread = threading.Thread(target=done.wait, name="another-thread", daemon=True)
    thread.start()
    try:
        assert not can_fork()
        yield
    finally:
        done.set()
        thread.join()


def test_workers_are_forked_by_one_helper_and_build_the_inventory_a_spawned_worker_builds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")  # the workers work where the caller does, not where the helper started
    manager = manager_with("exit", "noisy")
    host = acme_host(manager)
    me = psutil.Process()
    with another_thread():
        with WorkerPool(manager, fork=True) as pool:
            first = pool.build(host)
            parents = {psutil.Process(pid).ppid() for pid in pool.worker_pids().values()}
            [helper] = [child for child in me.children() if child.pid in parents]
            assert "rayaccel.isolation.fork_server" in " ".join(helper.cmdline())
            assert {psutil.Process(pid).cwd() for pid in pool.worker_pids().values()} == {"/"}
            second = pool.build(host)
        with WorkerPool(manager) as spawned:  # fork=False: every worker spawned, as before
            expected = spawned.build(host)
    for inventory in (first, second):
        assert inventory.model_dump(exclude={"problems"}) == expected.model_dump(exclude={"problems"})
        assert [(p.plugin, p.code) for p in inventory.problems] == [(p.plugin, p.code) for p in expected.problems]
    assert families(first) == {"acme": ACME_DEVICES, "hostile-noisy": ACME_DEVICES}
    # A worker that exits is reported with its code, replaced, and the others keep answering.
    assert "exited with code 7" in problem(second, "hostile-exit").message
    assert pool.restarts()["hostile-exit"] == 2 and pool.restarts()["acme"] == 0
    # Every worker is gone with its pool; the helper alone stays, for the process's next pool.
    assert [child.pid for child in me.children(recursive=True)] == [helper.pid] == [process_server().pid]


def test_the_next_pool_is_served_by_the_same_helper_whatever_its_start_up_did_not_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A test runner makes a pool per command, each test in an environment of its own (PYTEST_CURRENT_TEST)."""
    manager = manager_with()
    host = acme_host(manager)
    helpers = []
    with another_thread():
        for value in ("first", "second"):
            monkeypatch.setenv("RAYACCEL_TEST_SETTING", value)  # read by no module the helper imported
            with WorkerPool(manager, fork=True) as pool:
                assert families(pool.build(host)) == {"acme": ACME_DEVICES}
                helpers.append(psutil.Process(pool.worker_pids()["acme"]).ppid())
    assert helpers[0] == helpers[1] == process_server().pid != os.getpid()


def test_a_worker_whose_environment_differs_in_what_the_start_up_read_is_never_forked_by_that_helper(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The helper's modules read some of the environment as they were imported (pydantic reads
    PYDANTIC_DISABLE_PLUGINS: pydantic/plugins/_loader.py), the interpreter more (PYTHONPATH makes sys.path)."""
    manager = manager_with()
    host = acme_host(manager)
    with another_thread(), WorkerPool(manager, fork=True) as first:
        assert families(first.build(host)) == {"acme": ACME_DEVICES}
        server = process_server()
        helper = psutil.Process(first.worker_pids()["acme"]).ppid()
        env = {k: v for k, v in os.environ.items() if k != PLUGINS_ENV}
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in sys.path if p))
        assert server.serves(env)
        assert server.serves({**env, "RAYACCEL_TEST_SETTING": "changed"})
        assert not server.serves({**env, "PYDANTIC_DISABLE_PLUGINS": "__all__"})
        assert not server.serves({**env, "PYTHONSAFEPATH": "1"})  # the interpreter's, whether read or not
        monkeypatch.syspath_prepend(str(tmp_path))  # the workers' PYTHONPATH changes
        # While a worker of the old helper runs, it is left alone: the worker is spawned.
        with WorkerPool(manager, fork=True) as second:
            assert families(second.build(host)) == {"acme": ACME_DEVICES}
            assert psutil.Process(second.worker_pids()["acme"]).ppid() == os.getpid()
    # Once none runs, the helper is started again with the new environment, and forks the next pool's workers.
    with another_thread(), WorkerPool(manager, fork=True) as third:
        assert families(third.build(host)) == {"acme": ACME_DEVICES}
        assert psutil.Process(third.worker_pids()["acme"]).ppid() == process_server().pid not in (helper, os.getpid())
    assert not psutil.pid_exists(helper) or psutil.Process(helper).status() == psutil.STATUS_ZOMBIE


def test_a_killed_served_worker_is_found_dead_and_replaced_before_the_request() -> None:
    manager = manager_with()
    host = acme_host(manager)
    with another_thread(), WorkerPool(manager, fork=True) as pool:
        assert families(pool.build(host)) == {"acme": ACME_DEVICES}
        served = pool.worker_pids()["acme"]
        worker = psutil.Process(served)  # held by pid and start time: killed only while it is still the worker
        assert worker.ppid() == process_server().pid
        worker.kill()
        wait_for(lambda: not psutil.pid_exists(served), bool, timeout=30, interval=0.05,
                 what="the helper to reap the killed worker")
        assert families(pool.build(host)) == {"acme": ACME_DEVICES}  # its worker was found dead and replaced
        assert pool.worker_pids()["acme"] != served
        assert pool.restarts()["acme"] == 0  # replaced before the request: no answer of the plugin's was lost


#: A caller with a second thread that builds through a forked pool, prints its helper's pid, then ends as asked.
HELPER_OWNER = """
import os, signal, sys, threading
threading.Thread(target=threading.Event().wait, daemon=True).start()
from rayaccel.isolation.fork_server import process_server
from rayaccel.isolation.pool import WorkerPool
with WorkerPool.load(None) as pool:
    assert pool.worker_pids()
print(process_server().pid, flush=True)
if sys.argv[1] == "killed":
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("end", ["exits", "killed"])
def test_the_helper_ends_with_its_process(end: str) -> None:
    env = {**os.environ, PLUGINS_ENV: "acme=rayaccel_testplugins.acme", "RAYACCEL_NO_AUTOLOAD": "1"}
    done = subprocess.run([sys.executable, "-c", HELPER_OWNER, end], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert done.returncode == (0 if end == "exits" else -signal.SIGKILL), done.stderr
    helper = int(done.stdout)

    def gone() -> bool:
        return not psutil.pid_exists(helper) or psutil.Process(helper).status() == psutil.STATUS_ZOMBIE

    if end == "exits":  # closed at the exit, before the process ends
        assert gone()
    else:  # its socket's other end closed with the process
        wait_for(gone, bool, timeout=30, interval=0.05, what="the helper of a killed process to end")


def test_the_start_up_environment_keeps_the_names_it_reads() -> None:
    read = ReadNames({"A": "1", "B": "2"})
    assert read.get("A") == "1" and "C" not in read and read.get("D", "x") == "x"
    assert read.names == {"A", "C", "D"}
    assert dict(read) == {"A": "1", "B": "2"} and read.names is None  # walked: every name counts
