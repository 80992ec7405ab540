"""Held-out grading, round 11 (issue 46, lane F1): a visibility variable Ray's manager reads but leaves to the node,
written by the plugin.

``a1`` (an AMD wrapper) set ``ROCR_VISIBLE_DEVICES`` to the task's GPUs beside ``HIP_VISIBLE_DEVICES`` (ROCm's
advice on Linux). Ray's AMD manager writes ``HIP_VISIBLE_DEVICES`` alone and reads ``ROCR_VISIBLE_DEVICES`` only to
refuse it set without HIP's, so under Ray a task keeps the node's (Slurm's gres sets it). ROCm applies ROCR first
and renumbers what it keeps; HIP's ids then index that list (PyTorch's ``_parse_visible_devices``, pytorch#142292:
"The ROCR env var is processed first which then reduces the number of GPUs that HIP can select from"): GPUs 2,3 in
both show the task none. Nothing named it: RAC270 compared only the variables Ray's manager writes. RAC270's
``invariant companions-left-as-ray-leaves-them`` names each variable the manager reads beside its own and never
writes that the plugin's env sets. Shown on the AMD plugin with a1's one edit, on two corpus shapes graded alone
(one claimant of HIP_VISIBLE_DEVICES per manager), and passed by the AMD plugin as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import evidence, failure, wrapped

from rayaccel_amd import plugin as amd, visibility
from rayaccel_conformance.checks.experimental import _ray_validator
from rayaccel_conformance.checks.ray_parity import companions_read, left_to_the_node
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import corpus_companions
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_companions import HIP, LEFT_TO_THE_NODE_MUTANTS, ROCR

INVARIANT = "invariant companions-left-as-ray-leaves-them"
AMD_PACKAGE = Path(amd.__file__).parent


def amd_with(**hooks: Any) -> Any:
    """The AMD reference plugin under its own name, fixtures and catalog, with ``hooks`` in place of its own."""
    return wrapped(amd, "amd", str(AMD_PACKAGE), **hooks)


def name_of(cls: type[Healthy]) -> str:
    return "c-" + "".join(f"-{c.lower()}" if c.isupper() else c for c in cls.__name__).lstrip("-")


def test_ray_s_amd_manager_writes_hip_alone_and_reads_rocr_beside_it() -> None:
    """The oracle: what Ray 2.60's AMD manager reads beside its variable and what it leaves to the node."""
    manager = _ray_validator("GPU", HIP)
    read = companions_read(manager, HIP)
    assert read == [ROCR]
    assert left_to_the_node({HIP: "2,3", ROCR: "2,3"}, read, {HIP: "2,3"}) == [ROCR]
    assert left_to_the_node({HIP: "2,3"}, read, {HIP: "2,3"}) == []


def test_a1_rocr_beside_hip_fails_rac270_naming_it() -> None:
    """The AMD plugin with a1's one edit: its visible env writes both variables with the task's GPUs."""
    def both_layers(unit_ids: list[str]) -> dict[str, str]:
        ids = ",".join(unit_ids)
        return {visibility.HIP_VISIBLE_DEVICES: ids, visibility.ROCR_VISIBLE_DEVICES: ids}

    subject = amd_with(rayaccel_visible_env=both_layers)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC270"].function(subject, "amd/mi300x-8")
    said = str(failed.value)
    assert f"{INVARIANT}, amd/mi300x-8, Ray's settings unset: units ['0', '1'] set {ROCR}='0,1' beside {HIP}='0,1'; " \
           f"Ray's AMDGPUAcceleratorManager reads {ROCR} but writes only {HIP}" in said, said


def test_the_amd_plugin_as_it_is_leaves_rocr_to_the_node() -> None:
    subject = amd_with()
    said = str(CHECKS["RAC270"].function(subject, "amd/mi300x-8"))
    assert "HIP_VISIBLE_DEVICES as Ray's AMDGPUAcceleratorManager writes and reads it" in said, said


@pytest.mark.parametrize("mutant", LEFT_TO_THE_NODE_MUTANTS, ids=lambda cls: cls.__name__)
def test_a_variable_left_to_the_node_written_fails_rac270_naming_it(mutant: type[Healthy]) -> None:
    said = failure(getattr(corpus_companions, name_of(mutant).replace("-", "_")), "RAC270", "acme-4")
    assert mutant.KILLED_BY == ("RAC270", INVARIANT)
    assert f"{INVARIANT}, {name_of(mutant)}/acme-4" in said and f"set {ROCR}='0,1' beside {HIP}='0,1'" in said, said


def test_the_same_family_writing_hip_alone_passes_rac270() -> None:
    """The mutants' base with the SDK's visible env (HIP_VISIBLE_DEVICES alone): the invariant is the only kill."""
    base = LEFT_TO_THE_NODE_MUTANTS[0].__mro__[1]

    class HipAlone(base):  # type: ignore[misc,valid-type]
        def rayaccel_visible_env(self, unit_ids: list[str]) -> dict[str, str]:
            return {HIP: ",".join(unit_ids)}

    said = evidence(HipAlone("c-hip-alone"), "RAC270", "acme-4")
    assert "as Ray's AMDGPUAcceleratorManager writes and reads it" in said, said
