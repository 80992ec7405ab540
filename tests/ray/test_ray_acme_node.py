"""A family Ray does not know (ACME) on one simulated 4-device node, started by ``rayaccel.ray.init``."""

from __future__ import annotations

import os
from typing import Any

import pytest
import ray
from rendezvous import rendezvous

import rayaccel.ray
from rayaccel.ray.registry import uninstall
from rayaccel.support.polling import wait_for
from rayaccel.support.signalling import held

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module", autouse=True)
def acme_node():
    env = pytest.MonkeyPatch()  # undone after the node stops: the module's setting leaves with it
    env.setenv("RAYACCEL_PLUGINS", "acme=rayaccel_testplugins.acme")
    rayaccel.ray.init(simulate="acme/acme-4", plugins=["acme"], num_cpus=4, include_dashboard=False,
                      log_to_driver=False, monitor=True, monitor_interval=2)
    yield
    rayaccel.ray.shutdown()
    uninstall()
    env.undo()


def visible_ids(meet=None, n=0):
    if meet is not None:  # held until n tasks run at once, so the test knows they were concurrent
        assert ray.get(meet.arrive.remote("concurrent", n))
    return os.environ.get("ACME_VISIBLE_DEVICES"), ray.get_runtime_context().get_accelerator_ids()


def test_the_node_has_four_acme_and_the_inventorys_labels():
    # Ray's resource view may trail the node's registration: poll it, then check it exactly.
    resources = wait_for(ray.cluster_resources, lambda r: "ACME" in r, timeout=60, what="ACME in the cluster")
    assert resources["ACME"] == 4
    assert resources["accelerator_type:R1"] == 1
    (node,) = ray.nodes()
    assert node["Labels"]["ray.io/accelerator-type"] == "R1"
    assert node["Labels"]["rayaccel.io/family"] == "acme"
    assert node["Labels"]["rayaccel.io/sku"] == "acme-r1"


def test_four_concurrent_tasks_each_see_one_distinct_id():
    meet = rendezvous()
    task = ray.remote(resources={"ACME": 1})(visible_ids)
    results = ray.get([task.remote(meet, 4) for _ in range(4)], timeout=90)
    envs = [env for env, _ in results]
    assert sorted(envs) == ["0", "1", "2", "3"]
    # Ray's own view agrees with the env var: get_accelerator_ids() includes the day-zero family.
    assert all(ids["ACME"] == [env] for env, ids in results)


def test_a_task_with_two_sees_two():
    env, ids = ray.get(ray.remote(resources={"ACME": 2})(visible_ids).remote(), timeout=60)
    assert len(env.split(",")) == 2 and sorted(env.split(",")) == sorted(ids["ACME"])


def test_fractional_quantity_above_one_is_refused_with_the_plugins_message():
    with pytest.raises(ValueError, match=r"ACME resource quantity must be a whole number; 1\.5 was requested"):
        ray.remote(resources={"ACME": 1.5})(visible_ids)
    task = ray.remote(resources={"ACME": 1})(visible_ids)
    with pytest.raises(ValueError, match="must be a whole number"):
        task.options(resources={"ACME": 1.5})


def test_accelerator_type_option_runs_on_the_node():
    assert ray.get(ray.remote(accelerator_type="R1")(lambda: "ran").remote(), timeout=60) == "ran"


def test_an_actor_gets_its_unit_at_creation():
    actor = ray.remote(resources={"ACME": 1})(type("Probe", (), {"ids": lambda self: visible_ids()})).remote()
    env, ids = ray.get(actor.ids.remote(), timeout=60)
    assert env in {"0", "1", "2", "3"} and ids["ACME"] == [env]
    ray.kill(actor)


def test_env_is_restored_after_a_task():
    @ray.remote(resources={"ACME": 1})
    def with_unit():
        return os.getpid(), os.environ.get("ACME_VISIBLE_DEVICES")

    @ray.remote(num_cpus=1)
    def without_unit():
        return os.getpid(), os.environ.get("ACME_VISIBLE_DEVICES")

    pid, env = ray.get(with_unit.remote(), timeout=60)
    assert env in {"0", "1", "2", "3"}
    # Ray reuses idle workers: keep asking until a plain task runs in the same process.
    _, other_env = wait_for(lambda: ray.get(without_unit.remote(), timeout=60), lambda ran: ran[0] == pid,
                            timeout=60, interval=0.05, what=f"a plain task in worker {pid}, which had the ACME unit")
    assert other_env == "0,1,2,3"  # the node's value again: every schedulable unit


def test_init_with_monitor_polls_the_nodes_health():
    from rayaccel.ray.monitor import monitor_status

    node_id = ray.get_runtime_context().get_node_id()
    status = wait_for(lambda: monitor_status(node_id), lambda s: s is not None and s["polls"] >= 1,
                      timeout=60, what="the monitor's first poll")
    assert status["cordoned"] == {} and status["error"] is None
    assert sorted(status["health"].values()) == ["healthy"] * 4


def _wakeups(pid: int) -> int:
    """How many times the process's main thread has been switched out (each wait it woke from counts)."""
    with open(f"/proc/{pid}/task/{pid}/status", encoding="ascii") as f:
        fields = dict(line.split(":", 1) for line in f)
    return int(fields["voluntary_ctxt_switches"]) + int(fields["nonvoluntary_ctxt_switches"])


def _still_running(process: Any) -> bool:
    """The process (a psutil.Process) has not ended: its pid is not another's now, nor only left to be reaped."""
    import psutil

    try:
        return bool(process.is_running()) and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_the_monitor_loop_keeps_its_main_thread_and_resumes_after_a_restart():
    """The loop is the actor's own task on its main thread, so Ray's 10 ms signal check never runs there (an
    idle actor's main thread wakes ~100 times a second); killed, the actor is restarted by Ray, its loop
    resumes by itself and publishes again, and the killed one's plugin workers end."""
    import psutil

    from rayaccel.ray.monitor import monitor_status

    node_id = ray.get_runtime_context().get_node_id()
    first = wait_for(lambda: monitor_status(node_id), lambda s: s is not None and s["polls"] >= 1,
                     timeout=60, what="the monitor's first poll")
    idle = ray.remote(num_cpus=0)(type("Idle", (), {"pid": lambda self: os.getpid()})).remote()
    idle_pid = ray.get(idle.pid.remote(), timeout=60)
    before = _wakeups(first["pid"]), _wakeups(idle_pid)
    # Two more polls, and the idle actor's 100 wakeups (a second of its 10 ms checks), which a loaded machine
    # schedules late: the window is measured by what happened in it, never by the clock.
    polls, monitor_woke, idle_woke = wait_for(
        lambda: (monitor_status(node_id)["polls"], _wakeups(first["pid"]) - before[0], _wakeups(idle_pid) - before[1]),
        lambda seen: seen[0] >= first["polls"] + 2 and seen[2] > 100, timeout=60,
        what="two more polls and 100 wakeups of the idle actor")
    ray.kill(idle)
    assert monitor_woke * 10 < idle_woke, (polls, monitor_woke, idle_woke)

    # Known by pid and start time, taken from the status just read: on a machine of 32768 pids a busy suite can
    # hand an ended process's pid to a new one within a wait (psutil's kill and is_running compare the start
    # time), so the monitor is killed as the process its status named, never by a number kept from before.
    latest = monitor_status(node_id)
    assert latest["pid"] == first["pid"]
    monitor, workers = psutil.Process(latest["pid"]), held(latest["workers"].values())
    monitor.kill()
    again = wait_for(lambda: monitor_status(node_id), lambda s: s["pid"] != first["pid"] and s["polls"] >= 1,
                     timeout=120, what="the restarted monitor's first poll")
    assert again["loop"] == "running" and again["error"] is None and again["cordoned"] == {}
    assert sorted(again["health"].values()) == ["healthy"] * 4
    wait_for(lambda: [w.pid for w in workers if _still_running(w)], lambda alive: not alive,
             timeout=30, what="the killed monitor's plugin workers to end")
