"""One Ray cluster per conformance run, shared by every Ray check of every plugin.

A ``ray.cluster_utils.Cluster`` with a head node that has no accelerator, and one node per fixture, started
through the SDK (``rayaccel.ray.add_node``). The cluster lives in a process of its own
(:mod:`rayaccel_conformance.harness.cluster_host`), so its nodes can start while the cheaper checks run in this
one (:meth:`SharedCluster.prestart`): starting them here would put Ray's threads and processes beside the hooks
the suite watches. This process connects to it as the driver. A plugin's fixtures are asked for together, one
request each (a fixture's Ray checks wait for its own node only), and removed after the plugin's last Ray check,
so a run over many plugins never holds more than one plugin's nodes.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from typing import IO, TYPE_CHECKING, Any

from rayaccel.records import NodeInventory
from rayaccel.support.polling import WaitTimeout, wait_for
from rayaccel.support.raycompat import RAY_ACCELERATOR_TYPE_LABEL, RAY_NODE_ID_LABEL
from rayaccel_conformance.harness.ray_probe import UnitHolder, probe
from rayaccel_conformance.registry import CheckFailed

if TYPE_CHECKING:
    from rayaccel_conformance.harness.subject import Subject

TASK_TIMEOUT_S = 60.0
#: Seconds a check waits for its fixture's node to be alive (it registered already: this is slack for load).
NODE_ALIVE_TIMEOUT_S = 30.0
#: Tasks sent one after another by label selector in RAC208.
SELECTOR_TASKS = 3
#: Seconds the cluster's process may take to start the head node, each fixture's node, and to shut down.
HEAD_START_TIMEOUT_S = 120.0
NODE_START_TIMEOUT_S = 60.0
SHUTDOWN_TIMEOUT_S = 60.0
#: How much of the cluster process's log a failure quotes.
LOG_TAIL_CHARS = 2000


class ClusterProcessError(RuntimeError):
    """The process holding the cluster failed a request, ended, or did not answer in time."""


def _ray_nodes() -> list[dict[str, Any]]:
    import ray

    return list(ray.nodes())  # type: ignore[no-untyped-call,unused-ignore]


class ClusterProcess:
    """The running :mod:`~rayaccel_conformance.harness.cluster_host`: requests are sent at once and answered in
    order, so a request made early (the nodes) is waited for only where its answer is needed."""

    def __init__(self) -> None:
        # Ray's logs, quoted when a request fails; closed with the process (close()).
        self._log: IO[bytes] = tempfile.TemporaryFile(prefix="rayaccel-conformance-cluster-")  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rayaccel_conformance.harness.cluster_host"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._log, env=dict(os.environ), bufsize=0)
        self._sent = 0
        self._answers: list[dict[str, Any]] = []
        self._pending = b""

    @property
    def pid(self) -> int:
        return self.process.pid

    def send(self, **request: Any) -> int:
        """Send a request; returns its ticket for :meth:`answer`."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode())  # unbuffered: sent now
        except (OSError, ValueError):  # a broken pipe, or one closed already
            raise ClusterProcessError(self._failure("ended before it was asked to " + str(request["op"]))) from None
        self._sent += 1
        return self._sent - 1

    def answered(self, ticket: int) -> bool:
        """Whether the request's answer is in (or the process ended), without waiting."""
        try:
            self._read(ticket, time.monotonic())
        except ClusterProcessError as e:
            return "did not answer" not in str(e)
        return True

    def answer(self, ticket: int, timeout: float) -> dict[str, Any]:
        """The answer to a request, read within ``timeout`` seconds; raises ClusterProcessError."""
        self._read(ticket, time.monotonic() + timeout)
        reply = self._answers[ticket]
        if "error" in reply:
            raise ClusterProcessError(self._failure(f"failed: {reply['error']}"))
        return reply

    def _read(self, ticket: int, deadline: float) -> None:
        assert self.process.stdout is not None
        timeout = max(0.0, deadline - time.monotonic())
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while len(self._answers) <= ticket:
                left = deadline - time.monotonic()
                if not selector.select(max(0.0, left)):
                    raise ClusterProcessError(self._failure(f"did not answer within {timeout:g}s"))
                chunk = os.read(self.process.stdout.fileno(), 65536)
                if not chunk:
                    raise ClusterProcessError(self._failure("ended"))
                *lines, self._pending = (self._pending + chunk).split(b"\n")
                self._answers += [json.loads(line) for line in lines if line.strip()]

    def close(self) -> None:
        """Shut the cluster down (bounded), then end the process. Still answering a request (nodes starting when
        a run is interrupted or stops early), it is told to stop now (SIGTERM) rather than after that request."""
        try:
            if self._sent and not self.answered(self._sent - 1):
                self.process.terminate()
            else:
                self.answer(self.send(op="shutdown"), SHUTDOWN_TIMEOUT_S)
        except ClusterProcessError:
            pass  # killed below
        finally:
            for stream in (self.process.stdin, self.process.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):  # a pipe the process closed first
                        stream.close()
            try:
                self.process.wait(timeout=SHUTDOWN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=SHUTDOWN_TIMEOUT_S)
            self._log.close()

    def _failure(self, what: str) -> str:
        self._log.seek(0, os.SEEK_END)
        size = self._log.tell()
        self._log.seek(max(0, size - LOG_TAIL_CHARS))
        tail = self._log.read().decode(errors="replace").strip()
        return f"the conformance run's Ray cluster process {what}" + (f"; its log ends: {tail}" if tail else "")


class SharedCluster:
    def __init__(self) -> None:
        self.cluster: ClusterProcess | None = None
        self.address: str | None = None
        self.connected = False
        self._head_ticket: int | None = None
        # Fixture ref -> (the ticket of its node's start, its plugin): one request per fixture, answered in order.
        self._node_tickets: dict[str, tuple[int, Subject]] = {}
        self.nodes: dict[str, str | Exception] = {}  # fixture ref -> node id, or why it has none
        self.node_ids: dict[str, str] = {}
        self.fault_files: dict[str, str] = {}  # fixture ref -> the fault file of its node
        self.start_ms: dict[str, float] = {}  # fixture ref -> its node's start, timed (the plugin's first fixture)
        self.peers: dict[str, str] = {}  # fixture ref + PEER -> node id of the fixture's second node (RAC311)
        self.retried: dict[str, str] = {}  # fixture ref (+ PEER) -> why Ray gave up on its node's first start
        self.installed: set[str] = set()
        self.cpu_selected: set[str] = set()
        self._starting: list[Any] = []  # the probes that start the nodes' workers (kept: never waited for)
        self.ray_version: str | None = None
        self._auth_mode_before: str | None = None

    # Life cycle ------------------------------------------------------------------------------

    def _launch(self) -> ClusterProcess:
        if self.cluster is None:
            from rayaccel.ray.auth import AUTH_MODE_ENV, set_auth_mode

            # The suite's cluster is private to this run, on localhost: token authentication protects nothing
            # there, and Ray 2.60's cluster_utils nodes under RAY_AUTH_MODE=token never run an actor (plain Ray
            # reproduces it). A ~/.ray/auth_token left by any earlier ray.init() would otherwise fail every Ray
            # check. Set here, it reaches the cluster's process and this one's driver.
            self._auth_mode_before = os.environ.get(AUTH_MODE_ENV)
            set_auth_mode("disabled")
            try:
                self.cluster = ClusterProcess()
            except BaseException:
                self._restore_auth_mode()
                raise
            from rayaccel_conformance.harness.guard import exclude_process_tree

            exclude_process_tree(self.cluster.pid)  # its nodes start while hooks are watched: never theirs
            self._head_ticket = self.cluster.send(op="head")
        return self.cluster

    def prestart(self, subject: Subject) -> None:
        """Start the head and the plugin's nodes now, in the cluster's process, without waiting for them."""
        if subject.loaded and subject.fixture_paths():
            self._request_nodes(subject)

    def _request_nodes(self, subject: Subject) -> None:
        """Ask for a node per fixture of the plugin not asked for yet, one request each (so each fixture's Ray
        checks wait for its own node only, while the next ones start); the plugin's first is timed (RAC310)."""
        cluster = self._launch()
        wanted = [ref for ref in subject.fixture_paths() if ref not in self.nodes and ref not in self._node_tickets]
        timed = not any(ref in self.nodes or ref in self._node_tickets for ref in subject.fixture_paths())
        for ref in wanted:
            self._node_tickets[ref] = (cluster.send(op="nodes", plugin=subject.name, fixtures=[ref], timed=timed),
                                       subject)
            timed = False

    def connect_if_ready(self) -> None:
        """Between two checks, never while a hook runs: connect now if :meth:`prestart` asked for the head and it is
        up (the driver's start then overlaps the nodes', instead of waiting for the first Ray check), and take the
        nodes already up, starting their workers while the next nodes start."""
        if self.cluster is None or self._head_ticket is None:
            return
        if not self.connected and self.cluster.answered(self._head_ticket):
            with contextlib.suppress(Exception):  # the first Ray check starts it again, and reports what failed
                self.start()
        if self.connected:
            for ref, (ticket, subject) in list(self._node_tickets.items()):
                if not self.cluster.answered(ticket) or not subject.built(ref):
                    break  # answered in order: none after it is either; an inventory is built by a check, not here
                with contextlib.suppress(Exception):  # the fixture's own check takes it, and reports what failed
                    self._take_node(subject, ref)

    def start(self) -> None:
        """The head node up and this process connected to the cluster as its driver."""
        if self.connected:
            return
        import ray

        import rayaccel.ray

        cluster = self._launch()
        assert self._head_ticket is not None
        self.ray_version = ray.__version__
        try:
            self.address = str(cluster.answer(self._head_ticket, HEAD_START_TIMEOUT_S)["address"])
            rayaccel.ray.connect(self.address, plugins=[], log_to_driver=False)
        except BaseException:
            self.shutdown()
            raise
        self.connected = True

    def _restore_auth_mode(self) -> None:
        from rayaccel.ray.auth import set_auth_mode

        set_auth_mode(self._auth_mode_before)

    def shutdown(self) -> None:
        if self.cluster is None:
            return
        import rayaccel.ray
        from rayaccel.ray.registry import uninstall
        from rayaccel_conformance.harness.guard import exclude_process_tree

        try:
            if self.connected:
                rayaccel.ray.shutdown()  # type: ignore[no-untyped-call,unused-ignore]
        finally:
            self.cluster.close()
            exclude_process_tree(None)
            uninstall()
            self.cluster = None
            self.connected = False
            self._head_ticket = None
            self._node_tickets.clear()
            self._starting.clear()
            self.nodes.clear()
            self.node_ids.clear()
            self.fault_files.clear()
            self.start_ms.clear()
            self.peers.clear()
            self.retried.clear()
            self.installed.clear()
            self._restore_auth_mode()

    def nodes_for(self, subject: Subject, fixture: str | None = None) -> None:
        """A node for every fixture of the plugin (started now unless :meth:`prestart` asked already), waited for:
        ``fixture``'s alone if given, else all of them."""
        self.start()
        self._request_nodes(subject)
        for ref in [fixture] if fixture is not None else list(subject.fixture_paths()):
            self._take_node(subject, ref)

    def _take_node(self, subject: Subject, ref: str) -> None:
        """Read the answer to ``ref``'s node start (waiting, bounded by the starts still ahead of it), record it,
        and start the node's workers."""
        import rayaccel.ray

        if ref not in self._node_tickets:
            return
        assert self.cluster is not None
        if subject.name not in self.installed:
            rayaccel.ray.install_driver([subject.name], subject.manager)
            self.installed.add(subject.name)
        ticket = self._node_tickets[ref][0]
        ahead = sum(1 for other, _ in self._node_tickets.values() if other <= ticket)
        try:
            reply = self.cluster.answer(ticket, NODE_START_TIMEOUT_S * ahead)
        except ClusterProcessError as e:
            self.nodes[ref] = e
            return
        finally:
            del self._node_tickets[ref]
        for failed, why in reply["errors"].items():
            self.nodes[failed] = RuntimeError(why)
        for started, node_id in reply["nodes"].items():
            self.nodes[started] = self.node_ids[started] = str(node_id)
        self.fault_files.update(reply.get("faults", {}))
        self.start_ms.update(reply.get("start_ms", {}))
        self.retried.update(reply.get("retried", {}))
        self._start_workers(subject, list(reply["nodes"]))

    def _start_workers(self, subject: Subject, fixtures: list[str]) -> None:
        """Each new node starts the workers RAC108's unit shapes will run in, all nodes together, instead of one
        node after another as each check asks. Ray's worker pool keeps workers that ran a GPU task apart from the
        rest and nothing else (on one node, tasks asking for a GPU, then for each MIG profile, then for a CPU, run
        in two processes), so one task per kind is sent: one per shape started a worker each for nothing (all at
        once, none idle yet). The tasks sent are RAC108's own probe; nothing waits for them, and RAC108 runs its
        own for every shape."""
        import ray

        family = subject.family()
        for ref in fixtures:
            try:
                fam = subject.inventory(ref).family(family.name)
            except CheckFailed:
                continue  # RAC105 says why
            offered = [family.resource_name] if fam is not None and fam.schedulable_units else []
            shapes = [*offered, *(fam.partition_units if fam is not None else {})]
            by_kind = {self._worker_kind(resource): resource for resource in reversed(shapes)}  # the first of each
            for resource in by_kind.values():
                task = ray.remote(probe).options(**self._unit_options(resource),
                                                 label_selector={RAY_NODE_ID_LABEL: self.node_ids[ref]})
                self._starting.append(task.remote(family.visible_devices_env_var, resource))

    @staticmethod
    def _worker_kind(resource: str) -> bool:
        """Which of Ray's worker kinds a task asking for ``resource`` runs in: True for a GPU worker."""
        return "num_gpus" in SharedCluster._unit_options(resource)

    def node_id(self, subject: Subject, fixture: str) -> str:
        self.nodes_for(subject, fixture)
        node = self.nodes[fixture]
        if isinstance(node, Exception):
            raise CheckFailed(f"{fixture}: the SDK could not start a Ray node: {type(node).__name__}: {node}")
        return self.node_ids[fixture]

    def restarted(self, key: str) -> list[str]:
        """The evidence line of a node Ray gave up on once and the harness started again, if it was."""
        why = self.retried.get(key)
        return [f"{key}: Ray gave up on the node's first start ({why}); its processes were stopped by pid and the "
                "node started again"] if why else []

    def two_nodes(self, subject: Subject) -> tuple[str, str, str]:
        """Two nodes, each a simulated host of the plugin: its first two fixtures' nodes, or its one fixture's and
        a second node of that fixture (started now, under a host name of its own; removed with the plugin's).
        Returns their node ids and the evidence line naming them."""
        from rayaccel_conformance.harness.cluster_host import PEER

        refs = sorted(subject.fixture_paths())
        if not refs:
            raise CheckFailed(f"plugin {subject.name} ships no fixtures: no simulated host to start nodes on")
        if len(refs) >= 2:
            return (self.node_id(subject, refs[0]), self.node_id(subject, refs[1]),
                    "; ".join([f"nodes of {refs[0]} and {refs[1]}", *self.restarted(refs[0]),
                               *self.restarted(refs[1])]))
        first = self.node_id(subject, refs[0])
        if refs[0] + PEER not in self.peers:
            assert self.cluster is not None
            try:
                reply = self.cluster.answer(self.cluster.send(op="peer", plugin=subject.name, fixture=refs[0]),
                                            NODE_START_TIMEOUT_S)
            except ClusterProcessError as e:
                raise CheckFailed(f"{refs[0]}: a second node of the fixture did not start: {e}") from None
            self.peers[refs[0] + PEER] = str(reply["node"])
            if reply.get("retried"):
                self.retried[refs[0] + PEER] = str(reply["retried"])
        self._node(self.peers[refs[0] + PEER])
        where = [f"two nodes of {refs[0]}, each a simulated host of its own", *self.restarted(refs[0]),
                 *self.restarted(refs[0] + PEER)]
        return first, self.peers[refs[0] + PEER], "; ".join(where)

    def release(self, subject: Subject) -> None:
        """Remove the plugin's nodes: its Ray checks are done (waiting first for nodes still starting)."""
        if self.cluster is None:
            return
        refs = list(subject.fixture_paths())
        pending = [self._node_tickets.pop(ref)[0] for ref in refs if ref in self._node_tickets]
        if pending:
            with contextlib.suppress(ClusterProcessError):  # removed below all the same, or gone with the process
                self.cluster.answer(max(pending), NODE_START_TIMEOUT_S * len(pending))
        for ref in refs:
            self.nodes.pop(ref, None)
            self.node_ids.pop(ref, None)
            self.fault_files.pop(ref, None)
        peers = [key for key in self.peers if key.split("#", 1)[0] in refs]  # RAC311's second nodes
        for key in peers:
            del self.peers[key]
        for key in [key for key in self.retried if key.split("#", 1)[0] in refs]:
            del self.retried[key]
        refs += peers
        try:
            self.cluster.answer(self.cluster.send(op="remove", fixtures=refs), NODE_START_TIMEOUT_S)
        except ClusterProcessError:
            self.shutdown()  # a cluster that cannot remove nodes is not trusted with the next plugin's

    # Checks ----------------------------------------------------------------------------------

    def _node(self, node_id: str) -> dict[str, Any]:
        try:
            found: dict[str, Any] = wait_for(
                lambda: next((n for n in _ray_nodes() if n["NodeID"] == node_id), {}), lambda n: bool(n.get("Alive")),
                timeout=NODE_ALIVE_TIMEOUT_S, interval=0.2, what=f"node {node_id} to be alive in the cluster")
        except WaitTimeout as e:
            raise CheckFailed(str(e)) from None
        return found

    @staticmethod
    def _unit_options(resource: str) -> dict[str, Any]:
        # Ray refuses resources={"GPU": 1}: its own accelerator resource has a field of its own.
        if resource == "GPU":
            return {"num_cpus": 0.1, "num_gpus": 1}
        return {"num_cpus": 0.1, "resources": {resource: 1}}

    def single_node_check(self, subject: Subject, fixture: str, inventory: NodeInventory) -> list[str]:
        family = subject.family()
        fam = inventory.family(family.name)
        assert fam is not None
        node_id = self.node_id(subject, fixture)
        node = self._node(node_id)
        wrong = [f"node resource {name}: expected {value:g}, Ray shows {node['Resources'].get(name)}"
                 for name, value in inventory.resources.items() if node["Resources"].get(name) != value]
        if wrong:
            raise CheckFailed(wrong)
        # The whole devices' resource, then each partition profile's (MIG instances, ...): the same isolation.
        offered = [(family.resource_name, fam.schedulable_units)] if fam.schedulable_units else []
        evidence = [*self.restarted(fixture), f"{fixture}: node shows {inventory.resources}"]
        for resource, units in [*offered, *fam.partition_units.items()]:
            evidence += self._units_check(subject, fixture, node_id, resource, units)
        return evidence

    def _units_check(self, subject: Subject, fixture: str, node_id: str, resource: str,
                     units: list[str]) -> list[str]:
        """A task asking for one unit of ``resource`` sees exactly one of ``units``; with two or more, an actor
        holding one and a task beside it see two different ones."""
        import ray

        env_var = subject.family().visible_devices_env_var
        task = ray.remote(probe).options(**self._unit_options(resource), label_selector={RAY_NODE_ID_LABEL: node_id})
        try:
            ran_on, env, assigned = ray.get(task.remote(env_var, resource), timeout=TASK_TIMEOUT_S)
        except Exception as e:  # GetTimeoutError, a worker crash, a refused request: all are findings
            raise CheckFailed(f"a task asking for 1 {resource} on {fixture}'s node did not run: "
                              f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None
        self._expect_one_unit(subject, units, "a task", ran_on, node_id, env, assigned, resource)
        evidence = [f"a task asking for 1 {resource} saw {env_var}={env} (Ray assigned {assigned})"]
        if len(units) >= 2:
            evidence.append(self._second_unit(subject, units, node_id, resource, env_var))
        return evidence

    def _expect_one_unit(self, subject: Subject, units: list[str], who: str, ran_on: str, node_id: str,
                         env: str | None, assigned: list[str], resource: str) -> list[str]:
        seen: list[str]
        env_var = subject.family().visible_devices_env_var
        if env is None:
            raise CheckFailed(f"{who}'s {env_var} is unset")
        seen = subject.manager.parse_visible(subject.name, env)
        if len(seen) != 1 or seen != assigned or seen[0] not in units or ran_on != node_id:
            raise CheckFailed(f"{who} asking for 1 {resource} saw {env_var}={env!r} (units {seen}); Ray assigned "
                              f"{assigned}; the node's units are {units}")
        return seen

    def _second_unit(self, subject: Subject, units: list[str], node_id: str, resource: str, env_var: str) -> str:
        """An actor holds one unit; a task then gets another: both must see exactly their own unit."""
        import ray

        options = {**self._unit_options(resource), "label_selector": {RAY_NODE_ID_LABEL: node_id}}
        holder: Any = ray.remote(UnitHolder).options(**options).remote()
        try:
            try:
                held = ray.get(holder.probe.remote(env_var, resource), timeout=TASK_TIMEOUT_S)
                task = ray.remote(probe).options(**options)
                other = ray.get(task.remote(env_var, resource), timeout=TASK_TIMEOUT_S)
            except Exception as e:  # GetTimeoutError, a worker crash: findings
                raise CheckFailed(f"an actor holding 1 {resource} and a task asking for another did not run: "
                                  f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None
            first = self._expect_one_unit(subject, units, "an actor", held[0], node_id, held[1], held[2], resource)
            second = self._expect_one_unit(subject, units, "a task beside it", other[0], node_id, other[1],
                                           other[2], resource)
        finally:
            ray.kill(holder)
        if first == second:
            raise CheckFailed(f"an actor and a task, each holding 1 {resource}, both saw unit {first[0]} "
                              f"({env_var}={held[1]!r} and {other[1]!r}): two processes on one unit")
        return (f"with an actor holding unit {first[0]} ({env_var}={held[1]}), a task got unit {second[0]} "
                f"({env_var}={other[1]})")

    def label_selector_check(self, subject: Subject, fixture: str, inventory: NodeInventory) -> list[str]:
        import ray

        fam = inventory.family(subject.family().name)
        assert fam is not None and fam.accelerator_type
        node_id = self.node_id(subject, fixture)
        wanted = fam.accelerator_type
        self._node(node_id)
        alive = [n for n in _ray_nodes() if n["Alive"]]
        having = {n["NodeID"] for n in alive if n.get("Labels", {}).get(RAY_ACCELERATOR_TYPE_LABEL) == wanted}
        if node_id not in having:
            labels = self._node(node_id).get("Labels", {})
            raise CheckFailed(f"{fixture}'s node is not labelled {RAY_ACCELERATOR_TYPE_LABEL}={wanted}: "
                              f"{labels.get(RAY_ACCELERATOR_TYPE_LABEL)!r}")
        others = len(alive) - len(having)
        if not others:
            raise CheckFailed(f"every node of the cluster has {wanted}: the check needs one without it")
        # One unit as well, as a real task would ask: the worker RAC108 started for that shape is reused. A node
        # whose devices are all partitioned offers no whole one: a unit of its first partition profile then.
        family = subject.family()
        unit = family.resource_name if fam.schedulable_units else next(iter(sorted(fam.partition_units)), None)
        task = ray.remote(probe).options(**(self._unit_options(unit) if unit else {"num_cpus": 0.1}),
                                          label_selector={RAY_ACCELERATOR_TYPE_LABEL: wanted})
        try:
            placed = [ray.get(task.remote(family.visible_devices_env_var, unit or family.resource_name),
                              timeout=TASK_TIMEOUT_S) for _ in range(SELECTOR_TASKS)]
        except Exception as e:  # a task that never runs is the finding
            raise CheckFailed(f"tasks selecting {RAY_ACCELERATOR_TYPE_LABEL}={wanted} did not run: "
                              f"{type(e).__name__}") from None
        if subject.name not in self.cpu_selected:
            # Once per plugin, the selector alone (no unit asked for): only the label can keep it off the
            # head node, which has CPUs to spare.
            self.cpu_selected.add(subject.name)
            alone = ray.remote(probe).options(num_cpus=0.1, label_selector={RAY_ACCELERATOR_TYPE_LABEL: wanted})
            try:
                placed.append(ray.get(alone.remote(family.visible_devices_env_var, family.resource_name),
                                      timeout=TASK_TIMEOUT_S))
            except Exception as e:  # a task that never runs is the finding
                raise CheckFailed(f"a CPU task selecting {RAY_ACCELERATOR_TYPE_LABEL}={wanted} did not run: "
                                  f"{type(e).__name__}") from None
        stray = sorted({ran_on for ran_on, _, _ in placed} - having)
        if stray:
            raise CheckFailed(f"tasks selecting {wanted} ran on nodes without it: {stray}")
        return [*self.restarted(fixture),
                f"{len(placed)} tasks selecting {RAY_ACCELERATOR_TYPE_LABEL}={wanted} ({SELECTOR_TASKS} also asking "
                f"for 1 {unit or 'CPU share'}) ran on the {len(having)} node(s) that have it, "
                f"none on the {others} without"]


_shared: SharedCluster | None = None


def shared_cluster() -> SharedCluster:
    global _shared
    if _shared is None:
        _shared = SharedCluster()
    return _shared


def shutdown_shared_cluster() -> None:
    global _shared
    if _shared is not None:
        _shared.shutdown()
        _shared = None
