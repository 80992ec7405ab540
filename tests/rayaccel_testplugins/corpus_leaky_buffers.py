"""A corpus mutant whose tensor transport leaks a dead peer's buffers: the sender writes each transfer to a file
in /dev/shm (as ``acme_wired``'s ``ACME_FILE``), but a receive that finds its sender dead fails without removing
the file, and nothing sweeps dead senders' files: every sender killed mid-transfer leaves its tensors' bytes in
shared memory for good. RAC311 kills it; RAC301 does not (its receiver holds nothing more).

In a module of its own, outside ``corpus.PLUGINS`` (only its Ray checks kill it, which the corpus test does not
pay for every mutant): ``RAYACCEL_PLUGINS=c-transport-leaks-dead-peer=rayaccel_testplugins.corpus_leaky_buffers:
plugin`` loads it; tests/conformance/test_conformance_recovery.py grades it.
"""

from __future__ import annotations

import os
from typing import Any

from rayaccel import TransportSpec
from rayaccel_testplugins import corpus
from rayaccel_testplugins.acme_wired import SHM_DIR, AcmeFileMetadata, AcmeFileTransport, _alive

NAME = "ACME_LEAKY_FILE"
FILE_PREFIX = "acme-leaky-file-"


def files() -> list[str]:
    """The transport's files on this host (the test removes what its killed senders leaked)."""
    return sorted(os.path.join(SHM_DIR, n) for n in os.listdir(SHM_DIR) if n.startswith(FILE_PREFIX))


class LeakyFileTransport(AcmeFileTransport):
    def tensor_transport_backend(self) -> str:
        return NAME

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: list[Any]) -> AcmeFileMetadata:
        import torch

        path = os.path.join(SHM_DIR, f"{FILE_PREFIX}{os.getpid()}-{obj_id}")  # no sweep of dead senders' files
        sizes = []
        with open(path, "wb") as f:
            for t in rdt_object:
                data = t.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes()
                f.write(data)
                sizes.append(len(data))
        return AcmeFileMetadata(tensor_meta=[(t.shape, t.dtype) for t in rdt_object], tensor_device="cpu",
                                path=path, nbytes=sizes, src_pid=os.getpid())

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        meta = tensor_transport_metadata
        if not _alive(meta.src_pid):
            raise RuntimeError(f"the sender (pid {meta.src_pid}) died")  # the defect: its file stays
        return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)


class TransportLeaksDeadPeer(corpus.Healthy):
    DEFECT = "its tensor transport leaves a killed sender's file in /dev/shm: no receive or later transfer frees it"
    KILLED_BY = ("RAC311", "still on the machine")

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name=NAME, devices=["cpu"], one_sided=True, link_kinds=["other"],
                              manager_class="rayaccel_testplugins.corpus_leaky_buffers:LeakyFileTransport")]


plugin = TransportLeaksDeadPeer("c-transport-leaks-dead-peer")
