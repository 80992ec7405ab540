"""RAC270's ``companions-as-ray-reads-them`` (issue 46, held-out round 6: an empty HIP_VISIBLE_DEVICES beside
ROCR_VISIBLE_DEVICES): the variables Ray's manager reads beside a family's own, set on the node as Slurm sets them,
refused by the plugin exactly where Ray's manager refuses them; on Ray's installed AMD manager, the AMD reference
plugin, and the two mutants graded alone (one claimant of HIP_VISIBLE_DEVICES per manager)."""

from __future__ import annotations

import pytest

from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.experimental import _ray_validator
from rayaccel_conformance.checks.ray_parity import companions_read, ray_refusal
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_companions import COMPANION_MUTANTS

HIP, ROCR = "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"


def test_ray_s_amd_manager_reads_rocr_beside_hip_and_refuses_it_alone() -> None:
    amd = _ray_validator("GPU", HIP)
    assert companions_read(amd, HIP) == [ROCR]
    assert companions_read(_ray_validator("GPU", "CUDA_VISIBLE_DEVICES"), "CUDA_VISIBLE_DEVICES") == []
    assert ray_refusal(amd, {ROCR: "0"}, [HIP, ROCR]) is not None
    # The empty value is Ray's own for a task given no GPU: read (as no GPU), not refused.
    assert ray_refusal(amd, {ROCR: "0", HIP: ""}, [HIP, ROCR]) is None
    assert ray_refusal(amd, {ROCR: "0", HIP: "0"}, [HIP, ROCR]) is None


def test_the_amd_plugin_refuses_what_ray_s_amd_manager_refuses_and_only_that() -> None:
    said = str(CHECKS["RAC270"].function(Subject("amd", PluginManager()), "amd/mi300x-8"))
    assert "HIP_VISIBLE_DEVICES as Ray's AMDGPUAcceleratorManager writes and reads it" in said, said


@pytest.mark.parametrize("mutant", COMPANION_MUTANTS, ids=lambda cls: cls.__name__)
def test_an_empty_hip_beside_rocr_refused_fails_rac270_naming_the_invariant(mutant: type[Healthy]) -> None:
    all_checks()
    name = "c-" + "".join(f"-{c.lower()}" if c.isupper() else c for c in mutant.__name__).lstrip("-")
    manager = PluginManager(autoload=False, timeout=5.0)
    manager.register(mutant(name), name)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC270"].function(Subject(name, manager), f"{name}/acme-4")
    said = str(failed.value)
    assert mutant.KILLED_BY is not None and mutant.KILLED_BY[1] in said, said
    assert f"{ROCR}='0', {HIP}='': Ray's AMDGPUAcceleratorManager reads it (as {HIP} alone), yet the plugin " \
           "refuses it" in said, said
