"""A tensor transport that keeps a descriptor open for every receive that fails: RAC301's killed-peer step must
fail it (a receiver that leaks on each dead peer runs out of descriptors)."""

from __future__ import annotations

import os
from typing import Any

from rayaccel_testplugins.acme_wired import AcmeFileTransport


class LeakyTransport(AcmeFileTransport):
    def __init__(self) -> None:
        super().__init__()
        self._held: list[int] = []

    def tensor_transport_backend(self) -> str:
        return "ACME_LEAKY"

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        fd = os.open("/dev/null", os.O_RDONLY)  # what a receive holds while it runs
        out = super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)
        os.close(fd)  # the defect: closed on success only
        return out


class ThreadPerReceiveTransport(AcmeFileTransport):
    """A transport whose every receive starts a watchdog thread that waits on an event nobody sets: each
    successful transfer leaves one thread behind in the receiver (RAC301's repeated transfers must fail it)."""

    def tensor_transport_backend(self) -> str:
        return "ACME_THREADY"

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        import threading

        threading.Thread(target=threading.Event().wait, name=f"watchdog-{obj_id[:8]}", daemon=True).start()
        return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)
