"""The path every task takes (issue 42): tasks/s on a rayaccel node vs a plain Ray node with the same resources.

Both heads run at once on this machine, each started by its own command (``rayaccel start --simulate ...`` and
``ray start`` with the same GPUs, custom resources and ``accelerator_type``), with ``--num-cpus`` CPUs so that
the accelerator, not the CPU count, bounds how many tasks run at once. For each request a driver connects to
one node, runs ``warmup`` empty tasks (the workers start), then times ``tasks`` empty tasks submitted at once;
the nodes alternate, round after round, so load from other jobs hits both. Tasks are declared with
``max_calls=0``: Ray's default for a ``num_gpus`` function is a new worker per task (``max_calls=1``), which
would measure worker starts, a figure of its own (:func:`benchmarks.against_ray.bench_worker_start`).
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.against_ray import ENV, RAY, RAYACCEL, node_flags, stop_cluster, timed_run

#: The CPUs each node offers: more than its GPUs, so 8 whole-GPU tasks (or 32 quarter ones) can run at once.
NUM_CPUS = 8
#: Where the day-zero test plugin (acme: a family Ray does not know) is importable from.
TEST_PLUGINS = str(Path(__file__).resolve().parent.parent / "tests")
#: Each row: (label, the rayaccel node, the plain node's resources, the task's request).
ROWS: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    ("num_gpus=1", "nvidia/dgx-h100", {"num_gpus": 8, "resources": {"accelerator_type:H100": 1}}, {"num_gpus": 1}),
    ("num_gpus=0.25", "nvidia/dgx-h100", {"num_gpus": 8, "resources": {"accelerator_type:H100": 1}},
     {"num_gpus": 0.25}),
    ("num_gpus=2", "nvidia/dgx-h100", {"num_gpus": 8, "resources": {"accelerator_type:H100": 1}}, {"num_gpus": 2}),
    ("day-zero family, ACME=1", "acme/acme-4", {"num_gpus": 0, "resources": {"ACME": 4, "accelerator_type:R1": 1}},
     {"resources": {"ACME": 1}}),
]

_DRIVER = """
import json, logging, sys, time
import ray
address, request, warmup, tasks = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
def pid():
    import os
    return os.getpid()
task = ray.remote(max_calls=0)(pid).options(**request)
import psutil
pids = set(ray.get([task.remote() for _ in range(warmup)], timeout=600))
raylet = psutil.Process(next(iter(pids))).parent()
def cpu(pids):  # the node's raylet, its workers and this driver: the CPU a task costs wherever it is spent
    total = 0.0
    for process in [raylet, psutil.Process(), *(psutil.Process(p) for p in pids)]:
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total
before, started = cpu(pids), time.perf_counter()
new = set(ray.get([task.remote() for _ in range(tasks)], timeout=600))
seconds = time.perf_counter() - started
used = cpu(pids | new) - before
print(json.dumps({"tasks_per_s": tasks / seconds, "workers": len(pids | new), "cpu_ms_per_task": 1e3 * used / tasks}))
ray.shutdown()
"""


def _env(fixture: str) -> dict[str, str]:
    if not fixture.startswith("acme/"):
        return ENV
    return {**ENV, "RAYACCEL_PLUGINS": "acme=rayaccel_testplugins.acme",
            "PYTHONPATH": os.pathsep.join(p for p in (TEST_PLUGINS, ENV.get("PYTHONPATH")) if p)}


def _start(kind: str, fixture: str, plain: dict[str, Any]) -> str:
    address, flags = node_flags()
    flags = [f for f in flags if not f.startswith("--num-cpus")] + [f"--num-cpus={NUM_CPUS}"]
    if kind == "ray":
        argv = [RAY, "start", *flags, f"--num-gpus={plain['num_gpus']}",
                f"--resources={json.dumps(plain['resources'])}"]
    else:
        plugin = ["--plugin", fixture.split("/")[0]] if fixture.startswith("acme/") else []
        argv = [*RAYACCEL, "start", "--simulate", fixture, *plugin, *flags]
    try:
        timed_run(argv, env=_env(fixture))
    except BaseException:
        stop_cluster(address)
        raise
    return address


def _tasks_per_s(address: str, request: dict[str, Any], fixture: str, warmup: int,
                 tasks: int) -> tuple[float, int, float]:
    """tasks/s of one driver's ``tasks`` after its ``warmup``, how many worker processes ran them, and the CPU
    milliseconds per task of the node's raylet, its workers and the driver (load inflates wall time, not it)."""
    done = subprocess.run([sys.executable, "-c", _DRIVER, address, json.dumps(request), str(warmup), str(tasks)],
                          capture_output=True, text=True, env=_env(fixture), timeout=900, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the task driver failed ({done.returncode}): {(done.stdout + done.stderr)[-800:]}")
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    return float(measured["tasks_per_s"]), int(measured["workers"]), float(measured["cpu_ms_per_task"])


def bench_task_path(rounds: int = 3, warmup: int = 50, tasks: int = 400,
                    rows: list[str] | None = None) -> dict[str, Any]:
    """tasks/s per row and node kind (median of ``rounds`` alternating), the ratio rayaccel/plain, the load."""
    load = os.getloadavg()[0]
    out: dict[str, Any] = {"rows": {}, "rounds": rounds, "tasks": tasks, "warmup": warmup, "num_cpus": NUM_CPUS}
    for fixture in dict.fromkeys(f for label, f, _, _ in ROWS if rows is None or label in rows):
        selected = [r for r in ROWS if r[1] == fixture and (rows is None or r[0] in rows)]
        addresses: dict[str, str] = {}
        try:
            for kind in ("ray", "rayaccel"):
                addresses[kind] = _start(kind, fixture, selected[0][2])
            for label, _, _, request in selected:
                samples: dict[str, list[float]] = {"ray": [], "rayaccel": []}
                workers: dict[str, list[int]] = {"ray": [], "rayaccel": []}
                cpu: dict[str, list[float]] = {"ray": [], "rayaccel": []}
                for index in range(rounds):
                    for kind in (("ray", "rayaccel") if index % 2 == 0 else ("rayaccel", "ray")):
                        per_s, used, task_cpu_ms = _tasks_per_s(addresses[kind], request, fixture, warmup, tasks)
                        samples[kind].append(per_s)
                        workers[kind].append(used)
                        cpu[kind].append(task_cpu_ms)
                medians = {k: statistics.median(v) for k, v in samples.items()}
                cpu_ms = {k: statistics.median(v) for k, v in cpu.items()}
                out["rows"][label] = {"fixture": fixture, "request": request, "tasks_per_s": medians,
                                      "samples": samples, "workers": workers, "cpu_ms_per_task": cpu_ms,
                                      "cpu_samples": cpu, "ratio": medians["rayaccel"] / medians["ray"],
                                      "cpu_ratio": cpu_ms["rayaccel"] / cpu_ms["ray"]}
                print(f"    {label}: {medians['rayaccel']:.0f} vs {medians['ray']:.0f} tasks/s "
                      f"(x{medians['rayaccel'] / medians['ray']:.2f}); CPU per task {cpu_ms['rayaccel']:.2f} vs "
                      f"{cpu_ms['ray']:.2f} ms (x{cpu_ms['rayaccel'] / cpu_ms['ray']:.2f}); workers {workers}",
                      flush=True)
        finally:
            for address in addresses.values():
                stop_cluster(address)
    out["load_average"] = [load, os.getloadavg()[0]]
    return out


if __name__ == "__main__":  # python -m benchmarks.task_path [row label ...]: these rows alone
    logging.basicConfig(level=logging.ERROR)
    started = time.perf_counter()
    result = bench_task_path(rows=sys.argv[1:] or None)
    print(json.dumps(result, indent=2))
    print(f"{time.perf_counter() - started:.0f} s")


def bench_domain_group(rounds: int = 10, bundles: int = 4) -> dict[str, Any]:
    """A domain-packed placement group (:func:`rayaccel.ray.scale_up_domain_placement_group`, whatever it builds
    the group with) vs a plain ``STRICT_PACK`` group of the same bundles, creation to READY and removed, on one
    simulated ``nvidia/dgx-h100`` node, alternating; medians of ``rounds``."""
    import ray
    from ray.util import placement_group, remove_placement_group

    import rayaccel.ray
    from rayaccel.ray.node import environ

    shape = [{"GPU": 1.0} for _ in range(bundles)]
    load = os.getloadavg()[0]
    samples: dict[str, list[float]] = {"domain": [], "strict_pack": []}

    def make(kind: str) -> Any:
        if kind == "domain":
            return rayaccel.ray.scale_up_domain_placement_group(shape)
        return placement_group(shape, strategy="STRICT_PACK")

    with environ({"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}):
        rayaccel.ray.init(simulate="nvidia/dgx-h100", monitor=False, num_cpus=2, include_dashboard=False,
                          logging_level=logging.ERROR, log_to_driver=False)
    try:
        for index in range(rounds + 1):  # the first round warms both paths up and is not kept
            for kind in (("domain", "strict_pack") if index % 2 == 0 else ("strict_pack", "domain")):
                started = time.perf_counter()
                group = make(kind)
                ray.get(group.ready(), timeout=120)
                took = time.perf_counter() - started
                remove_placement_group(group)
                if index:
                    samples[kind].append(took)
    finally:
        rayaccel.ray.shutdown()
    medians = {k: statistics.median(v) for k, v in samples.items()}
    return {"ms": {k: v * 1e3 for k, v in medians.items()}, "ratio": medians["domain"] / medians["strict_pack"],
            "samples": samples, "rounds": rounds, "bundles": bundles, "load_average": [load, os.getloadavg()[0]]}
