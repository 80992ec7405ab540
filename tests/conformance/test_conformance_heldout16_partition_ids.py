"""Held-out grading, round 16 (issue 46, lane J8): a partitioned device is named by none of its partitions' uuids
(``invariant a-device-is-none-of-its-partitions``, RAC113).

The AMD wrapper ``a2`` named a partitioned GPU whose amdsmi uuid is not in amdsmi's form by its first partition's
uuid, where the plugin names it ``<uuid>-gpu``; every fixture's uuids are in amdsmi's form, so it survived
``supported``. RAC113 now checks each build and, on a fixture with partitioned devices, each fault written on a
partitioned device's own record (its first partition's): ``mi300x-cpx-nps4``'s ``gpu9-pci-id-only`` (amdsmi answering
no uuid and no PCI address for one logical GPU) written on GPU 0's first partition reaches the fallback. Both corpus
shapes and a2's edit on the AMD plugin are named; the plugin as shipped and a partitioned corpus control pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutant_grading import failure, graded, mutant, wrapped

import rayaccel_amd.discovery
import rayaccel_amd.plugin
from rayaccel_amd.readings import GpuRecord
from rayaccel_conformance.checks.partition_ids import _first_partition_moves, partition_id_findings
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_partition_ids import CardIdFromFirstPartition, CardIdFromLastFolder, PartitionedCards

INVARIANT = "invariant a-device-is-none-of-its-partitions"
AMD = str(Path(rayaccel_amd.plugin.__file__).parent)
FIXTURE = "amd/mi300x-cpx-nps4"


@pytest.mark.parametrize(("shape", "tail"), [(CardIdFromFirstPartition, "a"), (CardIdFromLastFolder, "b")])
def test_a_card_named_by_a_partitions_uuid_is_named(shape: type[Healthy], tail: str) -> None:
    message = failure(mutant(shape), "RAC113", "acme-4")
    assert INVARIANT in message and f"device 'ACMP-0000-5e1f-4c2a-9d3b-00000000000{tail}' has the uuid of" in message, \
        message


def test_the_partitioned_corpus_control_passes() -> None:
    subject = graded(PartitionedCards("c-partitioned-cards"))
    assert "2 partitions on 1 devices" in str(CHECKS["RAC113"].function(subject, "c-partitioned-cards/acme-4"))


def test_a_fault_is_written_on_a_partitioned_gpus_first_partition() -> None:
    subject = wrapped(rayaccel_amd.plugin, "amd", AMD)
    shipped = subject.inventory(FIXTURE).family("amd")
    assert shipped is not None
    moves = _first_partition_moves(subject.fixture(FIXTURE), list(shipped.devices))
    assert moves[0][0] == "gpu9-pci-id-only" and moves[0][1].startswith("library amdsmi gpus.0, partition 0 of"), moves
    # The plugin as shipped falls back to '<uuid>-gpu' there, an id none of its partitions has.
    assert partition_id_findings(subject, subject.fixture(FIXTURE), shipped) == []


def test_a2s_edit_on_the_amd_plugin_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    own = rayaccel_amd.discovery.physical_uuid

    def first_partitions_uuid(primary: GpuRecord) -> str:
        """a2's edit: "a GPU whose uuid has no 'no partition' form is its first partition"."""
        found = str(own(primary))
        return primary.uuid if found == f"{primary.uuid}-gpu" else found

    monkeypatch.setattr(rayaccel_amd.discovery, "physical_uuid", first_partitions_uuid)
    subject = wrapped(rayaccel_amd.plugin, "amd", AMD)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC113"].function(subject, FIXTURE)
    said = str(failed.value)
    assert INVARIANT in said and "gpu9-pci-id-only's change written on a partitioned device's own record" in said, said
    assert "device 'amdsmi-gpu-0' has the uuid of partition 0" in said, said


def test_the_amd_plugin_as_shipped_passes() -> None:
    subject = wrapped(rayaccel_amd.plugin, "amd", AMD)
    assert "64 partitions on 8 devices" in str(CHECKS["RAC113"].function(subject, FIXTURE))
