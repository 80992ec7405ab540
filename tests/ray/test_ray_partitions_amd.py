"""AMD compute partitions on a real Ray node (issue 25): 8 MI300X in CPX mode (NPS4), each split into 8
compute partitions, 64 in all. Each physical GPU is reported once with its partitions, which Ray schedules as
``GPU_COMPUTE_PARTITION_cpx.1xcd.24gb`` (one XCD and 24 GiB each); a task gets one partition's HIP id in
HIP_VISIBLE_DEVICES, two tasks never the same one, and no partitioned GPU is offered as a whole ``GPU``. One node
for the module, started by ``rayaccel.ray.init``.
"""

from __future__ import annotations

import os

import pytest
import ray
from rendezvous import rendezvous
from simulated_node import simulated_node

pytestmark = pytest.mark.ray

CPX = "GPU_COMPUTE_PARTITION_cpx.1xcd.24gb"
IDS = {str(i) for i in range(64)}  # the HIP ids of the 64 partitions


@pytest.fixture(scope="module")
def node():
    with simulated_node("amd/mi300x-cpx-nps4", "amd", CPX, 64, num_cpus=8) as node_id:
        yield node_id


def partitions(meet=None, n=0):
    """HIP_VISIBLE_DEVICES of this task or actor (Ray's ids for the partition resource must agree)."""
    if meet is not None:  # held until n callers run at once, so the test knows they were concurrent
        assert ray.get(meet.arrive.remote("concurrent", n))
    env = os.environ.get("HIP_VISIBLE_DEVICES", "")
    ids = sorted(env.split(","))
    assert ids == sorted(ray.get_runtime_context().get_accelerator_ids()[CPX])
    return ids


@ray.remote(resources={CPX: 1}, num_cpus=0)
class Holder:
    def partitions(self):
        return partitions()


def test_the_node_offers_64_partitions_and_no_whole_gpu(node):
    total = ray.cluster_resources()
    assert total[CPX] == 64.0 and not total.get("GPU")
    (info,) = [n for n in ray.nodes() if n["NodeID"] == node]
    assert info["Labels"]["rayaccel.io/partition-kind"] == "compute-partition"
    assert info["Labels"]["rayaccel.io/partition-compute-partition-cpx.1xcd.24gb"] == "64"


def test_two_tasks_each_get_their_own_partition(node):
    meet = rendezvous()
    task = ray.remote(resources={CPX: 1}, num_cpus=0)(partitions)
    (first,), (second,) = ray.get([task.remote(meet, 2) for _ in range(2)], timeout=90)
    assert first != second and {first, second} <= IDS


def test_a_task_beside_a_holder_sees_only_its_own_partition(node):
    holder = Holder.remote()
    try:
        held = ray.get(holder.partitions.remote(), timeout=60)
        got = ray.get(ray.remote(resources={CPX: 1}, num_cpus=0)(partitions).remote(), timeout=60)
        assert len(held) == 1 and len(got) == 1 and got != held and set(held + got) <= IDS
    finally:
        ray.kill(holder)
