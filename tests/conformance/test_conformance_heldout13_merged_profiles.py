"""Held-out grading, round 13 (issue 46, lane J2): two profiles offered under one partition resource are named by
RAC216's one-resource-one-profile (``checks/merged_profiles.py``), without reading the fixture's expectations.

The NVIDIA wrapper ``n1`` cut NVIDIA's option off a MIG profile ('MIG 1g.10gb+me' -> '1g.10gb'): the media-extension
instance (1 NVDEC, 1 JPEG, 1 OFA) and the plain one share GPU_MIG_1g.10gb, and a task asking for either gets
whichever. Both have the same slices and memory, so RAC216's sizes pass; the machine's own names tell them apart.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mutant_grading import evidence, failure, mutant, wrapped

import rayaccel_nvidia.discovery
import rayaccel_nvidia.plugin
from rayaccel_conformance.checks.merged_profiles import merged_profiles, partition_texts, profile_names
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import corpus
from rayaccel_testplugins.corpus_merged_profiles import PartitionOptionSplitOff, PartitionProfileFromSize

NVIDIA = Path(rayaccel_nvidia.plugin.__file__).parent


def _option_cut(mig_name: str) -> str | None:  # n1's one edit
    match = re.search(r"MIG\s+(\S+)$", mig_name)
    return match.group(1).split("+")[0] if match else None


def test_the_nvidia_plugin_offers_each_mig_profile_under_its_own_resource() -> None:
    subject = wrapped(rayaccel_nvidia.plugin, "nvidia", str(NVIDIA))
    evidence = CHECKS["RAC216"].function(subject, "nvidia/h100-mig")
    assert "has one size" in str(evidence)


def test_a_mig_option_cut_off_its_profile_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rayaccel_nvidia.discovery, "mig_profile", _option_cut)
    subject = wrapped(rayaccel_nvidia.plugin, "nvidia", str(NVIDIA))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC216"].function(subject, "nvidia/h100-mig")
    said = str(failed.value)
    assert ("invariant one-resource-one-profile: partition resource GPU_MIG_1g.10gb stands for partitions the machine "
            "names apart: MIG-4b9e7607-c974-5bb9-9022-7f5157750ba4 is '1g.10gb' (library nvml.devices.0.mig_devices.3"
            ".name) and MIG-6ea08ab4-8c75-5670-9ac0-6847cef948c8 is '1g.10gb.me' (library nvml.devices.0.mig_devices"
            ".4.name)") in said, said


def test_a_compute_instance_prefix_cut_off_its_profile_is_named() -> None:
    state = {"commands": {"acme-smi parts --json": {"stdout": (
        '[{"uuid": "P-0", "profile": "1c.2g.20gb"}, {"uuid": "P-1", "profile": "2g.20gb"}]')}}}
    said = merged_profiles({"X_2g.20gb": ["P-0", "P-1"]}, {"P-0": "2g.20gb", "P-1": "2g.20gb"}, state)
    assert len(said) == 1 and "P-0 is '1c.2g.20gb' (`acme-smi parts --json` output.0.profile)" in said[0], said


@pytest.mark.parametrize("state", [
    # one name for both: two partitions of one profile
    {"files": {"/sys/a/p0/uuid": "P-0\n", "/sys/a/p0/profile": "1g.10gb\n", "/sys/a/p1/uuid": "P-1\n",
               "/sys/a/p1/profile": "1g.10gb\n"}},
    # a line per partition, each with its index and id beside the same name (nvidia-smi -L's shape)
    {"commands": {"tool -L": {"stdout": "  MIG 1g.10gb     Device  0: (UUID: P-0)\n"
                                        "  MIG 1g.10gb     Device  1: (UUID: P-1)\n"}}},
    # the machine writes no name with the profile in it: nothing to compare
    {"files": {"/sys/a/p0/uuid": "P-0\n", "/sys/a/p1/uuid": "P-1\n"}},
    # a name the machine lists for the GPU, not at either partition's record, is no partition's
    {"files": {"/sys/a/p0/uuid": "P-0\n", "/sys/a/p1/uuid": "P-1\n", "/sys/a/profiles": "1g.10gb 1g.10gb+me\n"}},
])
def test_nothing_is_said_where_the_machine_names_the_partitions_alike(state: dict[str, object]) -> None:
    assert merged_profiles({"X_1g.10gb": ["P-0", "P-1"]}, {"P-0": "1g.10gb", "P-1": "1g.10gb"}, state) == []


def test_a_profile_is_found_in_the_sdk_spelling_and_a_line_of_a_tools_output() -> None:
    texts = partition_texts({"commands": {"tool -L": {"stdout": "  MIG 1g.10gb+me  Device  1: (UUID: P-1)\n"}}},
                            "P-1")
    assert profile_names(texts, "1g.10gb.me") == {"1g.10gb.me": "`tool -L` output line 0"}


@pytest.mark.parametrize(("cls", "where"), [
    (PartitionOptionSplitOff, "file /sys/class/acme/acme0/partitions/p1/profile"),
    (PartitionProfileFromSize, "`acme-smi partitions --json` output.1.profile")])
def test_the_corpus_shapes_are_named(cls: type[corpus.Healthy], where: str) -> None:
    said = failure(mutant(cls), "RAC216", "acme-4")
    assert "invariant one-resource-one-profile" in said and f"-p1 is '1p.32gb.me' ({where})" in said, said


def test_the_healthy_control_passes() -> None:
    assert "has one size" in evidence(corpus.PLUGINS["c-healthy"], "RAC216", "acme-4")
