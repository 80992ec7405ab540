"""The reference tensor transport: one-sided shared memory for CPU tensors between actors on one node.

It implements Ray Direct Transport's ``TensorTransportManager`` in full and is what a vendor transport
copies (the template's ``transport.py`` starts from it):

- **metadata** (source actor, :meth:`extract_tensor_transport_metadata`): the tensors' bytes are copied
  once into a shared-memory segment taken from the sender's :class:`SegmentPool` (memory already allocated
  and mapped by an earlier transfer, so the copy runs at memcpy speed instead of paying for fresh pages),
  and the segment is named ``/dev/shm/rayaccel-rdt-<sender pid>-<object>`` for as long as the ref lives;
  the metadata carries the shapes, dtypes, offsets, the segment's name and the sender's node, actor and pid.
  From :data:`INLINE_COPY_BYTES` up the metadata is returned as soon as the segment is named and the copy
  runs behind it (a "fill" thread, helped by others for a large tensor), so the copy overlaps Ray's delivery
  of the metadata and the receiver's mapping of the pages; smaller tensors are copied before it returns (a
  thread hand-off would cost more than the copy). The sender holds an exclusive ``flock`` on the segment
  until the copy is done and writes the header (the transfer's name) last, so a receiver never reads a
  half-written segment. As with Ray's own transports, a tensor changed in place after it was returned may be
  sent changed;
- **communicator metadata** (driver, :meth:`get_communicator_metadata`): the two actors' ids, so a
  failure names them;
- **receive** (destination actor): one-sided, the sender takes no part. With target buffers the bytes
  are read into them; else the segment is mapped copy-on-write and the tensors are views of it (no copy;
  writes stay private to the receiver). A page table entry per 4 KiB page costs about half a memcpy where
  shared memory has no huge pages, so the receiver keeps its mapping of a segment the sender pools
  (:class:`ReceiverMappings`): the next transfer through that segment finds its pages mapped, and only the
  pages the last transfer's tensors wrote (private copies, found in ``/proc/self/pagemap``) are dropped, in
  the background once those tensors are gone. A new segment's pages are mapped up front while the sender
  may still be copying. The receiver then waits (bounded below Ray's own RDT wait: :func:`receive_timeout_s`)
  for a shared ``flock`` on the segment and holds it for as long as any of the transfer's tensors lives, so the
  sender never reuses memory a receiver's tensors still show;
- **garbage collection** (source actor, when Ray frees the ref): the name is unlinked and the segment goes
  back to the pool. Pooled segments are ``memfd`` files that only the sender's descriptors keep alive, so
  an idle pool is never in ``/dev/shm`` and dies with its process, however it dies. Names of a sender that
  died (its pid is gone) are removed by the next transfer on the node, or by a new transport instance
  (:func:`sweep_orphans`); a segment the pool drops is truncated when no receiver's tensors show it, so
  a receiver's kept mapping holds no memory. A dead sender's tensors are lost, as Ray loses a dead actor's objects: a
  receive checks the sender first and fails with the step named, whether or not a sweep has run yet (else
  the answer would depend on which came first);
- **abort** (destination actor): an in-progress read stops at its next chunk and the receive fails with
  the transport, the actors and the step named.

Metrics (transfers, bytes, latency, failures by step) are not this class's: the bridge registers it, as every
plugin's transport, measured (:mod:`rayaccel.transports.metrics`).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import ctypes
import fcntl
import logging
import mmap
import os
import re
import threading
import time
import uuid
import weakref
from collections.abc import Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from ray.experimental.rdt.tensor_transport_manager import (
    CommunicatorMetadata,
    TensorTransportManager,
    TensorTransportMetadata,
)

from rayaccel.transports.metrics import TransportError as TransportError

if TYPE_CHECKING:
    import ray

logger = logging.getLogger(__name__)

NAME = "RAYACCEL_SHM"
#: Every segment this transport creates starts with this, so leaks can be found (and tests check none).
SEGMENT_PREFIX = "rayaccel-rdt-"
SHM_DIR = os.environ.get("RAYACCEL_SHM_DIR", "/dev/shm")
_ALIGN = 64
_HEADER = 2 * _ALIGN  # a segment starts with the name of the transfer it holds (a late reader sees a reuse)
_CHUNK = 64 << 20  # bytes read between abort checks
#: The longest a sender's garbage collection (and its fill, for its helpers) waits for the copy into a segment.
FILL_TIMEOUT_S = 120.0
#: A receive waits at most this share of Ray's own RDT wait (:func:`receive_timeout_s`): __ray_recv__ starts about
#: when the task waiting for its tensors does, and the rest is left for Ray to deliver our error.
RECEIVE_SHARE_OF_RAYS_WAIT = 0.8
#: The receiver polls for the end of the sender's copy: it is on the transfer's critical path (a hand-off within
#: ~0.1 ms). A thread blocked in ``flock`` took no CPU but cost a second wake-up (the thread's, then the receive's):
#: under load (20-30 on 2 cores) transfers took x1.3-1.5 as long.
_FILL_POLL_S = 0.0002
#: The waiting receiver asks whether the sender lives at most this often (a read of /proc; asked at every poll,
#: the wait took 12% of a core from the sender's copy on the same cores, 6% so).
_ALIVE_EVERY_S = 0.01
#: A sender sweeps dead senders' names at most this often (a name is a link to a dead process's descriptor: it
#: holds no memory; the sweep lists /dev/shm, which would cost a small transfer more than its copy).
_SWEEP_EVERY_S = 1.0
#: Tensors of fewer bytes in all are copied before the metadata returns (no fill thread, no wait at the receiver).
INLINE_COPY_BYTES = 1 << 20
#: Threads one copy into a segment uses from this size up (a memcpy's bandwidth grows with cores, up to a few;
#: Ray gives an actor's torch one thread, while the in-process memcpy anchor uses all of them).
COPY_THREADS = max(1, min(4, len(os.sched_getaffinity(0))))
_PARALLEL_COPY_BYTES = 32 << 20
#: The slice a copy thread takes at a time (a few per thread even at 32 MB; each costs ~10 us of Python).
COPY_CHUNK_BYTES = 8 << 20
#: Linux's madvise(MADV_POPULATE_READ) (5.14+): map a range's pages now, as reads would, without copying.
_MADV_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22)
#: A sender keeps at most this many idle segments, and at most this many bytes of them (oldest go first).
POOL_SEGMENTS = 4
POOL_BYTES = 4 << 30
_HUGE_PAGE = 2 << 20
_PAGE = mmap.PAGESIZE
#: A kept mapping up to this size is cleaned where its last tensor goes; a larger one in the background.
_CLEAN_AT_ONCE_BYTES = 16 << 20
#: /proc/self/pagemap: a page is present (bit 63) and a file or shared page (bit 61); present and not a file
#: page, in a copy-on-write mapping of a segment, is a private copy a receiver's tensor wrote.
_PAGEMAP_PRESENT = 1 << 63
_PAGEMAP_FILE = 1 << 61
_SEGMENT_RE = re.compile(rf"^{re.escape(SEGMENT_PREFIX)}(\d+)-[0-9a-f]+$")


@dataclass
class ShmTransportMetadata(TensorTransportMetadata):
    segment: str = ""
    offsets: list[int] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)
    node_id: str = ""
    src_actor: str = ""
    src_pid: int = 0


@dataclass
class ShmCommunicatorMetadata(CommunicatorMetadata):
    src_actor: str = ""
    dst_actor: str = ""


def segment_paths() -> list[str]:
    """The paths of this transport's segments on this host."""
    try:
        return sorted(os.path.join(SHM_DIR, n) for n in os.listdir(SHM_DIR) if n.startswith(SEGMENT_PREFIX))
    except FileNotFoundError:
        return []


def receive_timeout_s() -> float:
    """Seconds a receive may wait in all: :data:`RECEIVE_SHARE_OF_RAYS_WAIT` of Ray's own RDT wait, read now
    (``RDT_FETCH_FAIL_TIMEOUT_SECONDS``: 60 s unless ``RAY_rdt_fetch_fail_timeout_milliseconds`` says otherwise).
    The task waiting for the tensors and the driver's monitor of the transfer each give up after Ray's wait with
    Ray's generic ``TimeoutError``; a receive bounded below it ends in this transport's error naming the step and
    the sender instead."""
    from ray._private import ray_constants

    rays_wait = float(getattr(ray_constants, "RDT_FETCH_FAIL_TIMEOUT_SECONDS", 60.0))
    return RECEIVE_SHARE_OF_RAYS_WAIT * rays_wait


def _pid_alive(pid: int, segment: str | int | None = None) -> bool:
    # A sender that died unreaped (a zombie) sends nothing more: its segments are orphans. Its segment (a path or
    # an open descriptor) was written while it ran, so a process holding its number that started after the
    # segment's last write is another one given the number since (the sender is gone).
    from rayaccel.support.liveness import alive

    written = None
    if segment is not None:
        with contextlib.suppress(OSError):
            written = (os.fstat(segment) if isinstance(segment, int) else os.stat(segment)).st_mtime
    return alive(pid, running_at=written)


def _pid_gone(pid: int) -> bool:
    """Whether no process ``pid`` exists (the cheap half of :func:`_pid_alive`: a zombie still exists)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def sweep_orphans() -> list[str]:
    """Remove segments whose sending process is gone (it died before Ray freed its refs); return them."""
    removed = []
    for path in segment_paths():
        m = _SEGMENT_RE.match(os.path.basename(path))
        if m and not _pid_alive(int(m.group(1)), path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed.append(path)
    return removed


def _huge_pages_offered() -> bool:
    """Whether the kernel gives shared memory transparent huge pages when asked (``madvise``)."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/shmem_enabled") as f:
            chosen = re.search(r"\[(\w+)\]", f.read())
    except OSError:
        return False
    return chosen is not None and chosen.group(1) in ("always", "within_size", "advise", "force")


_HUGE = _huge_pages_offered()


def _advise_huge(mapping: mmap.mmap) -> None:
    if _HUGE:  # 2 MiB pages: 512x fewer page faults for the sender's first copy and every receiver's mapping
        with contextlib.suppress(OSError):
            mapping.madvise(mmap.MADV_HUGEPAGE)


def _map_pages_now(mapping: mmap.mmap) -> None:
    """Map every page of ``mapping`` for reading now (one call instead of a fault per page touched later)."""
    with contextlib.suppress(OSError, ValueError):  # an older kernel: the reader's faults map them instead
        mapping.madvise(_MADV_POPULATE_READ)


@dataclass(eq=False)
class Segment:
    """One pooled shared-memory segment: a ``memfd`` and the sender's mapping of it."""

    fd: int
    size: int
    mapping: mmap.mmap

    @classmethod
    def create(cls, size: int) -> Segment:
        size = -(-size // _HUGE_PAGE) * _HUGE_PAGE
        fd = os.memfd_create(SEGMENT_PREFIX + "pool", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, size)
            mapping = mmap.mmap(fd, size)
        except BaseException:
            os.close(fd)
            raise
        _advise_huge(mapping)
        return cls(fd, size, mapping)

    def close(self) -> None:
        try:  # no receiver's tensor shows it: free its memory now, also from receivers' kept mappings
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.ftruncate(self.fd, 0)
        except OSError:
            pass  # a receiver's tensors still show it: the memory goes with their mapping
        with contextlib.suppress(BufferError):  # a tensor still shows it: the mapping goes with that tensor
            self.mapping.close()
        os.close(self.fd)


class SegmentPool:
    """A sender's idle segments, reused by the next transfer that fits (at most twice its size).

    A segment is taken only when the sender gets an exclusive ``flock`` on it, that is when no receiver
    still maps it; the lock is held while the sender writes and dropped when the transfer is published.
    Bounded by :data:`POOL_SEGMENTS` and :data:`POOL_BYTES`; a segment evicted while a receiver maps it
    lives on (in the kernel) until that mapping goes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[Segment] = []  # oldest first

    def take(self, nbytes: int) -> Segment:
        """A segment of at least ``nbytes``, exclusively locked: an idle one no receiver maps, else a new one."""
        with self._lock:
            for segment in sorted(self._idle, key=lambda s: s.size):
                if nbytes <= segment.size <= 2 * max(nbytes, _HUGE_PAGE):
                    try:
                        fcntl.flock(segment.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        continue  # a receiver's tensors still show it
                    self._idle.remove(segment)
                    return segment
        segment = Segment.create(nbytes)
        fcntl.flock(segment.fd, fcntl.LOCK_EX)  # nobody else can have it yet
        return segment

    def give_back(self, segment: Segment) -> None:
        fcntl.flock(segment.fd, fcntl.LOCK_UN)
        with self._lock:
            self._idle.append(segment)
            while len(self._idle) > POOL_SEGMENTS or sum(s.size for s in self._idle) > POOL_BYTES:
                self._idle.pop(0).close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for segment in idle:
            segment.close()


def _drop_private_pages(mapping: mmap.mmap, pagemap: int) -> None:
    """Drop the private copies that writes made in a copy-on-write ``mapping`` of a segment: its pages show the
    segment's bytes again (a later read maps them from it), and the pages nobody wrote stay mapped. ``pagemap``
    is this process's ``/proc/self/pagemap``, open."""
    import numpy as np

    start = ctypes.addressof(ctypes.c_char.from_buffer(mapping))  # released at once: the mapping stays closable
    pages = len(mapping) // _PAGE
    raw = os.pread(pagemap, pages * 8, start // _PAGE * 8)
    flags = np.frombuffer(raw, dtype=np.uint64)
    written = np.flatnonzero((flags & np.uint64(_PAGEMAP_PRESENT | _PAGEMAP_FILE)) == np.uint64(_PAGEMAP_PRESENT))
    if written.size == 0:
        return
    breaks = np.flatnonzero(np.diff(written) != 1)  # runs of consecutive pages: one madvise each
    for first, last in zip(np.r_[written[0], written[breaks + 1]], np.r_[written[breaks], written[-1]], strict=True):
        mapping.madvise(mmap.MADV_DONTNEED, int(first) * _PAGE, int(last - first + 1) * _PAGE)


def slices_to_copy(copies: list[tuple[Any, Any]]) -> Generator[tuple[Any, Any], None, None]:
    """(place, tensor) pairs to copy: a contiguous tensor in slices of :data:`COPY_CHUNK_BYTES`, others whole."""
    for place, tensor in copies:
        if not tensor.is_contiguous():
            yield place, tensor
            continue
        to, frm = place.view(-1), tensor.view(-1)
        step = max(1, COPY_CHUNK_BYTES // max(1, to.element_size()))
        for start in range(0, to.numel(), step):
            yield to[start:start + step], frm[start:start + step]


def take_slices(slices: Iterator[tuple[Any, Any]], taking: threading.Lock) -> None:
    """Copy the next (place, tensor) slice of ``slices`` until none is left; each copying thread runs this on the
    same iterator, ``taking`` guarding it (torch releases the GIL while it copies)."""
    while True:
        with taking:
            piece = next(slices, None)
        if piece is None:
            return
        piece[0].copy_(piece[1])


#: The fill of a transfer copied before its metadata returned.
_COPIED: Future[None] = Future()
_COPIED.set_result(None)


@dataclass(eq=False)
class _Mapped:
    """A receiver's copy-on-write mapping of one segment, kept for the next transfer through it."""

    fd: int  # its own open file (no lock is ever taken on it); -1 once closed
    mapping: mmap.mmap
    src_pid: int
    #: Transfers whose tensors still show it; it is reused only at 0, once ``cleaned`` is done.
    leases: int = 0
    cleaned: Future[None] | None = None

    def close(self) -> None:
        if self.fd < 0:
            return
        with contextlib.suppress(BufferError):  # a tensor still shows it: the mapping goes with that tensor
            self.mapping.close()
        os.close(self.fd)
        self.fd = -1


class ReceiverMappings:
    """A receiver's mappings of the segments it read from, by segment (device, inode, size): the next transfer
    through a segment the sender pooled finds its pages mapped instead of paying a page-table entry per page.

    A transfer leases the mapping; when the last of its tensors is gone the shared ``flock`` it held ends, and a
    background thread drops the private pages those tensors wrote, so the next lease sees only the segment's
    bytes. A mapping still leased is never handed to another transfer (that one gets a fresh mapping). Bounded
    like the sender's pool (:data:`POOL_SEGMENTS`, :data:`POOL_BYTES`); mappings of a dead sender or of a
    segment its pool dropped (truncated: they hold no memory then) go at the next receive."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: collections.OrderedDict[tuple[int, int, int], _Mapped] = collections.OrderedDict()
        self._cleaner: ThreadPoolExecutor | None = None
        self._pagemap: int | None = None

    def lease(self, fd: int, size: int, src_pid: int, deadline: float) -> tuple[_Mapped, bool]:
        """A mapping of the segment open at ``fd`` (``size`` bytes), leased; True when its pages are mapped
        already (a kept mapping), False for a new one. A kept mapping whose cleaning has not ended by ``deadline``
        (``time.monotonic()``) is left, and the segment mapped afresh."""
        info = os.fstat(fd)
        key = (info.st_dev, info.st_ino, size)
        with self._lock:
            self._prune()
            kept = self._kept.get(key)
            reused = kept is not None and kept.leases == 0
            if kept is not None and reused:
                kept.leases = 1
                self._kept.move_to_end(key)
        if kept is not None and reused:
            try:
                if kept.cleaned is not None:
                    kept.cleaned.result(timeout=max(0.0, deadline - time.monotonic()))
                return kept, True
            except Exception:  # its private pages could not be dropped: never read through it again
                logger.warning("a kept mapping of a shared-memory segment could not be cleaned; mapping it afresh",
                               exc_info=True)
                with self._lock:
                    self._forget(kept)
        own = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY)  # a file of its own: the transfer's lock is not on it
        try:
            mapping = mmap.mmap(own, size, access=mmap.ACCESS_COPY)
        except BaseException:
            os.close(own)
            raise
        fresh = _Mapped(own, mapping, src_pid, leases=1)
        with self._lock:
            if key not in self._kept or self._kept[key].leases == 0:  # a leased one lives on in its tensors
                replaced = self._kept.pop(key, None)
                if replaced is not None:
                    replaced.close()
                self._kept[key] = fresh
            self._bound()
        return fresh, False

    def release(self, mapped: _Mapped) -> None:
        """The last tensor of a lease is gone (a finalizer: any thread)."""
        with self._lock:
            mapped.leases -= 1
            if mapped.leases:
                return
            if mapped not in self._kept.values():  # made while the kept one was leased, or dropped since
                mapped.close()
                return
            try:
                if self._pagemap is None:
                    self._pagemap = os.open("/proc/self/pagemap", os.O_RDONLY | os.O_CLOEXEC)
                if len(mapped.mapping) <= _CLEAN_AT_ONCE_BYTES:  # a few pages: cheaper than a thread hand-off
                    _drop_private_pages(mapped.mapping, self._pagemap)
                    return
            except OSError:  # no page map here (a restricted /proc): a mapping is never kept, then
                self._forget(mapped)
                return
            if self._cleaner is None:
                self._cleaner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rayaccel-shm-clean")
            mapped.cleaned = self._cleaner.submit(_drop_private_pages, mapped.mapping, self._pagemap)

    def _forget(self, mapped: _Mapped) -> None:
        """Drop ``mapped`` from the kept mappings and close it (called with the lock held)."""
        for key, kept in list(self._kept.items()):
            if kept is mapped:
                del self._kept[key]
        mapped.leases = 0
        mapped.close()

    def _prune(self) -> None:
        for key, kept in list(self._kept.items()):
            if kept.leases == 0 and (os.fstat(kept.fd).st_size == 0 or _pid_gone(kept.src_pid)):
                del self._kept[key]
                kept.close()

    def _bound(self) -> None:
        idle = [key for key, kept in self._kept.items() if kept.leases == 0]  # oldest first
        while idle and (len(self._kept) > POOL_SEGMENTS or sum(k[2] for k in self._kept) > POOL_BYTES):
            self._kept.pop(idle.pop(0)).close()

    def cleaning(self) -> list[Future[None]]:
        """The cleanings of kept mappings not yet done."""
        with self._lock:
            cleanings = [kept.cleaned for kept in self._kept.values() if kept.cleaned is not None]
        return [cleaning for cleaning in cleanings if not cleaning.done()]

    def close(self) -> None:
        with self._lock:
            kept, self._kept = list(self._kept.values()), collections.OrderedDict()
            cleaner, self._cleaner = self._cleaner, None
        if cleaner is not None:
            cleaner.shutdown(wait=True)
        for mapped in kept:
            mapped.close()
        if self._pagemap is not None:
            os.close(self._pagemap)
            self._pagemap = None


def _runtime() -> tuple[str, str]:
    """(node id, actor id) of this process, or ('', '') outside Ray."""
    try:
        import ray

        if not ray.is_initialized():  # get_runtime_context() would connect to a cluster left on the machine
            return "", ""
        ctx = ray.get_runtime_context()
        return ctx.get_node_id(), ctx.get_actor_id() or "driver"
    except Exception:
        return "", ""


def _bytes_of(t: Any) -> memoryview:
    """A writable byte view of a contiguous CPU tensor's memory (no numpy needed); keep ``t`` alive."""
    n = t.numel() * t.element_size()
    return memoryview((ctypes.c_char * n).from_address(t.data_ptr())).cast("B")


def _segment_name(obj_id: str) -> str:
    tag = re.sub(r"[^0-9a-f]", "", obj_id.lower())[:40] or uuid.uuid4().hex
    return f"{SEGMENT_PREFIX}{os.getpid()}-{tag}{uuid.uuid4().hex[:8]}"


class SharedMemoryTransport(TensorTransportManager):
    """One-sided shared-memory transport for CPU ``torch.Tensor`` lists between actors on one node."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # obj_id -> (its name, its segment, its fill) (sender side)
        self._owned: dict[str, tuple[str, Segment, Future[None]]] = {}
        self._pool = SegmentPool()
        # Made by the first transfer (a receiver needs none): the fill thread, and helpers for a large copy.
        self._filler: ThreadPoolExecutor | None = None
        self._copiers: ThreadPoolExecutor | None = None
        self._aborted: set[str] = set()  # obj_ids aborted (receiver side)
        self._mappings = ReceiverMappings()  # receiver side
        self._name = self.tensor_transport_backend()  # a subclass's own name in errors and metrics
        sweep_orphans()
        self._swept = time.monotonic()
        atexit.register(self._drop_all)  # an actor that exits (not killed) leaves no name behind

    def _drop_all(self) -> None:
        for obj_id in list(self._owned):
            self._drop(obj_id)
        self._pool.close()
        self._mappings.close()
        for pool in (self._filler, self._copiers):
            if pool is not None:
                pool.shutdown(wait=False)

    def tensor_transport_backend(self) -> str:
        return NAME

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until this process's work for ended transfers is done: every transfer it sent freed (its copy
        ended), every kept mapping's cleaning finished; False if that takes longer than ``timeout_s``. For a
        benchmark that times steps one after another: one transfer's background work (the receiver's walk of
        its page map after the tensors go: ~12 ms of CPU per GB) does not land in the next step's time."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                sending = bool(self._owned)
            cleaning = self._mappings.cleaning()
            if not sending and not cleaning:
                return True
            for pending in cleaning:
                with contextlib.suppress(Exception):
                    pending.result(timeout=max(0.0, deadline - time.monotonic()))
            if sending:
                time.sleep(_FILL_POLL_S)  # Ray's free of the ref is on its way
        return False

    @staticmethod
    def is_one_sided() -> bool:
        return True

    #: The steps that touch the tensors' memory: the sender's copy out and the receiver's read.
    MEMORY_STEPS = ("extract_tensor_transport_metadata", "recv_multiple_tensors")

    @classmethod
    def moved_device_types(cls) -> tuple[str, ...] | None:
        """The torch device types this class moves, as its own steps do: ``("cpu",)`` while the steps of
        :data:`MEMORY_STEPS` are this class's (extract refuses every tensor not on the CPU), None once a subclass
        replaces one of them (it moves what its own steps move; its declaration's ``devices`` say what). A
        declaration naming other device types for this class makes Ray offer it for tensors it refuses
        (``device_match_transport``): RAC305 and path selection hold declarations to this answer."""
        if all(getattr(cls, step) is getattr(SharedMemoryTransport, step) for step in cls.MEMORY_STEPS):
            return ("cpu",)
        return None

    @staticmethod
    def can_abort_transport() -> bool:
        return True

    def actor_has_tensor_transport(self, actor: ray.actor.ActorHandle[Any]) -> bool:
        # Every actor can open /dev/shm; same-node is checked at receive time (Ray asks this without
        # waiting on the actor).
        return True

    def _fail(self, step: str, meta: ShmTransportMetadata | None, comm: ShmCommunicatorMetadata | None,
              why: str) -> TransportError:
        here = _runtime()[1] or "?"
        if step == "extract":
            return TransportError(f"{self._name} transfer failed at step 'extract' (sender actor {here}): {why}",
                                  step)
        src = (comm.src_actor if comm else "") or (meta.src_actor if meta else "") or "?"
        dst = (comm.dst_actor if comm else "") or here
        return TransportError(f"{self._name} transfer failed at step '{step}' (sender actor {src}, receiver actor "
                              f"{dst}, segment {meta.segment if meta else '?'}): {why}", step)

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: list[Any]) -> ShmTransportMetadata:
        import torch

        tensor_meta: list[Any] = []
        offsets: list[int] = []
        sizes: list[int] = []
        pos = _HEADER
        for i, t in enumerate(rdt_object):
            if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
                where = t.device if isinstance(t, torch.Tensor) else type(t).__name__
                raise self._fail("extract", None, None, f"item {i} is {where}; {self._name} moves CPU torch tensors")
            tensor_meta.append((t.shape, t.dtype))
            offsets.append(pos)
            sizes.append(t.numel() * t.element_size())
            pos += -(-sizes[-1] // _ALIGN) * _ALIGN
        name = _segment_name(obj_id)
        path = os.path.join(SHM_DIR, name)
        try:
            segment = self._pool.take(pos)
        except OSError as e:
            raise self._fail("extract", None, None, f"allocating {pos} bytes of shared memory: {e}") from e
        copies: list[tuple[Any, Any]] = []  # (place in the segment, tensor)
        fill: Future[None] | None = None
        try:
            segment.mapping[:_HEADER] = bytes(_HEADER)  # not this transfer's until the fill writes its name
            for t, off, n in zip(rdt_object, offsets, sizes, strict=True):
                if n:  # a view of the segment in the tensor's own dtype and shape: one copy, any strides
                    place = torch.frombuffer(segment.mapping, dtype=torch.uint8, count=n, offset=off)
                    copies.append((place.view(t.dtype).view(t.shape), t.detach()))
            # The copy is the transfer's critical path: it starts first, the rest of this step runs beside it.
            if pos - _HEADER < INLINE_COPY_BYTES:
                fill = self._fill_now(segment, name, copies)
            else:
                fill = self._fill_later(segment, name, copies)
            if time.monotonic() - self._swept > _SWEEP_EVERY_S:  # names of senders that died before Ray freed refs
                sweep_orphans()
                self._swept = time.monotonic()
            node_id, actor_id = _runtime()
            # Receivers open the name; it leads to the sender's descriptor of the segment. Named last: a name
            # is a transfer whose metadata is on its way.
            os.symlink(f"/proc/{os.getpid()}/fd/{segment.fd}", path)
        except BaseException as e:
            if fill is None:
                copies.clear()  # the mapping cannot close while a tensor shows it
            else:  # the segment is reused only once the copy into it has ended
                with contextlib.suppress(Exception):
                    fill.result(timeout=FILL_TIMEOUT_S)
            self._pool.give_back(segment)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            raise self._fail("extract", None, None, f"writing {path}: {e}") from e
        with self._lock:
            self._owned[obj_id] = (path, segment, fill)
        return ShmTransportMetadata(tensor_meta=tensor_meta, tensor_device="cpu", segment=name, offsets=offsets,
                                    nbytes=sizes, node_id=node_id, src_actor=actor_id, src_pid=os.getpid())

    def _fill_now(self, segment: Segment, name: str, copies: list[tuple[Any, Any]]) -> Future[None]:
        """Copy small tensors into the segment before the metadata returns; the header, then the unlock, last."""
        try:
            for place, tensor in copies:
                place.copy_(tensor)
            segment.mapping[:_HEADER] = name.encode().ljust(_HEADER, b"\0")
        finally:
            copies.clear()
        fcntl.flock(segment.fd, fcntl.LOCK_UN)
        return _COPIED

    def _fill_later(self, segment: Segment, name: str, copies: list[tuple[Any, Any]]) -> Future[None]:
        """Copy the tensors into the segment behind the returned metadata; the header, then the unlock, last.

        The fill thread and :data:`COPY_THREADS` - 1 helpers are all started from here (no helper waits for the
        fill thread to hand it work), and each takes the next slice of :data:`COPY_CHUNK_BYTES` until none is left
        (torch releases the GIL while it copies): a thread the machine's other work holds up leaves its share to
        the others instead of holding back the whole copy."""
        slices = slices_to_copy(copies)
        taking = threading.Lock()
        take = partial(take_slices, slices, taking)

        with self._lock:
            if self._filler is None:
                self._filler = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rayaccel-shm-fill")
                if COPY_THREADS > 1:
                    self._copiers = ThreadPoolExecutor(max_workers=COPY_THREADS - 1,
                                                       thread_name_prefix="rayaccel-shm-copy")
            copiers = self._copiers
            filler = self._filler
        large = sum(place.nbytes for place, _ in copies) >= _PARALLEL_COPY_BYTES
        helped = [copiers.submit(take) for _ in range(COPY_THREADS - 1)] if copiers and large else []

        def fill() -> None:
            try:
                take()
                for done in helped:
                    done.result(timeout=FILL_TIMEOUT_S)
                segment.mapping[:_HEADER] = name.encode().ljust(_HEADER, b"\0")
            except BaseException:
                logger.exception("%s: copying the tensors into %s failed; its receivers fail", self._name, name)
                raise
            finally:
                with contextlib.suppress(ValueError), taking:  # a helper that timed out may still be in it
                    slices.close()  # the mapping cannot close while a tensor shows it
                copies.clear()
                fcntl.flock(segment.fd, fcntl.LOCK_UN)  # written (or failed): receivers may lock it shared now

        return filler.submit(fill)

    def get_communicator_metadata(self, src_actor: ray.actor.ActorHandle[Any], dst_actor: ray.actor.ActorHandle[Any],
                                  backend: str | None = None) -> ShmCommunicatorMetadata:
        def actor_id(a: Any) -> str:
            aid = getattr(a, "_actor_id", None)
            return aid.hex() if aid is not None else "driver"

        return ShmCommunicatorMetadata(src_actor=actor_id(src_actor), dst_actor=actor_id(dst_actor))

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        deadline = time.monotonic() + receive_timeout_s()  # every wait below ends by then
        meta = tensor_transport_metadata
        comm = communicator_metadata if isinstance(communicator_metadata, ShmCommunicatorMetadata) else None
        if not isinstance(meta, ShmTransportMetadata):
            raise self._fail("recv", None, comm, f"metadata is {type(meta).__name__}, not ShmTransportMetadata")
        node_id, _ = _runtime()
        if meta.node_id and node_id and node_id != meta.node_id:
            raise self._fail("recv: same node", meta, comm, f"the sender is on node {meta.node_id}, this actor "
                             f"on {node_id}; {self._name} moves tensors within one node (choose another transport "
                             "with rayaccel.ray.transport_between)")
        if target_buffers is not None and len(target_buffers) != len(meta.tensor_meta):
            raise self._fail("recv: target buffers", meta, comm, f"{len(target_buffers)} buffers for "
                             f"{len(meta.tensor_meta)} tensors")
        path = os.path.join(SHM_DIR, meta.segment)
        if meta.src_pid and not _pid_alive(meta.src_pid, path):
            sweep_orphans()
            raise self._fail("recv: open segment", meta, comm, "the segment is gone (the sender process died; "
                             "its tensors went with it)")
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise self._fail("recv: open segment", meta, comm, "the segment is gone (the ref was freed)") from None
        out: list[Any] = []
        leased: _Mapped | None = None
        lent = False  # the tensors hold ``fd`` (and with it the lock) and the lease from here on
        try:
            if target_buffers is None:
                size = os.fstat(fd).st_size
                need = max((o + n for o, n in zip(meta.offsets, meta.nbytes, strict=True)), default=0)
                if size < need:
                    raise self._fail("recv: map", meta, comm, f"the segment has {size} bytes, {need} expected")
                leased, warm = self._mappings.lease(fd, size, meta.src_pid, deadline)
                if not warm:  # map the pages while the sender may still be copying into them
                    _advise_huge(leased.mapping)
                    _map_pages_now(leased.mapping)
            # Held while this receiver reads or maps the segment: the sender does not reuse it meanwhile.
            self._wait_for_fill(fd, obj_id, meta, comm, deadline)
            header = os.pread(fd, _HEADER, 0).rstrip(b"\0")
            if header != meta.segment.encode():
                why = ("the sender failed while copying into it (its log says why)" if not header else
                       "the ref was freed and its memory holds another transfer")
                raise self._fail("recv: open segment", meta, comm, f"the segment is gone ({why})")
            if target_buffers is not None:
                for i, (buf, (shape, dtype), off, n) in enumerate(
                        zip(target_buffers, meta.tensor_meta, meta.offsets, meta.nbytes, strict=True)):
                    if (tuple(buf.shape) != tuple(shape) or buf.dtype != dtype or buf.device.type != "cpu"
                            or not buf.is_contiguous()):
                        raise self._fail("recv: target buffers", meta, comm, f"buffer {i} is {tuple(buf.shape)} "
                                         f"{buf.dtype} on {buf.device}, the tensor is {tuple(shape)} {dtype} "
                                         "(a contiguous CPU buffer is needed)")
                    view = _bytes_of(buf) if n else memoryview(b"")
                    done = 0
                    while done < n:
                        if obj_id in self._aborted:
                            raise self._fail("recv: read", meta, comm, "aborted")
                        got = os.preadv(fd, [view[done:done + _CHUNK]], off + done)
                        if got <= 0:
                            raise self._fail("recv: read", meta, comm, "the segment is shorter than its metadata")
                        done += got
                    out.append(buf)
            else:
                assert leased is not None
                if obj_id in self._aborted:
                    raise self._fail("recv: map", meta, comm, "aborted")
                out = self._views(leased, fd, meta)
                lent = True
        except TransportError:
            raise
        except Exception as e:
            raise self._fail("recv", meta, comm, f"{type(e).__name__}: {e}") from e
        finally:
            if not lent:
                os.close(fd)
                if leased is not None:
                    self._mappings.release(leased)
            self._aborted.discard(obj_id)
        return out

    def _views(self, leased: _Mapped, fd: int, meta: ShmTransportMetadata) -> list[Any]:
        """The transfer's tensors as views of the leased mapping; when the last of them is gone, ``fd`` (holding
        the shared lock) closes and the lease ends."""
        import numpy as np
        import torch

        out: list[Any] = []
        arrays = []
        tensor_meta: list[Any] = list(meta.tensor_meta)  # (torch.Size, torch.dtype) pairs
        for (shape, dtype), off, n in zip(tensor_meta, meta.offsets, meta.nbytes, strict=True):
            if n == 0:
                out.append(torch.empty(shape, dtype=dtype))
                continue
            # One array per tensor: the object every view of the tensor keeps alive, and weakly referenceable.
            arrays.append(np.frombuffer(leased.mapping, dtype=np.uint8, count=n, offset=off))
            out.append(torch.from_numpy(arrays[-1]).view(dtype).reshape(shape))
        left = [len(arrays)]
        guard = threading.Lock()
        mappings = self._mappings

        def one_gone() -> None:
            with guard:
                left[0] -= 1
                if left[0]:
                    return
            os.close(fd)
            mappings.release(leased)

        for array in arrays:
            weakref.finalize(array, one_gone)
        if not arrays:
            os.close(fd)
            mappings.release(leased)
        return out

    def _wait_for_fill(self, fd: int, obj_id: str, meta: ShmTransportMetadata,
                       comm: ShmCommunicatorMetadata | None, deadline: float) -> None:
        """Take a shared ``flock`` on the segment once the sender's copy is done (it holds it exclusively till
        then); fail if the transfer is aborted, the sender dies, or the receive's ``deadline`` passes."""
        ask_alive = time.monotonic()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            if obj_id in self._aborted:
                raise self._fail("recv: wait for the sender's copy", meta, comm, "aborted")
            now = time.monotonic()
            if meta.src_pid and now >= ask_alive:
                if not _pid_alive(meta.src_pid, fd):
                    raise self._fail("recv: wait for the sender's copy", meta, comm, "the sender process died "
                                     "while copying (its tensors went with it)")
                ask_alive = now + _ALIVE_EVERY_S
            if now > deadline:
                raise self._fail("recv: wait for the sender's copy", meta, comm, f"the sender (pid {meta.src_pid}) "
                                 f"did not finish copying {sum(meta.nbytes)} bytes within the receive's "
                                 f"{receive_timeout_s():g} s ({RECEIVE_SHARE_OF_RAYS_WAIT:.0%} of Ray's RDT wait, "
                                 "RAY_rdt_fetch_fail_timeout_milliseconds; an overloaded node?)")
            time.sleep(_FILL_POLL_S)

    def send_multiple_tensors(self, tensors: list[Any], tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata) -> None:
        raise NotImplementedError(f"{self._name} is one-sided: the receiver reads the segment, nothing is sent")

    def _drop(self, obj_id: str) -> None:
        with self._lock:
            owned = self._owned.pop(obj_id, None)
        if owned:
            path, segment, fill = owned
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            try:  # the copy must end before the segment can be reused
                fill.result(timeout=FILL_TIMEOUT_S)
            except FutureTimeout:
                logger.error("%s: the copy into %s did not end in %.0f s; its memory is not reused", self._name,
                             path, FILL_TIMEOUT_S)
                return
            except Exception:
                pass  # the fill logged it; the segment is still good memory
            self._pool.give_back(segment)

    def garbage_collect(self, obj_id: str, tensor_transport_meta: TensorTransportMetadata,
                        tensors: list[Any]) -> None:
        self._drop(obj_id)
        if isinstance(tensor_transport_meta, ShmTransportMetadata) and tensor_transport_meta.segment:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(SHM_DIR, tensor_transport_meta.segment))

    def abort_transport(self, obj_id: str, communicator_metadata: CommunicatorMetadata) -> None:
        self._aborted.add(obj_id)
