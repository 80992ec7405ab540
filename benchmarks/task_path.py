"""The path every task takes (issue 42): tasks/s on a rayaccel node vs a plain Ray node with the same resources.

Both heads run at once on this machine, each started by its own command (``rayaccel start --simulate ...`` and
``ray start`` with the same GPUs, custom resources and ``accelerator_type``), with ``--num-cpus`` CPUs so that
8 tasks run at once on either. Each node gets one driver process for the whole row, connected once; it warms
up (batches of empty tasks until two in a row start no new Python worker: a worker start is ~1 s of CPU here and
would be the figure otherwise) and then, on each round, times one batch of ``tasks`` empty tasks submitted at
once. The two nodes take turns (which goes first alternates), and each round gives one ratio, rayaccel/plain;
the row's figure is the median of those ratios. Load from other jobs moves both sides of a round alike, and
moves the rounds apart: each side's spread (its interquartile range over its median) is printed, and a row
whose spread is over :data:`SPREAD_LIMIT` grades nothing (``NO GRADE``) rather than PASS or MISS.

Beside tasks/s each side gives the CPU milliseconds per task of its raylet, its task workers and its driver
(what a task costs wherever it is spent; load inflates it less than wall time), and how many Python workers
ran the tasks. Tasks are declared with ``max_calls=0``: Ray's default for a ``num_gpus`` function is a new
worker per task (``max_calls=1``), which would measure worker starts, a figure of its own
(:func:`benchmarks.against_ray.bench_worker_start`).

``python -m benchmarks.task_path [row label ...]`` runs these rows alone; ``python -m benchmarks.task_path group``
the placement group row alone.
"""

from __future__ import annotations

import json
import logging
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from benchmarks.against_ray import ENV, RAY, RAYACCEL, node_flags, stop_cluster, timed_run

#: The CPUs each node offers: 8 tasks of one CPU run at once (8 whole GPUs, or 8 quarter ones).
NUM_CPUS = 8
#: Where the day-zero test plugin (acme: a family Ray does not know) is importable from.
TEST_PLUGINS = str(Path(__file__).resolve().parent.parent / "tests")
#: The target of every task row: a rayaccel node runs at least this share of a plain node's tasks/s.
TARGET = 0.9
#: A side whose tasks/s spread more than this over the rounds (interquartile range / median) grades nothing.
SPREAD_LIMIT = 0.25
#: Warm-up batches at most (each until a batch starts no new worker).
WARMUP_BATCHES = 12
#: Each row: (label, the rayaccel node, the plain node's resources, the task's request).
ROWS: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    ("num_gpus=1", "nvidia/dgx-h100", {"num_gpus": 8, "resources": {"accelerator_type:H100": 1}}, {"num_gpus": 1}),
    ("num_gpus=0.25", "nvidia/dgx-h100", {"num_gpus": 8, "resources": {"accelerator_type:H100": 1}},
     {"num_gpus": 0.25}),
    ("num_gpus=2", "nvidia/dgx-h100", {"num_gpus": 8, "resources": {"accelerator_type:H100": 1}}, {"num_gpus": 2}),
    ("day-zero family, ACME=1", "acme/acme-4", {"num_gpus": 0, "resources": {"ACME": 4, "accelerator_type:R1": 1}},
     {"resources": {"ACME": 1}}),
]
KINDS = ("ray", "rayaccel")

# One driver per node and row: reads a batch size per line, answers one JSON line per batch.
_DRIVER = """
import json, logging, os, sys, time
import psutil, ray
address, request = sys.argv[1], json.loads(sys.argv[2])
ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
def pid():
    import os
    return os.getpid()
task = ray.remote(max_calls=0)(pid).options(**request)
me, seen, processes = psutil.Process(), set(), {}
def cpu():  # the node's raylet, its task workers and this driver: the CPU a task costs wherever it is spent
    total = 0.0
    for process in [me, *processes.values()]:
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    tasks = int(line)
    before, started = cpu(), time.perf_counter()
    pids = ray.get([task.remote() for _ in range(tasks)], timeout=600)
    seconds = time.perf_counter() - started
    used = cpu() - before
    new = set(pids) - seen
    seen |= new
    for p in new:
        try:
            processes[p] = psutil.Process(p)
            processes.setdefault("raylet", processes[p].parent())
        except psutil.Error:
            pass
    print(json.dumps({"tasks_per_s": tasks / seconds, "cpu_ms_per_task": 1e3 * used / tasks,
                      "new_workers": len(new), "workers": len(seen)}), flush=True)
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


class Driver:
    """A driver process connected to one node for a whole row: one batch of empty tasks per :meth:`batch`."""

    def __init__(self, address: str, request: dict[str, Any], fixture: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", _DRIVER, address, json.dumps(request)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=_env(fixture))
        self._answer()

    def _answer(self) -> dict[str, Any]:
        stdout: IO[str] | None = self.process.stdout
        assert stdout is not None
        line = stdout.readline()  # bounded: every batch's ray.get has a timeout, and so has ray.init
        if not line:
            self.process.wait(timeout=30)
            stderr = self.process.stderr.read() if self.process.stderr else ""
            raise RuntimeError(f"the task driver failed ({self.process.returncode}): {stderr[-800:]}")
        return json.loads(line)  # type: ignore[no-any-return]

    def batch(self, tasks: int) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{tasks}\n")
        self.process.stdin.flush()
        return self._answer()

    def warm_up(self, tasks: int) -> int:
        """Batches until two in a row start no new worker (at most :data:`WARMUP_BATCHES`); returns how many ran."""
        quiet = 0
        for done in range(1, WARMUP_BATCHES + 1):
            quiet = quiet + 1 if self.batch(tasks)["new_workers"] == 0 and done > 1 else 0
            if quiet == 2:
                return done
        return WARMUP_BATCHES

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def spread(samples: list[float]) -> float:
    """Interquartile range over the median: 0.1 means the middle half of the rounds lie within 10%."""
    q1, q2, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return (q3 - q1) / q2


def median_interval(samples: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median of ``samples`` (order statistics: the true median lies
    between the k-th smallest and the k-th largest with at least ``confidence``): it narrows with more rounds,
    where a side's spread does not; with too few rounds, the smallest and largest."""
    ordered = sorted(samples)
    n = len(ordered)
    below = 0.0  # P(Binomial(n, 1/2) < k): the median below the k-th smallest
    k = 0
    while k < n // 2:
        below += math.comb(n, k) / 2 ** n
        if below > (1 - confidence) / 2:
            break
        k += 1
    k = max(k, 1)
    return ordered[k - 1], ordered[n - k]


@dataclass
class Row:
    """One row's rounds: per node kind its tasks/s, CPU per task and workers; the per-round ratios."""

    label: str
    fixture: str
    request: dict[str, Any]
    tasks_per_s: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    cpu_ms: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    workers: dict[str, int] = field(default_factory=dict)
    new_workers_timed: dict[str, int] = field(default_factory=lambda: {k: 0 for k in KINDS})
    warmup_batches: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        ratios = [a / b for a, b in zip(self.tasks_per_s["rayaccel"], self.tasks_per_s["ray"], strict=True)]
        cpu_ratios = [b / a for a, b in zip(self.cpu_ms["rayaccel"], self.cpu_ms["ray"], strict=True)]
        spreads = {k: spread(v) for k, v in self.tasks_per_s.items()}
        ratio = statistics.median(ratios)
        widest = max(spreads.values())
        verdict = ("NO GRADE" if widest > SPREAD_LIMIT else "PASS" if ratio >= TARGET else "MISS")
        return {"fixture": self.fixture, "request": self.request, "rounds": len(ratios),
                "tasks_per_s": {k: statistics.median(v) for k, v in self.tasks_per_s.items()},
                "spread": spreads, "ratio": ratio, "ratio_spread": spread(ratios) if len(ratios) > 1 else 0.0,
                "ratio_interval": median_interval(ratios),
                "cpu_ms_per_task": {k: statistics.median(v) for k, v in self.cpu_ms.items()},
                "cpu_ratio": statistics.median(cpu_ratios), "verdict": verdict, "workers": self.workers,
                "new_workers_while_timed": self.new_workers_timed, "warmup_batches": self.warmup_batches,
                "samples": self.tasks_per_s, "cpu_samples": self.cpu_ms, "ratios": ratios}


def describe(label: str, value: dict[str, Any]) -> str:
    per_s, cpu_ms, spreads = value["tasks_per_s"], value["cpu_ms_per_task"], value["spread"]
    verdict = value["verdict"]
    if verdict == "NO GRADE":
        verdict += f" (a side spread {max(spreads.values()):.0%} > {SPREAD_LIMIT:.0%})"
    low, high = value["ratio_interval"]
    return (f"{label}: {per_s['rayaccel']:.0f} vs {per_s['ray']:.0f} tasks/s, x{value['ratio']:.2f} (median of "
            f"{value['rounds']} per-round ratios, 95% interval {low:.2f}-{high:.2f}, their spread "
            f"{value['ratio_spread']:.0%}; spread rayaccel "
            f"{spreads['rayaccel']:.0%}, plain {spreads['ray']:.0%}); CPU per task {cpu_ms['rayaccel']:.2f} vs "
            f"{cpu_ms['ray']:.2f} ms (x{value['cpu_ratio']:.2f}); workers {value['workers']['rayaccel']} vs "
            f"{value['workers']['ray']} (started while timed: {value['new_workers_while_timed']['rayaccel']} vs "
            f"{value['new_workers_while_timed']['ray']}): {verdict}")


def bench_task_path(rounds: int = 31, tasks: int = 500, rows: list[str] | None = None) -> dict[str, Any]:
    """Per row: tasks/s of each node kind (median of ``rounds`` alternating), the median per-round ratio
    rayaccel/plain, each side's spread, the CPU per task, the verdict; the load average before and after."""
    load = os.getloadavg()
    out: dict[str, Any] = {"rows": {}, "rounds": rounds, "tasks": tasks, "num_cpus": NUM_CPUS,
                           "target": TARGET, "spread_limit": SPREAD_LIMIT}
    for fixture in dict.fromkeys(f for label, f, _, _ in ROWS if rows is None or label in rows):
        selected = [r for r in ROWS if r[1] == fixture and (rows is None or r[0] in rows)]
        addresses: dict[str, str] = {}
        try:
            for kind in KINDS:
                addresses[kind] = _start(kind, fixture, selected[0][2])
            for label, _, _, request in selected:
                row = Row(label, fixture, request)
                drivers: dict[str, Driver] = {}
                try:
                    for kind in KINDS:
                        drivers[kind] = Driver(addresses[kind], request, fixture)
                        row.warmup_batches[kind] = drivers[kind].warm_up(tasks)
                    for index in range(rounds):
                        for kind in (KINDS if index % 2 == 0 else KINDS[::-1]):
                            measured = drivers[kind].batch(tasks)
                            row.tasks_per_s[kind].append(float(measured["tasks_per_s"]))
                            row.cpu_ms[kind].append(float(measured["cpu_ms_per_task"]))
                            row.new_workers_timed[kind] += int(measured["new_workers"])
                            row.workers[kind] = int(measured["workers"])
                finally:
                    for driver in drivers.values():
                        driver.close()
                value = out["rows"][label] = row.summary()
                print(f"    {describe(label, value)}; load {os.getloadavg()[0]:.1f}", flush=True)
        finally:
            for address in addresses.values():
                stop_cluster(address)
    out["load_average"] = [load[0], os.getloadavg()[0]]
    return out



#: The group row's target: a domain-packed group reaches READY within this multiple of a STRICT_PACK group.
GROUP_TARGET = 1.1
#: The group row's kinds: rayaccel's domain-packed group, the anchor, and Ray's own topology_strategy call
#: with the arguments rayaccel gives it (no rayaccel code before it: what Ray's packing alone costs).
GROUP_KINDS = ("domain", "strict_pack", "ray_topology")


def bench_domain_group(rounds: int = 61, bundles: int = 4) -> dict[str, Any]:
    """A domain-packed placement group (:func:`rayaccel.ray.scale_up_domain_placement_group`, whatever it builds
    the group with) vs a plain ``STRICT_PACK`` group of the same bundles, creation to READY and removed, on one
    simulated ``nvidia/dgx-h100`` node; beside them Ray's own ``topology_strategy`` call alone. Each round
    creates one group of each kind (their order rotates from round to round) and gives one ratio per kind
    against its ``STRICT_PACK`` group; the row's figure is the median of the per-round ratios, graded as the
    task rows are (a side whose times spread more than :data:`SPREAD_LIMIT` grades nothing)."""
    import ray
    from ray.util import placement_group, remove_placement_group

    import rayaccel.ray
    from rayaccel.ray import placement
    from rayaccel.ray.node import environ
    from rayaccel.support.polling import wait_for
    from rayaccel.support.raycompat import RAY_GPU_DOMAIN_LABEL, RAY_TOPOLOGY_NODE_KEY

    shape = [{"GPU": 1.0} for _ in range(bundles)]
    load = os.getloadavg()[0]
    samples: dict[str, list[float]] = {k: [] for k in GROUP_KINDS}

    def make(kind: str) -> Any:
        if kind == "domain":
            return rayaccel.ray.scale_up_domain_placement_group(shape)
        if kind == "ray_topology":
            return placement_group(shape, topology_strategy={RAY_GPU_DOMAIN_LABEL: "STRICT_PACK",
                                                             RAY_TOPOLOGY_NODE_KEY: "PACK"})
        return placement_group(shape, strategy="STRICT_PACK")

    with environ({"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}):
        rayaccel.ray.init(simulate="nvidia/dgx-h100", monitor=False, num_cpus=2, include_dashboard=False,
                          logging_level=logging.ERROR, log_to_driver=False)
    try:
        if not placement.ray_has_topology_strategy():
            raise RuntimeError("this Ray has no topology_strategy: the domain group row compares Ray's call")
        for index in range(rounds + 1):  # the first round warms every path up and is not kept
            shift = index % len(GROUP_KINDS)
            for kind in GROUP_KINDS[shift:] + GROUP_KINDS[:shift]:
                started = time.perf_counter()
                group = make(kind)
                ray.get(group.ready(), timeout=120)
                took = time.perf_counter() - started
                remove_placement_group(group)
                # The next group waits for nothing of this one: a group created while the removed one's GPUs
                # are not back yet goes pending until the GCS retries it (the x0.01-x35 of runs before this).
                wait_for(ray.available_resources, lambda free: free.get("GPU", 0) >= 8, timeout=60,
                         interval=0.005, what="the removed group's GPUs free again")
                if index:
                    samples[kind].append(took)
    finally:
        rayaccel.ray.shutdown()
    ratios = {k: [a / b for a, b in zip(samples[k], samples["strict_pack"], strict=True)]
              for k in ("domain", "ray_topology")}
    spreads = {k: spread(v) for k, v in samples.items()}
    ratio = statistics.median(ratios["domain"])
    widest = max(spreads["domain"], spreads["strict_pack"])
    verdict = "NO GRADE" if widest > SPREAD_LIMIT else "PASS" if ratio <= GROUP_TARGET else "MISS"
    return {"ms": {k: statistics.median(v) * 1e3 for k, v in samples.items()}, "ratio": ratio,
            "ratio_interval": median_interval(ratios["domain"]),
            "ray_topology_ratio": statistics.median(ratios["ray_topology"]),
            "ray_topology_interval": median_interval(ratios["ray_topology"]), "spread": spreads,
            "verdict": verdict, "target": GROUP_TARGET, "spread_limit": SPREAD_LIMIT, "samples": samples,
            "ratios": ratios, "rounds": rounds, "bundles": bundles, "load_average": [load, os.getloadavg()[0]]}


def describe_group(value: dict[str, Any]) -> str:
    ms, spreads = value["ms"], value["spread"]
    low, high = value["ratio_interval"]
    ray_low, ray_high = value["ray_topology_interval"]
    verdict = value["verdict"]
    if verdict == "NO GRADE":
        verdict += f" (a side spread {max(spreads['domain'], spreads['strict_pack']):.0%} > {SPREAD_LIMIT:.0%})"
    return (f"domain-packed group of {value['bundles']}: {ms['domain']:.2f} vs STRICT_PACK {ms['strict_pack']:.2f} ms, "
            f"x{value['ratio']:.2f} (median of {value['rounds']} per-round ratios, 95% interval {low:.2f}-{high:.2f}; "
            f"spread {spreads['domain']:.0%} / {spreads['strict_pack']:.0%}); Ray's topology_strategy call alone "
            f"{ms['ray_topology']:.2f} ms, x{value['ray_topology_ratio']:.2f} ({ray_low:.2f}-{ray_high:.2f}): "
            f"{verdict}")


if __name__ == "__main__":  # python -m benchmarks.task_path [row label ...]: these rows alone
    logging.basicConfig(level=logging.ERROR)
    started = time.perf_counter()
    if sys.argv[1:] == ["group"]:  # python -m benchmarks.task_path group: the placement group row alone
        group = bench_domain_group()
        print(f"{describe_group(group)}; load {group['load_average'][0]:.1f}-{group['load_average'][1]:.1f}")
    else:
        result = bench_task_path(rows=sys.argv[1:] or None)
        print(json.dumps(result, indent=2))
    print(f"{time.perf_counter() - started:.0f} s")
