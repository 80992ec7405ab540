"""Corpus mutants whose tensor transport reaches one node's processes only, declared for the whole cluster (no
``reach="node"``): path selection would offer them between nodes, where every receive fails. Held-out round 8's
survivor c2 was the first shape (the template's shared-memory transport registered without ``reach``), which only
RAC311, at the certified tier, found. RAC272 runs each transport's own steps between processes of one node and of
two (its own /dev/shm, /tmp and process ids) and names ``invariant declared-reach-is-reached``.

- ``c-shm-transport-cluster-wide``: the SDK's ``SharedMemoryTransport`` under the family's name (a name in
  /dev/shm leading to the sender's descriptor, the sender found by its pid);
- ``c-socket-in-tmp-cluster-wide``: a transport of its own whose sender serves each transfer's bytes on a Unix
  socket bound in the temporary directory (a thread of the sender answers the receiver: one-sided, as an RDMA
  NIC answers), its path in the metadata;
- ``c-memfd-by-pid-cluster-wide``: the sender keeps each transfer in an anonymous memory file (``memfd``) and the
  receiver opens it through ``/proc/<sender pid>/fd/<n>``: no name in any directory, only the sender's process id.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from ray.experimental.rdt.tensor_transport_manager import (
    CommunicatorMetadata,
    TensorTransportManager,
    TensorTransportMetadata,
)

from rayaccel import SharedMemoryTransport, TransportSpec
from rayaccel_testplugins.corpus import Healthy, add_import_defect

SHM_NAME = "ACME_SHM"
SOCKET_NAME = "ACME_SOCKET"
MEMFD_NAME = "ACME_MEMFD"
KILLED_BY = ("RAC272", "invariant declared-reach-is-reached")


class AcmeSharedMemoryTransport(SharedMemoryTransport):
    def tensor_transport_backend(self) -> str:
        return SHM_NAME


@dataclass
class SocketMetadata(TensorTransportMetadata):
    socket_path: str = ""
    nbytes: list[int] = field(default_factory=list)


class AcmeSocketTransport(TensorTransportManager):
    """One-sided: ``extract`` keeps the bytes and serves them on a Unix socket in the temporary directory; the
    receiver connects, names the object and reads them; ``garbage_collect`` drops them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._blobs: dict[str, bytes] = {}
        self._server: socket.socket | None = None
        self._path = ""

    def tensor_transport_backend(self) -> str:
        return SOCKET_NAME

    @staticmethod
    def is_one_sided() -> bool:
        return True

    @staticmethod
    def can_abort_transport() -> bool:
        return False

    def actor_has_tensor_transport(self, actor: Any) -> bool:
        return True

    def _serve(self) -> str:
        with self._lock:
            if self._server is None:
                self._path = os.path.join(tempfile.gettempdir(), f"acme-socket-{os.getpid()}-{uuid.uuid4().hex[:8]}")
                server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                server.bind(self._path)
                server.listen(8)
                self._server = server
                atexit.register(self._close)
                threading.Thread(target=self._accept, args=(server,), daemon=True,
                                 name="acme-socket-serve").start()
            return self._path

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                obj_id = conn.makefile("rb").readline().decode().strip()
                with self._lock:
                    blob = self._blobs.get(obj_id, b"")
                conn.sendall(blob)

    def _close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path)

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: list[Any]) -> SocketMetadata:
        import torch

        parts = [t.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes() for t in rdt_object]
        with self._lock:
            self._blobs[obj_id] = b"".join(parts)
        return SocketMetadata(tensor_meta=[(t.shape, t.dtype) for t in rdt_object], tensor_device="cpu",
                              socket_path=self._serve(), nbytes=[len(p) for p in parts])

    def get_communicator_metadata(self, src_actor: Any, dst_actor: Any, backend: str | None = None) -> Any:
        return CommunicatorMetadata()

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        import torch

        meta = tensor_transport_metadata
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(30)
            conn.connect(meta.socket_path)
            conn.sendall(obj_id.encode() + b"\n")
            raw = b"".join(iter(lambda: conn.recv(1 << 20), b""))
        out, pos = [], 0
        for (shape, dtype), n in zip(meta.tensor_meta, meta.nbytes, strict=True):
            chunk = torch.frombuffer(bytearray(raw[pos:pos + n]), dtype=torch.uint8) if n else \
                torch.empty(0, dtype=torch.uint8)
            out.append(chunk.view(dtype).reshape(shape))
            pos += n
        return out

    def send_multiple_tensors(self, tensors: list[Any], tensor_transport_metadata: Any,
                              communicator_metadata: Any) -> None:
        raise NotImplementedError(f"{SOCKET_NAME} is one-sided")

    def garbage_collect(self, obj_id: str, tensor_transport_meta: Any, tensors: list[Any]) -> None:
        with self._lock:
            self._blobs.pop(obj_id, None)

    def abort_transport(self, obj_id: str, communicator_metadata: Any) -> None:
        pass


@dataclass
class MemfdMetadata(TensorTransportMetadata):
    src_pid: int = 0
    fd: int = -1
    nbytes: list[int] = field(default_factory=list)


class AcmeMemfdTransport(AcmeSocketTransport):
    """One-sided: ``extract`` writes the bytes to a memfd the sender keeps open; the receiver reads it by the
    sender's pid and descriptor number; ``garbage_collect`` closes it."""

    def __init__(self) -> None:
        super().__init__()
        self._fds: dict[str, int] = {}

    def tensor_transport_backend(self) -> str:
        return MEMFD_NAME

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: list[Any]) -> MemfdMetadata:  # type: ignore[override]
        import torch

        parts = [t.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes() for t in rdt_object]
        fd = os.memfd_create(f"acme-memfd-{obj_id[:16]}")
        for part in parts:
            os.write(fd, part)
        with self._lock:
            self._fds[obj_id] = fd
        return MemfdMetadata(tensor_meta=[(t.shape, t.dtype) for t in rdt_object], tensor_device="cpu",
                             src_pid=os.getpid(), fd=fd, nbytes=[len(p) for p in parts])

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        import torch

        meta = tensor_transport_metadata
        with open(f"/proc/{meta.src_pid}/fd/{meta.fd}", "rb") as f:
            raw = f.read()
        out, pos = [], 0
        for (shape, dtype), n in zip(meta.tensor_meta, meta.nbytes, strict=True):
            chunk = torch.frombuffer(bytearray(raw[pos:pos + n]), dtype=torch.uint8) if n else \
                torch.empty(0, dtype=torch.uint8)
            out.append(chunk.view(dtype).reshape(shape))
            pos += n
        return out

    def garbage_collect(self, obj_id: str, tensor_transport_meta: Any, tensors: list[Any]) -> None:
        with self._lock:
            fd = self._fds.pop(obj_id, None)
        if fd is not None:
            os.close(fd)


class ShmTransportClusterWide(Healthy):
    DEFECT = ("its shared-memory transport (the SDK's, as the template ships it) is declared without reach='node': "
              "offered between nodes, where a receiver finds neither the segment's name nor the sender's process")
    KILLED_BY = KILLED_BY

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name=SHM_NAME, devices=["cpu"], one_sided=True, link_kinds=["pcie"],
                              manager_class="rayaccel_testplugins.corpus_transport_reach:AcmeSharedMemoryTransport")]


class SocketInTmpClusterWide(Healthy):
    DEFECT = ("its transport serves each transfer on a Unix socket in the sender's temporary directory and is "
              "declared for the whole cluster: a receiver on another node has no such socket")
    KILLED_BY = KILLED_BY

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name=SOCKET_NAME, devices=["cpu"], one_sided=True, link_kinds=["other"],
                              manager_class="rayaccel_testplugins.corpus_transport_reach:AcmeSocketTransport")]


class MemfdByPidClusterWide(Healthy):
    DEFECT = ("its transport hands each transfer over as the sender's memfd, opened by the receiver through "
              "/proc/<sender pid>/fd, and is declared for the whole cluster: another node has no such process")
    KILLED_BY = KILLED_BY

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name=MEMFD_NAME, devices=["cpu"], one_sided=True, link_kinds=["other"],
                              manager_class="rayaccel_testplugins.corpus_transport_reach:AcmeMemfdTransport")]


for _cls in (ShmTransportClusterWide, SocketInTmpClusterWide, MemfdByPidClusterWide):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
