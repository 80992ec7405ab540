"""RCCL for Ray Direct Transport.

Ray 2.60 has no RCCL transport of its own, but on ROCm its ``NCCL`` transport already runs over RCCL:
``ray.util.collective``'s NCCL backend calls the NCCL API through CuPy, and ROCm builds of CuPy and
PyTorch route that API to RCCL; torch also names ROCm devices ``cuda``. So RCCL is Ray's collective
transport registered under its own name, for code that wants to say what it runs on. Register it in the
driver, before creating the actors::

    import torch
    from ray.experimental import register_tensor_transport
    from rayaccel_amd.transport import RCCLTensorTransport

    register_tensor_transport("RCCL", ["cuda"], RCCLTensorTransport, torch.Tensor)
"""

from __future__ import annotations

from ray.experimental.rdt.collective_tensor_transport import NCCLTensorTransport


class RCCLTensorTransport(NCCLTensorTransport):
    """Ray's collective tensor transport over the NCCL-API backend, which is RCCL on ROCm."""

    def tensor_transport_backend(self) -> str:
        # The collective group's backend name: Ray's collective library calls RCCL "NCCL".
        return "NCCL"
