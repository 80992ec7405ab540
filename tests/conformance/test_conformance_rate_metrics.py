"""RAC246: NVLink rates measured between two polls of the busy dgx-h100 fixture (its NVML counters advance as
recorded) equal the stated traffic and stay within the SKU's declared bandwidth; two defects of other shapes than
the held-out one (a KiB delta read as bytes) fail, each naming its invariant: both directions summed (said as its
ratio to the SKU's ceiling, 1.27x, no cause: a ceiling is not the rate due, held-out round 17's c1), and NVML's
microsecond timestamps taken for milliseconds."""

from __future__ import annotations

from typing import Any

import pytest

from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Subject
from rayaccel_nvidia import metrics

RAC246 = next(c for c in all_checks() if c.id == "RAC246")
REF = "nvidia/dgx-h100"


def _both_directions(previous: Any, current: Any) -> tuple[float, float] | None:
    rate = RIGHT(previous, current)
    return None if rate is None else (rate[0] + rate[1], rate[0] + rate[1])


def _timestamps_as_milliseconds(previous: Any, current: Any) -> tuple[float, float] | None:
    rate = RIGHT(previous, current)
    return None if rate is None else (rate[0] / 1000, rate[1] / 1000)


RIGHT = metrics.throughput


@pytest.fixture(scope="module")
def manager() -> PluginManager:
    return PluginManager(autoload=True)


def test_the_reference_plugins_rates_are_the_stated_traffic(manager: PluginManager) -> None:
    result = Subject("nvidia", manager).run(RAC246, REF)
    assert result.outcome == "passed", result.evidence
    assert "16 rates on the second poll, within their SKUs' link bandwidth; 16 stated rates met" in result.evidence[0]
    single = Subject("nvidia", manager).run(RAC246, "nvidia/l4-single")  # no NVLink: no rate, its gauges polled
    assert single.outcome == "passed" and "no rate on the second poll" in single.evidence[0], single.evidence


@pytest.mark.parametrize(("defect", "said"), [
    (_both_directions, ("invariant rate-within-the-sku-bandwidth, nvidia/dgx-h100, second poll: interconnect_tx of "
                        "GPU-8f47ace1-99a7-58d0-9b68-36d06bed0644 is 5.71",
                        "more than the 450 GB/s one direction SKU h100-sxm5-80gb declares its links carry "
                        "(link_bandwidth_gbytes_per_s): 1.27x that")),
    (_timestamps_as_milliseconds, ("invariant rate-is-the-stated-traffic, nvidia/dgx-h100, second poll: sample "
                                   "interconnect_tx of GPU-8f47ace1-99a7-58d0-9b68-36d06bed0644 is 2.9",
                                   "the fixture's machine reads 2.94912e+11 (expected.metric_values)")),
])
def test_a_rate_in_another_unit_or_direction_is_named(manager: PluginManager, monkeypatch: pytest.MonkeyPatch,
                                                      defect: Any, said: tuple[str, str]) -> None:
    monkeypatch.setattr(metrics, "throughput", defect)
    result = Subject("nvidia", manager).run(RAC246, REF)
    assert result.outcome == "failed", result.evidence
    assert any(said[0] in line and said[1] in line for line in result.evidence), result.evidence


def _without_reset_guard(previous: Any, current: Any) -> tuple[float, float] | None:
    """Held-out round 4's NVLink rate: the counter-reset guard dropped (a fall taken for traffic)."""
    if previous is None or current[0] <= previous[0]:
        return None
    seconds = (current[0] - previous[0]) / 1e6
    return (current[1] - previous[1]) * 1024 / seconds, (current[2] - previous[2]) * 1024 / seconds


def test_a_rate_computed_across_a_counter_reset_is_named(manager: PluginManager,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    right = Subject("nvidia", manager).run(RAC246, REF)
    assert right.outcome == "passed" and "no rate across a reset" in right.evidence[0], right.evidence
    monkeypatch.setattr(metrics, "throughput", _without_reset_guard)
    result = Subject("nvidia", manager).run(RAC246, REF)
    assert result.outcome == "failed", result.evidence
    assert any("invariant no-rate-across-a-counter-reset" in line and "interconnect_tx is -" in line
               for line in result.evidence), result.evidence
