"""Held-out grading, round 11 (issue 46, lane Yc): partitions discovered under names of the plugin's own, not the
ids the machine gives them, are named so by RAC105 (``value_relations.renamed_partitions``).

The NVIDIA wrapper ``n1`` named each MIG device ``MIG-<GPU uuid>/<GPU instance>/<compute instance>`` (the form CUDA's
``CUDA_VISIBLE_DEVICES`` documents beside the MIG UUID) where NVML answers its MIG UUID; RAC105 said only that each
expected partition's fields were None. No invariant tells the two names apart (CUDA takes both, NVML's
``nvmlDeviceGetHandleByUUID`` too), so the failure names what the evidence shows: ids the machine states nowhere,
built from the GPU's own, where the machine states the fixture's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import wrapped

import rayaccel_nvidia.discovery
import rayaccel_nvidia.plugin
from rayaccel_conformance.checks.value_relations import renamed_partitions
from rayaccel_conformance.registry import CHECKS, CheckFailed

NVIDIA = Path(rayaccel_nvidia.plugin.__file__).parent
GPU = "GPU-9752cb7f-fe25-52a2-8e8e-a54f7fd9509f"


def test_nvidia_with_mig_devices_named_from_their_gpu_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    own = rayaccel_nvidia.discovery.mig_partitions

    def composed(nvml: Any, handle: Any, gpu_mib: int | None, capacity: tuple[int, int]) -> Any:  # n1's one edit
        gpu = nvml.nvmlDeviceGetUUID(handle)
        return [p.model_copy(update={"id": f"MIG-{gpu}/{p.attributes['gpu_instance_id']}/"
                                           f"{p.attributes['compute_instance_id']}"})
                for p in own(nvml, handle, gpu_mib, capacity)]

    monkeypatch.setattr(rayaccel_nvidia.discovery, "mig_partitions", composed)
    subject = wrapped(rayaccel_nvidia.plugin, "nvidia", str(NVIDIA))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC105"].function(subject, "nvidia/a100-mig")
    said = str(failed.value)
    assert (f"{GPU}'s partitions are discovered as MIG-{GPU}/2/0, MIG-{GPU}/3/0, MIG-{GPU}/4/0, ids the machine "
            f"states nowhere, each built from the device's own id {GPU} and more, where the machine gives them ids "
            "of their own: MIG-93cef97b-ee1a-54df-b3ec-a8b837f4aaf2 at library nvml.devices.0.mig_devices.2.uuid "
            "and 2 more") in said, said


def test_partitions_named_otherwise_than_a_driver_file_states_them_are_named() -> None:
    state = {"files": {"/sys/class/acme/acme0/part0/uuid": "ACME-P-0\n", "/sys/class/acme/acme0/part1/uuid":
                       "ACME-P-1\n"}}
    said = renamed_partitions("ACME-0", ["ACME-P-0", "ACME-P-1"], ["acme0.0", "acme0.1"], state)
    assert said is not None and "ids the machine states nowhere, where the machine gives" in said, said
    assert "ACME-P-0 at file /sys/class/acme/acme0/part0/uuid and 1 more" in said, said


@pytest.mark.parametrize(("missing", "found"), [
    (["ACME-P-0", "ACME-P-1"], ["ACME-P-0x"]),  # counts differ: partitions lost or made, not renamed
    (["ACME-P-0", "ACME-P-9"], ["a", "b"]),  # an expected id the machine states nowhere
    (["ACME-P-0"], ["ACME-P-1"])])  # the name found is one the machine states
def test_nothing_is_said_where_the_evidence_shows_no_renaming(missing: list[str], found: list[str]) -> None:
    state = {"commands": {"acme-smi -L": {"stdout": "ACME-P-0\nACME-P-1\n", "returncode": 0}}}
    assert renamed_partitions("ACME-0", missing, found, state) is None
