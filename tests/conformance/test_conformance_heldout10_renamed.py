"""Held-out grading, round 10 (issue 46, lane Yb): a metric read from another reading, the machine's own published
under a vendor name.

``p1`` (a TPU wrapper) read utilization from the device plugin's ``duty_cycle`` and published
``tensorcore_utilization`` as ``vendor.tensorcore_utilization``: RAC203 and RAC206 showed only the values
("utilization of tpu-0000:00:06.0 is 39 percent; the fixture's machine reads 35.25"). Both are percentages of the
same chip and which one a metric means is the vendor's word, stated only by a fixture's ``metric_values``: no
invariant tells them apart. The failure now names the defect from the plugin's own samples: the value the machine
reads is what the plugin publishes for that device under another name. Two corpus shapes (a JSON record's field, a
CSV row's cell) and the TPU plugin with p1's edit.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutant_grading import failure, mutant, replaced

from rayaccel.catalog import load_catalog
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.value_relations import published_as
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS
from rayaccel_testplugins import corpus
from rayaccel_testplugins.corpus_demoted_readings import NAMED, BusyCoreAsVendor, PowerDrawAsVendor
from rayaccel_tpu import metrics, plugin as tpu

CARD0 = "ACME-0000-5e1f-4c2a-9d3b-000000000000"


def tpu_subject() -> Subject:
    here = Path(tpu.__file__).parent
    all_checks()
    return replaced(tpu, "tpu", rayaccel_fixture_dirs=lambda: [str(here / "fixtures")],
                    rayaccel_sku_catalog=lambda: load_catalog(here / "skus.yaml"))


def test_utilization_from_duty_cycle_is_named_by_the_reading_published_as_a_vendors(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # p1's one edit: duty_cycle (slice-indexed) is utilization, tensorcore_utilization a vendor metric.
    monkeypatch.setitem(metrics.HOST_INDEXED, "tensorcore_utilization", ("vendor.tensorcore_utilization", "percent"))
    monkeypatch.setitem(metrics.SLICE_INDEXED, "duty_cycle", ("utilization", "percent"))
    result = tpu_subject().run(CHECKS["RAC206"], "tpu/v5p-16-worker0")
    assert result.outcome == "failed", result.evidence
    said = " ".join(result.evidence)
    assert ("sample utilization of tpu-0000:00:06.0 is 39 percent; the fixture's machine reads 35.25 "
            "(expected.metric_values): 35.25, the machine's reading for utilization, is what the plugin publishes for "
            "tpu-0000:00:06.0 as vendor.tensorcore_utilization: utilization is read from another reading") in said, said


def test_the_tpu_plugin_passes() -> None:
    result = tpu_subject().run(CHECKS["RAC206"], "tpu/v5p-16-worker0")
    assert result.outcome == "passed", result.evidence


@pytest.mark.parametrize(("cls", "machine", "said"), [
    (BusyCoreAsVendor, "acme-4-busy", f"sample utilization of {CARD0} is 12 percent; the fixture's machine reads 45 "
     f"(expected.metric_values): 45, the machine's reading for utilization, {NAMED} {CARD0} as "
     "vendor.utilization_core"),
    (PowerDrawAsVendor, "acme-4-power", f"sample power of {CARD0} is 700 watts; the fixture's machine reads 250 "
     f"(expected.metric_values): 250, the machine's reading for power, {NAMED} {CARD0} as vendor.power_draw")],
    ids=["json-field", "csv-cell"])
def test_a_metric_whose_reading_is_published_under_a_vendor_name_is_named(
        cls: type[corpus.Healthy], machine: str, said: str) -> None:
    text = failure(mutant(cls), "RAC206", machine)
    assert said in text and "(publish that reading as " in text, text


def test_only_the_same_devices_nonzero_sample_is_evidence() -> None:
    samples = [("a", "vendor.core", 45.0), ("b", "utilization", 37.5), ("a", "vendor.idle", 0.0)]
    assert published_as("a", "utilization", 45.0, samples) is not None
    assert published_as("a", "utilization", 37.5, samples) is None  # another device's
    assert published_as("a", "utilization", 0.0, samples) is None  # 0: any idle field reads it
    both = published_as("a", "utilization", 45.0, [*samples, ("a", "vendor.busy", 45.0)])
    assert both is not None and "as vendor.busy and vendor.core:" in both, both
