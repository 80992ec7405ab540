"""Held-out grading, round 19 (issue 46, lane J23): a poll after a loss reads each device by its id (RAC210's
``invariant a-poll-after-a-loss-reads-each-device-by-its-id``).

The python-library bake ``l1`` (sable) read each device's stats from its library at the index discovery gave it.
The library numbers what it finds 0..count-1, anew once a card is lost (as NVML and amdsmi do), so a health monitor
that discovered before a loss and polls after it read each later card's neighbour's values and raised IndexError on
the last; every suite build discovered and polled the same host, and l1 reached ``supported``. RAC210 now asks
health and metrics with the devices discovered before each loss (as recorded, and moved to the first and a middle
device) on the host after it: a hook that raises, a reading not the device's own (named as its neighbour's where it
is) or a health state other than a fresh build's is named. The two corpus shapes (l1's minimal part: a library
numbering anew, read at discovery's index; and the library's number kept in the device record) and l1's stats path
(tests/rayaccel_testplugins/heldout19_sable.py, its sable-4 trimmed) are named; the same libraries read by uuid pass.
"""

from __future__ import annotations

from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant, replaced

from rayaccel import Device, Host
from rayaccel.records import FamilyInventory, HealthReport, MetricSample, Topology
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.moved_losses import poll_after_loss_differences, stable_readings
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import corpus, heldout19_sable
from rayaccel_testplugins.corpus_polled_losses import (
    LIBRARY_MACHINE,
    StatsAtDiscoveryIndex,
    StatsAtKeptHandle,
    add_stats_machine,
    stats_library,
    with_listed_stats,
)

INVARIANT = "invariant a-poll-after-a-loss-reads-each-device-by-its-id"
MOVED_TO_FIRST = ("fault lost-3 moved from ACME-0003-5e1f-4c2a-9d3b-000000000003 to "
                  "ACME-0000-5e1f-4c2a-9d3b-000000000000")
CARD_1 = "ACME-0001-5e1f-4c2a-9d3b-000000000001"
CARD_2 = "ACME-0002-5e1f-4c2a-9d3b-000000000002"


class StatsFoundByUuid(corpus.Healthy):
    """The library's card found by uuid in what it lists now (l1's control, the template's ``_listed``)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_stats_machine(name)

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        library = stats_library(host)
        listed = [] if library is None else [library.card_stats(i) for i in range(library.card_count())]
        card = next((card for card in listed if card.get("uuid") == device.id), None)
        return with_listed_stats(super().samples(host, device), device, card)


def test_stats_read_at_discovery_s_index_are_named_as_the_neighbour_s() -> None:
    plugin = mutant(StatsAtDiscoveryIndex)
    said = failure(plugin, "RAC210", LIBRARY_MACHINE)
    assert (f"{INVARIANT}, fault lost-3: rayaccel_metrics raised IndexError: list index out of range, asked for the "
            "4 devices discovered before the loss: its whole answer is lost (asked for "
            "ACME-0003-5e1f-4c2a-9d3b-000000000003 (index 3, lost) alone, it raised IndexError") in said, said
    assert (f"{INVARIANT}, {MOVED_TO_FIRST} (position 0): {CARD_1} (index 1), not lost, reads power 252.0 (its own is "
            f"251.0, the value {CARD_2} reads on the healthy machine)") in said, said


def test_a_library_number_kept_from_discovery_is_named_without_a_raise() -> None:
    plugin = mutant(StatsAtKeptHandle)
    said = failure(plugin, "RAC210", LIBRARY_MACHINE)
    assert (f"{INVARIANT}, {MOVED_TO_FIRST} (position 0): {CARD_1} (index 1), not lost, reads power 252.0 (its own is "
            f"251.0, the value {CARD_2} reads on the healthy machine)") in said, said
    assert "raised" not in said, said
    assert "fault lost-3:" not in said, said  # the recorded loss, the last card, leaves nothing after it to misread


def test_the_card_found_by_uuid_passes() -> None:
    plugin = StatsFoundByUuid("c-" + StatsFoundByUuid.__name__.lower())
    said = str(evidence(plugin, "RAC210", LIBRARY_MACHINE))
    assert "fault lost-3 moved to position 0" in said and "fault lost-3 moved to position 2" in said, said


SABLE = "sable/sable-4"


def _sable() -> Any:
    """The trimmed bake, registered alone (the checks registered first: CHECKS holds them)."""
    all_checks()
    return replaced(heldout19_sable, "sable")


def test_l1_s_stats_read_at_discovery_s_index_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heldout19_sable, "BY_INDEX", True)
    subject = _sable()
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC210"].function(subject, SABLE)
    said = str(failed.value)
    assert (f"{INVARIANT}, fault device-3-lost: rayaccel_metrics raised IndexError: list index out of range, asked for "
            "the 4 devices discovered before the loss") in said, said
    # Moved to the first device: each later device reads its right-hand neighbour's entry.
    assert (f"{INVARIANT}, fault device-3-lost moved from SABLE-5e1f4c2a-0003 to SABLE-5e1f4c2a-0000 (position 0): "
            "SABLE-5e1f4c2a-0001 (index 1), not lost, reads memory_used 51539607552.0 (its own is 25769803776.0, the "
            "value SABLE-5e1f4c2a-0002 reads on the healthy machine)") in said, said


def test_l1_s_control_finding_each_device_by_uuid_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heldout19_sable, "BY_INDEX", False)
    subject = _sable()
    said = str(CHECKS["RAC210"].function(subject, SABLE))
    assert "fault device-3-lost moved to position 0" in said and "fault device-3-lost moved to position 2" in said, said


def _sample(device: str, name: str, value: float) -> MetricSample:
    return MetricSample(device=device, name=name, unit="percent" if name == "utilization" else "bytes_per_second",
                        value=value)


def _family(states: dict[str, str]) -> FamilyInventory:
    devices = [Device(index=i, id=dev, product_name="X1") for i, dev in enumerate(states)]
    return FamilyInventory(family=corpus.PLUGINS["c-healthy"].family, plugin="acme", devices=devices,
                           topology=Topology(), health=[HealthReport(device=d, state=s) for d, s in states.items()],
                           accelerator_type="X1", sku_known=False, resources={}, schedulable_units=[], labels={})


def test_only_readings_two_healthy_polls_agree_on_are_held_and_a_device_the_loss_changed_is_not() -> None:
    # A rate worked out between polls (no value on the first, another on each later one) is no fixed answer.
    first = [_sample("A", "utilization", 10), _sample("B", "utilization", 20), _sample("B", "interconnect_rx", 5)]
    again = [*first[:2], _sample("B", "interconnect_rx", 7)]
    stable = stable_readings(first, again)
    assert stable == {"A": {"utilization": 10}, "B": {"utilization": 20}}
    healthy = _family({"A": "healthy", "B": "healthy", "C": "healthy"})
    polled = [HealthReport(device="B", state="healthy")]
    # C lost; B read at A's number: named as A's value. No raise, B's rate not held, A's reading its own.
    read = [_sample("A", "utilization", 10), _sample("B", "utilization", 10), _sample("B", "interconnect_rx", 9)]
    said = poll_after_loss_differences(healthy, None, stable, polled, read, {"C"}, {}, set())
    assert said == ["B (index 1), not lost, reads utilization 10.0 (its own is 20.0, the value A reads on the healthy "
                    "machine): read each device by its id in what the vendor lists now, not at the number discovery "
                    "gave it (a library numbers what it finds anew once a card is lost)"]
    # The loss broke B too (a chiplet gone with C): a fresh build finds it unhealthy, so may the poll, any reading.
    broken = _family({"A": "healthy", "B": "unhealthy"})
    assert poll_after_loss_differences(healthy, broken, stable, [HealthReport(device="B", state="unhealthy")],
                                       [_sample("A", "utilization", 10)], {"C"}, {}, set()) == []
