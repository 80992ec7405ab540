"""RAC301's contract run: a declared tensor transport moves a list of tensors between two real Ray actors, and
recovers when its peer dies mid-transfer.

Runs in the run's shared Ray cluster (:mod:`rayaccel_conformance.harness.raycluster`), both actors pinned to the
head node (a one-sided shared-memory transport moves tensors within one node). A transport that cannot run
on this machine is skipped with the reason, never passed.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from rayaccel import hookspec
from rayaccel.records import Problem, TransportSpec
from rayaccel_conformance.harness.payload import digest, payload as _payload
from rayaccel_conformance.registry import CheckFailed, NotApplicable

if TYPE_CHECKING:
    from rayaccel_conformance.harness.subject import Subject

TRANSFER_TIMEOUT_S = 120.0
#: How long a receiver may take to let go of what a failed transfer held (descriptors, threads); a run's
#: --conformance-release-timeout may shorten it (here and in RAC311), never lengthen it.
DEFAULT_RELEASE_TIMEOUT_S = 30.0
RELEASE_TIMEOUT_S = DEFAULT_RELEASE_TIMEOUT_S
#: Transfers after the first whose receiver must end up holding less than one descriptor or thread more each.
REPEATED_TRANSFERS = 5


def cannot_run_here(spec: TransportSpec) -> str | None:
    """Why the transport cannot run on this machine, or None when it can."""
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed (pip install 'rayaccel[rdt]')"
    if "cpu" not in spec.devices:
        import torch

        if not ("cuda" in spec.devices and torch.cuda.is_available()):
            return f"it moves {', '.join(spec.devices)} tensors and this machine has no such device"
        return "device tensors need the family's hardware nodes: run with --conformance-hardware real"
    if spec.name == "NIXL" and importlib.util.find_spec("nixl") is None:
        return "NIXL needs the nixl package, which is not installed"
    if not spec.one_sided:
        return "a two-sided transport needs a collective group the contract run does not create"
    return None


def own_transports_to_run(subject: Subject) -> tuple[list[TransportSpec], list[str]]:
    """The plugin's own declared transports this machine can run (Ray's built-in ones are Ray's, not the
    plugin's), and a line for each it cannot. Raises CheckFailed on the hook's problems, NotApplicable where the
    plugin declares none of its own or none can run here."""
    subject.family()
    problems: list[Problem] = []
    specs = subject.manager.answer(subject.name, hookspec.TRANSPORTS, problems)
    if problems:
        raise CheckFailed([p.render() for p in problems])
    own = [s for s in specs if not s.builtin_in_ray]
    if not own:
        raise NotApplicable("the plugin declares no tensor transport of its own")
    runnable = [s for s in own if cannot_run_here(s) is None]
    not_run = [f"{s.name} not run here: {cannot_run_here(s)}" for s in own if s not in runnable]
    if not runnable:
        raise NotApplicable("; ".join(not_run))
    return runnable, not_run


class _Sender:
    def make(self, seed: int) -> list[str]:
        self.tensors = _payload(seed)
        return digest(self.tensors)

    def tensors_ref(self) -> list[Any]:
        return self.tensors

    def pid(self) -> int:
        import os

        return os.getpid()


class _Receiver:
    def digest(self, tensors: list[Any]) -> list[str]:
        return digest(tensors)

    def abort(self, transport: str, obj_id: str, comm: Any) -> bool:
        """Abort the transfer ``obj_id`` here, as Ray does (``__ray_abort_transport__``); False: it cannot abort."""
        from ray.experimental.rdt.util import get_tensor_transport_manager

        manager = get_tensor_transport_manager(transport)
        if not manager.can_abort_transport():
            return False
        manager.abort_transport(obj_id, comm)
        return True

    def held(self) -> tuple[int, int]:
        """What this process holds: open descriptors and threads."""
        import os
        import threading

        return len(os.listdir("/proc/self/fd")), threading.active_count()


def contract_run(spec: TransportSpec) -> str:
    """Send the payload from one actor to another over ``spec``, twice (an abort between), and compare bytes.
    Raises RuntimeError with what went wrong; returns the evidence line."""
    import ray
    from ray.experimental.rdt.util import get_tensor_transport_manager
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    def start(cls: type) -> Any:
        actor: Any = ray.remote(enable_tensor_transport=True)(cls)  # type: ignore[call-overload,unused-ignore]
        return actor.options(num_cpus=0, scheduling_strategy=here).remote()

    sender, receiver = start(_Sender), start(_Receiver)
    actors = [sender, receiver]
    steps = []

    def transfer(seed: int, record: bool = True) -> None:
        want = ray.get(sender.make.remote(seed), timeout=TRANSFER_TIMEOUT_S)
        ref = sender.tensors_ref.options(tensor_transport=spec.name).remote()
        got = ray.get(receiver.digest.remote(ref), timeout=TRANSFER_TIMEOUT_S)
        if got != want:
            bad = [i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b]
            raise RuntimeError(f"transfer {seed}: tensors {bad or 'count'} arrived with other bytes")
        del ref  # freed: the transport's garbage_collect runs on the sender
        if record:
            steps.append(f"transfer {seed}: {len(want)} tensors, bytes identical, ref freed")

    try:
        for seed in (1, 2):
            transfer(seed)
            if seed == 1:
                comm = get_tensor_transport_manager(spec.name).get_communicator_metadata(sender, receiver, spec.name)
                steps.append(_aborted_transfer_fails(spec, sender, receiver, comm))
                settled = ray.get(receiver.held.remote(), timeout=TRANSFER_TIMEOUT_S)
        steps.append(_nothing_held_per_transfer(receiver, transfer, settled))
        steps.append(_peer_dies(spec, start, receiver))
        sender = start(_Sender)
        actors.append(sender)
        try:
            ray.get(receiver.held.remote(), timeout=TRANSFER_TIMEOUT_S)
        except ray.exceptions.RayActorError:  # a transport that cannot abort: Ray killed the receiver
            receiver = start(_Receiver)
            actors.append(receiver)
        transfer(3)
    finally:
        # Exit after the queued work (the free included), so a transport's own clean-up runs; kill if stuck.
        ends = [actor.__ray_terminate__.remote() for actor in actors]
        _, stuck = ray.wait(ends, num_returns=len(ends), timeout=TRANSFER_TIMEOUT_S)
        for actor in actors:
            if stuck:
                ray.kill(actor)
    return f"{spec.name}: " + "; ".join(steps)


def _aborted_transfer_fails(spec: TransportSpec, sender: Any, receiver: Any, comm: Any) -> str:
    """A transfer aborted at its receiver before its receive runs: the receive must fail, and the receiver hold no
    more descriptors or threads than before, within the bound.

    Ray aborts a transfer whose receive failed or is overdue (``RDTManager._abort_transport``: abort_transport on the
    receiver when can_abort_transport() is True, else it kills the actors), and a receive still queued runs after
    that abort: NIXL's, Ray's abortable transport, fails a receive whose id it was told to abort
    (``NixlTensorTransport.recv_multiple_tensors`` checks its aborted ids first)."""
    import ray

    from rayaccel.support.polling import WaitTimeout, wait_for

    before = ray.get(receiver.held.remote(), timeout=TRANSFER_TIMEOUT_S)
    ray.get(sender.make.remote(4), timeout=TRANSFER_TIMEOUT_S)
    ref = sender.tensors_ref.options(tensor_transport=spec.name).remote()
    ray.wait([ref], timeout=TRANSFER_TIMEOUT_S)  # the sender's part (the metadata) is done
    obj_id = ref.hex()  # the id Ray hands the transport (RDTManager: arg.hex())
    if not ray.get(receiver.abort.remote(spec.name, obj_id, comm), timeout=TRANSFER_TIMEOUT_S):
        del ref
        return "cannot abort (Ray kills the actors on a failed transfer)"
    try:
        ray.get(receiver.digest.remote(ref), timeout=TRANSFER_TIMEOUT_S)
    except ray.exceptions.GetTimeoutError:
        raise RuntimeError(f"the receive of a transfer aborted before it ran did not end in "
                           f"{TRANSFER_TIMEOUT_S:.0f} s") from None
    except ray.exceptions.RayError:
        pass
    else:
        raise RuntimeError(f"{spec.name} says it can abort (can_abort_transport() is True), yet the transfer "
                           f"{obj_id} arrived whole after abort_transport({obj_id!r}) on its receiver: Ray aborts a "
                           "failed or overdue transfer so, and a receive that runs after it must fail (NIXL's does), "
                           "else the receiver takes tensors of a transfer Ray has given up on (invariant "
                           "an-aborted-transfer-fails)") from None
    del ref
    try:
        wait_for(lambda: ray.get(receiver.held.remote(), timeout=TRANSFER_TIMEOUT_S),
                 lambda now: now[0] <= before[0] and now[1] <= before[1], timeout=RELEASE_TIMEOUT_S, interval=0.5,
                 what="the receiver holding no more descriptors and threads than before the aborted transfer",
                 retry_on=())
    except WaitTimeout:
        fds, threads = ray.get(receiver.held.remote(), timeout=TRANSFER_TIMEOUT_S)
        raise RuntimeError(f"{RELEASE_TIMEOUT_S:g} s after a transfer aborted before its receive ran, the receiver "
                           f"holds {fds - before[0]} more descriptors and {threads - before[1]} more threads than "
                           "before it: what a failed or aborted receive opened is never released, and Ray aborts "
                           "every failed or overdue transfer so (invariant a-transfer-holds-nothing-after-it)",
                           ) from None
    return "aborted transfer: the receive failed, the receiver holds no more descriptors or threads than before"


def _nothing_held_per_transfer(receiver: Any, transfer: Any, settled: tuple[int, int]) -> str:
    """More transfers to the same receiver: after them it must hold less than one descriptor or thread more per
    transfer than after the first one (what a first transfer opens for good, a communicator, is not a leak)."""
    import ray

    from rayaccel.support.polling import WaitTimeout, wait_for

    for seed in range(10, 10 + REPEATED_TRANSFERS):
        transfer(seed, record=False)
    done = REPEATED_TRANSFERS + 1  # transfer 2 and the repeated ones

    def grown() -> tuple[int, int]:
        fds, threads = ray.get(receiver.held.remote(), timeout=TRANSFER_TIMEOUT_S)
        return fds - settled[0], threads - settled[1]

    try:
        wait_for(grown, lambda more: more[0] < done and more[1] < done, timeout=RELEASE_TIMEOUT_S, interval=0.5,
                 what="the receiver holding less than one more descriptor and thread per transfer", retry_on=())
    except WaitTimeout:
        fds, threads = grown()
        raise RuntimeError(f"after {done} more transfers the receiver holds {fds} more descriptors and {threads} "
                           f"more threads than after the first (still {RELEASE_TIMEOUT_S:.0f} s later): a transfer "
                           "keeps what it opened, one per transfer (invariant a-transfer-holds-nothing-after-it)"
                           ) from None
    return f"{done} more transfers: the receiver holds no descriptor or thread per transfer"


def _peer_dies(spec: TransportSpec, start: Any, receiver: Any) -> str:
    """A sender's tensors are extracted, then it is killed before the receiver reads them: the receive must fail
    with one error naming the transport (or, where the bytes outlive the sender, arrive identical), and the
    receiver must hold no more descriptors or threads than before, within the bound."""
    import ray

    from rayaccel.support.polling import wait_for
    from rayaccel_conformance.harness.exits import released

    before = ray.get(receiver.held.remote(), timeout=TRANSFER_TIMEOUT_S)
    doomed = start(_Sender)
    want = ray.get(doomed.make.remote(3), timeout=TRANSFER_TIMEOUT_S)
    pid = ray.get(doomed.pid.remote(), timeout=TRANSFER_TIMEOUT_S)
    ref = doomed.tensors_ref.options(tensor_transport=spec.name).remote()
    ray.wait([ref], timeout=TRANSFER_TIMEOUT_S)  # the sender's part (the metadata) is done
    ray.kill(doomed)
    wait_for(lambda: released(pid),
             timeout=TRANSFER_TIMEOUT_S, what=f"the killed sender (pid {pid}) gone")
    try:
        got = ray.get(receiver.digest.remote(ref), timeout=TRANSFER_TIMEOUT_S)
    except ray.exceptions.GetTimeoutError:
        raise RuntimeError(f"the receive from a killed sender did not end in {TRANSFER_TIMEOUT_S:.0f} s") from None
    except ray.exceptions.RayActorError:
        return "killed sender: Ray killed the receiver (the transport cannot abort)"
    except ray.exceptions.RayError as e:
        first = next((line for line in str(e).splitlines() if spec.name in line), None)
        if first is None:
            raise RuntimeError(f"the receive from a killed sender failed with an error that does not name the "
                               f"transport: {str(e).splitlines()[-1] if str(e) else type(e).__name__}") from None
        outcome = "failed naming the transport"
    else:
        if got != want:
            raise RuntimeError("the receive from a killed sender returned other bytes instead of failing") from None
        outcome = "arrived identical (the bytes outlive the sender)"
    del ref
    wait_for(lambda: ray.get(receiver.held.remote(), timeout=TRANSFER_TIMEOUT_S),
                    lambda now: now[0] <= before[0] and now[1] <= before[1], timeout=RELEASE_TIMEOUT_S, interval=0.5,
                    what="the receiver holding no more descriptors and threads than before the failed transfer",
                    retry_on=())
    return f"killed sender: the receive {outcome}, the receiver holds no more descriptors or threads than before"
