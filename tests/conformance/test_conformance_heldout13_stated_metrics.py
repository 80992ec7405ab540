"""Held-out grading, round 13 (issue 46, lane J4): a fixture's statement that its vendor interface does not offer a
metric holds only where its answers state no number for it (``invariant an-unoffered-metric-is-not-stated``, RAC255).

The TPU wrapper ``p2`` filed the slice-indexed samples (memory, duty cycle: ``accelerator_id`` ends in the chip's index
in the slice) under that index as if it were the host's, so worker 1 of a v5p-16 (slice indexes 4-7) lost them. RAC255
named it by comparing worker 1 with worker 0, but excuses a metric a fixture's ``expected.metrics`` leaves out, and
``p2e``, worker 1's expectation edited to what the code gave, passed ``supported``. Now the excuse holds only where the
fixture's answers do not state the metric where the other fixture's answers state the number the plugin reads it from:
two corpus shapes (power only on nodes named as the lab's, temperature only with one driver version), and p2's edit on
the TPU plugin with worker 1's expectation edited, are named; a worker 1 whose endpoint really states no memory sample
is still excused, and the shipped TPU plugin passes.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from mutant_grading import graded, mutant, wrapped
from prometheus_client.parser import text_string_to_metric_families

from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import corpus, corpus_stated_metrics as stated
from rayaccel_tpu import metrics as tpu_metrics, plugin as tpu

INVARIANT = "invariant an-unoffered-metric-is-not-stated, "
PACKAGE = Path(tpu.__file__).parent
WORKER1 = "v5p-16-worker1"


def rac255(subject: Any) -> str:
    """RAC255's failure on ``subject``; the test fails if it passes."""
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC255"].function(subject)
    return str(failed.value)


@pytest.mark.parametrize(("shape", "machine", "metric", "file"), [
    (stated.PowerOnLabNodesOnly, "acme-4-rack-2", "power", "power_mw"),
    (stated.TemperatureForOneDriver, "acme-4-driver-3-2", "temperature", "temp_mc")], ids=["host-name", "driver"])
def test_a_metric_lost_on_a_second_node_that_still_states_it_is_named(shape: type[corpus.Healthy], machine: str,
                                                                       metric: str, file: str) -> None:
    plugin = mutant(shape)
    said = rac255(graded(plugin))
    assert f"{INVARIANT}SKU acme-r1: {plugin.name}/{machine} says its vendor interface does not offer {metric} " \
           "(expected.metrics)" in said, said
    assert f"{plugin.name}/{machine} states file /sys/class/acme/acme0/{file}, as {plugin.name}/acme-4 states file " \
           f"/sys/class/acme/acme0/{file}, which the plugin reads it from" in said, said


def p2_parse(text: str) -> dict[int, dict[str, tuple[str, float]]]:
    """p2's edit: every sample filed under the index its accelerator_id ends in, slice-wide or not."""
    host: dict[int, dict[str, tuple[str, float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            accelerator_id = sample.labels.get("accelerator_id", "")
            names = {**tpu_metrics.HOST_INDEXED, **tpu_metrics.SLICE_INDEXED}
            if "-" in accelerator_id and sample.name in names:
                name, unit = names[sample.name]
                host.setdefault(int(accelerator_id.rsplit("-", 1)[1]), {})[name] = (unit, float(sample.value))
    return host


def package_with_worker1(tmp_path: Path, edit: Any) -> Path:
    """A copy of the TPU plugin's data (fixtures, catalog, instance types) with worker 1's fixture edited."""
    home = tmp_path / "tpu"
    shutil.copytree(PACKAGE / "fixtures", home / "fixtures")
    for name in ("skus.yaml", "instance-types.yaml"):
        if (PACKAGE / name).exists():
            shutil.copy(PACKAGE / name, home / name)
    path = home / "fixtures" / f"{WORKER1}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return home


def utilization_only(data: dict[str, Any]) -> None:
    """Worker 1's expectation as p2e edited it: its endpoint offers utilization alone."""
    data["expected"]["metrics"] = ["utilization"]
    for values in data["expected"]["metric_values"].values():
        for name in [n for n in values if n != "utilization"]:
            del values[name]


def test_p2_with_worker1s_expectation_edited_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tpu_metrics, "parse_device_plugin_metrics", p2_parse)
    subject = wrapped(tpu, "tpu", str(package_with_worker1(tmp_path, utilization_only)))
    said = rac255(subject)
    assert f"{INVARIANT}SKU tpu-v5p: tpu/{WORKER1} says its vendor interface does not offer memory_total, " \
           "memory_used, vendor.duty_cycle (expected.metrics)" in said, said
    assert 'memory_used (tpu/v5p-16-worker1 states GET http://10.8.0.6:2112/metrics: memory_used{accelerator_id=' \
           '"4804690994094478883-4",...} 61203283968, as tpu/v5p-16-worker0 states GET http://10.8.0.5:2112/metrics: ' \
           'memory_used{accelerator_id="4804690994094478883-0",...}' in said, said


def without_memory_samples(data: dict[str, Any]) -> None:
    """Worker 1's endpoint stating utilization alone (its memory and duty-cycle samples gone), and expecting so."""
    utilization_only(data)
    for answer in data["host"]["http"].values():
        answer["body"] = "".join(line + "\n" for line in answer["body"].splitlines()
                                 if not any(name in line for name in tpu_metrics.SLICE_INDEXED))


def test_a_metric_the_answers_really_lack_is_still_excused(tmp_path: Path) -> None:
    subject = wrapped(tpu, "tpu", str(package_with_worker1(tmp_path, without_memory_samples)))
    said = str(CHECKS["RAC255"].function(subject))
    assert "each reporting the same metrics on every fixture where its devices report any" in said, said


def test_the_tpu_plugin_passes() -> None:
    subject = wrapped(tpu, "tpu", str(PACKAGE))
    assert "SKUs, each reporting the same metrics" in str(CHECKS["RAC255"].function(subject))
