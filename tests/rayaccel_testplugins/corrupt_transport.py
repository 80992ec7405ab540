"""A tensor transport that flips the first byte it receives: RAC301's contract run must fail it."""

from __future__ import annotations

from typing import Any

from rayaccel.transports.shared_memory import SharedMemoryTransport


class CorruptingTransport(SharedMemoryTransport):
    def tensor_transport_backend(self) -> str:
        return "ACME_CORRUPT"

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        tensors = super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata,
                                                target_buffers)
        if tensors and tensors[0].numel():
            tensors[0] = tensors[0].clone()
            tensors[0].view(-1)[0] += 1
        return tensors
