"""MIG instances Ray can schedule (issue 25), on a real Ray node of the mixed A100 80GB fixture: GPU 0 in MIG
mode (3g.40gb + 2x 2g.20gb), GPU 1 whole. Started as a user starts it, ``rayaccel start --head --simulate
nvidia/a100-80gb-mig-mixed`` (a subprocess, with its health monitor), joined with ``rayaccel.ray.connect``,
stopped with ``rayaccel stop --address``; one node for the module.

Each profile is its own resource (``GPU_MIG_2g.20gb``); a task asking for one gets exactly one instance's
``MIG-<uuid>`` in CUDA_VISIBLE_DEVICES, the MIG-mode GPU is never offered as ``GPU``, and a fault of one
instance takes only that instance out of scheduling.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import ray
from ports import free_ports
from rendezvous import rendezvous

import rayaccel.ray
from rayaccel.hosts.fixtures import load_fixture
from rayaccel.ray.monitor import monitor_status
from rayaccel.ray.registry import uninstall
from rayaccel.support.polling import wait_for

pytestmark = pytest.mark.ray

FIXTURE = "a100-80gb-mig-mixed"
TWO_G = "GPU_MIG_2g.20gb"
THREE_G = "GPU_MIG_3g.40gb"


def _fixture_ids() -> tuple[list[str], list[str]]:
    """(GPU UUIDs, MIG UUIDs of GPU 0) as the fixture's NVML reports them."""
    from rayaccel_nvidia import plugin

    fixture = load_fixture(Path(plugin.__file__).parent / "fixtures" / f"{FIXTURE}.yaml")
    devices = fixture.host.libraries["nvml"]["devices"]
    return [devices[i]["uuid"] for i in ("0", "1")], [m["uuid"] for m in devices["0"]["mig_devices"].values()]


GPUS, MIGS = _fixture_ids()


#: Deterministic whatever ~/.ray holds: whether Ray turns token auth on depends on a token there.
ENV = {**os.environ, "RAY_AUTH_MODE": "disabled"}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rayaccel", *args], capture_output=True, text=True, timeout=240,
                          env=ENV)


@pytest.fixture(scope="module")
def node():
    from ray.util import get_node_ip_address

    port, client, agent, agent_grpc, metrics, runtime_env, objects = free_ports(7)
    address = f"{get_node_ip_address()}:{port}"
    started = cli("start", "--head", "--simulate", f"nvidia/{FIXTURE}", "--monitor-interval", "1",
                       f"--port={port}", f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={agent}",
                       f"--dashboard-agent-grpc-port={agent_grpc}", f"--metrics-export-port={metrics}",
                       f"--runtime-env-agent-port={runtime_env}", f"--object-manager-port={objects}", "--num-cpus=8",
                       "--include-dashboard=false",
                       "--include-log-monitor=false")  # it tails workers' logs for drivers that take them: none here
    env = pytest.MonkeyPatch()  # undone after the node stops
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        assert ("node started with GPU=1, GPU_MIG_2g.20gb=2, GPU_MIG_3g.40gb=1, accelerator_type:A100=1"
                in started.stdout)
        fault_file = started.stdout.split("switch a fault on with: echo <fault> >> ", 1)[1].split()[0]
        node_id = started.stdout.split("rayaccel: node ", 2)[-1].split()[0]
        env.setenv("RAY_AUTH_MODE", "disabled")
        rayaccel.ray.connect(address, log_to_driver=False)
        # The monitor's first poll is its baseline (what is bad then is not cordoned): wait for it.
        wait_for(lambda: monitor_status(node_id), lambda s: s is not None and s["polls"] >= 1,
                 timeout=60, what="the health monitor's first poll")
        yield node_id, fault_file
    finally:
        rayaccel.ray.shutdown()
        uninstall()
        env.undo()
        stopped = cli("stop", f"--address={address}", "--grace", "3")
        assert stopped.returncode == 0, stopped.stderr


def seen(meet=None, n=0):
    """CUDA_VISIBLE_DEVICES of this task and Ray's accelerator ids (non-empty ones)."""
    if meet is not None:  # held until n callers run at once, so the test knows they were concurrent
        assert ray.get(meet.arrive.remote("concurrent", n))
    ids = {name: sorted(v) for name, v in ray.get_runtime_context().get_accelerator_ids().items() if v}
    return os.environ.get("CUDA_VISIBLE_DEVICES"), ids


def test_each_profile_is_a_resource_and_the_mig_gpu_is_not_offered_whole(node):
    node, _ = node
    total = ray.cluster_resources()
    assert (total.get("GPU"), total.get(TWO_G), total.get(THREE_G)) == (1.0, 2.0, 1.0)
    assert total.get("accelerator_type:A100") == 1.0
    (info,) = [n for n in ray.nodes() if n["NodeID"] == node]
    labels = info["Labels"]
    assert labels["rayaccel.io/partition-kind"] == "mig"
    assert (labels["rayaccel.io/partition-mig-2g.20gb"], labels["rayaccel.io/partition-mig-3g.40gb"]) == ("2", "1")


def test_two_tasks_each_asking_for_a_2g_instance_run_at_once_on_distinct_instances(node):
    meet = rendezvous()
    task = ray.remote(resources={TWO_G: 1}, num_cpus=0)(seen)
    got = ray.get([task.remote(meet, 2) for _ in range(2)], timeout=90)
    visible = sorted(env for env, _ in got)
    assert visible == sorted(MIGS[1:])  # one MIG UUID each, the two 2g.20gb instances of GPU 0
    for env, ids in got:
        assert ids == {TWO_G: [env]}  # Ray's accelerator ids agree, and no GPU is given with it


def test_two_half_requests_share_one_instance_as_half_gpus_share_a_gpu(node):
    meet = rendezvous()
    task = ray.remote(resources={THREE_G: 0.5}, num_cpus=0)(seen)
    got = ray.get([task.remote(meet, 2) for _ in range(2)], timeout=90)
    assert [env for env, _ in got] == [MIGS[0], MIGS[0]]


def test_a_3g_task_gets_the_3g_instance(node):
    env, ids = ray.get(ray.remote(resources={THREE_G: 1}, num_cpus=0)(seen).remote(), timeout=60)
    assert env == MIGS[0] and ids == {THREE_G: [MIGS[0]]}


def test_a_whole_gpu_task_lands_on_the_unpartitioned_gpu_only(node):
    meet = rendezvous()
    gpu_task = ray.remote(num_gpus=1, num_cpus=0)(seen)
    mig_task = ray.remote(resources={TWO_G: 1}, num_cpus=0)(seen)
    (gpu_env, gpu_ids), (mig_env, _) = ray.get([gpu_task.remote(meet, 2), mig_task.remote(meet, 2)], timeout=90)
    assert gpu_env == "1" and gpu_ids == {"GPU": ["1"]}  # GPU 1, never GPU 0 (in MIG mode) nor a MIG instance
    assert mig_env in MIGS[1:]


def test_a_label_selector_targets_nodes_with_the_profile(node):
    task = ray.remote(resources={TWO_G: 1}, num_cpus=0,
                      label_selector={"rayaccel.io/partition-mig-2g.20gb": "in(1,2,3,4,5,6,7)"})(seen)
    env, _ = ray.get(task.remote(), timeout=60)
    assert env in MIGS[1:]


def test_a_placement_group_of_instances_gives_each_bundle_its_own_instance(node):
    from ray.util import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    group = placement_group([{TWO_G: 1}, {TWO_G: 1}], strategy="STRICT_PACK")
    assert group.wait(timeout_seconds=60)
    try:
        meet = rendezvous()
        task = ray.remote(resources={TWO_G: 1}, num_cpus=0)(seen)
        got = ray.get([task.options(scheduling_strategy=PlacementGroupSchedulingStrategy(group, bundle))
                       .remote(meet, 2) for bundle in (0, 1)], timeout=90)
        assert sorted(env for env, _ in got) == sorted(MIGS[1:])
    finally:
        remove_placement_group(group)
    wait_for(ray.available_resources, lambda r: r.get(TWO_G) == 2, timeout=60, what=f"2 {TWO_G} free again")


def test_a_fault_in_one_instance_drains_that_instance_and_a_parent_fault_all_of_them(node):
    # Last in the module: it cordons instances of GPU 0.
    node, fault_file = node
    def status():
        return monitor_status(node)

    with open(fault_file, "a", encoding="utf-8") as f:
        f.write("mig-instance-xid-95\n")
    cordon = wait_for(status, lambda s: s["cordoned"].get("nvidia", {}).get("held") == 1, timeout=120,
                      what="the faulted instance held by its cordon")["cordoned"]["nvidia"]
    assert list(cordon["devices"]) == [MIGS[1]] and "xid-95" in cordon["message"]
    wait_for(ray.available_resources, lambda r: r.get(TWO_G) == 1, timeout=60, what=f"Ray to offer 1 {TWO_G}")
    free = ray.available_resources()
    assert (free.get(THREE_G), free.get("GPU")) == (1.0, 1.0)  # the other instances and the whole GPU stay
    # The healthy 2g.20gb instance still takes work, and only it.
    task = ray.remote(resources={TWO_G: 1}, num_cpus=0)(seen)
    assert {ray.get(task.remote(), timeout=60)[0] for _ in range(3)} == {MIGS[2]}

    open(fault_file, "w", encoding="utf-8").close()  # the instance recovers (its XID no longer reported)
    # (The monitor drops the cordon before it records the recovery: wait for the record itself.)
    wait_for(status, lambda s: not s["cordoned"] and MIGS[1] in {r.get("device") for r in s["recovered"]},
             timeout=120, what="the instance's recovery")
    wait_for(ray.available_resources, lambda r: r.get(TWO_G) == 2, timeout=60, what=f"Ray to offer 2 {TWO_G} again")

    with open(fault_file, "w", encoding="utf-8") as f:  # now GPU 0 itself falls off the bus
        f.write("mig-parent-xid-79\n")
    wait_for(status, lambda s: s["cordoned"].get("nvidia", {}).get("held") == 3, timeout=120,
             what="all three instances of GPU 0 held by cordons")
    wait_for(ray.available_resources, lambda r: not r.get(TWO_G) and not r.get(THREE_G), timeout=60,
             what="Ray to offer no MIG instance")
    env, ids = ray.get(ray.remote(num_gpus=1, num_cpus=0)(seen).remote(), timeout=60)
    assert env == "1" and ids == {"GPU": ["1"]}  # the whole GPU 1 still runs work
