"""Actor-to-actor tensor transfer: the reference shared-memory transport, Ray's object store and GLOO, each as a
ratio to one in-process memcpy of the same size, all measured in one run on one Ray node.

A transfer is timed from the call that returns the sender's tensor to the receiver's task having read one
byte of every page (so a zero-copy receive pays for its page mappings, as a real reader would), after two
warm-up transfers (workers, mappings, the collective group's first message; Ray frees a ref's transport
memory asynchronously, so the second transfer may still find the sender's pool empty). Two in-process
baselines: one memcpy into a warm, already-mapped buffer, and one ``clone`` (a copy into fresh pages, which
is what any transfer that creates the receiver's tensor has to pay for).

The machine may be loaded by other jobs, so each repetition times the baselines and then every transport
back to back, and a ratio is the median over repetitions of each transfer against the baselines of its own
repetition; times and GB/s are medians too, and the load average is kept beside each size.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

MB = 1 << 20
SIZES = {"16MB": 16 * MB, "256MB": 256 * MB, "1GB": 1024 * MB}
REPEATS = {"16MB": 7, "256MB": 7, "1GB": 5}


class _Sender:
    def make(self, nbytes: int) -> int:
        import torch

        self.tensor = torch.randint(0, 256, (nbytes,), dtype=torch.uint8)
        return int(self.tensor[:: 4096].sum())

    def get(self) -> Any:
        return self.tensor


class _Receiver:
    def touch(self, tensor: Any) -> int:
        return int(tensor[:: 4096].sum())  # one byte per page


def _timed(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def bench_transports() -> dict[str, dict[str, float]]:
    import ray
    import torch
    from ray.experimental.collective import create_collective_group

    import rayaccel.ray
    from rayaccel.transports.shared_memory import NAME

    rayaccel.ray.init(plugins=[], num_cpus=2, include_dashboard=False, log_to_driver=False,
                      object_store_memory=4 * 1024 * MB)
    try:
        def start(cls: type) -> Any:
            return ray.remote(enable_tensor_transport=True)(cls).options(num_cpus=0).remote()  # type: ignore[call-overload]

        sender, receiver = start(_Sender), start(_Receiver)
        create_collective_group([sender, receiver], backend="torch_gloo")
        out: dict[str, dict[str, float]] = {}
        for label, nbytes in SIZES.items():
            want = ray.get(sender.make.remote(nbytes))
            src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8)
            dst = torch.empty_like(src)
            dst.copy_(src)
            transfers: dict[str, Any] = {}
            for name, transport in ((NAME, NAME), ("object_store", None), ("GLOO", "GLOO")):
                method = sender.get.options(tensor_transport=transport) if transport else sender.get

                def once(method: Any = method, want: int = want) -> None:
                    ref = method.remote()
                    got = ray.get(receiver.touch.remote(ref), timeout=600)
                    assert got == want, "the receiver read other bytes"
                    del ref

                transfers[name] = once
                once()
                once()
            load = os.getloadavg()[0]
            times: dict[str, list[float]] = {k: [] for k in ("memcpy", "clone", *transfers)}
            ratios: dict[str, list[float]] = {f"{n}_x_{b}": [] for n in transfers for b in ("memcpy", "clone")}
            for _ in range(REPEATS[label]):
                memcpy = statistics.median(_timed(lambda src=src, dst=dst: dst.copy_(src)) for _ in range(3))
                clone = _timed(lambda src=src: src.clone())  # into fresh pages, as a receiver
                times["memcpy"].append(memcpy)
                times["clone"].append(clone)
                for name, once in transfers.items():
                    took = _timed(once)
                    times[name].append(took)
                    ratios[f"{name}_x_memcpy"].append(took / memcpy)
                    ratios[f"{name}_x_clone"].append(took / clone)
            del src, dst
            med = {k: statistics.median(v) for k, v in times.items()}
            row = {"memcpy_ms": med["memcpy"] * 1e3, "clone_ms": med["clone"] * 1e3,
                   "memcpy_gbps": nbytes / med["memcpy"] / 1e9, "repeats": REPEATS[label],
                   "load_average": (load + os.getloadavg()[0]) / 2}
            for name in transfers:
                row[f"{name}_ms"] = med[name] * 1e3
                row[f"{name}_gbps"] = nbytes / med[name] / 1e9
            row |= {k: statistics.median(v) for k, v in ratios.items()}
            out[label] = row
        return out
    finally:
        rayaccel.ray.shutdown()


def print_transports(results: dict[str, dict[str, float]]) -> None:
    print("actor to actor, as x one in-process memcpy into a warm buffer / x one clone into fresh pages (medians of "
          "alternating repetitions):")
    print(f"{'size':6} {'memcpy ms':>10} {'clone ms':>9} {'RAYACCEL_SHM':>14} {'object store':>14} {'GLOO':>12}"
          f" {'memcpy GB/s':>12} {'RAYACCEL_SHM GB/s':>18} {'load':>5}")
    for label, row in results.items():
        cells = [f"{row[f'{n}_x_memcpy']:.1f} / {row[f'{n}_x_clone']:.1f}" for n in ("RAYACCEL_SHM", "object_store",
                                                                                    "GLOO")]
        print(f"{label:6} {row['memcpy_ms']:10.1f} {row['clone_ms']:9.1f} {cells[0]:>14} {cells[1]:>14} {cells[2]:>12}"
              f" {row['memcpy_gbps']:12.2f} {row['RAYACCEL_SHM_gbps']:18.2f} {row['load_average']:5.1f}")


if __name__ == "__main__":
    print_transports(bench_transports())
