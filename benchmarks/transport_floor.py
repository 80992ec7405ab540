"""Ray Direct Transport's own path with no bytes moved: the floor under any transport registered with Ray.

:class:`NoBytesTransport` is a one-sided transport that copies nothing: the sender's step describes the tensors,
the receiver's step hands back a warm tensor of the same shape it keeps (already written, so its pages are
mapped, as a transport's pooled memory would be). A transfer through it is Ray's part of every transfer: the
sender's task and its return, the metadata's way through the owner to the receiver, the receiver's task and
its reply, and the reader's pass over the pages. The sender stamps its metadata and the receiver keeps how
long it took to arrive (:data:`HOPS`): that stretch is the only part of Ray's path a transport's one copy can
run beside (the copy cannot start before Ray hands the sender's step the tensors, and the receiver's step must
return them complete), so ``no-bytes transfer - its hop + memcpy`` is the least any one-copy transport through
Ray can take.

:class:`HeldNoBytesTransport` is the same with its receive held until :data:`HOLD_S` after the sender's step (set
in the receiver's process to a memcpy's time): Ray's path with a copy that starts in the sender's step, takes
the memcpy's time and costs no CPU. Unlike the subtraction above it keeps what Ray does when the receive ends
late, as every copying transport's does: the receiver's ``__ray_recv__`` then completes beside its own task,
and the owner takes that reply while the task's reply comes in.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ray.experimental.rdt.tensor_transport_manager import (
    CommunicatorMetadata,
    TensorTransportManager,
    TensorTransportMetadata,
)

if TYPE_CHECKING:
    import ray

NAME = "BENCH_NO_BYTES"
HELD_NAME = "BENCH_NO_BYTES_HELD"
#: Seconds from the sender's step that :class:`HeldNoBytesTransport`'s receive returns at (this process's).
HOLD_S = [0.0]
#: Seconds from the sender's metadata to the receiver's step, one per receive in this (receiver) process.
HOPS: list[float] = []
#: The receiver's warm tensors by (shape, dtype).
_WARM: dict[tuple[Any, ...], Any] = {}


@dataclass
class NoBytesMetadata(TensorTransportMetadata):
    #: ``time.perf_counter()`` at the sender: CLOCK_MONOTONIC on Linux, one clock for every process of a machine.
    sent_at: float = 0.0


class NoBytesTransport(TensorTransportManager):
    """Moves no bytes; the receiver gets its own warm tensor of the sender's shape and dtype."""

    def tensor_transport_backend(self) -> str:
        return NAME

    @staticmethod
    def is_one_sided() -> bool:
        return True

    @staticmethod
    def can_abort_transport() -> bool:
        return False

    def actor_has_tensor_transport(self, actor: ray.actor.ActorHandle[Any]) -> bool:
        return True

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: list[Any]) -> NoBytesMetadata:
        return NoBytesMetadata(tensor_meta=[(t.shape, t.dtype) for t in rdt_object], tensor_device="cpu",
                               sent_at=time.perf_counter())

    def get_communicator_metadata(self, src_actor: ray.actor.ActorHandle[Any], dst_actor: ray.actor.ActorHandle[Any],
                                  backend: str | None = None) -> CommunicatorMetadata:
        return CommunicatorMetadata()

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        import torch

        assert isinstance(tensor_transport_metadata, NoBytesMetadata)
        HOPS.append(time.perf_counter() - tensor_transport_metadata.sent_at)
        out = []
        for shape, dtype in tensor_transport_metadata.tensor_meta:
            key = (tuple(shape), dtype)
            if key not in _WARM:
                # Written once: its pages are mapped from here on.
                _WARM[key] = torch.ones(tuple(shape), dtype=dtype)  # type: ignore[arg-type]
            out.append(_WARM[key])
        return out

    def send_multiple_tensors(self, tensors: list[Any], tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata) -> None:
        raise NotImplementedError(f"{NAME} is one-sided")

    def garbage_collect(self, obj_id: str, tensor_transport_meta: TensorTransportMetadata,
                        tensors: list[Any]) -> None:
        pass

    def abort_transport(self, obj_id: str, communicator_metadata: CommunicatorMetadata) -> None:
        pass


class HeldNoBytesTransport(NoBytesTransport):
    """:class:`NoBytesTransport` whose receive returns :data:`HOLD_S` after the sender's step, not at once."""

    def tensor_transport_backend(self) -> str:
        return HELD_NAME

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        out = super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)
        assert isinstance(tensor_transport_metadata, NoBytesMetadata)
        HOPS.pop()  # the hops are the unheld floor's
        time.sleep(max(0.0, tensor_transport_metadata.sent_at + HOLD_S[0] - time.perf_counter()))  # the copy's time
        return out
