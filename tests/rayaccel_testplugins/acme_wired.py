"""ACME with a collective backend and a tensor transport of its own (installed as ``acme`` by the tests that use
it: ``RAYACCEL_PLUGINS=acme=rayaccel_testplugins.acme_wired``).

- ``ACME_GLOO``: a collective backend over torch.distributed's gloo on CPU, with the rendezvous Ray gives
  (its GCS key-value store). Nothing but this plugin's hook registers it: ``ray.util.collective`` groups of
  actors on a rayaccel node use it with ``backend="ACME_GLOO"``.
- ``ACME_FILE``: a one-sided tensor transport of its own, with no metrics code: the sender writes the tensors'
  bytes to a file in a directory every node of the cluster mounts (a shared filesystem: ``ACME_FILE_DIR``, on one
  machine the user's cache directory by default) and holds a lock on it until Ray frees the ref; the receiver
  reads them. It is declared for the whole cluster, so it finds its sender by what another node sees too: the
  file's lock (a sender that died holds none), not its process id. The bridge measures it like any plugin's.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from dataclasses import dataclass, field
from typing import Any

from ray.experimental.rdt.tensor_transport_manager import (
    CommunicatorMetadata,
    TensorTransportManager,
    TensorTransportMetadata,
)

from rayaccel import CollectiveBackend, TransportSpec, hookimpl
from rayaccel_testplugins import acme
from rayaccel_testplugins.derived import copy_hooks

copy_hooks(acme, globals())  # ACME's hooks, registered from this module too

FILE_PREFIX = "acme-file-"
#: Shared by the cluster's nodes (RAC272 runs the transport between two: /dev/shm and /tmp are each node's own).
SHARED_DIR = os.environ.get("ACME_FILE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "rayaccel-acme-file")
#: A file is written under this prefix, locked, then renamed: under FILE_PREFIX a live sender always holds its lock.
PARTIAL_PREFIX = ".partial-acme-file-"
#: A partial file younger than this is not swept: its sender may not hold its lock yet (between create and lock).
_PARTIAL_SWEEP_AFTER_S = 10.0


@hookimpl
def rayaccel_collective_backends() -> list[CollectiveBackend]:
    return [CollectiveBackend(name="ACME_GLOO", group_class="rayaccel_testplugins.acme_collective:AcmeGlooGroup",
                              devices=["cpu"])]


@hookimpl
def rayaccel_transports() -> list[TransportSpec]:
    return [TransportSpec(name="ACME_FILE", devices=["cpu"], one_sided=True, link_kinds=["other"],
                          manager_class="rayaccel_testplugins.acme_wired:AcmeFileTransport")]


@dataclass
class AcmeFileMetadata(TensorTransportMetadata):
    path: str = ""
    nbytes: list[int] = field(default_factory=list)
    src_pid: int = 0
    #: The sender's machine (boot id) and pid namespace: a receiver sharing both tells the sender's life by its pid.
    src_pids_of: str = ""


def files() -> list[str]:
    """The transport's files (a test checks none is left)."""
    if not os.path.isdir(SHARED_DIR):
        return []
    return sorted(os.path.join(SHARED_DIR, n) for n in os.listdir(SHARED_DIR) if n.startswith(FILE_PREFIX))


def _sender_gone(fd: int) -> bool:
    """Whether no sender holds the file open at ``fd`` locked (its lock goes with its process, on any node)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return True


def _pids_of() -> str:
    """This process's machine and pid namespace: where a pid names the same process."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
        return f"{boot}:{os.stat('/proc/self/ns/pid').st_ino}"
    except OSError:
        return ""


def _sender_of_gone(meta: AcmeFileMetadata, fd: int) -> bool:
    """Whether the sender of ``meta`` is gone: by its pid where this process sees the sender's pids (its node: a
    child the sender forked may hold its file's lock after it died), else by the lock on its file (another node)."""
    here = _pids_of()
    if here and meta.src_pids_of == here:
        return not _alive(meta.src_pid)
    return _sender_gone(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a killed actor's process may linger unreaped
    return True


def _sweep_dead_senders() -> None:
    """Remove the files of senders that died before anyone read them (killed actors, a node shut down), as the
    reference transport sweeps its dead senders' segments: they would otherwise stay for good. A sender on
    another node is not this node's process, so its lock, not its pid, says whether it lives."""
    partial = sorted(os.path.join(SHARED_DIR, n) for n in os.listdir(SHARED_DIR) if n.startswith(PARTIAL_PREFIX)) \
        if os.path.isdir(SHARED_DIR) else []
    for path in [*files(), *partial]:
        with contextlib.suppress(OSError):
            # A file under its final name was locked before it got that name, so its lock alone says whether
            # its sender lives, however young the file (a sweep must not wait on a clock the transfers outrun).
            if path in partial and time.time() - os.stat(path).st_mtime < _PARTIAL_SWEEP_AFTER_S:
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                if _sender_gone(fd):
                    os.unlink(path)
            finally:
                os.close(fd)


class AcmeFileTransport(TensorTransportManager):
    """One-sided: the sender's ``extract`` writes a file; the receiver reads it; ``garbage_collect`` deletes it."""

    def __init__(self) -> None:
        self._aborted: set[str] = set()
        self._locked: dict[str, int] = {}  # obj_id -> the sender's locked descriptor of its file

    def tensor_transport_backend(self) -> str:
        return "ACME_FILE"

    @staticmethod
    def is_one_sided() -> bool:
        return True

    @staticmethod
    def can_abort_transport() -> bool:
        return True

    def actor_has_tensor_transport(self, actor: Any) -> bool:
        return True

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: list[Any]) -> AcmeFileMetadata:
        import torch

        _sweep_dead_senders()
        if not os.path.isdir(SHARED_DIR):  # asked first: RAC311 counts a mkdir, even a failed one, as a creation
            os.makedirs(SHARED_DIR, exist_ok=True)
        return self.write_locked(obj_id, os.path.join(SHARED_DIR, f"{FILE_PREFIX}{os.getpid()}-{obj_id}"),
                                 [t.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes()
                                  for t in rdt_object], [(t.shape, t.dtype) for t in rdt_object])

    def write_locked(self, obj_id: str, path: str, parts: list[bytes], tensor_meta: list[Any]) -> AcmeFileMetadata:
        """Write the tensors' bytes to ``path``, locked until :meth:`garbage_collect` (the receiver's sign of life)."""
        folder, name = os.path.split(path)
        partial = os.path.join(folder, PARTIAL_PREFIX + name)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        self._locked[obj_id] = fd
        for part in parts:
            os.write(fd, part)
        os.rename(partial, path)  # under its name only once locked: a reader's lock test is never too early
        return AcmeFileMetadata(tensor_meta=tensor_meta, tensor_device="cpu", path=path,
                                nbytes=[len(p) for p in parts], src_pid=os.getpid(), src_pids_of=_pids_of())

    def get_communicator_metadata(self, src_actor: Any, dst_actor: Any, backend: str | None = None) -> Any:
        return CommunicatorMetadata()

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        import torch

        meta = tensor_transport_metadata
        try:
            try:
                f = open(meta.path, "rb")  # noqa: SIM115  (closed below)
            except FileNotFoundError:
                raise RuntimeError(f"the file is gone (the ref was freed, or its sender pid {meta.src_pid} died)"
                                   ) from None
            with f:
                # Asked before the abort: Ray aborts the receive of a sender it saw die, and the dead sender's
                # file is then this receive's to remove (the next transfer's sweep may not come).
                if _sender_of_gone(meta, f.fileno()):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(meta.path)  # nobody else will: the sender is gone
                    raise RuntimeError(f"the sender (pid {meta.src_pid}) died; its tensors went with it")
                if obj_id in self._aborted:
                    raise RuntimeError("aborted")
                raw = f.read()
            out, pos = [], 0
            for (shape, dtype), n in zip(meta.tensor_meta, meta.nbytes, strict=True):
                chunk = torch.frombuffer(bytearray(raw[pos:pos + n]), dtype=torch.uint8) if n else \
                    torch.empty(0, dtype=torch.uint8)
                out.append(chunk.view(dtype).reshape(shape))
                pos += n
            return out
        finally:
            self._aborted.discard(obj_id)

    def send_multiple_tensors(self, tensors: list[Any], tensor_transport_metadata: Any,
                              communicator_metadata: Any) -> None:
        raise NotImplementedError("ACME_FILE is one-sided")

    def garbage_collect(self, obj_id: str, tensor_transport_meta: Any, tensors: list[Any]) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tensor_transport_meta.path)
        fd = self._locked.pop(obj_id, None)
        if fd is not None:
            os.close(fd)

    def abort_transport(self, obj_id: str, communicator_metadata: Any) -> None:
        self._aborted.add(obj_id)
