"""Partitions that print their whole GPU's values (amdsmi up to ROCm 6.4.0; issue 46, lane J17, held-out round
17's a2): on ``amd/mi300x-cpx-nps4-rocm-6.4.0`` the AMD plugin passes the checks that read its metrics, RAC223
included (the fallback the fixture declares is no discovery failure); a2's sum of ECC counts over partitions is
the package's count there too, while the same sum over the records as printed is named by RAC206."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from mutant_grading import wrapped

import rayaccel
import rayaccel_amd.probe
from rayaccel_amd import plugin as amd
from rayaccel_amd.discovery import members
from rayaccel_amd.probe import probe
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed

MIRRORED = "amd/mi300x-cpx-nps4-rocm-6.4.0"
HOME = Path(amd.__file__).parent


def summed_metrics(host: rayaccel.Host, devices: Sequence[rayaccel.Device]) -> list[rayaccel.MetricSample]:
    """a2's metrics: the plugin's, but every count of a partitioned GPU (memory, power, ECC) summed over its
    partitions."""
    snapshot = probe(host, parts=("metric",))
    summed = {"memory_total": lambda g: g.vram_total_bytes, "power": lambda g: g.power_w,
              "ecc_errors_corrected": lambda g: g.ecc.correctable if g.ecc else None,
              "ecc_errors_uncorrected": lambda g: g.ecc.uncorrectable if g.ecc else None}
    samples = []
    for sample in amd.rayaccel_metrics(host, devices):
        device = next(d for d in devices if d.id == sample.device)
        if sample.name in summed and snapshot is not None:
            values = [summed[sample.name](g) for g in members(device, snapshot) if g is not None]
            sample = sample.model_copy(update={"value": float(sum(v for v in values if v is not None))})
        samples.append(sample)
    return samples


def run(subject: Subject, check_id: str) -> str:
    return str(CHECKS[check_id].function(subject, MIRRORED))


@pytest.mark.parametrize("check_id", ["RAC206", "RAC223", "RAC230"])
def test_the_amd_plugin_reads_a_mirroring_release_once_per_gpu(check_id: str) -> None:
    run(wrapped(amd, "amd", str(HOME)), check_id)  # raises CheckFailed on a failure


def test_a2_summing_partitions_is_the_packages_count_on_a_mirroring_release() -> None:
    run(wrapped(amd, "amd", str(HOME), rayaccel_metrics=rayaccel.hookimpl(summed_metrics)), "RAC206")


def test_summing_the_records_as_a_mirroring_release_prints_them_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rayaccel_amd.probe, "unmirror", lambda group: None)  # the plugin before lane J17
    subject = wrapped(amd, "amd", str(HOME), rayaccel_metrics=rayaccel.hookimpl(summed_metrics))
    with pytest.raises(CheckFailed) as failed:
        run(subject, "RAC206")
    said = str(failed.value)
    assert "sample ecc_errors_corrected of 4dff74a1-0000-1000-804f-6a2f95e3d5c3 is 40 count; the fixture's machine " \
           "reads 5" in said, said
