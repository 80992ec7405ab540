"""Topology-aware placement of Ray's own GPU family (issue 24): a simulated DGX H100 started by
``rayaccel.ray.init``, one node for the module. Ray's NVIDIA manager keeps CUDA_VISIBLE_DEVICES; the ids it
assigns are tokens of the node's claims table like a day-zero family's."""

from __future__ import annotations

import itertools
import os
import time

import pytest
import ray
from simulated_node import simulated_node

import rayaccel.ray
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.plugins.manager import PluginManager
from rayaccel.simulation.host_factory import simulated_host
from rayaccel.support.polling import wait_for

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def node():
    with simulated_node("nvidia/dgx-h100", "nvidia", "GPU", 8, num_cpus=6):
        yield


def gpus():
    env = os.environ["CUDA_VISIBLE_DEVICES"].split(",")
    assert sorted(ray.get_gpu_ids()) == sorted(env)  # Ray's view agrees: Ray Train indexes devices by it
    return sorted(env, key=int)


@ray.remote(num_gpus=1, num_cpus=0)
class Busy:
    def gpus(self):
        return gpus()


def nvlinked_pairs():
    manager = PluginManager()
    (family,) = InventoryBuilder(manager, ["nvidia"]).build(simulated_host("nvidia/dgx-h100", manager=manager)).families
    index = {d.id: str(d.index) for d in family.devices}
    return {frozenset((index[link.a], index[link.b])) for link in family.topology.links
            if link.kind in ("nvlink", "nvswitch")}


def test_with_two_gpus_busy_a_four_gpu_task_gets_four_with_full_nvlink(node):
    busy = [Busy.remote() for _ in range(2)]
    try:
        held = {g for actor in busy for g in ray.get(actor.gpus.remote(), timeout=60)}
        assert len(held) == 2
        got = ray.get(ray.remote(**rayaccel.ray.best_connected(4, family="nvidia"))(gpus).remote(), timeout=60)
        assert len(got) == 4 and not set(got) & held
        linked = nvlinked_pairs()
        assert all(frozenset(pair) in linked for pair in itertools.combinations(got, 2)), got
    finally:
        for actor in busy:
            ray.kill(actor)


def test_two_halves_of_one_gpu_see_the_same_gpu(node):
    from rendezvous import rendezvous

    @ray.remote(num_gpus=0.5, num_cpus=0)
    def half(meet):
        assert ray.get(meet.arrive.remote("halves", 2))  # both hold their half at once
        tokens = ray._private.worker.global_worker.rayaccel_assigned_ids("GPU", "^GPU_group_[0-9A-Za-z]+$")
        return [str(t) for t in tokens], gpus()

    meet = rendezvous()
    (tokens_a, gpus_a), (tokens_b, gpus_b) = ray.get([half.remote(meet), half.remote(meet)], timeout=90)
    assert len(gpus_a) == len(gpus_b) == 1
    assert (gpus_a == gpus_b) == (tokens_a == tokens_b)  # one instance, one GPU; two instances, two GPUs


def test_a_new_cordon_is_never_given_to_a_task_that_starts_after_it(node):
    # Issue 39: GPU 3 cordoned (as the health monitor does on XID 79) while its placement group holds no token
    # yet, every other GPU busy: Ray still hands out 8 tokens, and the task that gets the eighth waits for a
    # healthy GPU to be released instead of running on GPU 3 (17 tasks did, for 50 s, before).
    from rendezvous import rendezvous

    from rayaccel.ray.claims import ClaimsTable, claims_path

    manager = PluginManager()
    (family,) = InventoryBuilder(manager, ["nvidia"]).build(simulated_host("nvidia/dgx-h100", manager=manager)).families
    failed = next(d.id for d in family.devices if d.index == 3)
    node_id = ray.get_runtime_context().get_node_id()
    table = ClaimsTable(claims_path(ray._private.worker.global_worker.node.get_session_dir_path(), node_id))

    @ray.remote(num_gpus=1, num_cpus=0)
    def hold(meet):
        (gpu,) = gpus()
        assert ray.get(meet.arrive.remote("holding", 7), timeout=90)
        assert ray.get(meet.wait.remote(f"release {gpu}", 90), timeout=120)
        return gpu

    meet = rendezvous()
    table.cordon("GPU", failed, ["3"])
    holders = []
    try:
        holders = [hold.remote(meet) for _ in range(7)]
        assert ray.get(meet.wait.remote("holding", 90), timeout=120)  # GPUs 0-2 and 4-7 busy, 3 cordoned
        late = ray.remote(num_gpus=1, num_cpus=0)(gpus).remote()
        def seen() -> tuple[list[object], list[dict[str, object]]]:
            return ray.wait([late], timeout=0)[0], table.snapshot().get("GPU", [])

        ended, claims = wait_for(seen, lambda s: s[0] or any(c.get("waiting") for c in s[1]), timeout=90,
                                 interval=0.05, what="the eighth task waiting for a healthy GPU")
        assert not ended, f"the eighth task ran on GPU {ray.get(late)} while GPU 3 was cordoned"
        assert [c["units"] for c in claims if c.get("waiting")] == [[]]
        meet.set.remote("release 5")
        assert ray.get(late, timeout=90) == ["5"]
    finally:
        for gpu in ("0", "1", "2", "4", "5", "6", "7"):
            meet.set.remote(f"release {gpu}")
        ray.get(holders, timeout=120)
        table.uncordon("GPU", failed)


@ray.remote(num_cpus=0, max_calls=0)
def _use_gpus(hold_s):
    tokens = ray._private.worker.global_worker.rayaccel_assigned_ids("GPU", "^GPU_group_[0-9A-Za-z]+$")
    started = time.monotonic()
    units = gpus()
    deadline = started + hold_s
    while time.monotonic() < deadline:  # busy, not asleep: the task holds its GPUs for this long
        pass
    return started, time.monotonic(), sorted(str(t) for t in tokens), units


def test_no_two_running_tasks_ever_share_a_gpu_over_hundreds_of_short_mixed_tasks(node):
    # The overlap checker of issue 42: 1-, 2-GPU and half-GPU tasks interleaved; while two run at once their
    # GPUs are disjoint, unless both are halves of the same token (Ray packed them on one instance).
    from rayaccel.ray.claims import ClaimsTable, claims_path

    table = ClaimsTable(claims_path(ray._private.worker.global_worker.node.get_session_dir_path(),
                                    ray.get_runtime_context().get_node_id()))
    table.snapshot()  # the file exists from here on
    written = os.stat(table.path).st_mtime_ns
    requests = [1, 2, 0.5, 1, 0.5, 2, 1, 0.5] * 30
    runs = ray.get([_use_gpus.options(num_gpus=g).remote(0.01) for g in requests], timeout=600)
    assert len(runs) == 240
    # The DGX's GPUs are uniform (NVSwitch): every task kept Ray's ids and locked them; none wrote the table.
    assert os.stat(table.path).st_mtime_ns == written
    assert all(units == tokens for _, _, tokens, units in runs)
    overlapping = 0
    for (a, (start_a, end_a, tokens_a, units_a)), (b, (start_b, end_b, tokens_b, units_b)) in itertools.combinations(
            enumerate(runs), 2):
        if start_a < end_b and start_b < end_a:
            overlapping += 1
            shared_token = requests[a] < 1 and requests[b] < 1 and tokens_a == tokens_b
            assert shared_token or not set(units_a) & set(units_b), (requests[a], runs[a], requests[b], runs[b])
    assert all(len(units) == max(1, int(g)) for g, (_, _, _, units) in zip(requests, runs, strict=True))
    assert overlapping > 50  # the tasks did run at once: the check above had pairs to check
