"""Corpus mutants whose tensor transport says it can abort (``can_abort_transport()`` True) yet lets a transfer
aborted at its receiver arrive whole (held-out round 16's j1, RAC301's invariant an-aborted-transfer-fails). Ray
aborts a failed or overdue transfer by calling ``abort_transport`` on its receiver, and a receive still queued runs
after it: NIXL's fails it. Two shapes:

- ``c-abort-ignored``: the SDK's shared-memory transport with ``abort_transport`` overridden as a no-op ("a copy
  takes milliseconds: nothing worth stopping");
- ``c-abort-forgotten-at-receive``: ``acme_wired``'s file transport recording the abort, but each receive clearing
  its own id's mark first ("a stale abort must not fail a new transfer"), so an abort that came before it is lost.

RAC273 runs the same abort without Ray (lane J10), at the supported tier: imported by
tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``), each bound here under its name;
tests/conformance/test_conformance_heldout16_aborted_transfers.py grades them by RAC301 too, and
tests/conformance/test_conformance_heldout16_freed_transfers.py by RAC273.
"""

from __future__ import annotations

from typing import Any

from rayaccel import SharedMemoryTransport, TransportSpec
from rayaccel_testplugins import corpus
from rayaccel_testplugins.acme_wired import AcmeFileTransport

SHM_NAME = "ACME_SHM_NO_ABORT"
FILE_NAME = "ACME_FILE_LATE_ABORT"


class AbortIgnoredTransport(SharedMemoryTransport):
    def tensor_transport_backend(self) -> str:
        return SHM_NAME

    def abort_transport(self, obj_id: str, communicator_metadata: Any) -> None:
        return None  # the defect: a shared-memory copy takes milliseconds, so nothing is stopped


class AbortForgottenTransport(AcmeFileTransport):
    def tensor_transport_backend(self) -> str:
        return FILE_NAME

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        self._aborted.discard(obj_id)  # the defect: an abort that came before this receive is forgotten
        return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)


class AbortIgnored(corpus.Healthy):
    DEFECT = "its shared-memory transport says it can abort, but abort_transport does nothing"
    KILLED_BY = ("RAC273", f"invariant an-aborted-transfer-fails: {SHM_NAME}")

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name=SHM_NAME, devices=["cpu"], one_sided=True, link_kinds=["other"], reach="node",
                              manager_class="rayaccel_testplugins.corpus_aborted_transfers:AbortIgnoredTransport")]


class AbortForgottenAtReceive(corpus.Healthy):
    DEFECT = "its file transport says it can abort, but a receive forgets an abort that came before it"
    KILLED_BY = ("RAC273", f"invariant an-aborted-transfer-fails: {FILE_NAME}")

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name=FILE_NAME, devices=["cpu"], one_sided=True, link_kinds=["other"], reach="node",
                              manager_class="rayaccel_testplugins.corpus_aborted_transfers:AbortForgottenTransport")]


ignored = c_abort_ignored = corpus.add_import_defect(AbortIgnored)
forgotten = c_abort_forgotten_at_receive = corpus.add_import_defect(AbortForgottenAtReceive)
