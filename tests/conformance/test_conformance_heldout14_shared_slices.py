"""Held-out grading, round 14 (issue 46, lane K5): partitions that share their parent's slices counted with the parent's
whole count are named by RAC113's partitions-fit-their-device (``checks/partition_fit.py``), without reading the
fixture's expectations.

The NVIDIA wrapper ``n1`` gave a MIG compute instance its GPU instance's compute slices ('1c.3g.40gb' -> 3, not 1).
On ``nvidia/h100-mig``, whose 3g.40gb GPU instance is split into 2c.3g.40gb and 1c.3g.40gb, its MIG devices then add
up to 10 of the GPU's 7 slices: the SDK refuses the GPU's records inside the plugin, which reports the GPU unreadable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import failure, mutant, wrapped

import rayaccel_nvidia.discovery
import rayaccel_nvidia.naming
import rayaccel_nvidia.plugin
from rayaccel_conformance.checks.partition_fit import record_places, without_place
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_nvidia.naming import MIG_PROFILE
from rayaccel_testplugins import corpus
from rayaccel_testplugins.corpus_shared_slices import PartSlicesFromGroupRecord, PartSlicesFromProfileGroup

NVIDIA = Path(rayaccel_nvidia.plugin.__file__).parent
SHARED = rayaccel_nvidia.naming.mig_slices


def _gpu_instance_slices(profile: str, instance_mib: int | None, gpu_mib: int | None,
                         capacity: tuple[int, int]) -> tuple[int | None, int | None]:  # n1's one edit
    match = MIG_PROFILE.match(profile)
    if match is not None and match["ci"] is not None:
        return int(match["gi"]), None
    return SHARED(profile, instance_mib, gpu_mib, capacity)


def test_the_nvidia_plugin_fits_every_mig_device_in_its_gpu() -> None:
    subject = wrapped(rayaccel_nvidia.plugin, "nvidia", str(NVIDIA))
    evidence = CHECKS["RAC113"].function(subject, "nvidia/h100-mig")
    assert "5 partitions on 1 devices" in str(evidence), evidence


def test_a_compute_instance_given_its_gpu_instances_slices_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rayaccel_nvidia.discovery, "mig_slices", _gpu_instance_slices)
    subject = wrapped(rayaccel_nvidia.plugin, "nvidia", str(NVIDIA))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC113"].function(subject, "nvidia/h100-mig")
    said = str(failed.value)
    assert ("invariant partitions-fit-their-device, nvidia/h100-mig: the machine lists 5 partitions of device "
            "GPU-c3cfe612-0b32-5442-9c5d-03a164f5957a at once") in said, said
    assert "they take 10 compute_slices, more than the device's 7" in said, said
    assert "MIG-f7d7b088-b477-58c0-bc7c-c0d14d4576e5 '1c.3g.40gb' 3" in said, said


@pytest.mark.parametrize(("cls", "where"), [
    (PartSlicesFromProfileGroup, "directory /sys/class/acme/acme0/partitions/c"),
    (PartSlicesFromGroupRecord, "`acme-smi partitions --json` output ")])
def test_the_corpus_shapes_are_named(cls: type[corpus.Healthy], where: str) -> None:
    said = failure(mutant(cls), "RAC113", "acme-4")
    assert "invariant partitions-fit-their-device" in said and "they take 6 compute_slices, more than the device's 4" \
        in said and where in said, said


def test_records_among_others_of_their_kind_are_found_and_taken_away() -> None:
    host: dict[str, Any] = {"libraries": {"lib": {"devices": {"0": {"uuid": "G-0", "parts": {"0": {"uuid": "P-0"},
                                                                             "1": {"uuid": "P-1"}}}}}},
            "commands": {"tool --json": {"stdout": '[{"id": "Q-0", "kind": "x"}, {"id": "Q-1", "kind": "x"}]'}},
            "files": {"/sys/a/p0/uuid": "F-0\n", "/sys/a/p1/uuid": "F-1\n", "/sys/a/p1/size": "2\n"}}
    places = record_places(host)
    # the device alone among none of its kind is no listed record; each part, JSON record and folder is
    assert set(places) == {("library", "lib", ("devices", "0", "parts", "0")),
                           ("library", "lib", ("devices", "0", "parts", "1")), ("command", "tool --json", (0,)),
                           ("command", "tool --json", (1,)), ("folder", "/sys/a/p0", ()), ("folder", "/sys/a/p1", ())}
    assert places[0][2] == ("devices", "0", "parts", "0")  # the innermost first
    assert without_place(host, ("library", "lib", ("devices", "0", "parts", "0")))["libraries"]["lib"]["devices"][
        "0"]["parts"] == {"1": {"uuid": "P-1"}}
    assert without_place(host, ("command", "tool --json", (0,)))["commands"]["tool --json"]["stdout"] == \
        '[{"id": "Q-1", "kind": "x"}]'
    assert without_place(host, ("folder", "/sys/a/p1", ()))["files"] == {"/sys/a/p0/uuid": "F-0\n"}
    assert host["files"]["/sys/a/p1/size"] == "2\n"  # the host given is left as it was
