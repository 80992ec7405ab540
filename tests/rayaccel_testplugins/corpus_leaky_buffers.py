"""A corpus mutant whose tensor transport leaks a dead peer's buffers: the sender writes each transfer to a file
in /dev/shm (``acme_wired``'s ``ACME_FILE``, moved to the node's shared memory), but a receive that finds its sender
dead fails without removing the file, and nothing sweeps dead senders' files: every sender killed mid-transfer
leaves its tensors' bytes in shared memory for good. RAC311 kills it; RAC301 does not (its receiver holds nothing
more). Being in /dev/shm and declared for the cluster, it is also node-only declared cluster-wide (RAC272).

In a module of its own, outside ``corpus.PLUGINS`` (only its Ray checks kill it, which the corpus test does not
pay for every mutant): ``RAYACCEL_PLUGINS=c-transport-leaks-dead-peer=rayaccel_testplugins.corpus_leaky_buffers:
plugin`` loads it; tests/conformance/test_conformance_recovery.py grades it.
"""

from __future__ import annotations

import os
from typing import Any

from rayaccel import TransportSpec
from rayaccel_testplugins import corpus
from rayaccel_testplugins.acme_wired import AcmeFileMetadata, AcmeFileTransport, _alive

NAME = "ACME_LEAKY_FILE"
FILE_PREFIX = "acme-leaky-file-"
SHM_DIR = "/dev/shm"


def files() -> list[str]:
    """The transport's files on this host (the test removes what its killed senders leaked)."""
    return sorted(os.path.join(SHM_DIR, n) for n in os.listdir(SHM_DIR) if n.startswith(FILE_PREFIX))


class LeakyFileTransport(AcmeFileTransport):
    def tensor_transport_backend(self) -> str:
        return NAME

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: list[Any]) -> AcmeFileMetadata:
        import torch

        path = os.path.join(SHM_DIR, f"{FILE_PREFIX}{os.getpid()}-{obj_id}")  # no sweep of dead senders' files
        return self.write_locked(obj_id, path, [t.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes()
                                                for t in rdt_object], [(t.shape, t.dtype) for t in rdt_object])

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
