"""Where one actor-to-actor transfer's time goes: per-step timestamps inside the driver, the sender and the receiver.

The reference transport and the no-bytes floor (:mod:`benchmarks.transport_floor`) are registered again under
names of their own as subclasses that stamp each step with ``time.perf_counter_ns()`` (CLOCK_MONOTONIC on Linux:
one clock for every process of the machine). A transfer is the bench's (:mod:`benchmarks.transports`): the
driver's call to the sender's method, the receiver's task reading one byte of every page. Per transfer:

- ``before_extract``: the driver's call until Ray calls the sender's step (the sender's task, Ray's serialization
  of its return): no transport's copy can run here, it has no tensors yet;
- ``extract``: the sender's step (the copy starts inside it and runs behind it);
- ``hop``: the sender's step's return until Ray calls the receiver's step (the reply to the owner, its
  ``__ray_recv__`` to the receiver's system thread): the only stretch of Ray's a copy can run beside;
- ``copy``: the first slice's start to the last slice's end, and ``copy_start`` from the step's start;
- ``wait``: the receiver's step until the sender's copy is seen done (its lock), ``seen_after_copy``;
- ``views``: the lock until the receiver's step returns;
- ``handoff``: the receiver's step's return until the receiver's task starts (Ray stores the tensors, wakes the
  task's argument deserialization): after the transfer, nothing of a transport's runs here;
- ``read`` and ``reply``: the task's pass over every page, and its result's way back to the driver.

``python -m benchmarks.transport_timeline 256MB 1GB`` (``TRANSFERS=n`` each, 12 unless set) prints the medians and
quartiles of each, alternated with the no-bytes floor, the held floor (its receive returning a memcpy's time after
the sender's step), the transfer right after the transport's own steps ran in the driver (the bench's order before
round 5: that step's background clean ran on into the transfer), and a memcpy on the transport's threads
(:func:`benchmarks.transports._memcpy`), with the load average. Each transfer starts after the last one's
background work ended (:meth:`SharedMemoryTransport.wait_idle` in both actors).
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks import transports
from benchmarks.transport_floor import HOLD_S, HeldNoBytesTransport, NoBytesTransport
from rayaccel.transports import shared_memory
from rayaccel.transports.shared_memory import SharedMemoryTransport

SHM = "TIMELINE_SHM"
NO_BYTES = "TIMELINE_NO_BYTES"
HELD = "TIMELINE_HELD"
AFTER_ALONE = "TIMELINE_SHM right after the transport's own steps in the driver"
#: (step, ns) stamps taken in this process since the last :func:`take_stamps`.
STAMPS: list[tuple[str, int]] = []
_stamping = threading.Lock()


def _stamp(step: str, at: int | None = None) -> None:
    with _stamping:
        STAMPS.append((step, time.perf_counter_ns() if at is None else at))


def take_stamps() -> list[tuple[str, int]]:
    with _stamping:
        out = list(STAMPS)
        STAMPS.clear()
    return out


def _timed_slices(slices: Any, taking: threading.Lock) -> None:
    """:func:`shared_memory.take_slices`, each slice's start and end stamped."""
    while True:
        with taking:
            piece = next(slices, None)
        if piece is None:
            return
        _stamp("slice_start")
        piece[0].copy_(piece[1])
        _stamp("slice_end")
        _stamp(f"slice_end_{threading.get_ident()}")


class _StampedSteps:
    """Stamps the start and end of a transport's two steps around the transport's own (the class after it)."""

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: list[Any]) -> Any:
        _stamp("extract_start")
        meta = super().extract_tensor_transport_metadata(obj_id, rdt_object)  # type: ignore[misc]
        _stamp("extract_end")
        return meta

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        _stamp("recv_start")
        out = super().recv_multiple_tensors(  # type: ignore[misc]
            obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)
        _stamp("recv_end")
        return out  # type: ignore[no-any-return]


class TimelineShm(_StampedSteps, SharedMemoryTransport):
    def tensor_transport_backend(self) -> str:
        return SHM

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: list[Any]) -> Any:
        shared_memory.take_slices = _timed_slices  # this process only
        meta = super().extract_tensor_transport_metadata(obj_id, rdt_object)
        self._owned[obj_id][2].add_done_callback(lambda _: _stamp("fill_end"))
        return meta

    def __init__(self) -> None:
        super().__init__()
        original = self._mappings.release

        def release(mapped: Any) -> None:
            _stamp("released")
            original(mapped)
            if mapped.cleaned is not None:
                mapped.cleaned.add_done_callback(lambda _: _stamp("cleaned"))

        self._mappings.release = release  # type: ignore[method-assign]

    def _wait_for_fill(self, *args: Any) -> None:
        cpu = time.thread_time_ns()
        super()._wait_for_fill(*args)
        _stamp("locked")
        _stamp("wait_cpu", time.thread_time_ns() - cpu)  # a duration, not a time: the receiver's CPU while it polled


class TimelineNoBytes(_StampedSteps, NoBytesTransport):
    def tensor_transport_backend(self) -> str:
        return NO_BYTES


class TimelineHeld(TimelineNoBytes, HeldNoBytesTransport):
    def tensor_transport_backend(self) -> str:
        return HELD


class _Sender(transports._Sender):
    """The bench's sender, its transport's waits those of the timeline's own, and its stamps taken."""

    def stamps(self) -> list[tuple[str, int]]:
        return take_stamps()

    def settle(self) -> bool:
        return _settle()


def _settle() -> bool:
    from ray.experimental.rdt.util import get_tensor_transport_manager

    return bool(get_tensor_transport_manager(SHM).wait_idle(60))  # type: ignore[attr-defined]


class _Receiver:
    def touch(self, tensor: Any) -> int:
        _stamp("read_start")
        got = int(tensor[:: 4096].sum())  # one byte per page
        _stamp("read_end")
        return got

    def hold(self, seconds: float) -> None:
        HOLD_S[0] = seconds

    def settle(self) -> bool:
        return _settle()

    def stamps(self) -> list[tuple[str, int]]:
        return take_stamps()


def _steps(stamps: dict[str, list[int]]) -> dict[str, float]:
    """One transfer's steps in ms from its stamps (each step's stamps in order)."""
    first = {k: v[0] for k, v in stamps.items()}
    out: dict[str, float] = {
        "total": first["driver_end"] - first["driver_start"],
        "before_extract": first["extract_start"] - first["driver_start"],
        "extract": first["extract_end"] - first["extract_start"],
        "hop": first["recv_start"] - first["extract_end"],
        "handoff": first["read_start"] - first["recv_end"],
        "read": first["read_end"] - first["read_start"],
        "reply": first["driver_end"] - first["read_end"],
    }
    if "wait_cpu" in first:
        out["wait_cpu"] = first["wait_cpu"]
    for key in ("released", "cleaned"):
        if key in first:
            out[key] = first[key] - first["read_end"]
    if "slice_start" in stamps:
        copy_end = max(stamps["slice_end"])
        threads = [v for k, v in stamps.items() if k.startswith("slice_end_")]
        busy = sum(e - s for s, e in zip(stamps["slice_start"], stamps["slice_end"], strict=False))
        out["slices"] = len(stamps["slice_start"]) * 1e6
        out["slice_threads"] = len(threads) * 1e6
        out["copy_busy_per_thread"] = busy / max(1, len(threads))
        out |= {
            "copy_start": min(stamps["slice_start"]) - first["extract_start"],
            "copy": copy_end - min(stamps["slice_start"]),
            "wait": first["locked"] - first["recv_start"],
            "seen_after_copy": first["locked"] - copy_end,
            "views": first["recv_end"] - first["locked"],
            "recv_after_copy": first["recv_start"] - copy_end,
        }
    else:
        out["recv"] = first["recv_end"] - first["recv_start"]
    return {k: v / 1e6 for k, v in out.items()}


def timeline(label: str, nbytes: int, transfers: int) -> None:
    import ray
    import torch
    from ray.experimental.rdt import util as rdt_util

    from benchmarks.transports import _memcpy
    from rayaccel.transports.shared_memory import COPY_THREADS

    for name, cls in ((SHM, TimelineShm), (NO_BYTES, TimelineNoBytes), (HELD, TimelineHeld)):
        if name not in rdt_util.transport_manager_info:
            rdt_util.register_tensor_transport(name, ["cpu"], cls, torch.Tensor)

    def start(cls: type) -> Any:
        return ray.remote(enable_tensor_transport=True)(cls).options(num_cpus=0).remote()  # type: ignore[call-overload]

    sender, receiver = start(_Sender), start(_Receiver)
    want = ray.get(sender.make.remote(nbytes))
    src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8)
    dst = torch.empty_like(src)
    dst.copy_(src)
    copiers = ThreadPoolExecutor(max_workers=max(1, COPY_THREADS - 1))
    ray.get(receiver.hold.remote(statistics.median(_memcpy(copiers, COPY_THREADS, dst, src) for _ in range(3))))
    rows: dict[str, list[dict[str, float]]] = {SHM: [], NO_BYTES: [], HELD: [], AFTER_ALONE: []}
    memcpy: list[float] = []
    load = os.getloadavg()[0]

    from benchmarks.transports import transport_alone

    alone = transport_alone(nbytes)

    def one(name: str) -> dict[str, float]:
        if name == AFTER_ALONE:  # make bench's order before it settled each step (round 5)
            alone()  # its receiver's clean of its page map runs on in the background
            name = SHM
        method = sender.get.options(tensor_transport=name)
        started = time.perf_counter_ns()
        ref = method.remote()
        got = ray.get(receiver.touch.remote(ref), timeout=600)
        ended = time.perf_counter_ns()
        assert got == (len(range(0, nbytes, 4096)) if name in (NO_BYTES, HELD) else want), "other bytes read"
        del ref
        # Its background work (the receiver's clean of its page map, the sender's free) ends before the next step.
        assert all(ray.get([sender.settle.remote(), receiver.settle.remote()], timeout=120)), "work left after it"
        stamps: dict[str, list[int]] = {"driver_start": [started], "driver_end": [ended]}
        for step, at in sorted(ray.get(sender.stamps.remote()) + ray.get(receiver.stamps.remote()),
                               key=lambda s: s[1]):
            stamps.setdefault(step, []).append(at)
        return _steps(stamps)

    try:
        for name in [*rows, *rows]:  # warm-ups: workers, the pool's segment, kept mappings
            one(name)
        for i in range(transfers):
            order = [*rows, "memcpy"] if i % 2 == 0 else ["memcpy", *reversed(rows)]
            for name in order:
                if name == "memcpy":
                    memcpy.append(_memcpy(copiers, COPY_THREADS, dst, src) * 1e3)
                else:
                    rows[name].append(one(name))
    finally:
        copiers.shutdown()
        ray.kill(sender)
        ray.kill(receiver)
    load = (load + os.getloadavg()[0]) / 2
    print(f"{label}: {transfers} transfers each, load {load:.1f}; memcpy on {COPY_THREADS} threads "
          f"{statistics.median(memcpy):.2f} ms (medians, ms; quartiles)")
    for name, got in rows.items():
        cells = []
        for step in dict.fromkeys(k for r in got for k in r):
            values = sorted(r[step] for r in got if step in r)
            q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
            cells.append(f"{step} {q[1]:.2f} ({q[0]:.2f}-{q[2]:.2f})")
        print(f"  {name}: " + "; ".join(cells))


if __name__ == "__main__":
    import rayaccel.ray
    from benchmarks import transport_timeline  # by reference in the actors, not pickled from __main__

    sizes = {"256MB": 256 << 20, "1GB": 1 << 30, "16MB": 16 << 20}
    rayaccel.ray.init(plugins=[], num_cpus=2, include_dashboard=False, log_to_driver=False,
                      object_store_memory=4 << 30)
    try:
        for label in sys.argv[1:] or ["256MB", "1GB"]:
            transport_timeline.timeline(label, sizes[label], int(os.environ.get("TRANSFERS", "12")))
    finally:
        rayaccel.ray.shutdown()
