"""Tensor transports: registration from the hook, path selection, and the reference shared-memory transport
moving real tensors between real Ray actors (one Ray node for the module)."""

from __future__ import annotations

import os

import pytest
import ray

import rayaccel.ray
from rayaccel.polling import wait_for
from rayaccel.ray.registry import uninstall

torch = pytest.importorskip("torch", reason="the transports need torch: pip install 'rayaccel[rdt]'")

from rayaccel.shm_transport import NAME, SEGMENT_PREFIX, segment_paths  # noqa: E402

MB = 1 << 20


def shm_clean(what: str) -> None:
    wait_for(segment_paths, lambda left: not left, timeout=60, what=f"no {SEGMENT_PREFIX}* left in /dev/shm {what}")


@ray.remote(num_cpus=0, enable_tensor_transport=True)
class Sender:
    def __init__(self) -> None:
        self.tensors: list = []

    def make(self, sizes: list[int], seed: int) -> list[str]:
        g = torch.Generator().manual_seed(seed)
        self.tensors = [torch.randint(-128, 127, (n,), dtype=torch.int8, generator=g) for n in sizes]
        return [str(torch.sum(t.to(torch.int64)).item()) for t in self.tensors]

    def tensors_ref(self) -> list:
        return self.tensors

    def pid(self) -> int:
        return os.getpid()


@ray.remote(num_cpus=0, enable_tensor_transport=True)
class Receiver:
    def digest(self, tensors: list) -> list[str]:
        return [str(torch.sum(t.to(torch.int64)).item()) for t in tensors]

    def same_bytes(self, tensors: list, seed: int, sizes: list[int]) -> bool:
        g = torch.Generator().manual_seed(seed)
        want = [torch.randint(-128, 127, (n,), dtype=torch.int8, generator=g) for n in sizes]
        return all(torch.equal(a, b) for a, b in zip(tensors, want, strict=True)) and len(tensors) == len(want)

    def pid(self) -> int:
        return os.getpid()


@pytest.fixture(scope="module")
def node():
    rayaccel.ray.init(plugins=[], num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        rayaccel.ray.shutdown()
        uninstall()


def test_init_registers_the_reference_transport(node):
    from ray.experimental.rdt import util

    assert NAME in util.transport_manager_info
    assert rayaccel.ray.register_transports(plugins=[]) == [NAME]  # idempotent


def test_64mb_tensor_moves_with_identical_bytes_and_dev_shm_is_clean_after_free(node):
    sender, receiver = Sender.remote(), Receiver.remote()
    sizes = [64 * MB, 3, 0, 4097]
    ray.get(sender.make.remote(sizes, seed=7))
    ref = sender.tensors_ref.options(tensor_transport=NAME).remote()
    assert ray.get(receiver.same_bytes.remote(ref, 7, sizes), timeout=120)
    assert segment_paths(), "the segment lives while the ref does"
    del ref
    shm_clean("after the ref was freed")
    for a in (sender, receiver):
        ray.kill(a)


def test_receiver_killed_mid_transfer_leaves_nothing_and_caller_gets_an_error(node):
    sender, receiver = Sender.remote(), Receiver.remote()
    ray.get([sender.make.remote([64 * MB] * 4, seed=1), receiver.pid.remote()])
    ref = sender.tensors_ref.options(tensor_transport=NAME).remote()
    pending = receiver.digest.remote(ref)
    ray.kill(receiver)  # while the transfer is in flight
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(pending, timeout=120)
    del ref, pending
    shm_clean("after the receiver died")
    assert ray.get(sender.pid.remote(), timeout=60) > 0  # the sender is not hung
    ray.kill(sender)


def test_sender_killed_leaves_nothing_once_the_next_transfer_runs(node):
    sender, receiver = Sender.remote(), Receiver.remote()
    ray.get(sender.make.remote([MB], seed=2))
    ref = sender.tensors_ref.options(tensor_transport=NAME).remote()
    (segment,) = wait_for(segment_paths, timeout=60, what="the sender's segment")
    ray.kill(sender)
    # One-sided: the receiver reads the bytes without the sender.
    assert ray.get(receiver.same_bytes.remote(ref, 2, [MB]), timeout=120)
    del ref
    # Nobody can garbage-collect for the dead sender; the next transfer on the node sweeps its segment.
    other = Sender.remote()
    ray.get(other.make.remote([10], seed=3))
    ref = other.tensors_ref.options(tensor_transport=NAME).remote()
    assert ray.get(receiver.same_bytes.remote(ref, 3, [10]), timeout=120)
    assert segment not in segment_paths()
    del ref
    shm_clean("after the dead sender's segment was swept")
    for a in (other, receiver):
        ray.kill(a)


def test_receive_into_target_buffers_and_abort():
    from rayaccel.shm_transport import SharedMemoryTransport, ShmCommunicatorMetadata, TransportError

    t = SharedMemoryTransport()
    src = [torch.arange(1000, dtype=torch.float32), torch.ones(3, 4, dtype=torch.int16)]
    meta = t.extract_tensor_transport_metadata("ab12", src)
    comm = ShmCommunicatorMetadata(src_actor="s", dst_actor="d")
    bufs = [torch.empty(1000, dtype=torch.float32), torch.empty(3, 4, dtype=torch.int16)]
    out = t.recv_multiple_tensors("ab12", meta, comm, target_buffers=bufs)
    assert out[0] is bufs[0] and all(torch.equal(a, b) for a, b in zip(out, src, strict=True))
    mapped = t.recv_multiple_tensors("ab12", meta, comm)
    mapped[0][0] = 42  # copy-on-write: the segment (and the next reader) keep the sender's bytes
    assert torch.equal(t.recv_multiple_tensors("ab12", meta, comm)[0], src[0])
    with pytest.raises(TransportError, match=r"target buffers.*buffer 0"):
        t.recv_multiple_tensors("ab12", meta, comm, target_buffers=[torch.empty(5), bufs[1]])
    t.abort_transport("ab12", comm)
    with pytest.raises(TransportError, match=r"RAYACCEL_SHM transfer failed at step 'recv: read' \(sender actor s, "
                       r"receiver actor d.*aborted"):
        t.recv_multiple_tensors("ab12", meta, comm, target_buffers=bufs)
    t.garbage_collect("ab12", meta, src)
    assert not [p for p in segment_paths() if meta.segment in p]
    with pytest.raises(TransportError, match=r"open segment.*ref was freed"):
        t.recv_multiple_tensors("ab12", meta, comm)
