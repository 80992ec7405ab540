"""ACME's collective backend (``ACME_GLOO``): ``ray.util.collective`` over torch.distributed's gloo, on CPU.

A vendor's backend wraps its own library (HCCL, RCCL, ...); this one wraps gloo so that it runs anywhere. It
reuses Ray's gloo group for the rendezvous (rank 0 publishes an address in Ray's GCS key-value store) and the
collective calls; what makes it ACME's is the name it is registered under and that only the plugin registers it.
"""

from __future__ import annotations

from ray.util.collective.collective_group.torch_gloo_collective_group import TorchGLOOGroup


class AcmeGlooGroup(TorchGLOOGroup):  # type: ignore[misc]  # Ray's class is untyped
    """Ray constructs it as ``AcmeGlooGroup(world_size, rank, group_name)`` in each actor of the group."""

    @classmethod
    def backend(cls) -> str:
        return "ACME_GLOO"

    @classmethod
    def check_backend_availability(cls) -> bool:
        import torch.distributed as dist

        return bool(dist.is_available() and dist.is_gloo_available())
