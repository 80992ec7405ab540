"""RAC273: a declared tensor transport lets go of what a transfer held once Ray frees it or aborts it, run without
Ray.

RAC301 runs these steps between two Ray actors, at the certified tier (a vendor with two maintainers); here the
transport's own ``garbage_collect`` and ``abort_transport`` run as Ray calls them, between two processes of one
node in one fresh interpreter (:mod:`rayaccel_conformance.harness.lifecycle_run`), so a plugin that reaches
``supported`` has shown them too. The invariants are RAC301's, named as there.
"""

from __future__ import annotations

from rayaccel.records import TransportSpec
from rayaccel_conformance.harness.lifecycle_run import REPEATED_TRANSFERS, Lifecycle, lifecycle_run
from rayaccel_conformance.harness.node_pair import NODE_LOCAL_DIRS
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, check

HELD = "invariant a-transfer-holds-nothing-after-it"
ABORTED = "invariant an-aborted-transfer-fails"
FREED_ALONE = "invariant a-freed-ref-frees-only-its-transfer"
_DIRS = ", ".join(NODE_LOCAL_DIRS)
#: How long either side may take to let go of a freed or aborted transfer: without Ray between, only the
#: transport's own clean-up runs behind its calls (RAC301 waits 30 s for Ray's actors); a run's
#: --conformance-release-timeout may shorten it.
RELEASE_WAIT_S = 10.0


@check("RAC273")
def transport_lifecycle(subject: Subject) -> Evidence:
    """Every declared tensor transport lets go of what a transfer held once it is freed, and fails a receive
    aborted before it ran, outside Ray.

    For each ``rayaccel_transports`` record of the plugin's own (not ``builtin_in_ray``: Ray's transports are
    Ray's) that can run on this machine (one-sided, CPU tensors, torch installed: what RAC301 runs), one fresh
    interpreter runs the transport's own steps as Ray calls them, on a node of its own where the machine allows
    it (empty ``/dev/shm``, ``/tmp`` and ``/var/tmp``: every name left there is the transport's): a sender
    extracts RAC301's payload, a receiver forked before any transfer receives it and drops the tensors, and the
    sender's ``garbage_collect`` runs (Ray frees the ref). After a first transfer, 5 more: then neither side may
    hold one descriptor or thread more per transfer than after the first, nor may one name per transfer be left
    in those directories (within 10 s, or a shorter ``--conformance-release-timeout``), else ``invariant
    a-transfer-holds-nothing-after-it`` is named with the counts and the names: a ``garbage_collect`` that keeps
    the transfer's segment, file or descriptor holds the node's memory for every transfer a job makes. Then two
    transfers are staged and the first freed before the second is received, as Ray frees each ref alone while
    others of the same sender are in flight: the second must arrive whole, with its own bytes (``invariant
    a-freed-ref-frees-only-its-transfer``: a ``garbage_collect`` that gives back every staged segment destroys
    the tensors of refs still held). Then, where the class says it can abort (``can_abort_transport()``), a transfer
    is aborted at its receiver before its receive runs, as Ray aborts a failed or overdue transfer
    (``RDTManager._abort_transport`` calls ``abort_transport`` on the receiver, and a receive still queued runs
    after it): the receive must fail, as NIXL's does (``invariant an-aborted-transfer-fails``), and the receiver
    hold no more than before. Fix: unlink the transfer's name and give back or close its segment in
    ``garbage_collect`` (a pool bounded in segments is no leak), that transfer's alone; record an aborted id in
    ``abort_transport`` and fail a receive of it (the SDK's ``SharedMemoryTransport`` does both), or answer
    ``can_abort_transport()`` False so Ray kills the actors.
    """
    from rayaccel_conformance.checks.transport_contract import own_transports_to_run

    runnable, not_run = own_transports_to_run(subject)
    said: list[str] = []
    wrong: list[str] = []
    for spec in runnable:
        try:
            run = lifecycle_run(spec.manager_class, _release_s())
        except RuntimeError as e:
            wrong.append(f"{spec.name}: {e}")
            continue
        findings = _findings(spec, run)
        if findings:
            wrong += findings
        else:
            said.append(_passed(spec, run))
    if wrong:
        raise CheckFailed(wrong)
    return [*said, *not_run]


def _findings(spec: TransportSpec, run: Lifecycle) -> list[str]:
    if run.failed:
        return [f"{spec.name}: {run.failed} (between two processes of one node, without Ray; RAC272 and RAC301 "
                "run the same steps)"]
    found: list[str] = []
    n = REPEATED_TRANSFERS
    steps = (f"after {n} more transfers, each received and its ref freed (garbage_collect on the sender, as Ray "
             "calls it)")
    for side, more in (("sender", run.sender_more), ("receiver", run.receiver_more)):
        assert more is not None
        fds, threads, names = more
        kept = [f"{fds} more descriptors" if fds >= n else "", f"{threads} more threads" if threads >= n else ""]
        if side == "sender" and len(names) >= n:
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            kept.append(f"{len(names)} more names in {_DIRS} ({shown})")
        kept = [k for k in kept if k]
        if kept:
            found.append(f"{HELD}: {spec.name}: {steps}, the {side} holds {' and '.join(kept)} than after the "
                         f"first, {_wait()} later: a freed transfer keeps what it took, one per "
                         "transfer, until the node runs out")
    beside = run.freed_beside
    if beside is not None and beside["outcome"] is not None:
        freed, kept = beside["freed"], beside["kept"]
        found.append(f"{FREED_ALONE}: {spec.name}: two transfers staged, {freed} and {kept}; after "
                     f"garbage_collect({freed!r}) on the sender (Ray frees that ref alone, as its count ends), "
                     f"{kept}, still in flight, failed: {beside['outcome']}. garbage_collect lets go of obj_id's "
                     "transfer alone (Ray's TensorTransportManager: 'clean up resources for an RDT object'; NIXL's "
                     "drops that id's alone), else freeing one ref destroys the tensors of every ref still in flight")
    if run.abort is not None:
        obj_id = run.abort["obj_id"]
        if run.abort["raised"] is None:
            found.append(f"{ABORTED}: {spec.name} says it can abort (can_abort_transport() is True), yet the "
                         f"transfer {obj_id} arrived whole after abort_transport({obj_id!r}) on its receiver: Ray "
                         "aborts a failed or overdue transfer so, and a receive that runs after it must fail "
                         "(NIXL's does), else the receiver takes tensors of a transfer Ray has given up on")
        fds, threads, _ = run.abort["more"]
        if fds > 0 or threads > 0:
            found.append(f"{HELD}: {spec.name}: after a transfer aborted before its receive ran, the receiver holds "
                         f"{fds} more descriptors and {threads} more threads than before it, "
                         f"{_wait()} later: what an aborted receive opened is never released")
    return found


def _release_s() -> float:
    from rayaccel_conformance.checks import transport_contract

    return min(RELEASE_WAIT_S, transport_contract.RELEASE_TIMEOUT_S)


def _wait() -> str:
    return f"{_release_s():g} s"


def _passed(spec: TransportSpec, run: Lifecycle) -> str:
    names = f", no name left in {_DIRS}" if run.names_counted else \
        " (names not counted: this machine gives a process no node of its own)"
    abort = ("a transfer aborted at its receiver failed its receive" if run.abort is not None else
             "it cannot abort (Ray kills the actors on a failed transfer)")
    return (f"{spec.name}: {REPEATED_TRANSFERS + 1} transfers freed, neither side holds a descriptor or thread "
            f"per transfer{names}; one freed while another was staged left the other whole; {abort}")
