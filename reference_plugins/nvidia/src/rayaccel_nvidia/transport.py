"""Tensor transports Ray Direct Transport already ships for NVIDIA GPUs (classes in Ray 2.60)."""

from __future__ import annotations

from rayaccel import TransportSpec


def transports() -> list[TransportSpec]:
    """Made when asked for, not when the plugin is imported (a record built at import would load pydantic)."""
    return [
        TransportSpec(name="NCCL", devices=["cuda"], link_kinds=["nvlink", "pcie", "infiniband", "roce"],
                      one_sided=False, builtin_in_ray=True,
                      manager_class="ray.experimental.rdt.collective_tensor_transport:NCCLTensorTransport"),
        TransportSpec(name="NIXL", devices=["cuda", "cpu"], link_kinds=["nvlink", "pcie", "infiniband", "roce", "efa"],
                      one_sided=True, builtin_in_ray=True,
                      manager_class="ray.experimental.rdt.nixl_tensor_transport:NixlTensorTransport"),
        TransportSpec(name="CUDA_IPC", devices=["cuda"], link_kinds=["nvlink", "pcie"], one_sided=True,
                      builtin_in_ray=True, reach="node",  # its receive refuses a sender on another node
                      manager_class="ray.experimental.rdt.cuda_ipc_transport:CudaIpcTransport"),
    ]
