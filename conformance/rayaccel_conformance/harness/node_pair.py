"""A tensor transport's own steps between two processes of one node, and of two nodes, on one machine and
without Ray.

To a transport a node is what its processes share: ``/dev/shm``, ``/tmp`` and ``/var/tmp``, and the process ids
they can see (a Ray node on Kubernetes is a pod, which has each of its own). :func:`transfer_pair` starts one
fresh interpreter (``python -m`` this module) that imports torch and the transport's class, then forks two
receivers before any transfer exists (so no state of the sender's is copied into them): one stays on the sender's
node; the other takes mount, pid and user namespaces of its own (``unshare(2)``), with empty tmpfs over those
three directories (but for the interpreter's own software in them: a checkout or venv in /tmp) and its own
``/proc``: another node. The network and every other file stay the machine's, as
between two nodes of a cluster with a shared filesystem (a transport that reaches its sender over loopback is
not told apart here). The sender then extracts a payload's metadata (Ray's ``extract_tensor_transport_metadata``),
the "driver" makes the communicator metadata, both go to the receivers pickled (as Ray ships them), each receives
(``recv_multiple_tensors``) and answers the bytes' digest or what it raised, and the sender collects the ref.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import pickle
import select
import sys
import time
from dataclasses import dataclass
from typing import Any

from rayaccel.hosts.seam import HostError, run_bounded

#: How long the fresh interpreter may take in all (torch's import, a transfer both ways).
PAIR_TIMEOUT_S = 90.0
#: How long a receiver may take to answer once it has the metadata.
RECEIVE_TIMEOUT_S = 30.0
#: What another node does not share with the sender's: each is an empty tmpfs there.
NODE_LOCAL_DIRS = ("/dev/shm", "/tmp", "/var/tmp")
#: The object id a transfer is extracted under (Ray's are 40 hex digits, an ObjectRef's).
OBJECT_ID = "7261796163636c2d726561636800000000000001"
#: The payload's seed (:mod:`rayaccel_conformance.harness.payload`: the tensors RAC301 sends).
SEED = 7

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x2, 0x4, 0x8
_MS_BIND, _MS_REC, _MS_PRIVATE = 0x1000, 0x4000, 1 << 18


@dataclass(frozen=True)
class Receipt:
    """What one receiver answered: the received tensors' digests, or what it raised, or why it could not run."""

    digests: list[str] | None = None
    raised: str | None = None
    cannot: str | None = None


@dataclass(frozen=True)
class PairResult:
    """The sender's digests and each receiver's receipt (``other`` is None when only one node was asked)."""

    sent: list[str]
    same_node: Receipt
    other_node: Receipt | None


def transfer_pair(manager_class: str, other_node: bool) -> PairResult:
    """Send RAC301's payload over ``manager_class`` (``module:Class``) to a receiver on the sender's node and,
    with ``other_node``, to one on another node. Raises RuntimeError when the interpreter itself fails (the
    class does not import, the sender's extract raises, no answer in time)."""
    answer = fresh_answer(__name__, [manager_class, "other" if other_node else "same"], PAIR_TIMEOUT_S,
                          "the transfer's processes", "the sender's process")
    if "error" in answer:
        raise RuntimeError(answer["error"])
    other = answer.get("other")
    return PairResult(answer["sent"], Receipt(**answer["same"]), Receipt(**other) if other else None)


# -- in the fresh interpreter -----------------------------------------------------------------------------------


def fresh_answer(module: str, args: list[str], timeout_s: float, processes: str, process: str) -> dict[str, Any]:
    """Run ``python -m module *args`` in a fresh interpreter on the suite's own path (no RAYACCEL_ variable of the
    run's), within ``timeout_s``, and return the last JSON object it printed. Raises RuntimeError naming
    ``processes`` when it did not finish, ``process`` when it failed or printed no answer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAYACCEL_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    try:
        result = run_bounded([sys.executable, "-m", module, *args], env, timeout_s)
    except HostError as e:
        raise RuntimeError(f"{processes} did not finish: {e}") from None
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{process} failed (exit {result.returncode}): {tail}")
    answer: dict[str, Any] = json.loads(lines[-1])
    return answer


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _checked(what: str, status: int) -> None:
    if status != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def become_another_node() -> None:
    """Mount, pid and user namespaces of this process's own; the caller forks, and its child is pid 1 there."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    _checked("unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID)",
             libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWPID))
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w", encoding="ascii") as f:
            f.write(text)


def _installed_software_under_node_local_dirs() -> list[str]:
    """The directories this interpreter imports code from (``sys.path``, its prefix) that lie inside a node-local
    directory: a checkout or a virtual environment in /tmp, as CI's are. Every node of a cluster has its software
    at the same path, so another node has these too; only what processes write there at run time is the node's."""
    paths = {os.path.realpath(p) for p in (*sys.path, sys.prefix, sys.exec_prefix) if p and os.path.isdir(p)}
    inside = sorted(p for p in paths if any(p.startswith(d + os.sep) for d in NODE_LOCAL_DIRS))
    outermost: list[str] = []
    for path in inside:
        if not any(path.startswith(kept + os.sep) for kept in outermost):
            outermost.append(path)
    return outermost


def mount_node_local_state() -> None:
    """In the new pid namespace: empty node-local directories (but for the software in them) and a /proc that
    shows this node's processes."""
    libc = _libc()
    _checked("mount --make-rprivate /", libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None))
    # Held open before the masks hide them, then bound back at the same paths from the open descriptors.
    software = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY))
                for path in _installed_software_under_node_local_dirs()]
    for path in NODE_LOCAL_DIRS:
        if os.path.isdir(path):
            _checked(f"mount tmpfs {path}", libc.mount(b"tmpfs", path.encode(), b"tmpfs", 0, b"mode=1777"))
    for path, fd in software:
        os.makedirs(path, exist_ok=True)
        _checked(f"mount --bind {path}", libc.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None,
                                                    _MS_BIND | _MS_REC, None))
        os.close(fd)
    _checked("mount proc /proc", libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None))
    tmpdir = os.environ.get("TMPDIR")
    if tmpdir and any(tmpdir.startswith(d + os.sep) for d in NODE_LOCAL_DIRS):
        os.makedirs(tmpdir, exist_ok=True)  # that node's own, empty


def _receive(cls: type, metadata: bytes) -> dict[str, Any]:
    from rayaccel_conformance.harness.payload import digest

    obj_id, meta, comm = pickle.loads(metadata)
    try:
        tensors = cls().recv_multiple_tensors(obj_id, meta, comm, None)
        return {"digests": digest(list(tensors))}
    except Exception as e:  # what it raised is the finding
        return {"raised": f"{type(e).__name__}: {e}"}


def _read_all(fd: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise TimeoutError("no answer in time")
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _receiver(cls: type, another_node: bool) -> tuple[int, int, int]:
    """Fork a receiver that waits for the metadata; returns (its pid, the metadata pipe, the answer pipe)."""
    meta_r, meta_w = os.pipe()
    answer_r, answer_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(meta_r)
        os.close(answer_w)
        return pid, meta_w, answer_r
    os.close(meta_w)
    os.close(answer_r)
    status = 0
    try:
        answer: dict[str, Any]
        try:
            if another_node:
                become_another_node()
                inner = os.fork()
                if inner:  # stays outside the new pid namespace only to wait for its pid 1
                    os._exit(os.waitstatus_to_exitcode(os.waitpid(inner, 0)[1]) & 0xFF)
                mount_node_local_state()
        except OSError as e:
            answer = {"cannot": f"this machine gives no process namespaces of its own ({e})"}
        else:
            answer = _receive(cls, _read_all(meta_r, time.monotonic() + PAIR_TIMEOUT_S))
        os.write(answer_w, json.dumps(answer).encode())
    except BaseException:  # the parent reads no answer and says so
        status = 1
    os._exit(status)


def _answer(pid: int, fd: int, deadline: float) -> dict[str, Any]:
    try:
        raw = _read_all(fd, deadline)
    except TimeoutError:
        os.kill(pid, 9)  # our own child, not reaped until the waitpid below: the number is still its own
        raw = b""
        said = f"no answer in {RECEIVE_TIMEOUT_S:.0f} s"
    else:
        said = "the receiver's process died without an answer"
    os.waitpid(pid, 0)
    return json.loads(raw) if raw else {"raised": said}


def communicator_metadata(sender: Any) -> Any:
    """What the driver makes for a transfer (``get_communicator_metadata``), asked with no actors."""
    try:
        return sender.get_communicator_metadata(None, None, sender.tensor_transport_backend())
    except Exception:  # a class that reads the actors' handles: Ray's base metadata, as a one-sided read needs
        from ray.experimental.rdt.tensor_transport_manager import CommunicatorMetadata

        return CommunicatorMetadata()


def main(manager_class: str, which: str) -> None:
    import torch  # noqa: F401  (before the fork: each receiver finds it imported)

    from rayaccel_conformance.harness.payload import digest, payload

    module, _, name = manager_class.partition(":")
    cls = getattr(importlib.import_module(module), name)
    receivers = [_receiver(cls, another_node=False)]
    if which == "other":
        receivers.append(_receiver(cls, another_node=True))
    sender = cls()
    tensors = payload(SEED)
    try:
        meta = sender.extract_tensor_transport_metadata(OBJECT_ID, tensors)
        comm = communicator_metadata(sender)
        shipped = pickle.dumps((OBJECT_ID, meta, comm))
    except Exception as e:
        for pid, meta_w, _ in receivers:
            os.close(meta_w)
            os.waitpid(pid, 0)
        print(json.dumps({"error": f"the sender's extract raised {type(e).__name__}: {e}"}))
        return
    for _, meta_w, _ in receivers:
        with os.fdopen(meta_w, "wb") as pipe:
            pipe.write(shipped)
    deadline = time.monotonic() + RECEIVE_TIMEOUT_S
    answers = [_answer(pid, answer_r, deadline) for pid, _, answer_r in receivers]
    sender.garbage_collect(OBJECT_ID, meta, tensors)
    print(json.dumps({"sent": digest(tensors), "same": answers[0], "other": answers[1] if len(answers) > 1 else None}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
