"""The process that holds a conformance run's Ray cluster (``python -m rayaccel_conformance.harness.cluster_host``).

The suite's own process grades hooks while they run: any thread, process or file that appears meanwhile is
blamed on the hook being watched. Starting Ray nodes there would have to wait for every check to finish (each
node costs seconds: its raylet waits for two Python agents). In this process they start while the cheaper
checks run, and each node, the head included, starts and lives in a process of its own, forked from this one
once Ray, the SDK and the installed plugins are loaded here (so a node's process pays none of that): the SDK
hands a node its configuration through the starting process's environment (``rayaccel.ray.add_node``) and Ray's
``Node()`` installs its signal handlers, so two starts in one process would mix; in processes of their own, up to
one node per core this process may use starts at once (:func:`concurrent_starts`), while its raylet and agents
start and register. Ray names a node's sockets and log files by counting those in its session's folders, which
two processes would count alike: each node gets a temporary folder of its own (Ray's ``temp_dir``), removed with
it. This process answers on its stdout, one JSON line per request read from its stdin, in order:

- ``{"op": "head"}`` -> ``{"address": ...}``: the head node (no accelerators).
- ``{"op": "nodes", "plugin": NAME, "fixtures": [REF, ...], "timed": BOOL}`` -> ``{"nodes": {REF: node id},
  "errors": {REF: why}, "faults": {REF: fault file}, "start_ms": {REF: ms}, "retried": {REF: why},
  "started": {REF: [began, registered]}}``: one node per fixture, each in a process of its own; with ``timed``
  (the default) the first starts alone (no other node starting meanwhile, none after it until it is up), so its
  start (the SDK's configuration, the inventory, Ray's processes, until the node is registered) is timed:
  RAC310's ``node start``. ``started`` gives each start's bounds (Unix time, seconds). The suite asks one fixture
  per request, so each answer comes as soon as its node is up, while the next ones start. A node Ray gave up on
  (its raylet did not register within the 30 s Ray's ``Node()`` waits, as under load) is started once more after
  its half-started processes are stopped by pid; ``retried`` says why, and a second failure is the fixture's
  error.
- ``{"op": "peer", "plugin": NAME, "fixture": REF}`` -> ``{"node": node id, "retried": why or null}``: one more
  node of the fixture, under a host name of its own (RAC311's second simulated host when the plugin ships one
  fixture); removed as ``REF + PEER``.
- ``{"op": "remove", "fixtures": [REF, ...]}`` -> ``{"removed": [...]}``: the nodes stop together, each in its
  own process.
- ``{"op": "shutdown"}`` -> ``{"shutdown": true}``, and the process ends; so it does when its stdin closes
  (the suite's process ended), so a run that dies never leaves a cluster behind, and on SIGTERM (the suite
  closing it while a request is still being answered). A node's process that loses this one stops its node.

Node starts run at once; every other request waits for the requests before it to be answered, and none after it
begins before it is. A request that fails answers ``{"error": "..."}``. Everything else the process writes (Ray's
logs) goes to its stderr: the protocol has a file descriptor of its own that no child inherits.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import selectors
import shutil
import signal
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, TextIO

import psutil

#: The key of a fixture's second node (``{"op": "peer"}``).
PEER = "#peer"
#: What Ray 2.60's ``Node()`` raises when the raylet it started did not register with the GCS within its
#: hard-coded 30 s (ray/_private/node.py): the start Ray gave up on, which the host tries once more.
RAY_GAVE_UP = "The current node timed out during startup"
#: Seconds a half-started node's processes get to end on SIGTERM before they are killed.
STOP_TIMEOUT_S = 5.0
#: Seconds a node's process may take to answer its start: Ray's ``Node()`` waits up to 30 s for the raylet, and
#: once more after it gave up; the SDK's configuration and the stop of the half-started node come on top.
NODE_PROCESS_START_TIMEOUT_S = 150.0
#: Seconds a node's process may take to stop its node (Ray's ``remove_node`` waits for each of its processes).
NODE_PROCESS_STOP_TIMEOUT_S = 60.0
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

# This process forks a process per node once it has loaded what a node's start needs; it keeps no thread.
_FORK = multiprocessing.get_context("fork")


def concurrent_starts() -> int:
    """How many nodes start at once: one per core this process may use. A node's start is mostly Ray's processes
    starting (the raylet, its two Python agents, its first worker); on one core two starts would only take turns,
    each coming closer to the 30 s Ray's ``Node()`` waits."""
    return max(1, len(os.sched_getaffinity(0)))


def _answer(out: TextIO, reply: dict[str, Any]) -> None:
    out.write(json.dumps(reply) + "\n")
    out.flush()


def _raylets() -> set[int]:
    """This process's children that are raylets (Ray starts each node's raylet as a child of the process that
    starts the node; the raylet starts that node's agents and workers under it)."""
    found = set()
    for child in psutil.Process().children():
        try:
            if os.path.basename(child.exe() or "") == "raylet" or child.name() == "raylet":
                found.add(child.pid)
        except psutil.Error:
            continue  # ended meanwhile
    return found


def _stop_tree(pid: int) -> None:
    """Stop a process and everything under it by pid: SIGTERM, then SIGKILL what is left after a bound."""
    try:
        root = psutil.Process(pid)
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
    for pid in _raylets() - before:
        _stop_tree(pid)
    try:
        return start(), first
    except Exception as e:
        raise RuntimeError(f"Ray gave up on the node's start twice (each raylet did not register with the GCS "
                           f"within Ray's 30 s); first: {first}; then: {type(e).__name__}: {e}") from None


class _Head:
    """The head as Ray's ``Cluster.add_node`` sees it from a node's own process, where the head does not run: a
    node joining the cluster reads only the head's GCS address."""

    def __init__(self, gcs_address: str) -> None:
        self.gcs_address = gcs_address


def _start(job: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
    """Start the node ``job`` names in this process; returns Ray's ``Cluster``, the node and the answer."""
    from ray.cluster_utils import Cluster

    import rayaccel.ray
    from rayaccel.ray.node import node_configs

    cluster: Any = Cluster(initialize_head=False)
    if job["op"] == "head":
        try:
            rayaccel.ray.add_node(cluster, head=True, plugins=[], num_cpus=1, include_dashboard=False,
                                  _system_config=SYSTEM_CONFIG, **HEAD_PARAMS)
        except BaseException:
            cluster.shutdown()
            raise
        return cluster, cluster.head_node, {"address": cluster.address}
    cluster.head_node = _Head(job["address"])
    began = [0.0, 0.0]

    def start() -> Any:
        began[:] = [time.perf_counter(), time.time()]  # a retried start is timed from its own beginning
        return rayaccel.ray.add_node(cluster, simulate=job["fixture"], plugins=[job["plugin"]], num_cpus=1,
                                     hostname=job.get("hostname"), temp_dir=job["temp_dir"])

    node, why = start_retrying(start)
    config = node_configs()[str(node.node_id)]
    return cluster, node, {"node": str(node.node_id), "fault": config.fault_file, "host": config.inventory.host,
                           "start_ms": round((time.perf_counter() - began[0]) * 1000, 3), "retried": why,
                           "started": [began[1], time.time()]}


def _serve(conn: Connection, job: dict[str, Any], inherited: list[int]) -> None:
    """A node's own process: start the node, answer, hold it until told to stop or until the cluster's process
    is gone (its end of the pipe closes), then stop it."""
    import rayaccel.ray

    for fd in inherited:  # the protocol's descriptor and the pipes to the other nodes' processes
        with contextlib.suppress(OSError):
            os.close(fd)
    cluster: Any = None
    node: Any = None
    try:
        try:
            cluster, node, reply = _start(job)
        except Exception as e:  # answered: the fixture's finding
            reply = {"error": f"{type(e).__name__}: {e}"}
        conn.send(reply)
        if node is not None:
            with contextlib.suppress(EOFError, OSError):
                conn.recv()
    finally:
        try:
            if node is not None and job["op"] == "head":
                cluster.shutdown()
            elif node is not None:
                cluster.remove_node(node, allow_graceful=True)
        finally:
            rayaccel.ray.shutdown()  # type: ignore[no-untyped-call,unused-ignore]  # the node's fault file


class _NodeProcess:
    """One node's process, seen from this one."""

    def __init__(self, job: dict[str, Any], inherited: list[int]) -> None:
        self.key = str(job.get("fixture", "head")) + ("" if job["op"] != "peer" else PEER)
        self.temp_dir = job.get("temp_dir")
        self.conn, child = _FORK.Pipe()
        self.process = _FORK.Process(target=_serve, args=(child, job, [*inherited, self.conn.fileno()]),
                                     name=f"rayaccel node {self.key}")
        self.process.start()
        assert self.process.pid is not None  # started
        self.pid: int = self.process.pid
        child.close()
        self.deadline = time.monotonic() + NODE_PROCESS_START_TIMEOUT_S
        self.reply: dict[str, Any] | None = None

    def poll(self) -> bool:
        """Whether its answer is in (read now if it came), failing it once the bound has passed."""
        if self.reply is None and self.conn.poll():
            try:
                self.reply = self.conn.recv()
            except (EOFError, OSError):
                self.reply = {"error": f"the process starting {self.key}'s node ended (exit code "
                                       f"{self.process.exitcode})"}
        if self.reply is None and time.monotonic() > self.deadline:
            self.reply = {"error": f"{self.key}'s node did not start within {NODE_PROCESS_START_TIMEOUT_S:g}s"}
            _stop_tree(self.pid)
        return self.reply is not None

    def stop(self) -> None:
        """Tell it to stop its node (or, still starting, to stop once it answers)."""
        with contextlib.suppress(OSError, ValueError):
            self.conn.send("stop")

    def join(self, deadline: float) -> None:
        """Wait for it to end by ``deadline``; what is left then is stopped by pid. Its folder goes with it."""
        self.process.join(max(0.0, deadline - time.monotonic()))
        if self.process.is_alive():
            _stop_tree(self.pid)
            self.process.join(STOP_TIMEOUT_S)
        self.conn.close()
        if self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)


def _stop_all(processes: list[_NodeProcess]) -> None:
    """Stop nodes together: each process is told at once, then each is waited for (bounded). One still starting
    (this process told to stop while nodes start) is stopped now, by pid, with what it started."""
    for process in processes:
        if process.reply is None:
            _stop_tree(process.pid)
        else:
            process.stop()
    deadline = time.monotonic() + NODE_PROCESS_STOP_TIMEOUT_S
    for process in processes:
        process.join(deadline)


class _Request:
    """A request and its answer; a node start's processes start as :class:`_Host` lets them."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.request = request
        self.op = request.get("op")
        self.reply: dict[str, Any] | None = None
        # Node starts run beside each other; a timed one (RAC310's figure) and every other request run alone.
        self.exclusive = self.op != "nodes" or bool(request.get("timed", True))
        self.to_start: deque[str] = deque(str(ref) for ref in request.get("fixtures", []))
        self.starting: dict[str, _NodeProcess] = {}
        self.ids: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self.faults: dict[str, str] = {}
        self.start_ms: dict[str, float] = {}
        self.retried: dict[str, str] = {}
        self.started: dict[str, list[float]] = {}


class _Host:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.head: _NodeProcess | None = None
        self.address: str | None = None
        self.nodes: dict[str, _NodeProcess] = {}  # fixture ref (+ PEER) -> its node's process
        self.hosts: dict[str, str] = {}  # fixture ref -> the host name its node was given
        self.width = concurrent_starts()

    # Node processes ------------------------------------------------------------------------

    def _spawn(self, job: dict[str, Any]) -> _NodeProcess:
        known = [p for p in [self.head, *self.nodes.values()] if p is not None]
        inherited = [self.out.fileno(), *(p.conn.fileno() for p in known if not p.conn.closed)]
        if job["op"] != "head":
            job = {**job, "address": self.address, "temp_dir": tempfile.mkdtemp(prefix="rayaccel-node-")}
        return _NodeProcess(job, inherited)

    def starting(self) -> list[_NodeProcess]:
        return [p for p in [self.head, *self.nodes.values()] if p is not None and p.reply is None]

    def _head_up(self) -> str | None:
        """The head's address once it is up (its process started at the first request that needs it); an
        error answer if it failed."""
        if self.head is None:
            self.head = self._spawn({"op": "head"})
        if not self.head.poll():
            return None
        assert self.head.reply is not None
        if "error" in self.head.reply:
            return "error"
        self.address = str(self.head.reply["address"])
        return self.address

    # Requests -------------------------------------------------------------------------------

    def advance(self, pending: deque[_Request]) -> None:
        """Begin what may begin and take the answers that came, in order: node starts beside each other (up to
        :attr:`width` at once), anything else once every request before it is answered, and nothing after it
        until it is."""
        for index, item in enumerate(pending):
            if item.reply is None and item.exclusive and any(p.reply is None for p in list(pending)[:index]):
                return
            if item.reply is None:
                self._step(item)
            if item.reply is None and item.exclusive:
                return

    def _step(self, item: _Request) -> None:
        op = item.op
        try:
            if op == "head":
                up = self._head_up()
                if up is not None:
                    assert self.head is not None and self.head.reply is not None
                    item.reply = self.head.reply
            elif op == "nodes":
                self._nodes(item)
            elif op == "peer":
                self._peer(item)
            elif op == "remove":
                self._remove(item)
            elif op == "shutdown":
                return  # main ends once every request before it is answered
            else:
                item.reply = {"error": f"unknown request {op!r}"}
        except Exception as e:  # answered, so the suite's process can say what failed
            item.reply = {"error": f"{type(e).__name__}: {e}"}

    def _nodes(self, item: _Request) -> None:
        up = self._head_up()
        if up is None:
            return
        if up == "error":
            assert self.head is not None and self.head.reply is not None
            item.reply = self.head.reply
            return
        timed = bool(item.request.get("timed", True))
        while item.to_start and len(self.starting()) < (1 if timed and not item.ids and not item.errors
                                                         else self.width):
            ref = item.to_start[0]
            known = self.nodes.get(ref)
            if known is not None:  # asked for before: up already, or still starting for an earlier request
                if known.reply is None:
                    break
                item.to_start.popleft()
                item.ids[ref] = str(known.reply["node"])
                continue
            item.to_start.popleft()
            self.nodes[ref] = item.starting[ref] = self._spawn(
                {"op": "nodes", "plugin": item.request["plugin"], "fixture": ref})
            if timed and len(item.starting) == 1 and not item.ids:
                break  # the timed start runs alone
        for ref, process in list(item.starting.items()):
            if not process.poll():
                continue
            del item.starting[ref]
            self._took(item, ref, process, timed and not item.start_ms and not item.ids and not item.errors)
        if not item.to_start and not item.starting:
            item.reply = {"nodes": item.ids, "errors": item.errors, "faults": item.faults, "start_ms": item.start_ms,
                          "retried": item.retried, "started": item.started}

    def _took(self, item: _Request, ref: str, process: _NodeProcess, timed: bool) -> None:
        reply = process.reply
        assert reply is not None
        if "error" in reply:
            item.errors[ref] = str(reply["error"])
            del self.nodes[ref]
            process.join(time.monotonic() + NODE_PROCESS_STOP_TIMEOUT_S)
            return
        item.ids[ref] = str(reply["node"])
        self.hosts[ref] = str(reply["host"])
        if reply.get("fault"):
            item.faults[ref] = str(reply["fault"])
        if timed:
            item.start_ms[ref] = float(reply["start_ms"])
        if reply.get("retried"):
            item.retried[ref] = str(reply["retried"])
        item.started[ref] = list(reply["started"])

    def _peer(self, item: _Request) -> None:
        up = self._head_up()
        if up is None:
            return
        fixture = str(item.request["fixture"])
        key = fixture + PEER
        if key not in self.nodes:
            # The name the SDK gives a further node of a fixture in one cluster (rayaccel.ray.add_node): this
            # fixture's first node, if it has one here, holds the fixture's own.
            hostname = f"{self.hosts[fixture]}-2" if fixture in self.hosts else None
            self.nodes[key] = self._spawn({"op": "peer", "plugin": item.request["plugin"], "fixture": fixture,
                                           "hostname": hostname})
        process = self.nodes[key]
        if not process.poll():
            return
        assert process.reply is not None
        if "error" in process.reply:
            del self.nodes[key]
            process.join(time.monotonic() + NODE_PROCESS_STOP_TIMEOUT_S)
            item.reply = {"error": str(process.reply["error"])}
        else:
            item.reply = {"node": str(process.reply["node"]), "retried": process.reply.get("retried")}

    def _remove(self, item: _Request) -> None:
        removed = [str(ref) for ref in item.request["fixtures"] if ref in self.nodes]
        _stop_all([self.nodes.pop(ref) for ref in removed])
        item.reply = {"removed": removed}

    def shutdown(self) -> None:
        """Every node's process stops its node (all at once), then the head's."""
        nodes, self.nodes = list(self.nodes.values()), {}
        _stop_all(nodes)
        if self.head is not None:
            _stop_all([self.head])
            self.head = None


def _warm() -> None:
    """Load here, once, what every node's start needs (each node's process is forked from this one): Ray's node
    start and the dashboard agent's dependencies it checks for, the SDK, the installed plugins."""
    import ray._private.node
    import ray.cluster_utils

    with contextlib.suppress(ImportError):  # Ray without its dashboard's dependencies starts its agents minimal
        import ray.dashboard.optional_deps  # noqa: F401

    import rayaccel.ray  # noqa: F401
    from rayaccel.plugins.manager import default_manager

    default_manager()


class _Lines:
    """Requests read from stdin as they come, without blocking."""

    def __init__(self) -> None:
        self.fd = sys.stdin.fileno()
        self.closed = False
        self._pending = b""

    def read(self) -> list[dict[str, Any]]:
        chunk = os.read(self.fd, 65536)
        if not chunk:
            self.closed = True
        *lines, self._pending = (self._pending + chunk).split(b"\n")
        return [json.loads(line) for line in lines if line.strip()]


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(0)  # unwinds whatever it is doing into main's clean-up


def main() -> int:
    # SIGTERM (the suite's process closing it while it starts nodes, e.g. a run interrupted) ends it as stdin's
    # end does: what it started is shut down first; a node half started dies with its process (Ray's processes
    # fate-share with the process that started them).
    signal.signal(signal.SIGTERM, _stop)
    # The protocol's own descriptor, not inherited by Ray's processes; fd 1 then points at stderr, so nothing
    # printed here or by a child can corrupt an answer.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    _warm()
    host = _Host(out)
    requests = _Lines()
    pending: deque[_Request] = deque()
    try:
        with selectors.DefaultSelector() as selector:
            while True:
                host.advance(pending)
                while pending and pending[0].reply is not None:
                    _answer(out, pending.popleft().reply or {})
                if pending and pending[0].op == "shutdown":
                    break
                if requests.closed:
                    break  # the suite's process is gone: nobody reads an answer
                watched = {p.conn.fileno() for p in host.starting()}
                if not requests.closed and not any(item.op == "shutdown" for item in pending):
                    watched.add(requests.fd)
                for fd in set(selector.get_map()) - watched:
                    selector.unregister(fd)
                for fd in watched - set(selector.get_map()):
                    selector.register(fd, selectors.EVENT_READ)
                if requests.fd in {key.fd for key, _ in selector.select(timeout=1.0)}:
                    pending += [_Request(request) for request in requests.read()]
    finally:
        host.shutdown()
    with contextlib.suppress(OSError):  # stdin closed: nobody is reading any more
        _answer(out, {"shutdown": True})
    return 0


if __name__ == "__main__":
    sys.exit(main())
