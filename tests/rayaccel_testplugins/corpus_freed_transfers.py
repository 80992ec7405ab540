"""Corpus mutants whose tensor transport keeps what a transfer took after Ray frees it (held-out round 16's l1;
RAC273's and RAC301's invariant a-transfer-holds-nothing-after-it). Ray calls ``garbage_collect`` on the sender
when the ref is freed; every transfer a job makes after that holds more of the node. Two shapes:

- ``c-gc-keeps-segment``: the SDK's shared-memory transport with ``garbage_collect`` overridden as a no-op ("keep
  the segment mapped for the next send"): each transfer's segment stays named in /dev/shm and open in the sender;
- ``c-gc-leaves-file``: a file transport (``acme_wired``'s, writing into /dev/shm) whose ``garbage_collect``
  lets go of the file's descriptor but leaves the file ("a late receiver may still read it"): no descriptor is
  kept, only the files.

And two whose ``garbage_collect`` frees more than the ref Ray freed (held-out round 18's j2; RAC273's invariant
a-freed-ref-frees-only-its-transfer): Ray frees each ref alone while others of the same sender are in flight.

- ``c-gc-frees-every-segment``: the SDK's shared-memory transport giving back every staged segment on each
  ``garbage_collect`` ("the pool stays small between bursts"): a transfer staged beside the freed one is gone;
- ``c-gc-sweeps-every-file``: ``acme_wired``'s file transport unlinking every file this sender wrote ("one sweep,
  not one unlink per ref"), each other transfer's descriptor kept: its file is gone before its receive.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name. Without Ray, RAC273 kills both (tests/conformance/test_conformance_heldout16_freed_transfers.py).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from rayaccel import SharedMemoryTransport, TransportSpec
from rayaccel_testplugins import corpus
from rayaccel_testplugins.acme_wired import FILE_PREFIX as FILE_PREFIX_OF_ACME, AcmeFileMetadata, AcmeFileTransport

SEGMENT_NAME = "ACME_SHM_KEPT"
FILE_NAME = "ACME_FILE_LEFT"
FILE_PREFIX = "acme-file-left-"
SHM_DIR = "/dev/shm"
EVERY_SEGMENT_NAME = "ACME_SHM_EVERY"
EVERY_FILE_NAME = "ACME_FILE_EVERY"


def files() -> list[str]:
    """The second shape's files on this host (a test removes what it left)."""
    return sorted(os.path.join(SHM_DIR, n) for n in os.listdir(SHM_DIR) if n.startswith(FILE_PREFIX))


class SegmentKeptTransport(SharedMemoryTransport):
    def tensor_transport_backend(self) -> str:
        return SEGMENT_NAME

    def garbage_collect(self, obj_id: str, tensor_transport_meta: Any, tensors: list[Any]) -> None:
        return None  # the defect: the segment is kept mapped for a next send that never reuses it


class FileLeftTransport(AcmeFileTransport):
    def tensor_transport_backend(self) -> str:
        return FILE_NAME

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: list[Any]) -> AcmeFileMetadata:
        import torch

        path = os.path.join(SHM_DIR, f"{FILE_PREFIX}{os.getpid()}-{obj_id}")
        return self.write_locked(obj_id, path, [t.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes()
                                                for t in rdt_object], [(t.shape, t.dtype) for t in rdt_object])

    def garbage_collect(self, obj_id: str, tensor_transport_meta: Any, tensors: list[Any]) -> None:
        fd = self._locked.pop(obj_id, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)  # the defect: the descriptor goes, the file stays for a late receiver


class EverySegmentFreedTransport(SharedMemoryTransport):
    def tensor_transport_backend(self) -> str:
        return EVERY_SEGMENT_NAME

    def garbage_collect(self, obj_id: str, tensor_transport_meta: Any, tensors: list[Any]) -> None:
        super().garbage_collect(obj_id, tensor_transport_meta, tensors)
        for staged in list(self._owned):
            self._drop(staged)  # the defect: every other staged transfer's segment given back too


class EveryFileSweptTransport(AcmeFileTransport):
    def tensor_transport_backend(self) -> str:
        return EVERY_FILE_NAME

    def garbage_collect(self, obj_id: str, tensor_transport_meta: Any, tensors: list[Any]) -> None:
        super().garbage_collect(obj_id, tensor_transport_meta, tensors)
        folder = os.path.dirname(tensor_transport_meta.path)
        mine = f"{FILE_PREFIX_OF_ACME}{os.getpid()}-"
        for name in os.listdir(folder):
            if name.startswith(mine):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(folder, name))  # the defect: every file of this sender, not obj_id's


class GcKeepsSegment(corpus.Healthy):
    DEFECT = "its shared-memory transport's garbage_collect does nothing: every freed transfer's segment stays"
    KILLED_BY = ("RAC273", "invariant a-transfer-holds-nothing-after-it: ACME_SHM_KEPT")

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name=SEGMENT_NAME, devices=["cpu"], one_sided=True, link_kinds=["other"], reach="node",
                              manager_class="rayaccel_testplugins.corpus_freed_transfers:SegmentKeptTransport")]


class GcLeavesFile(corpus.Healthy):
    DEFECT = "its file transport's garbage_collect closes the file but leaves it in /dev/shm"
    KILLED_BY = ("RAC273", "invariant a-transfer-holds-nothing-after-it: ACME_FILE_LEFT")

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name=FILE_NAME, devices=["cpu"], one_sided=True, link_kinds=["other"], reach="node",
                              manager_class="rayaccel_testplugins.corpus_freed_transfers:FileLeftTransport")]


class GcFreesEverySegment(corpus.Healthy):
    DEFECT = "its shared-memory transport's garbage_collect gives back every staged transfer's segment, not obj_id's"
    KILLED_BY = ("RAC273", "invariant a-freed-ref-frees-only-its-transfer: ACME_SHM_EVERY")

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name=EVERY_SEGMENT_NAME, devices=["cpu"], one_sided=True, link_kinds=["other"],
                              reach="node",
                              manager_class="rayaccel_testplugins.corpus_freed_transfers:EverySegmentFreedTransport")]


class GcSweepsEveryFile(corpus.Healthy):
    DEFECT = "its file transport's garbage_collect unlinks every file its sender wrote, not obj_id's"
    KILLED_BY = ("RAC273", "invariant a-freed-ref-frees-only-its-transfer: ACME_FILE_EVERY")

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name=EVERY_FILE_NAME, devices=["cpu"], one_sided=True, link_kinds=["other"],
                              reach="node",
                              manager_class="rayaccel_testplugins.corpus_freed_transfers:EveryFileSweptTransport")]


keeps_segment = c_gc_keeps_segment = corpus.add_import_defect(GcKeepsSegment)
leaves_file = c_gc_leaves_file = corpus.add_import_defect(GcLeavesFile)
frees_every_segment = c_gc_frees_every_segment = corpus.add_import_defect(GcFreesEverySegment)
sweeps_every_file = c_gc_sweeps_every_file = corpus.add_import_defect(GcSweepsEveryFile)
