"""RAC223's ``a-gauge-is-no-high-water-mark`` (issue 46, lane J24, held-out round 19's ``e2``): every reading of a
device named for a high-water mark doubled at the host seam moves none of its gauges. Killed: the two corpus shapes and
the Neuron plugin with the round's one edit (each memory category's ``peak`` summed for the memory in use), also where
its fixture expects the edit's values (``e2e``); the right readers and the Neuron plugin as shipped (round 19's
control) pass, the invariant applied to them (it is not vacuous)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from mutant_grading import failure, graded, mutant, wrapped

import rayaccel_neuron.plugin as neuron_plugin
from rayaccel import Host
from rayaccel_conformance.checks.high_water_marks import INVARIANT, high_water_findings, high_water_marks
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_neuron import sysfs
from rayaccel_testplugins.corpus_high_water_marks import (
    UsedFromCorePeaks,
    UsedFromItsFile,
    UsedFromPeakFile,
    UsedFromToolRecord,
)

NEURON_PACKAGE = neuron_plugin.__file__.rsplit("/", 1)[0]
TRN1 = "trn1.32xlarge"


@pytest.mark.parametrize(("cls", "said"), [
    (UsedFromPeakFile, "memory_used of ACME-0002-5e1f-4c2a-9d3b-000000000002 (5.36871e+09) moved to 1.07374e+10 with "
                       "only the 1 reading named for a high-water mark doubled (file /sys/class/acme/acme2/"
                       "mem_used_peak_mib), mem_used_mib beside it as they were"),
    (UsedFromCorePeaks, "memory_used of ACME-0002-5e1f-4c2a-9d3b-000000000002 (5.36871e+09) moved to 1.07374e+10 with "
                        "only the 2 readings named for a high-water mark doubled (`acme-smi memory --json` output "
                        "2.cores.0.peak_mib and 1 like it), used_mib beside them as they were")],
    ids=["peak-file", "core-peaks"])
def test_memory_in_use_read_from_its_peak_fails_rac223_naming_it(cls: type[UsedFromPeakFile | UsedFromCorePeaks],
                                                                  said: str) -> None:
    plugin = mutant(cls)
    message = failure(plugin, "RAC223", cls.MACHINE)
    assert f"invariant {INVARIANT}, {plugin.name}/{cls.MACHINE}: {said}" in message, message


@pytest.mark.parametrize("cls", [UsedFromItsFile, UsedFromToolRecord], ids=["file", "tool"])
def test_memory_in_use_read_beside_its_peak_passes(cls: type[UsedFromItsFile | UsedFromToolRecord]) -> None:
    plugin = cls(f"c-right-{cls.__name__.lower()}")
    subject = graded(plugin)
    ref = f"{plugin.name}/{cls.MACHINE}"
    family = subject.inventory(ref).family(plugin.name)
    assert family is not None
    fx = subject.fixture(ref)
    assert any(high_water_marks(fx.host.model_dump(mode="json"), d) for d in family.devices)  # the invariant applies
    assert high_water_findings(subject, fx, family) == []


def _peaks_summed(host: Host, index: int) -> int | None:
    """Round 19's ``e2``, its one edit: each category's ``peak`` summed where the reference sums its ``total``."""
    base = sysfs.device_dir(index, host)
    total, seen, core = 0, False, 0
    while host.is_dir(f"{base}/neuron_core{core}"):
        for category in sysfs.DEVICE_MEM_CATEGORIES:
            value = sysfs.read_count(host, f"{base}/neuron_core{core}/stats/memory_usage/device_mem/{category}/peak")
            if value is not None:
                total, seen = total + value, True
        core += 1
    return total if seen else None


def _expecting_the_edit(subject: Subject, tmp_path: Path) -> Path:
    """The Neuron trn1 fixture with its expected memory in use rewritten to the edit's answer (round 19's ``e2e``)."""
    data = yaml.safe_load((Path(NEURON_PACKAGE) / "fixtures" / f"{TRN1}.yaml").read_text(encoding="utf-8"))
    family = subject.inventory(f"neuron/{TRN1}").family("neuron")
    assert family is not None
    for sample in family.metrics:
        if sample.name == "memory_used" and sample.device in data["expected"]["metric_values"]:
            data["expected"]["metric_values"][sample.device]["memory_used"] = sample.value
    (tmp_path / f"{TRN1}.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("edited", [False, True], ids=["e2", "e2e"])
def test_the_neuron_plugin_summing_peaks_fails_rac223_naming_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                edited: bool) -> None:
    monkeypatch.setattr(sysfs, "device_memory_used", _peaks_summed)
    subject = wrapped(neuron_plugin, "neuron", NEURON_PACKAGE)
    if edited:
        fixtures = str(_expecting_the_edit(subject, tmp_path))
        subject = wrapped(neuron_plugin, "neuron", NEURON_PACKAGE, rayaccel_fixture_dirs=lambda: [fixtures])
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC223"].function(subject, f"neuron/{TRN1}")
    said = (f"invariant {INVARIANT}, neuron/{TRN1}: memory_used of neuron-1c3e7a5b000003e6 (1.2348e+10) moved to "
            "2.46961e+10 with only the 6 readings named for a high-water mark doubled")
    assert said in str(failed.value), failed.value
    assert "present, total beside them as they were" in str(failed.value)


def test_the_neuron_plugin_as_shipped_passes_rac223_with_the_peaks_doubled() -> None:
    subject = wrapped(neuron_plugin, "neuron", NEURON_PACKAGE)
    CHECKS["RAC223"].function(subject, f"neuron/{TRN1}")
    family = subject.inventory(f"neuron/{TRN1}").family("neuron")
    assert family is not None
    fx = subject.fixture(f"neuron/{TRN1}")
    assert sum(len(high_water_marks(fx.host.model_dump(mode="json"), d)) for d in family.devices) >= 6
    assert high_water_findings(subject, fx, family) == []
