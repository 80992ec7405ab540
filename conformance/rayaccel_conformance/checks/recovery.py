"""Certified tier, distributed and recovery (RAC311, RAC312): what a plugin does when a peer or a device fails.

Both run in the run's shared Ray cluster (:mod:`rayaccel_conformance.harness.raycluster`) on the nodes it
already started for the plugin's fixtures (one simulated host each), plus one more node of the first fixture
when RAC311 needs two and the plugin ships one fixture. RAC301 kills a sender beside its receiver on one node;
RAC311 moves tensors between two nodes and checks what a killed sender leaves on the machine; RAC203 and
RAC210 inject faults in this process, RAC312 through the health monitor of a real node.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from rayaccel import hookspec
from rayaccel.records import Problem, TransportSpec
from rayaccel_conformance.checks.transport_contract import DEFAULT_RELEASE_TIMEOUT_S
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, CheckSkipped, Evidence, NotApplicable, check

TRANSFER_TIMEOUT_S = 120.0
#: How long what a killed sender left (files, the receiver's descriptors and threads) may take to go (RAC301's
#: default; a run's --conformance-release-timeout may shorten both).
RELEASE_TIMEOUT_S = DEFAULT_RELEASE_TIMEOUT_S
#: The monitor's polling interval in RAC312, and how long a cordon or a recovery may take to show.
MONITOR_INTERVAL_S = 0.5
MONITOR_TIMEOUT_S = 60.0
#: Where a file a sender creates is not one of its buffers: Ray's session files and Python's bytecode caches.
_NOT_BUFFERS = (os.path.join(tempfile.gettempdir(), "ray") + os.sep, "/proc/", "/dev/null")
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT
#: Audit events that create a path, and the position of that path in their arguments.
_CREATING = {"os.symlink": 1, "os.link": 1, "os.rename": 1, "os.replace": 1, "os.mkdir": 0, "os.mkfifo": 0}


def _created_paths(paths: list[str]) -> Callable[[str, tuple[Any, ...]], None]:
    """An audit hook that appends every path this process creates or opens for writing to ``paths``."""

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            if not (len(args) > 2 and isinstance(args[2], int) and args[2] & _WRITES):
                return
            path = args[0]
        elif event in _CREATING:
            path = args[_CREATING[event]]
        else:
            return
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if isinstance(path, str) and not path.endswith(".pyc") and "__pycache__" not in path:
            paths.append(os.path.abspath(path))

    return hook


class _Peer:
    """One end of a transfer. A sender told to :meth:`watch` records the paths it creates from then on: the
    buffers a transport puts on the machine for its transfers (a file in /dev/shm, a link to a segment)."""

    def make(self, seed: int) -> list[str]:
        from rayaccel_conformance.harness.payload import digest, payload

        self.tensors = payload(seed)
        return digest(self.tensors)

    def tensors_ref(self) -> list[Any]:
        return self.tensors

    def digest(self, tensors: list[Any]) -> list[str]:
        from rayaccel_conformance.harness.payload import digest

        return digest(tensors)

    def where(self) -> tuple[str, int]:
        import ray

        return ray.get_runtime_context().get_node_id(), os.getpid()

    def held(self) -> tuple[int, int]:
        """What this process holds: open descriptors and threads."""
        import threading

        return len(os.listdir("/proc/self/fd")), threading.active_count()

    def watch(self) -> None:
        self.created: list[str] = []
        sys.addaudithook(_created_paths(self.created))  # for the process's life: it is killed after the transfer

    def buffers(self) -> list[str]:
        """The paths created since :meth:`watch` that are still there, and shared-memory files it holds open."""
        found = [p for p in dict.fromkeys(self.created) if not p.startswith(_NOT_BUFFERS) and os.path.lexists(p)]
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue  # closed meanwhile
            if target.startswith("/dev/shm/") and target not in found:
                found.append(target)
        return found


def _start(node_id: str) -> Any:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    actor: Any = ray.remote(enable_tensor_transport=True)(_Peer)  # type: ignore[call-overload,unused-ignore]
    return actor.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)).remote()


def _move(spec: TransportSpec, sender: Any, receiver: Any, seed: int) -> None:
    import ray

    want = ray.get(sender.make.remote(seed), timeout=TRANSFER_TIMEOUT_S)
    ref = sender.tensors_ref.options(tensor_transport=spec.name).remote()
    got = ray.get(receiver.digest.remote(ref), timeout=TRANSFER_TIMEOUT_S)
    if got != want:
        bad = [i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b]
        raise RuntimeError(f"transfer {seed} between the nodes: tensors {bad or 'count'} arrived with other bytes")
    del ref


def _receive_from_killed(spec: TransportSpec, doomed: Any, receiver: Any) -> tuple[str, list[str]]:
    """The doomed sender's tensors are extracted, then it is killed before the receiver reads them: the receive
    must fail with one error naming the transport (or, where the bytes outlive the sender, arrive identical).
    Returns the outcome in words and the buffers the sender had put on the machine for the transfer."""
    import psutil
    import ray

    from rayaccel.support.polling import wait_for
    from rayaccel_conformance.harness.exits import released

    want = ray.get(doomed.make.remote(3), timeout=TRANSFER_TIMEOUT_S)
    _, pid = ray.get(doomed.where.remote(), timeout=TRANSFER_TIMEOUT_S)
    ray.get(doomed.watch.remote(), timeout=TRANSFER_TIMEOUT_S)
    ref = doomed.tensors_ref.options(tensor_transport=spec.name).remote()
    ray.wait([ref], timeout=TRANSFER_TIMEOUT_S)  # the sender's part (the metadata) is done
    left = list(ray.get(doomed.buffers.remote(), timeout=TRANSFER_TIMEOUT_S))
    ray.kill(doomed)
    wait_for(lambda: released(pid),
             timeout=TRANSFER_TIMEOUT_S, what=f"the killed sender (pid {pid}) gone", retry_on=(psutil.Error,))
    try:
        got = ray.get(receiver.digest.remote(ref), timeout=TRANSFER_TIMEOUT_S)
    except ray.exceptions.GetTimeoutError:
        raise RuntimeError(f"the receive from a sender killed on the other node did not end in "
                           f"{TRANSFER_TIMEOUT_S:.0f} s") from None
    except ray.exceptions.RayActorError:
        return "Ray killed the receiver (the transport cannot abort)", left
    except ray.exceptions.RayError as e:
        if not any(spec.name in line for line in str(e).splitlines()):
            raise RuntimeError(f"the receive from a killed sender failed with an error that does not name the "
                               f"transport: {str(e).splitlines()[-1] if str(e) else type(e).__name__}") from None
        return "failed naming the transport", left
    finally:
        del ref
    if got != want:
        raise RuntimeError("the receive from a killed sender returned other bytes instead of failing")
    return "arrived identical (the bytes outlive the sender)", left


def across_nodes(spec: TransportSpec, sending_node: str, receiving_node: str) -> str:
    """RAC311 for one transport: a transfer between the nodes, a sender killed mid-transfer, the next transfer, and
    nothing the killed sender put on the machine left behind. Raises RuntimeError; returns the evidence line."""
    import ray

    from rayaccel.support.polling import WaitTimeout, wait_for

    sender, receiver = _start(sending_node), _start(receiving_node)
    actors = [sender, receiver]
    try:
        _move(spec, sender, receiver, 1)
        before = ray.get(receiver.held.remote(), timeout=TRANSFER_TIMEOUT_S)
        doomed = _start(sending_node)
        actors.append(doomed)
        outcome, left = _receive_from_killed(spec, doomed, receiver)
        try:
            ray.get(receiver.held.remote(), timeout=TRANSFER_TIMEOUT_S)
        except ray.exceptions.RayActorError:  # a transport that cannot abort: Ray killed the receiver
            receiver = _start(receiving_node)
            actors.append(receiver)
            before = None
        _move(spec, sender, receiver, 4)
        try:
            wait_for(lambda: [p for p in left if os.path.lexists(p)], lambda still: not still,
                     timeout=RELEASE_TIMEOUT_S, interval=0.5, what="the killed sender's buffers to be freed")
        except WaitTimeout:
            still = [p for p in left if os.path.lexists(p)]
            raise RuntimeError(
                f"the killed sender's buffers are still on the machine {RELEASE_TIMEOUT_S:.0f} s after the failed "
                f"receive and the next transfer: {', '.join(still[:3])}{' ...' if len(still) > 3 else ''} (a "
                "dead peer's buffers must be freed by the receive that finds it dead, or by the next transfer)"
            ) from None
        if before is not None:
            held = before
            try:
                wait_for(lambda: ray.get(receiver.held.remote(), timeout=TRANSFER_TIMEOUT_S),
                         lambda now: now[0] <= held[0] and now[1] <= held[1], timeout=RELEASE_TIMEOUT_S,
                         interval=0.5, what="the receiver holding no more descriptors and threads than before")
            except WaitTimeout as e:
                raise RuntimeError(f"after the failed receive, {e}") from None
    finally:
        # Exit after the queued work (the frees included), so a transport's own clean-up runs; kill if stuck.
        ends = [actor.__ray_terminate__.remote() for actor in actors]
        _, stuck = ray.wait(ends, num_returns=len(ends), timeout=TRANSFER_TIMEOUT_S)
        if stuck:
            for actor in actors:
                ray.kill(actor)
    freed = (f"the {len(left)} file(s) it had put on the machine freed" if left
             else "it had put no file on the machine")
    return (f"{spec.name}: tensors moved between the nodes, bytes identical; a sender killed mid-transfer: the "
            f"receive {outcome}, {freed}, the next transfer worked, the receiver holds no more than before")


def _finding(error: BaseException) -> str:
    """What a transfer raised, in one line: a Ray task's error by its cause (the transport's own message naming
    the step), not by the task's header line (the actor's pid and repr)."""
    cause = getattr(error, "cause", None)  # ray.exceptions.RayTaskError
    shown = cause if isinstance(cause, BaseException) else error
    text = str(shown).strip()
    return f"{type(shown).__name__}: {text.splitlines()[0] if text else ''}"


def _within_one_node(spec: TransportSpec) -> str:
    """Why RAC311 does not move a node-only transport's tensors between two nodes."""
    whose = "" if spec.reach == "node" else " (Ray's or the SDK's own, whatever the plugin declares)"
    return f"{spec.name} moves tensors within one node only{whose}; RAC301 runs it on one node"


@check("RAC311", uses_ray=True)
def distributed_transports(subject: Subject) -> Evidence:
    """Tensors move between two Ray nodes over each declared transport, and a peer killed mid-transfer fails the
    transfer cleanly and leaves nothing behind.

    Two nodes of the run's cluster, each a simulated host of the plugin (its first two fixtures, or its one
    fixture twice): for each declared transport that can run on this machine, an actor on one node sends a
    list of tensors to an actor on the other (the bytes must arrive identical). Then a sender on the first
    node is killed after its part of a transfer and before the receive: the receive must fail with one error
    naming the transport (or, where the bytes outlive the sender, arrive identical), the next transfer between
    the nodes must work, every file the killed sender created for the transfer (a buffer in ``/dev/shm``, a
    link to a segment) must be gone within 30 s, and the receiver must hold no more descriptors or threads
    than before. A transport that cannot run here is skipped with the reason, as in RAC301; one declared
    node-only (``TransportSpec.reach="node"``, and Ray's CUDA_IPC and the SDK's RAYACCEL_SHM) is not applicable
    here (RAC301 runs it on one node), and one declared for the whole cluster is held to it. Fix: when a
    receive finds its sender dead, free what the sender left (unlink its file), and sweep dead senders' buffers
    at the next transfer as ``rayaccel.transports.shared_memory`` does; a transport that cannot move tensors
    between nodes (shared memory, IPC handles) must declare ``reach="node"``, so it is never offered there.
    """
    from rayaccel.errors import RayaccelError
    from rayaccel.inventory.transport_paths import reaches_other_nodes
    from rayaccel.ray.transports import register_transports
    from rayaccel_conformance.checks.transport_contract import cannot_run_here
    from rayaccel_conformance.harness.raycluster import shared_cluster

    subject.family()
    problems: list[Problem] = []
    specs = subject.manager.answer(subject.name, hookspec.TRANSPORTS, problems)
    if problems:
        raise CheckFailed([p.render() for p in problems])
    if not specs:
        raise NotApplicable("the plugin declares no tensor transports")
    local = [s for s in specs if not reaches_other_nodes(s)]
    if len(local) == len(specs):
        raise NotApplicable("declared node-only: " + "; ".join(map(_within_one_node, local)))
    across = [s for s in specs if reaches_other_nodes(s)]
    runnable = [s for s in across if cannot_run_here(s) is None]
    skipped = [f"{s.name} not run here: {cannot_run_here(s)}" for s in across if s not in runnable]
    skipped += [f"not applicable: declared node-only: {_within_one_node(s)}" for s in local]
    if not runnable:
        raise CheckSkipped("; ".join(skipped))
    cluster = shared_cluster()
    sending, receiving, where = cluster.two_nodes(subject)
    try:
        register_transports(subject.manager, [subject.name])
    except RayaccelError as e:
        raise CheckFailed(str(e)) from None
    ran, wrong = [where], []
    for spec in runnable:
        try:
            ran.append(across_nodes(spec, sending, receiving))
        except Exception as e:  # whatever the transfer raised is the finding
            wrong.append(f"{spec.name}: {_finding(e)}")
    if wrong:
        raise CheckFailed(wrong)
    return [*ran, *skipped]


def _family_units(resources: dict[str, float], resource: str) -> float:
    """Units of the family's resource and its partition profiles' in a resource map, outside placement groups (a
    cordon's group holds its units as ``<resource>_group_...``)."""
    return sum(v for k, v in resources.items()
               if k == resource or (k.startswith(resource + "_") and "_group_" not in k))


def _offered(resource: str) -> float:
    """What Ray offers now of the family's units (cluster-wide: only the plugin's nodes have them)."""
    import ray

    return _family_units(ray.available_resources(), resource)  # type: ignore[no-untyped-call,unused-ignore]


def _total(resource: str) -> float:
    """The family's units the cluster's live nodes have, taken or not."""
    import ray

    nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call,unused-ignore]
    return sum(_family_units(n["Resources"], resource) for n in nodes if n["Alive"])


@check("RAC312", uses_ray=True)
def monitor_recovery(subject: Subject) -> Evidence:
    """A fault injected on a Ray node is cordoned by the node's health monitor, and recovered once it clears.

    On the first fixture that declares a fatal fault (``expected.fatal``), the health monitor runs on the
    fixture's Ray node as ``rayaccel start`` runs it (its hooks in isolated workers, polling every 0.5 s).
    The fault is written to the node's fault file: within 60 s the monitor must cordon only devices the fault
    makes unhealthy, and Ray must offer the units it cordons fewer. Then the fault file is emptied: within 60 s
    the monitor must report them recovered, Ray must offer every unit again, and a task asking for one unit
    must run on the node. Not applicable to a plugin none of whose fixtures declares a fatal fault. Fix: make
    ``rayaccel_health`` report the fault (polled with the devices discovered at start, as the monitor polls)
    with a fatal reason, and healthy again once the vendor's signal clears, without caching across calls.
    """
    import ray

    from rayaccel.ray.monitor import get_monitor, monitor_status, start_monitor
    from rayaccel.support.polling import WaitTimeout, wait_for
    from rayaccel.support.raycompat import RAY_NODE_ID_LABEL
    from rayaccel_conformance.harness.raycluster import TASK_TIMEOUT_S, SharedCluster, shared_cluster

    family = subject.family()
    chosen = next(((ref, fault) for ref in sorted(subject.fixture_paths())
                   for fault in subject.fixture(ref).faults if fault.expected.fatal), None)
    if chosen is None:
        raise NotApplicable("no fixture of the plugin declares a fatal fault (expected.fatal) for the monitor to "
                            "cordon")
    ref, fault = chosen
    failing = {d for d, state in fault.expected.health.items() if state == "unhealthy"}
    cluster = shared_cluster()
    node_id = cluster.node_id(subject, ref)
    fault_file = cluster.fault_files.get(ref)
    if not fault_file:
        raise CheckFailed(f"{ref}: the node was started without a fault file: nothing to inject the fault through")
    resource = family.resource_name
    earlier = monitor_status(node_id) or {}  # an earlier monitor's status stays published until this one's first
    started_at = time.time()  # the status a monitor publishes says when (wall clock)
    start_monitor(node_id, MONITOR_INTERVAL_S, [subject.name])
    began = time.monotonic()

    def seen() -> dict[str, Any]:
        """What a wait looks at, and what its timeout shows (the whole status is cut at its front): the family's
        cordon, the fault's devices' health, the monitor's baseline, polls, loop and error, and Ray's units of the
        family cluster-wide, in all and taken (the plugin's other nodes may still be joining: both read together)."""
        s = monitor_status(node_id) or {}
        total = _total(resource)
        return {"pid": s.get("pid"), "updated": s.get("updated"), "polls": s.get("polls", 0), "loop": s.get("loop"),
                "error": s.get("error"), "total": total, "taken": total - _offered(resource),
                "all cordons": sorted(s.get("cordoned") or {}), "baseline": s.get("baseline"),
                "health": {d: (s.get("health") or {}).get(d) for d in sorted(failing)},
                "cordoned": (s.get("cordoned") or {}).get(family.name) or {}}  # last: a long value is cut at its front

    try:
        try:
            # This monitor's own first poll: the node's published status may still be an earlier monitor's.
            wait_for(seen, lambda v: v["polls"] >= 1 and float(v["updated"] or 0) >= started_at
                     and v["pid"] != earlier.get("pid"), timeout=MONITOR_TIMEOUT_S, interval=0.2,
                     what=f"the health monitor of {ref}'s node to poll")
            before = wait_for(seen, lambda v: v["taken"] == 0, timeout=MONITOR_TIMEOUT_S, interval=0.2,
                              what=f"Ray to offer every {resource} unit before the fault")
            offered = before["total"]
            if before["all cordons"] or before["error"]:
                raise CheckFailed(f"{ref}: before any fault, the monitor reports cordons of {before['all cordons']} "
                                  f"and error {before['error']}")
            with open(fault_file, "w", encoding="utf-8") as f:
                f.write(fault.name + "\n")
            injected = time.monotonic()

            def cordoned(v: dict[str, Any]) -> bool:
                mine = v["cordoned"]
                return bool(mine.get("devices")) and mine.get("held") == mine.get("units") == v["taken"]

            cordon = wait_for(seen, cordoned, timeout=MONITOR_TIMEOUT_S, interval=0.2,
                              what=f"the monitor to cordon the devices of fault {fault.name} and Ray to offer fewer "
                                   f"{resource}")["cordoned"]
            stray = sorted(set(cordon["devices"]) - failing)
            if stray:
                raise CheckFailed(f"{ref}: fault {fault.name} cordoned {stray}, which the fault leaves healthy")
            took_cordon = time.monotonic() - injected
            during = offered - cordon["units"]
            with open(fault_file, "w", encoding="utf-8"):
                pass
            cleared = time.monotonic()
            wait_for(seen, lambda v: not v["cordoned"] and v["taken"] == 0, timeout=MONITOR_TIMEOUT_S, interval=0.2,
                     what=f"the monitor to recover the devices of fault {fault.name} once it cleared, and Ray to "
                          f"offer every {resource} unit again")
            took_recovery = time.monotonic() - cleared
        except WaitTimeout as e:
            raise CheckFailed(f"{ref}: {e}") from None
        fam = subject.inventory(ref).family(family.name)
        ran = ""
        if fam is not None and fam.schedulable_units:
            task = ray.remote(_node_of_task).options(**SharedCluster._unit_options(resource),
                                                     label_selector={RAY_NODE_ID_LABEL: node_id})
            try:
                ray.get(task.remote(), timeout=TASK_TIMEOUT_S)
            except Exception as e:  # a task that never runs on the recovered node is the finding
                raise CheckFailed(f"{ref}: after the recovery, a task asking for 1 {resource} did not run on the "
                                  f"node: {type(e).__name__}") from None
            ran = f"; a task asking for 1 {resource} then ran on the node"
    finally:
        with open(fault_file, "w", encoding="utf-8"):
            pass  # the fault off, whatever happened
        with contextlib.suppress(ValueError):  # never created
            ray.kill(get_monitor(node_id))
    return [f"{ref}: monitor up and polling in {injected - began:.1f} s; fault {fault.name} ({fault.description}) "
            f"cordoned {', '.join(sorted(cordon['devices']))} in {took_cordon:.1f} s (Ray offered {offered:g} -> "
            f"{during:g} {resource}); cleared, recovered in {took_recovery:.1f} s (Ray offers {offered:g} "
            f"again){ran}"]


def _node_of_task() -> str:
    import ray

    return str(ray.get_runtime_context().get_node_id())
