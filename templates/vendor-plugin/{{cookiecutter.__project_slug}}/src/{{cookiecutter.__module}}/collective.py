"""A collective backend for ``ray.util.collective`` (your collective library: allreduce, broadcast, ...).

Declare it and the bridge registers it with Ray's ``register_collective_backend`` in every driver
(``rayaccel.ray.init``/``connect``) and in every worker of a rayaccel node before its first task: your users
call ``ray.util.collective.create_collective_group(actors, world_size, ranks, backend="<FAMILY>_CCL")`` with no
registration of their own. Ray constructs the class as ``Group(world_size, rank, group_name)`` in each actor of
the group and calls its methods with a list of tensors (one per device of the process) and Ray's options
(``ray.util.collective.types``: ``AllReduceOptions.reduceOp``, ``BroadcastOptions.root_rank``, ...). The
certified tier's RAC306 checks that the class imports, registers and is your package's own.

Uncomment, replace the ``your_ccl`` calls with your library's, and declare it in ``plugin.py``::

    from rayaccel import CollectiveBackend

    @hookimpl
    def rayaccel_collective_backends() -> list[CollectiveBackend]:
        return [CollectiveBackend(name="{{ cookiecutter.__family | upper | replace('-', '_') }}_CCL",
                                  group_class="{{ cookiecutter.__module }}.collective:Group",
                                  devices=["{{ cookiecutter.__family }}"])]
"""

# from __future__ import annotations
#
# from typing import Any
#
# from ray.util.collective.collective_group.base_collective_group import BaseGroup
#
#
# class Group(BaseGroup):
#     def __init__(self, world_size: int, rank: int, group_name: str) -> None:
#         super().__init__(world_size, rank, group_name)
#         # Rendezvous through Ray's GCS key-value store (ray.experimental.internal_kv): rank 0 publishes its
#         # library's unique id under a key named after group_name, the other ranks wait for it (bounded).
#         self._comm = your_ccl.init_rank(world_size, rank, unique_id)
#
#     @classmethod
#     def backend(cls) -> str:
#         return "{{ cookiecutter.__family | upper | replace('-', '_') }}_CCL"
#
#     @classmethod
#     def check_backend_availability(cls) -> bool:
#         return your_ccl.is_available()
#
#     def allreduce(self, tensors: list[Any], allreduce_options: Any = None) -> None:
#         for t in tensors:
#             self._comm.allreduce(t, op=allreduce_options.reduceOp)
#
#     def broadcast(self, tensors: list[Any], broadcast_options: Any = None) -> None:
#         for t in tensors:
#             self._comm.broadcast(t, root=broadcast_options.root_rank)
#
#     # barrier, reduce, allgather, reducescatter, send and recv: Ray's BaseGroup makes them abstract;
#     # raise NotImplementedError in those your library lacks.
#
#     def destroy_group(self) -> None:
#         self._comm.destroy()
