"""A tensor transport's lifecycle on one node, without Ray: transfers freed (``garbage_collect``) and one aborted
(``abort_transport``), and what the sender and the receiver hold after them.

:func:`lifecycle_run` starts one fresh interpreter (``python -m`` this module) that imports torch and the
transport's class, then forks a process that takes a node of its own where the machine allows it (mount, pid and
user namespaces, empty tmpfs over ``/dev/shm``, ``/tmp`` and ``/var/tmp``: :mod:`.node_pair`), so every name left
in those directories is this transport's, whatever else runs on the machine; elsewhere the names are not counted.
There a receiver is forked before any transfer exists (it holds none of the sender's state), and the sender runs
Ray's steps for each transfer: ``extract_tensor_transport_metadata``, the metadata pickled to the receiver (as Ray
ships it), ``recv_multiple_tensors`` there, its tensors dropped, then ``garbage_collect`` on the sender (Ray frees
the ref). After a first transfer (what a first transfer opens for good, a pool or a communicator, is not a leak)
:data:`REPEATED_TRANSFERS` more follow, and each side's descriptors, threads and names are counted. Then, where the
class says it can abort, one transfer is aborted at its receiver before its receive runs, as Ray aborts a failed
or overdue transfer (``RDTManager._abort_transport``), and the receive's outcome and what the receiver holds after
it are answered. Before that, two transfers are staged and the first freed before the second is received: Ray frees
each ref alone, and the other must still arrive whole.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import pickle
import select
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rayaccel_conformance.harness.node_pair import NODE_LOCAL_DIRS, fresh_answer

#: How long the fresh interpreter may take in all (torch's import, the transfers, the waits for a release).
LIFECYCLE_TIMEOUT_S = 150.0
#: How long the receiver may take to answer one request.
ANSWER_TIMEOUT_S = 30.0
#: Transfers after the first; each side must end up holding less than one descriptor, thread or name more each.
REPEATED_TRANSFERS = 5
#: The payload's seed: every transfer sends the same sizes (a transport may reuse what one size took).
SEED = 11
_ID_PREFIX = "7261796163636c2d6c6966656379636c65"  # "rayaccl-lifecycle": 34 of an ObjectRef's 40 hex digits


@dataclass(frozen=True)
class Held:
    """What a process holds: open descriptors, threads, and (where counted) files in the node-local directories."""

    fds: int
    threads: int
    names: list[str] | None

    def more_than(self, before: Held) -> tuple[int, int, list[str]]:
        """Descriptors, threads and names held beyond ``before``."""
        names = sorted(set(self.names or []) - set(before.names or []))
        return self.fds - before.fds, self.threads - before.threads, names


@dataclass(frozen=True)
class Lifecycle:
    """What the run answered. ``failed``: a step that did not work (then the rest is not asked); ``names_counted``:
    whether the node-local directories were this run's own; ``sender_more`` / ``receiver_more``: what each side
    holds after the repeated transfers beyond what it held after the first; ``abort``: None where the class cannot
    abort, else the aborted receive's outcome (``raised``: what it raised, None: it arrived whole) and what the
    receiver holds beyond what it held before it; ``freed_beside``: two transfers staged, the first freed, then the
    second received (``freed``, ``kept``: their ids; ``outcome``: what went wrong with the second, None: it arrived
    whole)."""

    failed: str | None
    names_counted: bool
    sender_more: tuple[int, int, list[str]] | None = None
    receiver_more: tuple[int, int, list[str]] | None = None
    abort: dict[str, Any] | None = None
    freed_beside: dict[str, Any] | None = None


def lifecycle_run(manager_class: str, release_timeout_s: float) -> Lifecycle:
    """Run ``manager_class``'s (``module:Class``) lifecycle; ``release_timeout_s``: how long either side may take to
    let go of what a freed or aborted transfer held. Raises RuntimeError when the interpreter itself fails."""
    answer = fresh_answer(__name__, [manager_class, str(release_timeout_s)], LIFECYCLE_TIMEOUT_S,
                          "the lifecycle's processes", "the lifecycle's process")
    for side in ("sender_more", "receiver_more"):
        if answer.get(side) is not None:
            answer[side] = tuple(answer[side])
    return Lifecycle(**answer)


# -- in the fresh interpreter -----------------------------------------------------------------------------------


def _names() -> list[str]:
    """Every file under the node-local directories that is on their own filesystems (the software bound back
    into them is another filesystem, and not the transport's)."""
    found: list[str] = []
    for top in NODE_LOCAL_DIRS:
        try:
            dev = os.stat(top).st_dev
        except OSError:
            continue
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if os.lstat(os.path.join(folder, d)).st_dev == dev]
            found += [os.path.join(folder, f) for f in files]
    return found


def _held(count_names: bool) -> Held:
    return Held(len(os.listdir("/proc/self/fd")), threading.active_count(), _names() if count_names else None)


def _settled(now: list[Callable[[], Held]], before: list[Held], limit: int, timeout_s: float) -> list[Held]:
    """What each of ``now`` answers once every count is below its ``before`` + ``limit``, or at the deadline (a
    transport's clean-up may run behind its calls)."""
    deadline = time.monotonic() + timeout_s
    while True:
        held = [ask() for ask in now]
        more = [h.more_than(b) for h, b in zip(held, before, strict=True)]
        if all(f < limit and t < limit and len(n) < limit for f, t, n in more) or time.monotonic() >= deadline:
            return held
        time.sleep(0.1)


def _receiver_loop(cls: type, requests: int, answers: int, count_names: bool, release_timeout_s: float) -> None:
    """The receiver: one instance of the class, answering (op, obj_id, meta, comm) requests until the pipe ends."""
    from rayaccel_conformance.harness.payload import digest

    transport = cls()
    reader = os.fdopen(requests, "rb")
    writer = os.fdopen(answers, "wb")
    while True:
        try:
            op, obj_id, meta, comm = pickle.load(reader)
        except EOFError:
            return
        answer: dict[str, Any] = {}
        if op == "held":
            answer["held"] = _held(count_names).__dict__
        elif op == "recv":
            try:
                tensors = transport.recv_multiple_tensors(obj_id, meta, comm, None)
                answer["digests"] = digest(list(tensors))
            except Exception as e:  # what it raised is the finding
                answer["raised"] = f"{type(e).__name__}: {e}"
            tensors = None
            gc.collect()  # the received tensors are gone, as a task's return value is once used
        elif op == "abort":
            before = _held(count_names)
            transport.abort_transport(obj_id, comm)
            try:
                tensors = transport.recv_multiple_tensors(obj_id, meta, comm, None)
                answer["raised"] = None
            except Exception as e:  # the aborted receive failed, as it must
                answer["raised"] = f"{type(e).__name__}: {e}"
            tensors = None
            gc.collect()
            after = _settled([lambda: _held(count_names)], [before], 1, release_timeout_s)
            answer["more"] = after[0].more_than(before)
        pickle.dump(answer, writer)
        writer.flush()


class _Receiver:
    """The sender's handle on the forked receiver."""

    def __init__(self, cls: type, count_names: bool, release_timeout_s: float) -> None:
        req_r, req_w = os.pipe()
        ans_r, ans_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(req_w)
            os.close(ans_r)
            status = 0
            try:
                _receiver_loop(cls, req_r, ans_w, count_names, release_timeout_s)
            except BaseException:
                status = 1
            os._exit(status)
        os.close(req_r)
        os.close(ans_w)
        self._writer = os.fdopen(req_w, "wb")
        self._reader = os.fdopen(ans_r, "rb")

    def ask(self, op: str, obj_id: str = "", meta: Any = None, comm: Any = None) -> dict[str, Any]:
        pickle.dump((op, obj_id, meta, comm), self._writer)
        self._writer.flush()
        ready, _, _ = select.select([self._reader], [], [], ANSWER_TIMEOUT_S + 60.0)
        if not ready:
            raise TimeoutError(f"the receiver did not answer {op!r} in time")
        answer: dict[str, Any] = pickle.load(self._reader)
        return answer

    def held(self) -> Held:
        return Held(**self.ask("held")["held"])

    def close(self) -> None:
        """End the receiver: the closed pipe ends its loop; one stuck in the transport's receive is killed."""
        self._writer.close()
        deadline = time.monotonic() + 5.0  # its loop ends at once; a receive it is stuck in does not
        while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
            if time.monotonic() >= deadline:
                os.kill(self.pid, 9)  # our child, and waitpid just found it unreaped: the number is still its own
                os.waitpid(self.pid, 0)
                return
            time.sleep(0.05)


def _lifecycle(cls: type, count_names: bool, release_timeout_s: float) -> dict[str, Any]:
    from rayaccel_conformance.harness.node_pair import communicator_metadata
    from rayaccel_conformance.harness.payload import digest, payload

    receiver = _Receiver(cls, count_names, release_timeout_s)
    try:
        sender = cls()
        tensors = payload(SEED)
        sent = digest(tensors)
        comm = communicator_metadata(sender)

        def transfer(n: int) -> str | None:
            obj_id = f"{_ID_PREFIX}{n:06x}"
            try:
                meta = sender.extract_tensor_transport_metadata(obj_id, tensors)
            except Exception as e:
                return f"transfer {n}: the sender's extract raised {type(e).__name__}: {e}"
            got = receiver.ask("recv", obj_id, meta, comm)
            try:
                sender.garbage_collect(obj_id, meta, tensors)
            except Exception as e:
                return f"transfer {n}: the sender's garbage_collect raised {type(e).__name__}: {e}"
            if "raised" in got:
                return f"transfer {n}: the receive raised {got['raised']}"
            if got["digests"] != sent:
                return f"transfer {n}: the tensors arrived with other bytes"
            return None

        answer: dict[str, Any] = {"failed": transfer(0), "names_counted": count_names}
        if answer["failed"]:
            return answer
        sender_first, receiver_first = _held(count_names), receiver.held()
        for n in range(1, REPEATED_TRANSFERS + 1):
            answer["failed"] = transfer(n)
            if answer["failed"]:
                return answer
        limit = REPEATED_TRANSFERS
        sender_now, receiver_now = _settled([lambda: _held(count_names), receiver.held],
                                            [sender_first, receiver_first], limit, release_timeout_s)
        answer["sender_more"] = sender_now.more_than(sender_first)
        answer["receiver_more"] = receiver_now.more_than(receiver_first)
        answer["freed_beside"] = _freed_beside(sender, receiver, comm)
        if sender.can_abort_transport():
            obj_id = f"{_ID_PREFIX}{0xAB0127:06x}"
            meta = sender.extract_tensor_transport_metadata(obj_id, tensors)
            answer["abort"] = receiver.ask("abort", obj_id, meta, comm)
            answer["abort"]["obj_id"] = obj_id
            sender.garbage_collect(obj_id, meta, tensors)
        return answer
    finally:
        receiver.close()


def _freed_beside(sender: Any, receiver: _Receiver, comm: Any) -> dict[str, Any]:
    """Two transfers staged, the first's ref freed (``garbage_collect``), then the second received: Ray frees each
    ref alone, as its reference count ends, while another of the same sender may still be in flight. Each carries
    its own bytes, so one received in the other's place is seen too."""
    from rayaccel_conformance.harness.payload import digest, payload

    freed, kept = f"{_ID_PREFIX}{0xF0EE0A:06x}", f"{_ID_PREFIX}{0xF0EE0B:06x}"
    freed_tensors, kept_tensors = payload(SEED + 1), payload(SEED + 2)
    answer: dict[str, Any] = {"freed": freed, "kept": kept, "outcome": None}
    step = "the sender's extract"
    try:
        freed_meta = sender.extract_tensor_transport_metadata(freed, freed_tensors)
        kept_meta = sender.extract_tensor_transport_metadata(kept, kept_tensors)
        step = "the sender's garbage_collect"
        sender.garbage_collect(freed, freed_meta, freed_tensors)
        step = "its receive"
        got = receiver.ask("recv", kept, kept_meta, comm)
        if "raised" in got:
            answer["outcome"] = f"its receive raised {got['raised']}"
        elif got["digests"] != digest(kept_tensors):
            answer["outcome"] = "it arrived with other bytes"
        step = "the sender's garbage_collect"
        sender.garbage_collect(kept, kept_meta, kept_tensors)
    except Exception as e:  # what it raised is the finding
        answer["outcome"] = f"{step} raised {type(e).__name__}: {e}"
    return answer


def _in_own_node(cls: type, release_timeout_s: float) -> dict[str, Any] | None:
    """The lifecycle in a node of its own (its own node-local directories and /proc), or None where this machine
    gives a process no namespaces."""
    from rayaccel_conformance.harness.node_pair import become_another_node, mount_node_local_state

    answer_r, answer_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(answer_r)
        status = 0
        try:
            try:
                become_another_node()
            except OSError:
                os._exit(3)
            inner = os.fork()
            if inner:  # stays outside the new pid namespace only to wait for its pid 1
                os._exit(os.waitstatus_to_exitcode(os.waitpid(inner, 0)[1]) & 0xFF)
            mount_node_local_state()
            answer = _lifecycle(cls, True, release_timeout_s)
            os.write(answer_w, json.dumps(answer).encode())
        except BaseException as e:
            os.write(answer_w, json.dumps({"failed": f"the run raised {type(e).__name__}: {e}",
                                           "names_counted": True}).encode())
            status = 1
        os._exit(status)
    os.close(answer_w)
    chunks = []
    with os.fdopen(answer_r, "rb") as pipe:
        while chunk := pipe.read(1 << 16):
            chunks.append(chunk)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks)) if chunks else None


def main(manager_class: str, release_timeout_s: float) -> None:
    import torch  # noqa: F401  (before the forks: each process finds it imported)

    module, _, name = manager_class.partition(":")
    cls = getattr(importlib.import_module(module), name)
    answer = _in_own_node(cls, release_timeout_s)
    if answer is None:  # no namespaces here: the descriptors and threads are still counted, in this node
        answer = _lifecycle(cls, False, release_timeout_s)
    print(json.dumps(answer))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
