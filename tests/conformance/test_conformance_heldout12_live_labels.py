"""Held-out grading, round 12 (issue 46, lane H2): a label says what the node is, never what its devices are doing
(``invariant a-label-is-no-live-reading``, RAC201).

The library bake ``l1`` labelled its node ``hawkmoor.example.com/busy`` from the devices' utilization at inventory
time. A Ray node's labels are set once, when it starts, so the label is right at start and wrong a minute later; its
expectation-edited variant ``l1e`` passed RAC201, which compared labels with the fixture's alone. RAC201 now moves each
live reading on every device at once (utilization 0 and 100 %, memory in use 0 and all of it, power, temperature and
counters halved and doubled) and, where the metric follows and the devices, their health, links and resources stay,
the labels must stay too. Two corpus shapes and the Gaudi plugin with l1's edit are named; the reference passes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutant_grading import evidence, failure, graded, mutant, wrapped

from rayaccel import FamilyInventory, Host
from rayaccel.records import Device, HealthReason, HealthReport, Topology
from rayaccel_conformance.checks.live_labels import label_changes, what_the_node_is
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_gaudi import plugin as gaudi
from rayaccel_testplugins import corpus, corpus_live_labels as live

PACKAGE = Path(gaudi.__file__).parent
PHRASE = "invariant a-label-is-no-live-reading, "


@pytest.mark.parametrize(("shape", "named"), [
    (live.BusyLabelFromUtilization, "with every device's utilization at 100 (file /sys/class/acme/acme1/busy_percent "
                                    "10 -> 100 and 3 more; the metric follows): label acme.example.com/busy 'false' "
                                    "-> 'true'"),
    (live.FreeMemoryLabel, "with every device's memory_used at 0 (file /sys/class/acme/acme0/mem_used_mib 1024 -> 0 "
                           "and 3 more; the metric follows): label acme.example.com/free-memory-gib '60' -> '64'")],
    ids=["threshold", "value"])
def test_a_label_following_a_live_reading_is_named(shape: type[corpus.Healthy], named: str) -> None:
    text = failure(mutant(shape), "RAC201", "acme-4")
    assert f"{PHRASE}{mutant(shape).name}/acme-4 {named}" in text, text
    assert "a Ray node's labels are set once, when it starts" in text, text


def test_the_control_keeps_its_labels_under_every_live_reading() -> None:
    said = evidence(corpus.PLUGINS["c-healthy"], "RAC201", "acme-4")
    assert "the same with the devices' utilization idle, utilization loaded, memory_used idle, memory_used loaded, " \
           "power idle, power loaded, temperature idle, temperature loaded" in said, said


def busy_labels(host: Host, inventory: FamilyInventory) -> dict[str, str]:
    """l1's edit on the Gaudi plugin: a busy label from the devices' utilization when the node's inventory is built."""
    busy = any(s.value >= 50 for s in gaudi.rayaccel_metrics(host, inventory.devices) if s.name == "utilization")
    return {**gaudi.rayaccel_labels(host, inventory), "habana.ai/busy": "true" if busy else "false"}


def test_the_gaudi_plugin_with_a_busy_label_is_named() -> None:
    subject = wrapped(gaudi, "gaudi", str(PACKAGE), rayaccel_labels=busy_labels)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC201"].function(subject, "gaudi/hls-gaudi3")
    assert f"{PHRASE}gaudi/hls-gaudi3 with every device's utilization at " in str(failed.value), failed.value
    assert "label habana.ai/busy 'true' -> 'false'" in str(failed.value), failed.value


def test_the_reference_gaudi_plugin_keeps_its_labels() -> None:
    said = str(CHECKS["RAC201"].function(wrapped(gaudi, "gaudi", str(PACKAGE)), "gaudi/hls-gaudi3"))
    assert "the same with the devices' utilization idle, utilization loaded" in said, said


def test_a_reading_that_moves_health_is_no_live_reading_alone() -> None:
    """A counter past a health threshold changes what the node is (a degraded device), so the labels may follow."""
    family = corpus.PLUGINS["c-healthy"].family
    device = Device(index=0, id="ACME-0", product_name="ACME R1")
    healthy = FamilyInventory(family=family, plugin="acme", devices=[device], topology=Topology(),
                              health=[HealthReport(device="ACME-0", state="healthy")], accelerator_type="R1",
                              sku_known=True, resources={"ACME": 1.0}, schedulable_units=["0"], labels={})
    degraded = healthy.model_copy(update={"health": [HealthReport(
        device="ACME-0", state="degraded", reasons=[HealthReason(code="corrected-errors", message="past 1000")])]})
    assert what_the_node_is(healthy) != what_the_node_is(degraded)
    assert what_the_node_is(healthy) == what_the_node_is(healthy.model_copy(update={"labels": {"a.example/b": "c"}}))
    assert label_changes({"a.example/b": "1", "a.example/c": "x"}, {"a.example/b": "2", "a.example/d": "y"}) == [
        "a.example/b '1' -> '2'", "a.example/c 'x' -> '(none)'", "a.example/d '(none)' -> 'y'"]


class ThermalSlowdown(corpus.Healthy):
    """A right plugin whose devices past 80 degrees C are degraded (a thermal slowdown: NVML's clock event reasons
    name one), so doubling acme-4's 41-44 degrees changes what the node is, and its health label with it."""

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        hot = {d.id for d in devices if (live.card_reading(host, d.index, "temp_mc") or 0) >= 80000}
        slowdown = HealthReason(code="thermal-slowdown", message="past 80 C: clocks slowed")
        return [r.model_copy(update={"state": "degraded", "reasons": [*r.reasons, slowdown]}) if r.device in hot else r
                for r in super().rayaccel_health(host, devices)]


def test_a_reading_that_moves_the_health_moves_what_the_node_is_and_is_not_named() -> None:
    from rayaccel_conformance.checks import all_checks

    all_checks()
    said = str(CHECKS["RAC201"].function(graded(ThermalSlowdown("c-thermal-slowdown-h2")),
                                         "c-thermal-slowdown-h2/acme-4"))
    assert "temperature idle" in said and "temperature loaded" not in said, said
