"""What rayaccel adds to Ray, each figure measured beside its anchor in the same run (issue 17).

Every Ray-facing figure is a ratio between two things timed alternately on the same machine, so that load
from other jobs hits both; medians of a few repetitions, because a Ray start takes seconds. Ray clusters are
started on free ports and stopped by address (``rayaccel stop --address``), never with a bare ``ray stop``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rayaccel.ray.node import environ
from rayaccel.support.ports import free_ports

BIN = Path(sys.executable).parent
RAY = str(BIN / "ray")
RAYACCEL = [sys.executable, "-m", "rayaccel"]
#: The node every start/inspect figure uses (the issue's example): 8 H100s with NVLink.
FIXTURE = "nvidia/dgx-h100"
#: Deterministic across machines: whether Ray turns token auth on depends on ~/.ray/auth_token.
ENV = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def median_of(fn: Callable[[], float], times: int) -> float:
    return statistics.median(fn() for _ in range(times))


def timed_run(argv: list[str], env: dict[str, str] | None = None, timeout: float = 300) -> float:
    """Seconds a command takes; raises with its output's tail when it fails."""
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env or ENV, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:6])}... failed ({done.returncode}): {(done.stdout + done.stderr)[-800:]}")
    return time.perf_counter() - started


def tree_cpu_run(argv: list[str], cwd: str | None = None, env: dict[str, str] | None = None, timeout: float = 900,
                 interval: float = 0.1) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Run a command; its wall seconds, the CPU seconds (user + system) of it and every process under it, and
    what it printed. The processes are read with psutil every ``interval`` (each one's last reading counts): Ray's
    are not all reaped by a parent that started them, so the ``resource`` module's children's times miss them.
    A process that ends between two readings loses at most ``interval`` of its CPU."""
    import psutil

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(argv, cwd=cwd, env=env or ENV, stdout=out, stderr=err)
        root = psutil.Process(process.pid)
        cpu: dict[tuple[int, float], float] = {}  # (pid, start time) -> CPU seconds, as last read
        while process.poll() is None:
            if time.perf_counter() - started > timeout:
                process.kill()
                process.wait()
                raise subprocess.TimeoutExpired(argv, timeout)
            with contextlib.suppress(psutil.Error):
                for one in [root, *root.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):  # ended meanwhile
                        times = one.cpu_times()
                        cpu[(one.pid, one.create_time())] = times.user + times.system
            time.sleep(interval)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(argv, process.returncode, out.read().decode(errors="replace"),
                                           err.read().decode(errors="replace"))
    return wall, sum(cpu.values()), done


def node_flags() -> tuple[str, list[str]]:
    """The address and `ray start` flags of a fresh head node on free ports (the same for both commands)."""
    from ray.util import get_node_ip_address

    port, client, agent, agent_grpc, metrics, runtime_env, objects = free_ports(7)
    flags = ["--head", f"--port={port}", f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={agent}",
             f"--dashboard-agent-grpc-port={agent_grpc}", f"--metrics-export-port={metrics}",
             f"--runtime-env-agent-port={runtime_env}", f"--object-manager-port={objects}", "--num-cpus=1",
             "--include-dashboard=false"]
    return f"{get_node_ip_address()}:{port}", flags  # type: ignore[no-untyped-call]


def stop_cluster(address: str) -> None:
    subprocess.run([*RAYACCEL, "stop", f"--address={address}", "--grace", "3"], capture_output=True, timeout=120,
                   env=ENV, check=False)


# rayaccel start vs ray start ------------------------------------------------------------------------


def _wait_listed(address: str) -> None:
    """Until `ray status` lists the node, looked for as `rayaccel start` looks (the same reads of Ray's
    autoscaler report, every `LISTING_POLL_S`, confirmed by `ray status`), so both sides wait alike."""
    from rayaccel.ray.node_start import LISTING_POLL_S, NODE_VISIBLE_TIMEOUT_S, Listing, gcs_client
    from rayaccel.support.polling import wait_for

    gcs = gcs_client(address)
    (node_id,) = [node.hex() for node in gcs.get_all_node_info(timeout=10)]  # `ray start` returns once registered
    listing = Listing(address, node_id, gcs)
    wait_for(listing, timeout=NODE_VISIBLE_TIMEOUT_S, interval=LISTING_POLL_S, retry_on=(Exception,),
             what=listing.what())


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def start_command(kind: str, flags: list[str]) -> list[str]:
    if kind in ("ray", "ray+listed"):  # the same resources, given as Ray's own flags
        return [RAY, "start", *flags, "--num-gpus=8", '--resources={"accelerator_type:H100": 1}']
    extra = ["--no-monitor"] if kind == "rayaccel-no-monitor" else []
    return [*RAYACCEL, "start", "--simulate", FIXTURE, *extra, *flags]


def _start(kind: str, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Seconds of one start of ``kind`` on a fresh head node, and the CPU seconds of the command's own
    processes (those it waits for: `ray start`'s, or rayaccel's CLI, its `ray start` process and plugin workers;
    not Ray's daemons); for ``ray+listed`` also this process's CPU while it waits for the listing."""
    address, flags = node_flags()
    try:
        cpu, own = _children_cpu_s(), time.process_time()
        started = time.perf_counter()
        timed_run(start_command(kind, flags), env=env)
        if kind == "ray+listed":  # ... and until `ray status` lists the node, as rayaccel start waits
            _wait_listed(address)
        return time.perf_counter() - started, _children_cpu_s() - cpu + (time.process_time() - own)
    finally:
        stop_cluster(address)


def bench_start(rounds: int = 5) -> dict[str, Any]:
    """`rayaccel start --simulate nvidia/dgx-h100` vs `ray start` with the same flags and resources, and vs
    `ray start` + until `ray status` lists the node; with the CPU seconds of each (load inflates wall time).
    Five rounds: a start whose listing misses one of Ray's autoscaler reports (every 5 s) is 5 s late, on
    either side, and the median of five keeps one such sample of a kind out of the ratio."""
    kinds = ["ray", "rayaccel", "ray+listed", "rayaccel-no-monitor"]
    samples: dict[str, list[float]] = {k: [] for k in kinds}
    cpu: dict[str, list[float]] = {k: [] for k in kinds}
    load = os.getloadavg()[0]
    for _ in range(rounds):  # alternated, so load from other jobs hits every kind alike
        for kind in kinds:
            wall, seconds = _start(kind)
            samples[kind].append(wall)
            cpu[kind].append(seconds)
    medians = {k: statistics.median(v) for k, v in samples.items()}
    return {"s": medians, "samples": samples, "cpu_s": {k: statistics.median(v) for k, v in cpu.items()},
            "cpu_samples": cpu, "load_average": [load, os.getloadavg()[0]],
            "ratio": medians["rayaccel"] / medians["ray"],
            "ratio_to_listed": medians["rayaccel"] / medians["ray+listed"],
            "ratio_no_monitor_to_listed": medians["rayaccel-no-monitor"] / medians["ray+listed"]}


# Worker start with the preload vs without -----------------------------------------------------------

#: A day-zero family (one Ray does not know), which each worker's preload installs in its accelerator registry.
_ACME_SPEC = [{"plugin": "acme", "name": "acme", "resource_name": "ACME", "env_var": "ACME_VISIBLE_DEVICES",
               "quantity_rule": {"kind": "whole", "choices": []}, "custom_parse": False, "custom_env": False}]

_PRELOAD_PROBE = """
import time
import ray._private.worker  # a worker has Ray loaded before its preload modules
started = time.perf_counter()
import rayaccel.ray.worker_preload
print(time.perf_counter() - started)
"""


def _preload_import_s(node_env: dict[str, str]) -> float:
    """The preload's own import (and what it runs at import: installing the families, the claims) in a
    process with the node's env, as a worker of that node has it."""
    done = subprocess.run([sys.executable, "-c", _PRELOAD_PROBE], capture_output=True, text=True,
                          env={**ENV, **node_env}, timeout=120, check=True)
    return float(done.stdout.strip().splitlines()[-1])


class _Probe:
    def pid(self) -> int:
        return os.getpid()

    def cpu_s(self) -> float:
        """CPU seconds this worker process has used (all its threads, Ray's own included)."""
        return time.process_time()


def bench_worker_start(max_pairs: int = 24, budget_s: float = 150.0) -> dict[str, Any]:
    """A Ray worker's start (actor creation to its first answer) on a node rayaccel configured vs on a plain Ray
    node, both nodes of one cluster on this machine.

    The rayaccel node has the env ``rayaccel start --simulate nvidia/dgx-h100`` gives a node
    (``rayaccel.ray.worker_preload`` preloaded, the placement table its workers claim units by, ...) and one day-zero
    family besides, which each worker installs; the plain node has none of it. Starts alternate in pairs, each
    pair in turn starting on the other node first, so load from other jobs hits both alike; the figure is the
    median of the pairs' differences over the median plain start (up to ``max_pairs`` pairs, stopping after
    ``budget_s``), with the load average. Beside it, what load inflates little: the CPU time each worker process
    used up to its first answer (Ray's own threads included), paired the same way."""
    import ray
    from ray.cluster_utils import Cluster
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    import rayaccel.ray
    from rayaccel.ray.node import UNIT_INSTANCE_ENV
    from rayaccel.ray.registry import FAMILIES_ENV

    load = os.getloadavg()[0]
    samples: dict[str, list[float]] = {"with": [], "without": []}
    cpu: dict[str, list[float]] = {"with": [], "without": []}  # the worker's own CPU to its first answer
    with environ({"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}):
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        try:
            node_env = rayaccel.ray.configure_node(simulate=FIXTURE).env
            node_env |= {FAMILIES_ENV: json.dumps([*json.loads(node_env[FAMILIES_ENV]), *_ACME_SPEC]),
                         UNIT_INSTANCE_ENV: f"{node_env[UNIT_INSTANCE_ENV]},ACME"}
            with environ(node_env):
                node = cluster.add_node(num_cpus=1)
            ray.init(address=cluster.address, logging_level=logging.ERROR)
            assert cluster.head_node is not None  # added by Cluster(initialize_head=True)
            nodes = {"with": str(node.node_id), "without": str(cluster.head_node.node_id)}
            actor_class: Any = ray.remote(num_cpus=0)(_Probe)

            def start(kind: str, tag: str) -> tuple[float, float]:
                started = time.perf_counter()
                # A runtime env of its own: Ray starts a new worker instead of reusing an idle one.
                actor: Any = actor_class.options(
                    runtime_env={"env_vars": {"RAYACCEL_BENCH": tag}},
                    scheduling_strategy=NodeAffinitySchedulingStrategy(nodes[kind], soft=False)).remote()
                cpu_s = ray.get(actor.cpu_s.remote(), timeout=120)
                seconds = time.perf_counter() - started
                ray.kill(actor)
                return seconds, cpu_s

            for kind in samples:  # warm: each node's first worker, and Ray's runtime-env path
                start(kind, f"warm-{kind}")
            deadline = time.monotonic() + budget_s
            for pair in range(max_pairs):
                if pair >= 6 and time.monotonic() > deadline:
                    break
                for kind in (("with", "without") if pair % 2 == 0 else ("without", "with")):
                    seconds, cpu_s = start(kind, f"{kind}-{pair}")
                    samples[kind].append(seconds)
                    cpu[kind].append(cpu_s)
        finally:
            rayaccel.ray.shutdown()
            cluster.shutdown()  # type: ignore[no-untyped-call]
    preload_import = median_of(lambda: _preload_import_s(node_env), 5)
    base = statistics.median(samples["without"])
    def paired(values: dict[str, list[float]]) -> float:
        return statistics.median(w - wo for w, wo in zip(values["with"], values["without"], strict=True))

    difference = paired(samples)
    return {"with_s": statistics.median(samples["with"]), "without_s": base, "ratio": 1 + difference / base,
            "paired_difference_s": difference, "pairs": len(samples["with"]),
            "worker_cpu_ms": {k: statistics.median(v) * 1e3 for k, v in cpu.items()},
            "worker_cpu_paired_difference_ms": paired(cpu) * 1e3,
            "preload_import_ms": preload_import * 1e3, "preload_import_share": preload_import / base,
            "load_average": [load, os.getloadavg()[0]], "samples": samples, "cpu_samples": cpu}


# inspect, import, conformance -------------------------------------------------------------------------

_RAY_INIT = ("import ray; ray.init(address='local', num_cpus=1, include_dashboard=False, logging_level=40); "
             "ray.shutdown()")


def bench_inspect_and_init(rounds: int = 5) -> dict[str, Any]:
    """`rayaccel inspect --simulate nvidia/dgx-h100 --json` as a process (each plugin in a worker process, the
    default) vs a bare ray.init()+shutdown(), alternating; and the same with ``--in-process``, what isolation
    costs. Also the CPU seconds of each inspect (the command and its plugin workers: load inflates them little).

    As on a node where rayaccel is installed and has run once: the processes read bytecode (a private
    PYTHONPYCACHEPREFIX, as :func:`bench_import`), and one warm-up run of each has read the fixture and its
    SKU catalog (their schema checks remembered: :mod:`rayaccel.files.checked`)."""
    import resource

    def cpu_s() -> float:
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        return used.ru_utime + used.ru_stime

    inspect, in_process, init, cpu = [], [], [], []
    load = os.getloadavg()[0]
    argv = [*RAYACCEL, "inspect", "--simulate", FIXTURE, "--json"]
    with tempfile.TemporaryDirectory(prefix="rayaccel-bench-pyc-") as cache:
        env = {k: v for k, v in ENV.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPYCACHEPREFIX": cache}
        timed_run(argv, env=env)
        timed_run([*argv, "--in-process"], env=env)
        for _ in range(rounds):
            before = cpu_s()
            inspect.append(timed_run(argv, env=env))
            cpu.append(cpu_s() - before)
            in_process.append(timed_run([*argv, "--in-process"], env=env))
            init.append(timed_run([sys.executable, "-c", _RAY_INIT]))
    return {"inspect_s": statistics.median(inspect), "inspect_in_process_s": statistics.median(in_process),
            "ray_init_s": statistics.median(init), "ratio": statistics.median(inspect) / statistics.median(init),
            "inspect_cpu_s": statistics.median(cpu), "rounds": rounds, "load_average": [load, os.getloadavg()[0]]}


def bench_import(rounds: int = 15) -> dict[str, Any]:
    """`import rayaccel` (and what a plugin module imports) vs a bare Python start, as processes, alternating.

    Every process reads bytecode, as on a node where the packages were installed: a shell with
    PYTHONDONTWRITEBYTECODE=1 (this one) would otherwise compile each module edited since its ``.pyc`` at every
    start (~5 ms for records.py alone), measuring the compiler instead of the import. The bytecode goes to a
    private cache (PYTHONPYCACHEPREFIX), written by one warm-up run of each code; the bare start uses it too."""
    codes = {"bare": "pass", "import rayaccel": "import rayaccel",
             "plugin import": "from rayaccel import Device, FamilyDeclaration, hookimpl",
             "import rayaccel.cli": "import rayaccel.cli"}
    samples: dict[str, list[float]] = {k: [] for k in codes}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="rayaccel-bench-pyc-") as cache:
        env = {k: v for k, v in ENV.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPYCACHEPREFIX": cache}
        for code in codes.values():
            timed_run([sys.executable, "-c", code], env=env)
        for _ in range(rounds):
            for name, code in codes.items():
                samples[name].append(timed_run([sys.executable, "-c", code], env=env))
    ms = {k: statistics.median(v) * 1e3 for k, v in samples.items()}
    return {"ms": ms, "extra_ms": {k: v - ms["bare"] for k, v in ms.items() if k != "bare"}, "rounds": rounds,
            "load_average": [load, os.getloadavg()[0]]}


def bench_conformance(plugin: str, rounds: int = 3) -> dict[str, Any]:
    """Full conformance runs of a plugin (`pytest --conformance`, a process each) vs ray.init()+shutdown() (a
    process each), alternated: anchor, run, anchor, ..., anchor; each run against the mean of the anchors on
    either side of it, and the median of those ratios (load that comes and goes hits both sides). Each side's CPU
    (every process under it) is read too: on a machine with few cores the run's CPU over the cores is its floor."""
    runs: list[float] = []
    runs_cpu: list[float] = []
    anchors: list[float] = []
    anchors_cpu: list[float] = []

    def anchor() -> None:
        wall, cpu, done = tree_cpu_run([sys.executable, "-c", _RAY_INIT], timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"ray.init()+shutdown() failed ({done.returncode}): "
                               f"{(done.stdout + done.stderr)[-800:]}")
        anchors.append(wall)
        anchors_cpu.append(cpu)

    anchor()
    load = os.getloadavg()[0]
    done: subprocess.CompletedProcess[str] | None = None
    failed: list[str] = []  # every run's failed checks (a run under load can fail one: the row says which)
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="rayaccel-bench-") as directory:
            wall, cpu, done = tree_cpu_run([str(BIN / "pytest"), "--conformance", "--conformance-plugin", plugin, "-q",
                                            "-p", "no:cacheprovider"], cwd=directory)
            runs.append(wall)
            runs_cpu.append(cpu)
            failed += [line.split(" - ")[0].removeprefix("FAILED ") for line in done.stdout.splitlines()
                       if line.startswith("FAILED ")]
        anchor()
    assert done is not None
    ratios = [run / ((before + after) / 2) for run, before, after in zip(runs, anchors[:-1], anchors[1:], strict=True)]
    summary = next((line for line in reversed(done.stdout.splitlines()) if " in " in line and "passed" in line), "")
    cores = len(os.sched_getaffinity(0))
    return {"plugin": plugin, "s": statistics.median(runs), "ray_init_s": statistics.median(anchors),
            "ratio": statistics.median(ratios), "ratios": ratios, "runs_s": runs, "anchors_s": anchors,
            "cpu_s": statistics.median(runs_cpu), "ray_init_cpu_s": statistics.median(anchors_cpu),
            "runs_cpu_s": runs_cpu, "anchors_cpu_s": anchors_cpu, "cores": cores,
            # The least wall time the run's CPU allows on this machine's cores, against the anchor's wall time (as the
            # target is): a run can come no closer to the anchor than this however its work overlaps. Under load the
            # anchor's wall time grows, the run's CPU hardly: only a quiet run's figure says where the floor is.
            "cpu_floor_ratio": statistics.median(runs_cpu) / cores / statistics.median(anchors),
            "rounds": rounds, "exit": done.returncode, "summary": summary.strip("= "), "failed": failed,
            "load_average": [load, os.getloadavg()[0]]}


# Health monitor CPU --------------------------------------------------------------------------------


#: A GB200 NVL72 domain is 18 compute trays of 4 GPUs, each tray its own node with its own monitor.
NVL72_TRAY = "nvidia/gb200-nvl72-tray"


def bench_monitor_cpu(window_s: float = 20.0, fixture: str = FIXTURE) -> dict[str, Any]:
    """CPU used by the node's health monitor (actor + its plugin workers) polling ``fixture``'s devices at 1 Hz
    (health every poll, the plugins' metrics twice per Ray metrics report: ``samples`` of the ``polls``), and, over
    the same window, by an idle Ray actor (Ray's 10 ms signal check on its idle main thread; the monitor's main
    thread runs its loop, so the monitor does not pay it)."""
    import psutil
    import ray

    import rayaccel.ray
    from rayaccel.ray.monitor import monitor_status
    from rayaccel.support.polling import wait_for

    with environ({"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}):
        rayaccel.ray.init(simulate=fixture, monitor=True, monitor_interval=1.0, num_cpus=1, include_dashboard=False,
                          logging_level=logging.ERROR)
    try:
        node_id = ray.get_runtime_context().get_node_id()

        def status() -> dict[str, Any]:
            return monitor_status(node_id) or {"polls": 0}

        actor = psutil.Process(wait_for(status, lambda s: s["polls"] >= 3, timeout=120, interval=0.5,
                                        what="the monitor's third poll")["pid"])
        idle_class: Any = ray.remote(num_cpus=0)(_Probe)
        idle_actor = idle_class.remote()  # kept: Ray ends an actor whose handle is gone
        idle = psutil.Process(ray.get(idle_actor.pid.remote(), timeout=120))

        def cpu(procs: list[psutil.Process]) -> float:
            total = 0.0
            for proc in procs:
                with contextlib.suppress(psutil.Error):
                    times = proc.cpu_times()
                    total += times.user + times.system
            return total

        before = status()
        monitor = [actor, *actor.children(recursive=True)]
        cpu_before, idle_before, started = cpu(monitor), cpu([idle]), time.monotonic()
        time.sleep(window_s)  # the measurement window itself, not a wait for a condition
        cpu_used, elapsed = cpu(monitor) - cpu_before, time.monotonic() - started
        idle_used = cpu([idle]) - idle_before
        after = status()
        polls, samples = after["polls"] - before["polls"], after["samples"] - before["samples"]
        devices = len(after["health"])
    finally:
        rayaccel.ray.shutdown()
    return {"fixture": fixture, "devices": devices, "core_percent": 100 * cpu_used / elapsed, "polls": polls,
            "samples": samples, "metrics_every_s": after["metrics_every"],
            "window_s": elapsed, "ms_cpu_per_poll": 1e3 * cpu_used / max(polls, 1),
            "idle_actor_core_percent": 100 * idle_used / elapsed}


def bench_activation_start(rounds: int = 101) -> dict[str, Any]:
    """Interpreter start (``python -c pass``: a process that never imports Ray) with the Ray activation on vs off
    (issue 40): two scratch virtual environments over this one, identical but for the file `rayaccel enable`
    writes into one of them, started alternately. The figure is the median of the paired differences."""
    import shutil
    import sysconfig

    root = Path(tempfile.mkdtemp(prefix="rayaccel-bench-activation-"))
    try:
        pythons = {}
        for name in ("off", "on"):
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / name)], check=True, timeout=120)
            python = str(root / name / "bin" / "python")
            site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                  capture_output=True, text=True, check=True, timeout=60).stdout.strip()
            Path(site, "_project_venv.pth").write_text(
                f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n")
            pythons[name] = python
        subprocess.run([pythons["on"], "-m", "rayaccel", "enable"], check=True, capture_output=True, timeout=120)
        load = os.getloadavg()[0]
        samples: dict[str, list[float]] = {"off": [], "on": []}
        for python in pythons.values():  # warm: the page cache, both venvs' files read once
            timed_run([python, "-c", "pass"])
        for i in range(rounds):
            order = ("off", "on") if i % 2 == 0 else ("on", "off")
            for name in order:
                samples[name].append(timed_run([pythons[name], "-c", "pass"]))
        differences = [on - off for on, off in zip(samples["on"], samples["off"], strict=True)]
        quartiles = statistics.quantiles(differences, n=4)
        return {"off_ms": statistics.median(samples["off"]) * 1e3, "on_ms": statistics.median(samples["on"]) * 1e3,
                "extra_ms": statistics.median(differences) * 1e3, "rounds": rounds,
                "extra_quartiles_ms": [quartiles[0] * 1e3, quartiles[2] * 1e3],
                "spread_ms": {name: [min(v) * 1e3, max(v) * 1e3] for name, v in samples.items()},
                "load_average": [load, os.getloadavg()[0]], **_activation_line_cost()}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _activation_line_cost(number: int = 200) -> dict[str, float]:
    """The same cost without process noise, in this process: running the .pth line once (what ``site`` does), and
    one lookup of the finder it installs for a module that is not Ray's (what every later import pays)."""
    from rayaccel.ray.activation import pth_line

    line = pth_line()
    before = list(sys.meta_path)
    started = time.perf_counter()
    for _ in range(number):
        exec(line, {})  # the line rayaccel itself writes, as site runs it
        finder = sys.meta_path[0]
        sys.meta_path[:] = before
    line_us = (time.perf_counter() - started) / number * 1e6
    started = time.perf_counter()
    for _ in range(number * 50):
        finder.find_spec("json.decoder", None)
    return {"line_us": line_us, "find_spec_ns": (time.perf_counter() - started) / (number * 50) * 1e9}
