"""Actor-to-actor tensor transfer: the reference shared-memory transport (and, in the full run, Ray's object store
and GLOO), each as a ratio to an anchor measured in the same run on the same machine.

A transfer is timed from the call that returns the sender's tensor to the receiver's task having read one
byte of every page (so a zero-copy receive pays for its page mappings, as a real reader would), after two
warm-up transfers (workers, mappings, the collective group's first message; Ray frees a ref's transport
memory asynchronously, so the second transfer may still find the sender's pool empty).

The anchors: from 16 MB up, one memcpy into a warm buffer (pre-faulted, already mapped: the one pass over the
data a transfer cannot avoid) on as many threads as the transport's fill copies with (``COPY_THREADS``: the
machine's cores, up to 4), the faster of torch's own parallel copy and slices taken by threads as the fill takes
them, and one ``clone`` (a copy into fresh pages, what any transfer that creates the receiver's tensor pays for);
at 4 KB, a pipe round trip of 4 KB between two processes. At every size the transport's own cost is also timed
alone, in one process (its sender's step, its receiver's step, the reader's pass over every page and the free, as
Ray calls them): at 4 KB Ray's two actor calls are the transfer, and from 16 MB up it says whether the transport
itself is the one pass over the data the memcpy is, apart from Ray's fixed part.

Beside them, at every size, the same transfer through a transport that moves no bytes
(:mod:`benchmarks.transport_floor`): Ray's own part of every transfer, the reader's pass over warm pages
included. From 16 MB up it gives the floor of a one-copy transport through Ray in each repetition: the
no-bytes transfer, less the stretch a copy can run beside (the metadata's way from the sender's step to the
receiver's), plus that repetition's memcpy.

From 16 MB up also: the held floor (:class:`benchmarks.transport_floor.HeldNoBytesTransport`: the no-bytes transfer
with its receive returning a memcpy's time after the sender's step, measured rather than derived), and the memcpy
timed inside the sending worker (Ray starts workers at nice 15, the driver's memcpy runs at the driver's priority).
Each of those steps is timed and then, untimed, waits until its background work has ended (the receiver's walk of
its page map once the tensors go, Ray's free of the ref: :meth:`SharedMemoryTransport.wait_idle`), so that work
does not land in the next step's time.

The machine may be loaded by other jobs, so each repetition times the anchors and the transfers back to back,
which goes first alternating, and a ratio is the median over repetitions of each transfer against its own
repetition's anchor; times and GB/s are medians too, the spread is the lowest and highest of the repetitions'
ratios with a 95% interval of the median beside it, and the load average is kept beside each size.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

MB = 1 << 20
KB4 = 4096
SIZES = {"4KB": KB4, "16MB": 16 * MB, "256MB": 256 * MB, "1GB": 1024 * MB}
REPEATS = {"4KB": 15, "16MB": 7, "256MB": 15, "1GB": 9}
#: At 4 KB a repetition is the median of this many transfers (one is a few ms of Ray's calls, noisy alone).
SMALL_TRANSFERS = 20
#: The longest a step waits for the previous transfer's background work (the receiver's clean, Ray's free) to end.
SETTLE_TIMEOUT_S = 60.0
#: The sending worker's memcpy anchor: (its copy threads, a warm destination, a source) by size, in that worker.
_WORKER_COPIES: dict[int, tuple[ThreadPoolExecutor, Any, Any]] = {}
#: The echo at the pipe's other end: reads 4 KB, writes them back.
_ECHO = ("import os\nwhile True:\n    b = os.read(0, 4096)\n    if not b:\n        break\n"
         "    while len(b) < 4096:\n        b += os.read(0, 4096 - len(b))\n    os.write(1, b)\n")


def _settle() -> bool:
    """Wait (bounded) until this process's reference transport has no work left for ended transfers."""
    from ray.experimental.rdt.util import get_tensor_transport_manager

    from rayaccel.transports.shared_memory import NAME

    transport = get_tensor_transport_manager(NAME)
    return bool(transport.wait_idle(SETTLE_TIMEOUT_S))  # type: ignore[attr-defined]


class _Sender:
    def make(self, nbytes: int) -> int:
        import torch

        self.tensor = torch.randint(0, 256, (nbytes,), dtype=torch.uint8)
        return int(self.tensor[:: 4096].sum())

    def get(self) -> Any:
        return self.tensor

    def settle(self) -> bool:
        return _settle()

    def memcpy(self, nbytes: int) -> float:
        """The memcpy anchor timed in this worker (Ray starts workers at nice 15; the driver runs at its own)."""
        import torch

        from rayaccel.transports.shared_memory import COPY_THREADS

        if nbytes not in _WORKER_COPIES:  # warm buffers, kept for the next repetition
            src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8)
            dst = torch.empty_like(src)
            dst.copy_(src)
            _WORKER_COPIES.clear()
            _WORKER_COPIES[nbytes] = (ThreadPoolExecutor(max_workers=max(1, COPY_THREADS - 1)), dst, src)
        pool, dst, src = _WORKER_COPIES[nbytes]
        return _memcpy(pool, COPY_THREADS, dst, src)


class _Receiver:
    def touch(self, tensor: Any) -> int:
        return int(tensor[:: 4096].sum())  # one byte per page

    def settle(self) -> bool:
        return _settle()

    def hold(self, seconds: float) -> None:
        """The held no-bytes transport's receive returns this long after the sender's step."""
        from benchmarks.transport_floor import HOLD_S

        HOLD_S[0] = seconds

    def hops(self) -> list[float]:
        """The no-bytes transport's hops received here since the last call (seconds)."""
        from benchmarks.transport_floor import HOPS

        out = list(HOPS)
        HOPS.clear()
        return out


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


class PipeRoundTrip:
    """4 KB written to another process through a pipe and read back from it through another."""

    def __init__(self) -> None:
        self.echo = subprocess.Popen([sys.executable, "-c", _ECHO], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     bufsize=0)
        assert self.echo.stdin is not None and self.echo.stdout is not None
        self._out, self._in = self.echo.stdin.fileno(), self.echo.stdout.fileno()
        self._bytes = os.urandom(KB4)

    def __call__(self) -> None:
        os.write(self._out, self._bytes)
        got = 0
        while got < KB4:
            got += len(os.read(self._in, KB4 - got))

    def close(self) -> None:
        assert self.echo.stdin is not None
        self.echo.stdin.close()
        self.echo.wait(timeout=30)


class _Alone:
    """One transfer through the transport's own steps (:func:`transport_alone`); :meth:`settle` waits for its
    background work (the receiver's clean) to end."""

    def __init__(self, once: Callable[[], None], transports: tuple[Any, ...]) -> None:
        self.once, self.transports = once, transports

    def __call__(self) -> None:
        self.once()

    def settle(self) -> None:
        for transport in self.transports:
            transport.wait_idle(SETTLE_TIMEOUT_S)


def transport_alone(nbytes: int = KB4) -> _Alone:
    """One transfer of ``nbytes`` through the reference transport's own steps, sender and receiver in this
    process, as Ray calls them (the sender's step, the receiver's step, the free), the receiver reading one
    byte of every page as the actor-to-actor transfer's reader does: the transport without Ray's calls."""
    import torch

    from rayaccel.transports.shared_memory import SharedMemoryTransport, ShmCommunicatorMetadata

    sender, receiver = SharedMemoryTransport(), SharedMemoryTransport()
    comm = ShmCommunicatorMetadata(src_actor="sender", dst_actor="receiver")
    tensors = [torch.randint(0, 256, (nbytes,), dtype=torch.uint8)]
    want = int(tensors[0][:: 4096].sum())
    count = [0]

    def once() -> None:
        count[0] += 1
        obj_id = f"{count[0]:016x}"
        meta = sender.extract_tensor_transport_metadata(obj_id, tensors)
        got = receiver.recv_multiple_tensors(obj_id, meta, comm)
        assert int(got[0][:: 4096].sum()) == want, "the receiver read other bytes"
        del got
        sender.garbage_collect(obj_id, meta, tensors)

    return _Alone(once, (sender, receiver))


def _transfer(method: Any, receiver: Any, want: int) -> None:
    """One actor-to-actor transfer: the sender's tensor by ``method``, read by the receiver's task."""
    import ray

    ref = method.remote()
    got = ray.get(receiver.touch.remote(ref), timeout=600)
    assert got == want, "the receiver read other bytes"
    del ref


def _settled(step: Callable[[], object], settle: Callable[[], object]) -> float:
    """``step``'s time; then, untimed, ``settle`` (its background work ends before the next step starts)."""
    took = _timed(step)
    settle()
    return took


def _settle_actors(*actors: Any) -> None:
    import ray

    assert all(ray.get([actor.settle.remote() for actor in actors], timeout=SETTLE_TIMEOUT_S * 2)), \
        "a transfer's background work did not end in time"


def _worker_memcpy(sender: Any, nbytes: int) -> float:
    """The memcpy anchor timed inside the sending worker (the actor call is not in it)."""
    import ray

    return float(ray.get(sender.memcpy.remote(nbytes), timeout=600))


def _memcpy_then_hold(receiver: Any, pool: ThreadPoolExecutor, threads: int, dst: Any, src: Any) -> float:
    """:func:`_memcpy`; then, untimed, the held floor's receive is held for that long from the next transfer on."""
    import ray

    took = _memcpy(pool, threads, dst, src)
    ray.get(receiver.hold.remote(took), timeout=SETTLE_TIMEOUT_S)
    return took


def _copy_on(threads: int, dst: Any, src: Any) -> None:
    """``dst.copy_(src)`` by torch on ``threads`` threads (torch's own count comes back after)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        dst.copy_(src)
    finally:
        torch.set_num_threads(before)


def _copy_in_slices(pool: ThreadPoolExecutor, threads: int, dst: Any, src: Any) -> None:
    """``dst.copy_(src)`` as the transport's fill copies (its own functions): ``threads`` threads taking the next
    slice until none is left."""
    from rayaccel.transports.shared_memory import slices_to_copy, take_slices

    slices, taking = slices_to_copy([(dst, src)]), threading.Lock()
    helped = [pool.submit(take_slices, slices, taking) for _ in range(threads - 1)]
    take_slices(slices, taking)
    for done in helped:
        done.result()


def _memcpy(pool: ThreadPoolExecutor, threads: int, dst: Any, src: Any) -> float:
    """The machine's memcpy on ``threads`` threads: the faster of torch's own parallel copy and the transport's
    way of copying (slices taken by threads), each the median of 3 (under load, torch's OpenMP threads wait on
    each other and the slices do not; quiet, they are the same)."""
    return min(_median_of(partial(_copy_on, threads, dst, src), 3),
               _median_of(partial(_copy_in_slices, pool, threads, dst, src), 3))


def _median_of(fn: Callable[[], object], number: int) -> float:
    return statistics.median(_timed(fn) for _ in range(number))


def bench_transports(sizes: tuple[str, ...] = tuple(SIZES), others: bool = True) -> dict[str, dict[str, Any]]:
    """The rows by size label; ``others``: Ray's object store and GLOO beside the reference transport."""
    import ray
    import torch
    from ray.experimental.rdt import util as rdt_util

    import rayaccel.ray
    from benchmarks.task_path import median_interval
    from benchmarks.transport_floor import HELD_NAME, NAME as NO_BYTES, HeldNoBytesTransport, NoBytesTransport
    from rayaccel.transports.shared_memory import COPY_THREADS, NAME

    rayaccel.ray.init(plugins=[], num_cpus=2, include_dashboard=False, log_to_driver=False,
                      object_store_memory=4 * 1024 * MB)
    for floor_name, floor_class in ((NO_BYTES, NoBytesTransport), (HELD_NAME, HeldNoBytesTransport)):
        if floor_name not in rdt_util.transport_manager_info:
            rdt_util.register_tensor_transport(floor_name, ["cpu"], floor_class, torch.Tensor)
    pipe = PipeRoundTrip()
    alone = transport_alone()
    copiers = ThreadPoolExecutor(max_workers=max(1, COPY_THREADS - 1))
    try:
        def start(cls: type) -> Any:
            return ray.remote(enable_tensor_transport=True)(cls).options(num_cpus=0).remote()  # type: ignore[call-overload]

        sender, receiver = start(_Sender), start(_Receiver)
        paths: list[tuple[str, str | None]] = [(NAME, NAME), ("no_bytes", NO_BYTES), ("held", HELD_NAME)]
        if others:
            from ray.experimental.collective import create_collective_group

            create_collective_group([sender, receiver], backend="torch_gloo")
            paths += [("object_store", None), ("GLOO", "GLOO")]
        out: dict[str, dict[str, Any]] = {}
        for label in sizes:
            nbytes = SIZES[label]
            small = nbytes <= KB4
            want = ray.get(sender.make.remote(nbytes))
            transfers: dict[str, Callable[[], None]] = {}
            for name, transport in paths:
                if name == "held" and small:
                    continue  # a copy of 4 KB takes no time to hold for
                method = sender.get.options(tensor_transport=transport) if transport else sender.get
                read = len(range(0, nbytes, 4096)) if name in ("no_bytes", "held") else want  # its warm tensor: ones
                once = transfers[name] = partial(_transfer, method, receiver, read)
                once()
                once()
            ray.get(receiver.hops.remote())  # the warm-ups'
            anchors: dict[str, Callable[[], float]]
            if small:
                for _ in range(50):  # the echo process and the transport's pool warm
                    pipe()
                    alone()
                anchors = {"pipe": partial(_median_of, pipe, 200), "alone": partial(_median_of, alone, 200)}
            else:
                src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8)
                dst = torch.empty_like(src)
                dst.copy_(src)
                own = transport_alone(nbytes)
                own()
                own()  # its pool's segment made and warm, as after an actor-to-actor transfer's warm-ups
                own.settle()
                # The held floor's receive returns a memcpy's time after the sender's step (a copy costing no CPU):
                # the median of three here, then the last repetition's.
                ray.get(receiver.hold.remote(statistics.median(_memcpy(copiers, COPY_THREADS, dst, src)
                                                               for _ in range(3))))
                anchors = {"memcpy": partial(_memcpy_then_hold, receiver, copiers, COPY_THREADS, dst, src),
                           "worker_memcpy": partial(_worker_memcpy, sender, nbytes),
                           "clone": partial(_timed, src.clone),  # into fresh pages, as a receiver
                           # Each step starts once the last one's background work ended (the transport's clean of
                           # its page map after the tensors go, ~12 ms of CPU per GB, Ray's free): else it lands
                           # in whichever step comes next in the alternation.
                           "alone": partial(_settled, own, own.settle)}
            load = os.getloadavg()[0]
            times: dict[str, list[float]] = {k: [] for k in (*anchors, *transfers)}
            steps: list[tuple[str, Callable[[], float]]] = list(anchors.items())
            settle = partial(_settle_actors, sender, receiver)
            for name, transfer in transfers.items():
                timed = partial(_median_of, transfer, SMALL_TRANSFERS) if small else partial(_settled, transfer, settle)
                steps.append((name, timed))
            for rep in range(REPEATS[label]):
                for key, step in steps if rep % 2 == 0 else reversed(steps):  # which goes first alternates
                    times[key].append(step())
            row: dict[str, Any] = {"repeats": REPEATS[label], "load_average": (load + os.getloadavg()[0]) / 2,
                                   "bytes": nbytes, "copy_threads": COPY_THREADS}
            base = "pipe" if small else "memcpy"
            for key, values in times.items():
                row[f"{key}_ms"] = statistics.median(values) * 1e3
                row[f"{key}_gbps"] = nbytes / statistics.median(values) / 1e9
            for name in [*transfers, "alone"]:
                for anchor in (("pipe",) if small else ("memcpy", "clone")):
                    ratios = [a / b for a, b in zip(times[name], times[anchor], strict=True)]
                    row[f"{name}_x_{anchor}"] = statistics.median(ratios)
                    row[f"{name}_x_{anchor}_spread"] = [min(ratios), max(ratios)]
                    row[f"{name}_x_{anchor}_interval"] = list(median_interval(ratios))
            if not small:  # the transfer against a memcpy timed in the sending worker, at the worker's priority
                ratios = [a / b for a, b in zip(times[NAME], times["worker_memcpy"], strict=True)]
                row[f"{NAME}_x_worker_memcpy"] = statistics.median(ratios)
                row[f"{NAME}_x_worker_memcpy_interval"] = list(median_interval(ratios))
            if not small:  # the least a one-copy transport through Ray can take (benchmarks.transport_floor)
                hops = ray.get(receiver.hops.remote())
                floors = [moved - hop + copy for moved, hop, copy in
                          zip(times["no_bytes"], hops, times["memcpy"], strict=True)]
                row["hop_ms"] = statistics.median(hops) * 1e3
                row["floor_ms"] = statistics.median(floors) * 1e3
                ratios = [a / b for a, b in zip(floors, times["memcpy"], strict=True)]
                row["floor_x_memcpy"] = statistics.median(ratios)
                row["floor_x_memcpy_spread"] = [min(ratios), max(ratios)]
                row["floor_x_memcpy_interval"] = list(median_interval(ratios))
            row["anchor"] = base
            out[label] = row
        return out
    finally:
        copiers.shutdown()
        pipe.close()
        rayaccel.ray.shutdown()


def print_transports(results: dict[str, dict[str, Any]]) -> None:
    print("actor to actor: ms, and x the anchor (4 KB: a pipe round trip; else one in-process memcpy into a warm "
          "buffer / one clone into fresh pages), medians of alternating repetitions:")
    for label, row in results.items():
        names = [n for n in ("RAYACCEL_SHM", "no_bytes", "floor", "held", "object_store", "GLOO", "alone")
                 if f"{n}_ms" in row]
        anchors = ("pipe",) if row["anchor"] == "pipe" else ("memcpy", "clone")
        cells = [f"{n} {row[f'{n}_ms']:.3f} ms ("
                 + " / ".join(f"x{row[f'{n}_x_{a}']:.2f}" for a in anchors if f"{n}_x_{a}" in row) + ")"
                 for n in names]
        base = ", ".join(f"{a} {row[f'{a}_ms']:.3f} ms" for a in (*anchors, "worker_memcpy") if f"{a}_ms" in row)
        print(f"  {label:6} {base}; " + "; ".join(cells) + f"; load {row['load_average']:.1f}")


if __name__ == "__main__":
    print_transports(bench_transports(tuple(sys.argv[1:]) or tuple(SIZES)))
