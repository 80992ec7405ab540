"""Corpus mutants whose transport class names itself otherwise than its declaration (held-out round 11's survivor c3:
the template's transport with its ``tensor_transport_backend`` override dropped, so the class answered the SDK's
``RAYACCEL_SHM`` under the name ``HARTFELL_SHM``). Ray's own transports each answer the name they are registered
under, the method's contract says Ray matches a transport by it, and a transport's errors and logs carry it; RAC305
names ``invariant named-as-declared``.

- ``c-transport-named-as-reference``: the SDK's ``SharedMemoryTransport`` subclassed for the family, its name left
  to the parent's (``RAYACCEL_SHM``, the reference transport every rayaccel node registers too);
- ``c-transport-named-as-sibling``: two transports of the family's own, the second's class a subclass of the first's
  that keeps its parent's name (``ACME_SPOOL`` for ``ACME_SPOOL_BULK``);
- ``c-collective-named-as-declared``: Ray's collective (NCCL) transport subclassed under the family's name,
  its class answering that name, which Ray's collective library then looks each actor's group up by: no backend has
  it, so no actor ever has the transport (AMD's RCCL class answers ``NCCL`` for this reason).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it.
"""

from __future__ import annotations

from ray.experimental.rdt.collective_tensor_transport import NCCLTensorTransport

from rayaccel import SharedMemoryTransport, TransportSpec
from rayaccel_testplugins.acme_wired import AcmeFileTransport
from rayaccel_testplugins.corpus import Healthy, add_import_defect

KILLED_BY = ("RAC305", "invariant named-as-declared")
MODULE = "rayaccel_testplugins.corpus_transport_names"


class AcmeShmTransport(SharedMemoryTransport):
    """The reference transport for acme's tensors: its name is left to the parent's (the defect)."""


class AcmeSpoolTransport(AcmeFileTransport):
    """acme's file transport under the family's own name."""

    def tensor_transport_backend(self) -> str:
        return "ACME_SPOOL"


class AcmeSpoolBulkTransport(AcmeSpoolTransport):
    """The same files for large tensors; its name is left to the parent's (the defect)."""


class AcmeCollectiveTransport(NCCLTensorTransport):
    """Ray's NCCL transport for acme's tensors, under acme's name: the class answers that name (the defect)."""

    def tensor_transport_backend(self) -> str:
        return "ACME_COLLECTIVE"


class TransportNamedAsReference(Healthy):
    DEFECT = ("its shared-memory transport ACME_SHM subclasses the SDK's and drops the tensor_transport_backend "
              "override: the class answers RAYACCEL_SHM, the reference transport's name, so its errors and logs name "
              "another transport")
    KILLED_BY = KILLED_BY

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name="ACME_SHM", devices=["cpu"], one_sided=True, link_kinds=["other"], reach="node",
                              manager_class=f"{MODULE}:AcmeShmTransport")]


class TransportNamedAsSibling(Healthy):
    DEFECT = ("its second transport ACME_SPOOL_BULK's class subclasses the first's and keeps its name: it answers "
              "ACME_SPOOL, the plugin's other transport")
    KILLED_BY = KILLED_BY

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name="ACME_SPOOL", devices=["cpu"], one_sided=True, link_kinds=["other"],
                              manager_class=f"{MODULE}:AcmeSpoolTransport"),
                TransportSpec(name="ACME_SPOOL_BULK", devices=["cpu"], one_sided=True, link_kinds=["other"],
                              manager_class=f"{MODULE}:AcmeSpoolBulkTransport")]


class CollectiveNamedAsDeclared(Healthy):
    DEFECT = ("its transport ACME_COLLECTIVE subclasses Ray's NCCL transport and answers its declared name, which "
              "Ray's collective transport looks each actor's group up by: no collective backend is called so, so no "
              "actor ever has the transport")
    KILLED_BY = KILLED_BY

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name="ACME_COLLECTIVE", devices=["cuda"], link_kinds=["pcie"],
                              manager_class=f"{MODULE}:AcmeCollectiveTransport")]


c_transport_named_as_reference = add_import_defect(TransportNamedAsReference)
c_collective_named_as_declared = add_import_defect(CollectiveNamedAsDeclared)
c_transport_named_as_sibling = add_import_defect(TransportNamedAsSibling)
