"""Neuron logical cores on a real Ray node (issue 25): a trn2.48xlarge with NEURON_LOGICAL_NC_CONFIG=1, whose
16 Trainium2 devices show 8 logical cores each (128; at the default LNC=2 they show 4, 64). Logical cores
stay Ray's ``neuron_cores`` (docs/partitions.md says why): the count and the ids in NEURON_RT_VISIBLE_CORES
follow the LNC, and two tasks never share a core. One node for the module, started by ``rayaccel.ray.init``.
"""

from __future__ import annotations

import os

import pytest
import ray
from rendezvous import rendezvous
from simulated_node import simulated_node

pytestmark = pytest.mark.ray

CORES_PER_DEVICE = 8  # LNC=1 on Trainium2: every physical NeuronCore is a logical core


@pytest.fixture(scope="module")
def node():
    with simulated_node("neuron/trn2.48xlarge-lnc1", "neuron", "neuron_cores", 128, num_cpus=8) as node_id:
        yield node_id


def cores(meet=None, n=0):
    """The logical cores this task or actor sees (NEURON_RT_VISIBLE_CORES; Ray's ids must agree)."""
    if meet is not None:  # held until n callers run at once, so the test knows they were concurrent
        assert ray.get(meet.arrive.remote("concurrent", n))
    env = os.environ.get("NEURON_RT_VISIBLE_CORES", "")
    ids = sorted(int(i) for i in env.split(","))
    assert ids == sorted(int(i) for i in ray.get_runtime_context().get_accelerator_ids()["neuron_cores"])
    return ids


@ray.remote(resources={"neuron_cores": 1}, num_cpus=0)
class Holder:
    def cores(self):
        return cores()


def test_the_node_offers_the_logical_cores_of_its_lnc(node):
    assert ray.cluster_resources()["neuron_cores"] == 128.0  # 16 devices x 8 at LNC=1 (64 at LNC=2)
    (info,) = [n for n in ray.nodes() if n["NodeID"] == node]
    assert info["Labels"]["aws.amazon.com/neuron.logical-nc-config"] == "1"


def test_two_tasks_of_one_device_each_get_disjoint_logical_cores_of_one_device(node):
    meet = rendezvous()
    task = ray.remote(resources={"neuron_cores": CORES_PER_DEVICE}, num_cpus=0)(cores)
    first, second = ray.get([task.remote(meet, 2) for _ in range(2)], timeout=90)
    assert not set(first) & set(second)
    for ids in (first, second):
        # LNC=1 ids: device i owns logical cores 8i..8i+7; a one-device request fills one device.
        assert len({i // CORES_PER_DEVICE for i in ids}) == 1 and all(0 <= i < 128 for i in ids)


def test_a_task_beside_a_holder_of_core_0_sees_only_its_own_core(node):
    holder = Holder.remote()
    try:
        held = ray.get(holder.cores.remote(), timeout=60)
        got = ray.get(ray.remote(resources={"neuron_cores": 1}, num_cpus=0)(cores).remote(), timeout=60)
        assert len(held) == 1 and len(got) == 1 and got != held
    finally:
        ray.kill(holder)
