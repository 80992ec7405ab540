"""The process that holds a conformance run's Ray cluster (``python -m rayaccel_conformance.harness.cluster_host``).

The suite's own process grades hooks while they run: any thread, process or file that appears meanwhile is
blamed on the hook being watched. Starting Ray nodes there would have to wait for every check to finish (each
node costs seconds: its raylet waits for two Python agents). In this process they start while the cheaper
checks run: it starts the ``ray.cluster_utils.Cluster`` through the SDK (``rayaccel.ray.add_node``) and answers
on its stdout, one JSON line per request read from its stdin, in order:

- ``{"op": "head"}`` -> ``{"address": ...}``: the head node (no accelerators).
- ``{"op": "nodes", "plugin": NAME, "fixtures": [REF, ...], "timed": BOOL}`` -> ``{"nodes": {REF: node id},
  "errors": {REF: why}, "faults": {REF: fault file}, "start_ms": {REF: ms}, "retried": {REF: why}}``: one node
  per fixture, started one after another and waited for together; with ``timed`` (the default) the first is
  waited for alone, so its start (the SDK's configuration, the inventory in isolated workers, Ray's processes,
  until the node is registered) is timed: RAC310's ``node start``. The suite asks one fixture per request, so
  each answer comes as soon as its node is up. A node Ray gave up on (its raylet did not register within the
  30 s Ray's ``Node()`` waits, as under load) is started once more after its half-started processes are stopped
  by pid; ``retried`` says why, and a second failure is the fixture's error.
- ``{"op": "peer", "plugin": NAME, "fixture": REF}`` -> ``{"node": node id, "retried": why or null}``: one more
  node of the fixture,
  under a host name of its own (RAC311's second simulated host when the plugin ships one fixture); removed as
  ``REF + PEER``.
- ``{"op": "remove", "fixtures": [REF, ...]}`` -> ``{"removed": [...]}``.
- ``{"op": "shutdown"}`` -> ``{"shutdown": true}``, and the process ends; so it does when its stdin closes
  (the suite's process ended), so a run that dies never leaves a cluster behind, and on SIGTERM (the suite
  closing it while a request is still being answered).

A request that fails answers ``{"error": "..."}``. Everything else the process writes (Ray's logs) goes to its
stderr: the protocol has a file descriptor of its own that no child inherits.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

import psutil

#: The key of a fixture's second node (``{"op": "peer"}``).
PEER = "#peer"
#: What Ray 2.60's ``Node()`` raises when the raylet it started did not register with the GCS within its
#: hard-coded 30 s (ray/_private/node.py): the start Ray gave up on, which the host tries once more.
RAY_GAVE_UP = "The current node timed out during startup"
#: Seconds a half-started node's processes get to end on SIGTERM before they are killed.
STOP_TIMEOUT_S = 5.0
#: Ray's own switches for the run's cluster, set as the head's ``_system_config`` (which Ray hands every node and
#: worker of the cluster): what each node costs in CPU, with nothing any check looks at switched off.
SYSTEM_CONFIG: dict[str, Any] = {
    # No check reads the metrics Ray exports (nothing scrapes a node's Prometheus port or its metrics agent):
    # each node's dashboard agent skips its stats report every 5 s, each worker its metrics export.
    "enable_metrics_collection": False,
    # A node declaring 1 CPU keeps one idle worker; Ray kills the others after 1 s idle, so the next check's task
    # on the node starts a fresh one (~0.6 s of CPU each). A fixture's node lives for one plugin's checks: its
    # idle workers stay until it is removed.
    "idle_worker_killing_time_threshold_ms": 10 * 60 * 1000,
}
#: The head's own processes left out, Ray's parameters for it: the log monitor tails every log file of every node
#: on this machine for drivers that ask for their workers' output, and the suite's driver does not
#: (``log_to_driver=False``); the autoscaler monitor has nothing to scale in a cluster whose nodes the harness adds.
HEAD_PARAMS: dict[str, Any] = {"include_log_monitor": False, "no_monitor": True}


def _answer(out: TextIO, reply: dict[str, Any]) -> None:
    out.write(json.dumps(reply) + "\n")
    out.flush()


def _raylets() -> set[psutil.Process]:
    """This process's children that are raylets (Ray starts each node's raylet as a child of the process that
    starts the node; the raylet starts that node's agents and workers under it), held by identity: Ray may reap
    one meanwhile, and its number then name a stranger."""
    found = set()
    for child in psutil.Process().children():
        try:
            if os.path.basename(child.exe() or "") == "raylet" or child.name() == "raylet":
                found.add(child)
        except psutil.Error:
            continue  # ended meanwhile
    return found


def _stop_tree(root: psutil.Process) -> None:
    """Stop a process and everything under it: SIGTERM, then SIGKILL what is left after a bound (psutil signals
    each only while it is the process it was found as)."""
    try:
        tree = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for process in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.terminate()
    _, alive = psutil.wait_procs(tree, timeout=STOP_TIMEOUT_S)
    for process in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    psutil.wait_procs(alive, timeout=STOP_TIMEOUT_S)


def start_retrying(start: Callable[[], Any]) -> tuple[Any, str | None]:
    """``start()`` (a node's start through the SDK), once more if Ray gave up on it: the half-started node's
    processes (its raylet, which this process started, and everything under it) are stopped by pid first.
    Returns the node and, after a retry, why the first start failed; a second failure raises, naming both."""
    before = _raylets()
    try:
        return start(), None
    except Exception as e:
        if RAY_GAVE_UP not in str(e):
            raise  # the SDK refusing the fixture, or Ray failing otherwise: the finding itself
        first = f"{type(e).__name__}: {e}"
    for raylet in _raylets() - before:
        _stop_tree(raylet)
    try:
        return start(), first
    except Exception as e:
        raise RuntimeError(f"Ray gave up on the node's start twice (each raylet did not register with the GCS "
                           f"within Ray's 30 s); first: {first}; then: {type(e).__name__}: {e}") from None


class _Host:
    def __init__(self) -> None:
        self.cluster: Any = None
        self.nodes: dict[str, Any] = {}

    def head(self) -> dict[str, Any]:
        from ray.cluster_utils import Cluster

        import rayaccel.ray

        if self.cluster is None:
            cluster: Any = Cluster(initialize_head=False)
            try:
                rayaccel.ray.add_node(cluster, head=True, plugins=[], num_cpus=1, include_dashboard=False,
                                      _system_config=SYSTEM_CONFIG, **HEAD_PARAMS)
            except BaseException:
                cluster.shutdown()
                raise
            self.cluster = cluster
        return {"address": self.cluster.address}

    def add_nodes(self, plugin: str, fixtures: list[str], timed_first: bool = True) -> dict[str, Any]:
        import rayaccel.ray

        self.head()
        from rayaccel.ray.node import node_configs

        ids: dict[str, str] = {}
        errors: dict[str, str] = {}
        start_ms: dict[str, float] = {}
        retried: dict[str, str] = {}
        for ref in fixtures:
            timed = timed_first and not start_ms  # the first node that starts: waited for alone, so it is its own
            began = [0.0]

            def start(ref: str = ref, timed: bool = timed, began: list[float] = began) -> Any:
                began[0] = time.perf_counter()  # a retried start is timed from its own beginning
                return rayaccel.ray.add_node(self.cluster, simulate=ref, plugins=[plugin], num_cpus=1, wait=timed)

            try:
                node, why = start_retrying(start)
            except Exception as e:  # a node that cannot start is the finding for that fixture
                errors[ref] = f"{type(e).__name__}: {e}"
                continue
            if timed:
                start_ms[ref] = round((time.perf_counter() - began[0]) * 1000, 3)
            if why is not None:
                retried[ref] = why
            self.nodes[ref] = node
            ids[ref] = str(node.node_id)
        if ids:
            self.cluster.wait_for_nodes()
        configs = node_configs()
        faults = {ref: configs[i].fault_file for ref, i in ids.items() if i in configs and configs[i].fault_file}
        return {"nodes": ids, "errors": errors, "faults": faults, "start_ms": start_ms, "retried": retried}

    def add_peer(self, plugin: str, fixture: str) -> dict[str, Any]:
        import rayaccel.ray

        self.head()
        why = None
        if fixture + PEER not in self.nodes:
            self.nodes[fixture + PEER], why = start_retrying(
                lambda: rayaccel.ray.add_node(self.cluster, simulate=fixture, plugins=[plugin], num_cpus=1))
        return {"node": str(self.nodes[fixture + PEER].node_id), "retried": why}

    def remove(self, fixtures: list[str]) -> dict[str, Any]:
        removed = [ref for ref in fixtures if ref in self.nodes]
        nodes = [self.nodes.pop(ref) for ref in removed]
        if self.cluster is not None:
            _terminate_raylets(nodes)
            for node in nodes:
                self.cluster.remove_node(node, allow_graceful=True)
        return {"removed": removed}

    def shutdown(self) -> None:
        import rayaccel.ray

        try:
            rayaccel.ray.shutdown()  # type: ignore[no-untyped-call,unused-ignore]  # the nodes' fault files
        finally:
            if self.cluster is not None:
                _terminate_raylets([*self.cluster.worker_nodes])
                self.cluster.shutdown()
                self.cluster = None


def _terminate_raylets(nodes: list[Any]) -> None:
    """SIGTERM every node's raylet at once (each then stops its agents and workers) before Ray's
    ``Cluster.remove_node`` removes node after node, sending each raylet that SIGTERM and waiting up to 1 s for it
    to end: the raylets end together instead of one after another."""
    from ray._private import ray_constants

    for node in nodes:
        for info in node.all_processes.get(ray_constants.PROCESS_TYPE_RAYLET, []):
            if info.process.poll() is None:
                with contextlib.suppress(OSError):  # ended meanwhile
                    info.process.terminate()


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(0)  # unwinds whatever it is doing into main's clean-up


def main() -> int:
    # SIGTERM (the suite's process closing it while it starts nodes, e.g. a run interrupted) ends it as stdin's
    # end does: what it started is shut down first; a node half started dies with it (Ray's nodes fate-share).
    signal.signal(signal.SIGTERM, _stop)
    # The protocol's own descriptor, not inherited by Ray's processes; fd 1 then points at stderr, so nothing
    # printed here or by a child can corrupt an answer.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    host = _Host()
    try:
        for line in sys.stdin:
            request = json.loads(line)
            op = request.get("op")
            try:
                if op == "head":
                    _answer(out, host.head())
                elif op == "nodes":
                    _answer(out, host.add_nodes(str(request["plugin"]), list(request["fixtures"]),
                                                bool(request.get("timed", True))))
                elif op == "peer":
                    _answer(out, host.add_peer(str(request["plugin"]), str(request["fixture"])))
                elif op == "remove":
                    _answer(out, host.remove(list(request["fixtures"])))
                elif op == "shutdown":
                    break
                else:
                    _answer(out, {"error": f"unknown request {op!r}"})
            except Exception as e:  # answered, so the suite's process can say what failed
                _answer(out, {"error": f"{type(e).__name__}: {e}"})
    finally:
        host.shutdown()
    with contextlib.suppress(OSError):  # stdin closed: nobody is reading any more
        _answer(out, {"shutdown": True})
    return 0


if __name__ == "__main__":
    sys.exit(main())
