"""A kill names the defect, not only two values (issue 46, held-out round 7's s1, j2, p2, e2): where RAC206 or
RAC232 finds a value other than the machine's, the relation between the two is named as the defect it is: a
ratio that is a unit's power (x1000, 1/2^20; twice or half said as the ratio alone, no cause: held-out round 17's
e1), another field of the record the reading sits
in (``peak`` beside ``total``, a CSV row's limit beside its draw), another device's value (indexed by another
key), or a metric the same SKU's devices report on another node (RAC255's invariant). Each wording is asserted on
two plugins of different shapes; the pure helpers are asserted in both directions and where no relation holds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from mutant_grading import graded, mutant, wrapped

import rayaccel_neuron.plugin as neuron_plugin
from rayaccel import Device, Host, MetricSample, Partition
from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks.readings import Reading
from rayaccel_conformance.checks.supported import metric_contradictions
from rayaccel_conformance.checks.value_relations import field_source, plain_ratio, ratio_mixup, reindexed
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS
from rayaccel_neuron import metrics as neuron_metrics, sysfs as neuron_sysfs
from rayaccel_testplugins import corpus, corpus_signals
from rayaccel_testplugins.corpus_siblings import BusyFromMemoryController, PowerFromLimit

NEURON_PACKAGE = neuron_plugin.__file__.rsplit("/", 1)[0]
CARD0 = "ACME-0000-5e1f-4c2a-9d3b-000000000000"


def failed_rac206(subject: Subject, ref: str) -> str:
    outcome = subject.run(CHECKS["RAC206"], ref)
    assert outcome.outcome == "failed", outcome.evidence
    return " ".join(outcome.evidence)


@pytest.mark.parametrize(("observed", "expected", "unit", "said"), [
    (0.035, 35.0, "celsius", "0.035 celsius is 1/1000 of the 35 celsius due: a unit mix-up by 1000: divided by 1000 "
                             "once too often, a reading already in degrees Celsius taken for millidegrees"),
    (35000.0, 35.0, "celsius", "35000 celsius is 1000x the 35 celsius due: a unit mix-up by 1000: a reading in "
                               "millidegrees"),
    (1600.0, 200.0, "GB/s", "1600 GB/s is 8x the 200 GB/s due: a bits-for-bytes mix-up: bits where GB/s are due"),
    (24.0, 24 * 2**30, "bytes", "24 bytes is 1/2^30 of the 2.57698e+10 bytes due: a size unit mix-up by 2^30: GiB "
                                "where bytes are due"),
    (0.5, 50.0, "percent", "a 0-1 fraction where percent is due"),
])
def test_a_ratio_that_is_a_unit_s_power_is_named_with_both_values(
        observed: float, expected: float, unit: str, said: str) -> None:
    assert said in (ratio_mixup(observed, expected, unit) or ""), ratio_mixup(observed, expected, unit)


@pytest.mark.parametrize(("observed", "expected", "said"), [
    (100.0, 200.0, "100 GB/s is half the 200 GB/s due"), (400.0, 200.0, "400 GB/s is twice the 200 GB/s due")])
def test_twice_or_half_is_said_as_the_ratio_with_no_cause(observed: float, expected: float, said: str) -> None:
    """No unit's power gives 2 or 1/2, and many defects do (one of two cores read, one direction of two): the
    numbers establish the ratio, not a direction mix-up (held-out round 17's e1 was told one)."""
    assert ratio_mixup(observed, expected, "GB/s") is None
    assert plain_ratio(observed, expected, "GB/s") == said
    assert plain_ratio(99.0, 300.0, "GB/s") is None and plain_ratio(0.0, 300.0, "GB/s") is None
    assert ratio_mixup(50.0, 100.0, "GB/s", lanes=2) is None  # one lane of two is half too: said as half


def test_a_ratio_that_is_also_a_count_of_the_device_s_parts_says_both_causes() -> None:
    # 8x on a device of 8 partitions is bits for bytes or the partitions' values summed: the numbers do not tell
    # which (held-out round 17: an AMD GPU's readings summed over its 8 CPX partitions was once named bits alone).
    said = ratio_mixup(8e9, 1e9, "bytes", parts={"partitions": 8}) or ""
    assert "bits-for-bytes" in said and "as many times as the device has partitions (8: summed over them?)" in said
    assert "do not tell which" in said
    assert "summed" not in (ratio_mixup(8e9, 1e9, "bytes", parts={"partitions": 4}) or "")
    # A part count no unit's power explains is said as the count, nothing more.
    assert plain_ratio(4e9, 1e9, "bytes", parts={"partitions": 4}) == (
        "4e+09 bytes is 4x the 1e+09 bytes due, as many times as the device has partitions (4: summed over them?)")
    assert plain_ratio(5e8, 1e9, "bytes", parts={"units": 2}) == (
        "5e+08 bytes is half the 1e+09 bytes due; the device has 2 units (one of them taken for the whole?)")
    assert plain_ratio(3e9, 1e9, "bytes", parts={"partitions": 4}) is None


def test_a_memory_total_summed_over_a_device_s_partitions_is_said_so() -> None:
    partitions = [Partition(id=f"GPU-p{i}", kind="compute-partition", profile="cpx.1xcd.24gb") for i in range(8)]
    device = Device(index=0, id="GPU-0", product_name="MI300X", memory_mib=196592, partitions=partitions)
    whole = 196592 * 2**20
    sample = MetricSample(device="GPU-0", name="memory_total", unit="bytes", value=8 * whole)
    [said] = metric_contradictions([sample], [device])
    assert "bits-for-bytes" in said and "as many times as the device has partitions (8: summed over them?)" in said


def test_a_ratio_that_is_no_mix_up_is_not_named_as_one() -> None:
    assert ratio_mixup(30.0, 35.0, "celsius") is None  # 6/7: a wrong reading, no unit's
    assert ratio_mixup(1000.0, 1.0, "bytes") is not None and ratio_mixup(1024.0, 1.0, "celsius") is None
    assert ratio_mixup(0.0, 35.0, "celsius") is None
    assert "one lane's figure taken for the link's 4 lanes" in (ratio_mixup(25.0, 100.0, "GB/s", lanes=4) or "")


@pytest.mark.parametrize(("cls", "said"), [
    (corpus.MetricsMemoryUsedInMib,  # a sysfs size passed through
     f"sample memory_used of {CARD0} is 1024 bytes; the fixture's machine reads 1.07374e+09 (expected.metric_values): "
     "the plugin's conversion: 1024 bytes is 1/2^20 of the 1.07374e+09 bytes due: a size unit mix-up by 2^20: MiB "
     "where bytes are due (not multiplied by 2^20)"),
    (corpus.MetricTemperatureMilli,  # a milli-unit not divided
     f"sample temperature of {CARD0} is 41000 celsius; the fixture's machine reads 41 (expected.metric_values): the "
     "plugin's conversion: 41000 celsius is 1000x the 41 celsius due: a unit mix-up by 1000: a reading in "
     "millidegrees (or a kilo- figure) not divided by 1000"),
], ids=["size-in-mib", "millidegrees"])
def test_rac206_names_a_unit_mix_up_as_the_conversion_it_is(cls: type[corpus.Healthy], said: str) -> None:
    plugin = mutant(cls)
    assert said in failed_rac206(graded(plugin), f"{plugin.name}/acme-4")


def _memory_used_from_peak(host: Host, devices: Sequence[Device]) -> list[MetricSample]:
    """Neuron's memory in use summed from each device_mem category's ``peak`` (round 7's e2), not its ``total``."""
    def peak(index: int) -> float | None:
        base, core, found = neuron_sysfs.device_dir(index, host), 0, []
        while host.is_dir(f"{base}/neuron_core{core}"):
            mem = f"{base}/neuron_core{core}/stats/memory_usage/device_mem"
            found += [neuron_sysfs.read_count(host, f"{mem}/{c}/peak") for c in neuron_sysfs.DEVICE_MEM_CATEGORIES]
            core += 1
        values = [v for v in found if v is not None]
        return float(sum(values)) if values else None

    by_id = {d.id: d for d in devices}
    return [s.model_copy(update={"value": peak(by_id[s.device].index)}) if s.name == "memory_used" else s
            for s in neuron_metrics.metrics_of(host, devices)]


@pytest.mark.parametrize(("make", "ref", "said"), [
    (lambda: graded(mutant(BusyFromMemoryController)), "c-busy-from-memory-controller/acme-4-busy",  # a JSON record
     f"sample utilization of {CARD0} is 12 percent; the fixture's machine reads 45 (expected.metric_values): read from "
     "another field of the record: 12 is `memory` (e.g. `acme-smi --json --query-busy` output "
     "cards.0.utilization.memory), the machine's reading its `core` beside it"),
    (lambda: graded(mutant(PowerFromLimit)), "c-power-from-limit/acme-4-power",  # a CSV row
     f"sample power of {CARD0} is 700 watts; the fixture's machine reads 250 (expected.metric_values): read from "
     "another field of the record: 700 is `field 3` (e.g. `acme-smi --query-power --format=csv,noheader` output line "
     "0 field 3), the machine's reading its `field 2` beside it"),
    (lambda: wrapped(neuron_plugin, "neuron", NEURON_PACKAGE, rayaccel_metrics=_memory_used_from_peak),
     "neuron/trn1.32xlarge",  # sysfs directories, summed over cores and categories
     "sample memory_used of neuron-1c3e7a5b00000000 is 1.2348e+10 bytes; the fixture's machine reads 1.12743e+10 "
     "(expected.metric_values): read from another field of the record: 1.2348e+10 is the sum of 6 records' `peak` "
     "(e.g. file /sys/devices/virtual/neuron_device/neuron0/neuron_core0/stats/memory_usage/device_mem/"),
], ids=["json-record", "csv-row", "sysfs-summed"])
def test_rac206_names_a_value_read_from_another_field_of_its_record(make: Any, ref: str, said: str) -> None:
    text = failed_rac206(make(), ref)
    assert said in text, text
    assert "`total` beside it" in text or "neuron" not in ref, text


def test_a_field_is_named_only_where_the_machine_s_reading_is_a_sibling_of_it() -> None:
    device = Device(index=2, id="d2", product_name="p")
    rows = [Reading("library", "lib", ("cards", "2", "power", "draw"), 250.0),
            Reading("library", "lib", ("cards", "2", "power", "limit"), 700.0),
            Reading("library", "lib", ("cards", "1", "power", "limit"), 600.0)]
    assert "700 is `limit`" in (field_source(700.0, 250.0, "power", device, rows) or "")
    assert field_source(600.0, 250.0, "power", device, rows) is None  # another card's field is no sibling
    assert field_source(650.0, 250.0, "power", device, rows) is None  # no field reads the sample


def _stating_every_metric(subject: Subject, metrics: list[str]) -> Subject:
    """The subject with its 16-card fixture stating its machine offers ``metrics`` (as acme-4's does)."""
    recorded = subject.fixture

    def stating(ref: str | None) -> Any:
        fixture = recorded(ref)
        if ref is not None and ref.endswith("/acme-16"):
            return fixture.model_copy(update={"expected": fixture.expected.model_copy(update={"metrics": metrics})})
        return fixture

    subject.fixture = stating  # type: ignore[method-assign]
    return subject


@pytest.mark.parametrize(("cls", "lacking"), [
    (corpus_signals.PowerDroppedOnDenseNodes, "power"),
    (corpus_signals.MetricsSummaryOnDenseNodes, "memory_used, power, temperature, utilization"),
], ids=["one-metric", "summary-mode"])
def test_rac206_points_a_metric_its_sku_reports_on_another_node_to_rac255(cls: type[corpus.Healthy],
                                                                          lacking: str) -> None:
    plugin = mutant(cls)
    manager = PluginManager(autoload=False, timeout=5)
    assert manager.register(plugin, plugin.name), manager.problems
    subject = _stating_every_metric(Subject(plugin.name, manager),
                                    ["memory_total", "memory_used", "power", "temperature", "utilization"])
    text = failed_rac206(subject, f"{plugin.name}/acme-16")
    assert (f"has no {lacking} sample, which the fixture's vendor interface offers (expected.metrics): its SKU "
            f"acme-r1's devices report {lacking} on {plugin.name}/acme-4: read by a key that finds a device on one "
            "node only") in text and "invariant metrics-follow-the-sku (RAC255)" in text, text


def test_rac206_names_a_machine_s_value_given_under_another_key() -> None:
    plugin = mutant(corpus.MetricByIndex)  # samples named by the listing index, not the id
    text = failed_rac206(graded(plugin), f"{plugin.name}/acme-4")
    assert (f"{CARD0} has no temperature sample; the fixture's machine reads 41 (expected.metric_values): the value "
            f"the machine reads for {CARD0} is given under '0', no device of this node: temperature indexed by another "
            "key than the device's own") in text, text
    stated = {"a": {"memory_used": 4.0}, "b": {"memory_used": 8.0}}  # a's value under b: the two swapped
    assert "given under device 'b', whose own reading is 8" in (
        reindexed("a", "memory_used", 4.0, [("b", "memory_used", 4.0)], stated) or "")
    assert reindexed("a", "memory_used", 4.0, [("b", "memory_used", 4.0)], {"b": {"memory_used": 4.0}}) is None
    # another card of the node with the same figure and none stated for it: every card's memory_total is one
    assert reindexed("a", "memory_total", 9.0, [("b", "memory_total", 9.0)], {"a": {"memory_total": 9.0}}, {"b"}) \
        is None
    assert reindexed("a", "utilization", 0.0, [("b", "utilization", 0.0)], {}) is None  # idle reads 0 anywhere
