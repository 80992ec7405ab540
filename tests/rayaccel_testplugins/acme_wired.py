"""ACME with a collective backend and a tensor transport of its own (installed as ``acme`` by the tests that use
it: ``RAYACCEL_PLUGINS=acme=rayaccel_testplugins.acme_wired``).

- ``ACME_GLOO``: a collective backend over torch.distributed's gloo on CPU, with the rendezvous Ray gives
  (its GCS key-value store). Nothing but this plugin's hook registers it: ``ray.util.collective`` groups of
  actors on a rayaccel node use it with ``backend="ACME_GLOO"``.
- ``ACME_FILE``: a one-sided tensor transport of its own, with no metrics code: the sender writes the tensors'
  bytes to a file in ``/dev/shm``, the receiver reads them. The bridge measures it like any plugin's.
"""

from __future__ import annotations

import contextlib
import os
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
SHM_DIR = "/dev/shm"


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


def files() -> list[str]:
    """The transport's files on this host (a test checks none is left)."""
    return sorted(os.path.join(SHM_DIR, n) for n in os.listdir(SHM_DIR) if n.startswith(FILE_PREFIX))


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
    reference transport sweeps its dead senders' segments: they would otherwise stay in /dev/shm for good."""
    for path in files():
        pid = os.path.basename(path).removeprefix(FILE_PREFIX).split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


class AcmeFileTransport(TensorTransportManager):
    """One-sided: the sender's ``extract`` writes a file; the receiver reads it; ``garbage_collect`` deletes it."""

    def __init__(self) -> None:
        self._aborted: set[str] = set()

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
        path = os.path.join(SHM_DIR, f"{FILE_PREFIX}{os.getpid()}-{obj_id}")
        sizes = []
        with open(path, "wb") as f:
            for t in rdt_object:
                data = t.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes()
                f.write(data)
                sizes.append(len(data))
        return AcmeFileMetadata(tensor_meta=[(t.shape, t.dtype) for t in rdt_object], tensor_device="cpu",
                                path=path, nbytes=sizes, src_pid=os.getpid())

    def get_communicator_metadata(self, src_actor: Any, dst_actor: Any, backend: str | None = None) -> Any:
        return CommunicatorMetadata()

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        import torch

        meta = tensor_transport_metadata
        try:
            if obj_id in self._aborted:
                raise RuntimeError("aborted")
            if not _alive(meta.src_pid):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(meta.path)  # nobody else will: the sender is gone
                raise RuntimeError(f"the sender (pid {meta.src_pid}) died; its tensors went with it")
            with open(meta.path, "rb") as f:
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

    def abort_transport(self, obj_id: str, communicator_metadata: Any) -> None:
        self._aborted.add(obj_id)
