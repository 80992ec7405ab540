"""Tensor transports: registration from the hook, path selection, and the reference shared-memory transport
moving real tensors between real Ray actors (one Ray node for the module)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time

import psutil
import pytest
import ray

import rayaccel.ray
from rayaccel import hookimpl
from rayaccel.errors import RayaccelError
from rayaccel.hosts.fixtures import resolve_fixture
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.inventory.builder import collect_inventory
from rayaccel.inventory.transport_paths import Endpoint, choose_transport, device_endpoints, reaches_other_nodes
from rayaccel.plugins.manager import PluginManager
from rayaccel.plugins.transport_classes import ask_class
from rayaccel.ray.registry import uninstall
from rayaccel.ray.transports import TransportRegistrationError, declared_transports
from rayaccel.records import Affinity, FamilyDeclaration, NodeInventory, Problem, TransportSpec
from rayaccel.support.polling import wait_for
from rayaccel_testplugins import acme

torch = pytest.importorskip("torch", reason="the transports need torch: pip install 'rayaccel[rdt]'")

from rayaccel.transports.shared_memory import NAME, SEGMENT_PREFIX, segment_paths  # noqa: E402

MB = 1 << 20


def rayaccel_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rayaccel", *args], capture_output=True, text=True, timeout=120,
                          check=False)


def segments_of(sender_pid: int) -> list[str]:
    """The segments in /dev/shm of the sender process ``sender_pid`` (a name starts with its pid). A test asserts
    its own sender's: a segment another test left (its ref kept alive by that test's failure) fails that one only."""
    return [p for p in segment_paths() if os.path.basename(p).startswith(f"{SEGMENT_PREFIX}{sender_pid}-")]


def shm_clean(sender_pid: int, what: str) -> None:
    wait_for(lambda: segments_of(sender_pid), lambda left: not left, timeout=60,
             what=f"no {SEGMENT_PREFIX}{sender_pid}-* (the test's own sender's) left in /dev/shm {what}")


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
    def __init__(self, rdt_manager_made_in_s: float = 0.0) -> None:
        if rdt_manager_made_in_s:  # as a thread descheduled under load makes it (see test_64mb...)
            from ray.experimental.rdt.rdt_manager import RDTManager

            made = RDTManager.__init__

            def slowly(manager: RDTManager) -> None:
                time.sleep(rdt_manager_made_in_s)  # the GIL is free meanwhile: another thread may ask for one too
                made(manager)

            RDTManager.__init__ = slowly  # type: ignore[method-assign]

    def digest(self, tensors: list) -> list[str]:
        return [str(torch.sum(t.to(torch.int64)).item()) for t in tensors]

    def same_bytes(self, tensors: list, seed: int, sizes: list[int]) -> bool:
        g = torch.Generator().manual_seed(seed)
        want = [torch.randint(-128, 127, (n,), dtype=torch.int8, generator=g) for n in sizes]
        return all(torch.equal(a, b) for a, b in zip(tensors, want, strict=True)) and len(tensors) == len(want)

    def pid(self) -> int:
        return os.getpid()

    def transport_metrics(self) -> bool:
        from rayaccel.transports.metrics import METRICS

        return all(m is not None for m in (METRICS.bytes, METRICS.transfers, METRICS.failures, METRICS.latency))


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
    # What an actor asks for: its node id, no device (CPU tensors) -> the reference transport, and why.
    here = ray.get_runtime_context().get_node_id()
    choice = rayaccel.ray.transport_between((here, None, None), (here, None, None))
    assert (choice.transport, choice.path) == (NAME, "host") and "on one node" in choice.reason
    with pytest.raises(RayaccelError, match="node 00ff was not started by this process"):
        rayaccel.ray.transport_between(("00ff", None, None), (here, None, None))


def test_64mb_tensor_moves_with_identical_bytes_and_dev_shm_is_clean_after_free(node):
    # Ray 2.60 makes a worker's RDT manager on first use without a lock: a fresh receiver's two threads (the one
    # receiving, the one deserializing the task's argument) could each make one, and the task waited on the other's
    # store until Ray's 60 s timeout (CI at 2074e4c). Made slowly here, it is still made once: at registration.
    sender, receiver = Sender.remote(), Receiver.remote(0.2)
    sizes = [64 * MB, 3, 0, 4097]
    _, sender_pid = ray.get([sender.make.remote(sizes, seed=7), sender.pid.remote()])
    ref = sender.tensors_ref.options(tensor_transport=NAME).remote()
    assert ray.get(receiver.same_bytes.remote(ref, 7, sizes), timeout=120)
    assert segments_of(sender_pid), "the segment lives while the ref does"
    assert ray.get(receiver.transport_metrics.remote()), "the receive recorded its metrics through ray.util.metrics"
    del ref
    shm_clean(sender_pid, "after the ref was freed")
    for a in (sender, receiver):
        ray.kill(a)


def test_receiver_killed_mid_transfer_leaves_nothing_and_caller_gets_an_error(node):
    sender, receiver = Sender.remote(), Receiver.remote()
    _, sender_pid, _ = ray.get([sender.make.remote([64 * MB] * 4, seed=1), sender.pid.remote(), receiver.pid.remote()])
    ref = sender.tensors_ref.options(tensor_transport=NAME).remote()
    wait_for(lambda: segments_of(sender_pid), timeout=60,
             what="the sender's 256 MB segment (the transfer's first step)")
    pending = receiver.digest.remote(ref)  # the receiver now reads the segment...
    ray.kill(receiver)  # ...and dies while the transfer is in flight
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(pending, timeout=120)
    del ref, pending
    shm_clean(sender_pid, "after the receiver died")
    assert ray.get(sender.pid.remote(), timeout=60) > 0  # the sender is not hung
    ray.kill(sender)


def test_a_killed_senders_tensors_are_lost_clearly_and_its_segment_swept(node):
    sender, receiver = Sender.remote(), Receiver.remote()
    ray.get(sender.make.remote([MB], seed=2))
    sender_pid = ray.get(sender.pid.remote())
    ref = sender.tensors_ref.options(tensor_transport=NAME).remote()
    (segment,) = wait_for(lambda: segments_of(sender_pid), timeout=60, what="the sender's segment")
    # The ref is complete (the sender's step returned its metadata to the owner) before the sender dies: else Ray
    # itself reports the task's actor dead, and the transport is never asked.
    ready, _ = ray.wait([ref], timeout=60, fetch_local=False)
    assert ready, "the sender's task did not finish in 60 s"
    ray.kill(sender)
    wait_for(lambda: not psutil.pid_exists(sender_pid), timeout=60, what="the killed sender's process gone")
    # Whether or not a sweep ran first, the receive names the dead sender (never a racy success).
    with pytest.raises(ray.exceptions.RayError, match=r"step 'recv: open segment'.*the sender process died"):
        ray.get(receiver.same_bytes.remote(ref, 2, [MB]), timeout=120)
    del ref
    # Nobody can garbage-collect for the dead sender; a transfer on the node sweeps its segment.
    other = Sender.remote()
    _, other_pid = ray.get([other.make.remote([10], seed=3), other.pid.remote()])
    ref = other.tensors_ref.options(tensor_transport=NAME).remote()
    assert ray.get(receiver.same_bytes.remote(ref, 3, [10]), timeout=120)
    assert segment not in segment_paths(), "the dead sender's segment was not swept"
    del ref
    shm_clean(other_pid, "after the dead sender's segment was swept")
    for a in (other, receiver):
        ray.kill(a)


def test_a_failed_receive_is_a_clear_error_at_the_caller_and_both_actors_live_on(node):
    sender, receiver = Sender.remote(), Receiver.remote()
    _, sender_pid = ray.get([sender.make.remote([MB], seed=4), sender.pid.remote()])
    ref = sender.tensors_ref.options(tensor_transport=NAME).remote()
    (segment,) = wait_for(lambda: segments_of(sender_pid), timeout=60, what="the sender's segment")
    os.unlink(segment)  # the shared memory is lost before the receiver reads it
    with pytest.raises(ray.exceptions.RayError, match=r"RAYACCEL_SHM transfer failed at step 'recv: open segment' "
                       r"\(sender actor [0-9a-f]+, receiver actor [0-9a-f]+, segment rayaccel-rdt-"):
        ray.get(receiver.digest.remote(ref), timeout=120)
    del ref
    # The transport can abort, so Ray aborts instead of killing the actors: both still answer.
    assert ray.get([sender.pid.remote(), receiver.pid.remote()], timeout=60)
    ref = sender.tensors_ref.options(tensor_transport=NAME).remote()
    assert ray.get(receiver.same_bytes.remote(ref, 4, [MB]), timeout=120)
    del ref
    shm_clean(sender_pid, "after the failed and the good transfer")
    for a in (sender, receiver):
        ray.kill(a)


def test_receive_into_target_buffers_and_abort():
    from rayaccel.transports.shared_memory import SharedMemoryTransport, ShmCommunicatorMetadata, TransportError

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


def test_large_tensors_contiguous_or_strided_arrive_identical():
    """A large contiguous tensor is copied in slices by several threads, a strided one in one piece: both arrive
    byte for byte, zero-copy and into target buffers."""
    from rayaccel.transports.shared_memory import SharedMemoryTransport, ShmCommunicatorMetadata

    t = SharedMemoryTransport()
    g = torch.Generator().manual_seed(5)
    src = [torch.randint(-2**31, 2**31 - 1, (10 * MB + 3,), dtype=torch.int32, generator=g),
           torch.rand(4 * MB, 4, generator=g)[:, ::2], torch.zeros(0)]
    meta = t.extract_tensor_transport_metadata("dd01", src)
    comm = ShmCommunicatorMetadata(src_actor="s", dst_actor="d")
    assert all(torch.equal(a, b) for a, b in zip(t.recv_multiple_tensors("dd01", meta, comm), src, strict=True))
    into = [torch.empty_like(s, memory_format=torch.contiguous_format) for s in src]
    assert all(torch.equal(a, b) for a, b in zip(t.recv_multiple_tensors("dd01", meta, comm, target_buffers=into),
                                                   src, strict=True))
    t.garbage_collect("dd01", meta, src)


def test_a_receive_waits_for_the_senders_copy_bounded_and_abortable(monkeypatch):
    """The sender copies behind the metadata, holding the segment exclusively and naming the transfer in its
    header last: a receiver waits for that (bounded below Ray's own RDT wait, abortable) and refuses a segment
    whose copy never ended."""
    import fcntl

    from ray._private import ray_constants

    from rayaccel.transports import shared_memory as shm_transport
    from rayaccel.transports.shared_memory import (
        SHM_DIR,
        SharedMemoryTransport,
        ShmCommunicatorMetadata,
        TransportError,
    )

    t = SharedMemoryTransport()
    src = [torch.arange(4096, dtype=torch.int64)]
    meta = t.extract_tensor_transport_metadata("cc01", src)
    comm = ShmCommunicatorMetadata(src_actor="s", dst_actor="d")
    assert torch.equal(t.recv_multiple_tensors("cc01", meta, comm)[0], src[0])  # after the copy, whenever it ends
    with open(os.path.join(SHM_DIR, meta.segment), "r+b") as sender_still_copying:
        fcntl.flock(sender_still_copying, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no receiver's lock is left behind
        # Ray's task waiting for the tensors gives up after its RDT wait (60 s): a stalled receive ends before, in
        # the transport's error naming the step and the sender, not in Ray's "not found in RDT object store".
        assert shm_transport.receive_timeout_s() < ray_constants.RDT_FETCH_FAIL_TIMEOUT_SECONDS
        monkeypatch.setattr(ray_constants, "RDT_FETCH_FAIL_TIMEOUT_SECONDS", 0.25)  # as its env var would set it
        started = time.monotonic()
        with pytest.raises(TransportError, match=rf"step 'recv: wait for the sender's copy' \(sender actor s, .*the "
                           rf"sender \(pid {os.getpid()}\) did not finish copying 32768 bytes within the receive's "
                           r"0.2 s \(80% of Ray's RDT wait"):
            t.recv_multiple_tensors("cc01", meta, comm)
        assert 0.2 <= time.monotonic() - started < 30, "the receive did not wait its bound, or outlasted it"
        t.abort_transport("cc01", comm)
        with pytest.raises(TransportError, match=r"step 'recv: wait for the sender's copy'.*aborted"):
            t.recv_multiple_tensors("cc01", meta, comm, target_buffers=[torch.empty(4096, dtype=torch.int64)])
        os.pwrite(sender_still_copying.fileno(), bytes(128), 0)  # the copy failed before the header was written
    with pytest.raises(TransportError, match=r"step 'recv: open segment'.*the sender failed while copying"):
        t.recv_multiple_tensors("cc01", meta, comm)
    t.garbage_collect("cc01", meta, src)
    assert not [p for p in segment_paths() if meta.segment in p]


def _pooled_segments() -> int:
    """Pool segments whose memory this process holds (each is a memfd, open for the sender, its mapping and a
    receiver's kept mapping; one the pool dropped is truncated, so a receiver's kept mapping holds no memory)."""
    held = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if "rayaccel-rdt-pool" in os.readlink(f"/proc/self/fd/{fd}"):
                info = os.stat(f"/proc/self/fd/{fd}")
                if info.st_size:
                    held.add(info.st_ino)
    return len(held)


def test_a_freed_segment_is_reused_only_once_no_receiver_maps_it_and_the_pool_is_bounded():
    from rayaccel.transports.shared_memory import POOL_SEGMENTS, SHM_DIR, SharedMemoryTransport, ShmCommunicatorMetadata

    before = _pooled_segments()  # other transports of this process keep theirs
    t = SharedMemoryTransport()
    comm = ShmCommunicatorMetadata(src_actor="s", dst_actor="d")
    first, second = [torch.arange(1 << 20, dtype=torch.int32)], [torch.full((1 << 20,), 7, dtype=torch.int32)]

    def memory_of(meta) -> str:  # the sender's descriptor the segment's name leads to
        return os.readlink(os.path.join(SHM_DIR, meta.segment))

    meta = t.extract_tensor_transport_metadata("aa01", first)
    held = memory_of(meta)
    mapped = t.recv_multiple_tensors("aa01", meta, comm)  # a receiver's zero-copy tensor holds the segment
    t.garbage_collect("aa01", meta, first)
    assert not [p for p in segment_paths() if meta.segment in p], "the name goes with the ref"
    meta2 = t.extract_tensor_transport_metadata("aa02", second)
    assert memory_of(meta2) != held, "memory a receiver still maps was reused"
    assert torch.equal(mapped[0], first[0]), "the receiver's tensor shows a later transfer"
    del mapped  # the receiver lets go: its mapping, and with it its lock, ends
    t.garbage_collect("aa02", meta2, second)
    meta3 = t.extract_tensor_transport_metadata("aa03", second)
    assert memory_of(meta3) == held, "the freed segment nobody maps was not reused"
    assert torch.equal(t.recv_multiple_tensors("aa03", meta3, comm)[0], second[0])
    t.garbage_collect("aa03", meta3, second)
    # Bounded: however many transfers were in flight, at most POOL_SEGMENTS stay once their refs are freed.
    metas = [t.extract_tensor_transport_metadata(f"bb{i:02d}", first) for i in range(POOL_SEGMENTS + 3)]
    for i, m in enumerate(metas):
        t.garbage_collect(f"bb{i:02d}", m, first)
    assert _pooled_segments() == before + POOL_SEGMENTS
    assert not [p for p in segment_paths() if f"-{os.getpid()}-" in p]


def test_a_receiver_keeps_its_mapping_of_a_pooled_segment_and_its_writes_never_reach_the_next_transfer():
    """The next transfer through a segment the sender pooled is read through the mapping the receiver kept (no
    page-table entries made again); what the first transfer's tensor wrote is its own and gone with it."""
    import gc

    from rayaccel.transports.shared_memory import SHM_DIR, SharedMemoryTransport, ShmCommunicatorMetadata

    t = SharedMemoryTransport()
    comm = ShmCommunicatorMetadata(src_actor="s", dst_actor="d")
    first, second = [torch.arange(4 * MB, dtype=torch.int32)], [torch.full((4 * MB,), 7, dtype=torch.int32)]
    meta = t.extract_tensor_transport_metadata("ee01", first)
    got = t.recv_multiple_tensors("ee01", meta, comm)[0]
    where = got.data_ptr()
    got[::1024] = -1  # private copies of the pages written (copy-on-write)
    view = got[5:10]
    del got
    gc.collect()
    assert view.tolist() == [5, 6, 7, 8, 9], "a view of a received tensor lost its bytes"
    del view  # the transfer's last tensor: its lock and lease end
    t.garbage_collect("ee01", meta, first)
    meta2 = t.extract_tensor_transport_metadata("ee02", second)
    meta2.inode = os.stat(os.path.join(SHM_DIR, meta2.segment)).st_ino
    again = t.recv_multiple_tensors("ee02", meta2, comm)[0]
    assert again.data_ptr() == where, "the second transfer was not read through the kept mapping"
    assert torch.equal(again, second[0]), "the first tensor's writes (or its bytes) showed in the next transfer"
    twice = t.recv_multiple_tensors("ee02", meta2, comm)[0]  # the same ref again while ``again`` lives
    assert twice.data_ptr() != again.data_ptr() and torch.equal(twice, second[0])
    del again, twice
    gc.collect()
    t.garbage_collect("ee02", meta2, second)
    t._drop_all()
    assert not [fd for fd in os.listdir("/proc/self/fd") if _names_segment(fd, meta2)], "a mapping's file was left open"


def test_wait_idle_returns_once_every_sent_transfer_is_freed_and_every_cleaning_done():
    """What the bench waits for between steps: False while a sent transfer is not freed; True once it is and
    the receiver's background walk of its page map (a mapping over 16 MB) has ended."""
    import gc

    from rayaccel.transports.shared_memory import SharedMemoryTransport, ShmCommunicatorMetadata

    t = SharedMemoryTransport()
    comm = ShmCommunicatorMetadata(src_actor="s", dst_actor="d")
    sent = [torch.ones(8 * MB, dtype=torch.int32)]
    meta = t.extract_tensor_transport_metadata("ff01", sent)
    got = t.recv_multiple_tensors("ff01", meta, comm)[0]
    assert not t.wait_idle(0.01), "idle while a sent transfer was not freed"
    del got
    gc.collect()  # the lease ends: its mapping is cleaned in the background
    t.garbage_collect("ff01", meta, sent)
    assert t.wait_idle(30)
    assert not t._mappings.cleaning(), "idle before the receiver's cleaning ended"
    t._drop_all()


def test_a_receiver_that_cannot_read_its_page_map_keeps_no_mapping(monkeypatch):
    """Where /proc/self/pagemap cannot be read (a restricted /proc), the pages a tensor wrote cannot be found: the
    mapping is dropped with its last tensor, and the next transfer maps the segment afresh (its own bytes)."""
    import gc

    from rayaccel.transports import shared_memory as shm_transport
    from rayaccel.transports.shared_memory import SharedMemoryTransport, ShmCommunicatorMetadata

    def no_page_map(mapping, pagemap):  # type: ignore[no-untyped-def]
        raise PermissionError("/proc/self/pagemap: permission denied")

    monkeypatch.setattr(shm_transport, "_drop_private_pages", no_page_map)
    t = SharedMemoryTransport()
    comm = ShmCommunicatorMetadata(src_actor="s", dst_actor="d")
    first, second = [torch.arange(MB, dtype=torch.int32)], [torch.full((MB,), 3, dtype=torch.int32)]
    meta = t.extract_tensor_transport_metadata("ff01", first)
    got = t.recv_multiple_tensors("ff01", meta, comm)[0]
    got[:] = -1
    del got
    gc.collect()
    t.garbage_collect("ff01", meta, first)
    meta2 = t.extract_tensor_transport_metadata("ff02", second)
    assert torch.equal(t.recv_multiple_tensors("ff02", meta2, comm)[0], second[0])
    t.garbage_collect("ff02", meta2, second)
    t._drop_all()


def _names_segment(fd: str, meta) -> bool:  # type: ignore[no-untyped-def]
    """Whether this process's descriptor ``fd`` is the memory of ``meta``'s transfer (its segment's inode)."""
    with contextlib.suppress(OSError):
        return os.stat(f"/proc/self/fd/{fd}").st_ino == meta.inode
    return False


# Registration errors and path selection: no Ray cluster needed --------------------------------------------


def _manager(*plugins: object) -> PluginManager:
    manager = PluginManager(autoload=False)
    for i, p in enumerate(plugins):  # a broken test plugin module is named by its family (broken_base)
        name = getattr(p, "PLUGIN", None) or getattr(getattr(p, "FAMILY", None), "name", None) or f"p{i}"
        assert manager.register(p, name)
    return manager


class _Declares:
    def __init__(self, name: str, *specs: TransportSpec) -> None:
        self.PLUGIN = name
        self._specs = list(specs)

    @hookimpl
    def rayaccel_family(self) -> FamilyDeclaration:
        tag = self.PLUGIN.split("-")[-1].upper()
        return acme.rayaccel_family().model_copy(update={
            "name": self.PLUGIN, "resource_name": f"VENDOR_{tag}", "visible_devices_env_var": f"VENDOR_{tag}_VISIBLE"})

    @hookimpl
    def rayaccel_discover(self, host):  # type: ignore[no-untyped-def]
        return []

    @hookimpl
    def rayaccel_transports(self) -> list[TransportSpec]:
        return self._specs


def test_what_a_class_moves_is_its_own_answer_never_the_declarations():
    """``TransportSpec.moved_device_types`` is filled by the SDK from the class (asked where the plugin runs): a
    declaration's own value is dropped with a warning naming it, and the driver's declarations carry the class's
    answer (the SDK's shared-memory class, renamed: host memory alone), so path selection decides by it."""
    copy = TransportSpec(name="VENDOR_COPY", devices=["cpu", "cuda"], link_kinds=["pcie", "nvlink"],
                         moved_device_types=["cuda"], manager_class="rayaccel_testplugins.host_copy_class:HostCopy")
    manager = _manager(_Declares("vendor-e", copy))
    problems: list[Problem] = []
    [said] = manager.answer("vendor-e", "rayaccel_transports", problems)
    assert said.moved_device_types is None
    [warned] = problems
    assert (warned.code, warned.severity) == ("sdk-filled-field", "warning") and "VENDOR_COPY" in warned.message
    assert [s.moved_device_types for s in declared_transports(manager)["vendor-e"]] == [["cpu"]]
    assert [s.moved_device_types for s in manager.transports("vendor-e")] == [["cpu"]]
    # Ray's own transports are never asked: their declaration is the word on what they move.
    nccl = TransportSpec(name="NCCL", devices=["cuda"], builtin_in_ray=True,
                         manager_class="ray.experimental.rdt.collective_tensor_transport:NCCLTensorTransport")
    assert [s.moved_device_types for s in _manager(_Declares("vendor-f", nccl)).transports("vendor-f")] == [None]


def test_a_wrong_manager_class_is_refused_naming_the_plugin():
    from rayaccel_testplugins import broken_transport

    with pytest.raises(TransportRegistrationError, match=r"^plugin broken-transport: transport ACMELINK: "
                       r".*NotATransport is not a subclass of ray.experimental.TensorTransportManager"):
        rayaccel.ray.register_transports(_manager(broken_transport))


def test_name_collisions_and_missing_classes_are_refused_naming_the_plugin():
    ours = TransportSpec(name="GLOO", devices=["cpu"],
                         manager_class="rayaccel.transports.shared_memory:SharedMemoryTransport")
    with pytest.raises(TransportRegistrationError, match="plugin vendor-a: transport name GLOO is Ray's own"):
        rayaccel.ray.register_transports(_manager(_Declares("vendor-a", ours)))
    missing = TransportSpec(name="FASTLINK", devices=["cpu"], manager_class="vendor_b.nowhere:Transport")
    with pytest.raises(TransportRegistrationError, match=r"plugin vendor-b: transport FASTLINK: manager class "
                       r"vendor_b.nowhere:Transport does not import \(ModuleNotFoundError"):
        rayaccel.ray.register_transports(_manager(_Declares("vendor-b", missing)))
    a = TransportSpec(name="FASTLINK", devices=["cpu"],
                         manager_class="rayaccel.transports.shared_memory:SharedMemoryTransport")
    b = TransportSpec(name="FASTLINK", devices=["cpu"],
                      manager_class="ray.experimental.rdt.cuda_ipc_transport:CudaIpcTransport")
    with pytest.raises(TransportRegistrationError, match="plugin vendor-d: transport name FASTLINK is already "
                       "declared by vendor-c"):
        rayaccel.ray.register_transports(_manager(_Declares("vendor-c", a), _Declares("vendor-d", b)))


def _inventory(fixture: str) -> NodeInventory:
    manager = PluginManager()
    return collect_inventory(manager, SimulatedHost(resolve_fixture(fixture, manager)))


def _pair(inventory: NodeInventory, i: int, j: int) -> tuple[Endpoint, Endpoint]:
    ends = device_endpoints(inventory)
    return ends[i], ends[j]


def test_selection_prefers_scale_up_then_pcie_then_rdma_then_host():
    declared = declared_transports()
    dgx = _inventory("nvidia/dgx-h100")
    choice = choose_transport(*_pair(dgx, 0, 1), declared)
    assert (choice.path, choice.link, choice.transport) == ("scale-up", "nvlink", "NCCL")
    assert "joined by nvlink" in choice.reason and "declared by nvidia" in choice.reason
    pair = _inventory("amd/mi210-pair")
    choice = choose_transport(*_pair(pair, 0, 1), declared)
    assert (choice.path, choice.link, choice.transport) == ("pcie-peer", "pcie", "NCCL")
    # Across nodes: the RDMA fabric when both nodes list NICs beside the devices, else host memory.
    a, _ = _pair(dgx, 0, 1)
    with_nics = dgx.model_copy(update={"host": "other", "families": [f.model_copy(update={
        "topology": f.topology.model_copy(update={"affinities": [Affinity(device=d.id, nics=["mlx5_0"])
                                                                 for d in f.devices]})}) for f in dgx.families]})
    b = device_endpoints(with_nics)[0]
    assert choose_transport(a, b, declared).path == "host"  # this end lists no NIC
    a_nics = device_endpoints(with_nics.model_copy(update={"host": "third"}))[0]
    choice = choose_transport(a_nics, b, declared)
    assert (choice.path, choice.transport) == ("rdma", "NCCL"), choice
    # Gaudi declares no transport: its RoCE scale-up is named as unsupported and the host path is chosen.
    gaudi = _inventory("gaudi/hls-gaudi3")
    choice = choose_transport(*_pair(gaudi, 0, 1), declared)
    assert (choice.path, choice.transport) == ("host", "RAYACCEL_SHM")
    assert "no transport both ends declare carries it" in choice.reason


def test_a_node_only_transport_is_never_offered_between_two_nodes():
    """A transport declared reach="node" (the template's shared-memory one) carries CPU tensors on one node only;
    between nodes GLOO is chosen and the reason names it. Declared for the cluster (the default), it is offered."""
    dgx = _inventory("nvidia/dgx-h100")
    shm = TransportSpec(name="VENDOR_SHM", devices=["cpu"], link_kinds=["other"], one_sided=True, reach="node",
                        manager_class="rayaccel.transports.shared_memory:SharedMemoryTransport")
    here = device_endpoints(dgx)[0]
    there = device_endpoints(dgx.model_copy(update={"host": "other"}))[0]
    assert choose_transport(here, device_endpoints(dgx)[1], {"nvidia": [shm]}).transport == "VENDOR_SHM"
    choice = choose_transport(here, there, {"nvidia": [shm]})
    assert (choice.path, choice.transport) == ("host", "GLOO"), choice
    assert "not VENDOR_SHM: it moves tensors within one node only" in choice.reason
    wide = shm.model_copy(update={"reach": "cluster"})
    assert choose_transport(here, there, {"nvidia": [wide]}).transport == "VENDOR_SHM"
    # Ray's CUDA_IPC refuses another node's sender at receive time: node-only whatever a plugin declares.
    ipc = TransportSpec(name="CUDA_IPC", devices=["cuda"], link_kinds=["nvlink"], builtin_in_ray=True,
                        manager_class="ray.experimental.rdt.cuda_ipc_transport:CudaIpcTransport")
    assert not reaches_other_nodes(ipc) and reaches_other_nodes(wide) and not reaches_other_nodes(shm)
    nvidia = {s.name: s.reach for s in declared_transports(plugins=["nvidia"])["nvidia"]}
    assert nvidia == {"NCCL": "cluster", "NIXL": "cluster", "CUDA_IPC": "node"}
    with pytest.raises(ValueError, match=r"reach\n  Input should be 'cluster' or 'node'"):
        TransportSpec.model_validate({**shm.model_dump(), "reach": "rack"})


NOT_USED = "moves CPU tensors only, copies staged through host memory, which a scale-up link between two devices' " \
           "memories never carries (its declaration of {link} is not used)"


def test_a_transport_of_cpu_tensors_alone_is_never_the_scale_up_choice():
    """A scale-up link joins two devices' memories and Ray moves a tensor only on the device types a transport is
    registered for: a CPU-only transport declared for one is passed over for every scale-up path (a direct link on
    xGMI and NVLink machines, a domain shared by two nodes of an UltraServer), the reason naming it and the next path
    taken. The same declaration moving device tensors too (a class whose own steps move device memory) carries the
    link, and a CPU one still carries PCIe. The SDK's shared-memory class declared for cuda is still passed over: it
    answers that it moves CPU tensors alone (moved_device_types), whatever it is declared for (held-out 14's l1)."""
    host_copy = TransportSpec(name="VENDOR_HOST_COPY", devices=["cpu"], link_kinds=["pcie", "xgmi", "nvlink", "efa",
                                                                                     "neuronlink"],
                              manager_class="rayaccel.transports.shared_memory:SharedMemoryTransport")
    for fixture, link in (("amd/mi300x-8", "xgmi"), ("nvidia/dgx-h100", "nvlink")):
        inventory = _inventory(fixture)
        plugin = inventory.families[0].plugin
        choice = choose_transport(*_pair(inventory, 0, 1), {plugin: [host_copy]})
        assert (choice.path, choice.transport) == ("host", "VENDOR_HOST_COPY"), choice
        assert f"scale-up over {link}: VENDOR_HOST_COPY {NOT_USED.format(link=link)}" in choice.reason
        # Its class asked where the plugin runs (here, in process), as the SDK hands a declaration on.
        claimed = ask_class(host_copy.model_copy(update={"devices": ["cpu", "cuda"]}))
        choice = choose_transport(*_pair(inventory, 0, 1), {plugin: [claimed]})
        assert (choice.path, choice.transport) == ("host", "VENDOR_HOST_COPY"), choice
        on_device = ask_class(claimed.model_copy(update={
            "manager_class": "rayaccel_testplugins.corpus_host_transport_devices:AcmeDeviceShm"}))
        choice = choose_transport(*_pair(inventory, 0, 1), {plugin: [on_device]})
        assert (choice.path, choice.link, choice.transport) == ("scale-up", link, "VENDOR_HOST_COPY"), choice
    ultraserver = _inventory("neuron/trn2u.48xlarge-ultraserver-x2")
    here = device_endpoints(ultraserver)[0]
    there = device_endpoints(ultraserver.model_copy(update={"host": "other"}))[0]
    choice = choose_transport(here, there, {"neuron": [host_copy]})
    assert (choice.path, choice.transport) == ("host", "VENDOR_HOST_COPY"), choice
    assert NOT_USED.format(link="neuronlink") in choice.reason
    pcie = choose_transport(*_pair(_inventory("amd/mi210-pair"), 0, 1), {"amd": [host_copy]})
    assert (pcie.path, pcie.transport) == ("pcie-peer", "VENDOR_HOST_COPY"), pcie


def test_transports_cli_names_a_cpu_transport_declared_for_neuronlink_and_takes_the_host_path():
    """`rayaccel transports` on trn1.32xlarge with the Neuron plugin declaring NIXL (devices cpu) for neuronlink beside
    EFA (held-out round 11's e1): every NeuronLinked pair is given the host path, its reason naming the declaration."""
    env = {**os.environ, "RAYACCEL_NO_AUTOLOAD": "1",
           "RAYACCEL_PLUGINS": "neuron=rayaccel_testplugins.neuron_nixl_over_neuronlink"}
    done = subprocess.run([sys.executable, "-m", "rayaccel", "transports", "--simulate", "neuron/trn1.32xlarge",
                           "--json"], capture_output=True, text=True, timeout=120, check=False, env=env)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["declared"] == {"neuron": ["NIXL"]}
    named = [p for p in out["pairs"] if f"scale-up over neuronlink: NIXL {NOT_USED.format(link='neuronlink')}"
             in p["reason"]]
    assert named and {(p["path"], p["transport"]) for p in out["pairs"]} == {("host", "NIXL")}
    table = subprocess.run([sys.executable, "-m", "rayaccel", "transports", "--simulate", "neuron/trn1.32xlarge"],
                           capture_output=True, text=True, timeout=120, check=False, env=env)
    rows: list[list[str]] = []  # a, b, path, transport, why: a row's wrapped lines joined
    for line in table.stdout.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if len(cells) == 5 and cells[0]:
            rows.append(cells)
        elif len(cells) == 5 and rows:
            rows[-1][4] += " " + cells[4]
    assert table.returncode == 0 and len(rows) == len(out["pairs"]), table.stdout
    assert {(row[2], row[3]) for row in rows} == {("host", "NIXL")}
    assert sum(NOT_USED.format(link="neuronlink") in row[4] for row in rows) == len(named)


def test_transports_cli_prints_the_matrix_and_refuses_bad_input():
    done = rayaccel_cli("transports", "--simulate", "amd/mi210-pair", "--across-nodes", "--json")
    assert done.returncode == 0, done.stderr
    pairs = json.loads(done.stdout)["pairs"]
    assert (pairs[0]["path"], pairs[0]["transport"]) == ("pcie-peer", "NCCL")
    assert all(p["reason"] for p in pairs) and any(not p["b"]["same_node"] for p in pairs)
    table = rayaccel_cli("transports", "--simulate", "nvidia/dgx-h100")
    assert table.returncode == 0 and "scale-up" in table.stdout and "NCCL" in table.stdout
    bad = rayaccel_cli("transports", "--simulate", "nvidia/no-such-node")
    assert bad.returncode == 2 and "unknown fixture 'nvidia/no-such-node'" in bad.stderr
    assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_a_zombie_senders_segment_is_swept_and_a_live_senders_kept():
    from rayaccel.support.polling import wait_for
    from rayaccel.transports.shared_memory import sweep_orphans

    child = subprocess.Popen([sys.executable, "-c", "pass"])  # left unreaped: a zombie once it exits
    wait_for(lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE, timeout=30,
             what="the child to exit")
    dead = f"/dev/shm/{SEGMENT_PREFIX}{child.pid}-{os.urandom(4).hex()}"
    live = f"/dev/shm/{SEGMENT_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
    try:
        for path in (dead, live):
            with open(path, "wb") as f:
                f.write(b"x")
        removed = sweep_orphans()
        assert dead in removed and not os.path.exists(dead)
        assert live not in removed and os.path.exists(live)
    finally:
        child.wait()
        for path in (dead, live):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
