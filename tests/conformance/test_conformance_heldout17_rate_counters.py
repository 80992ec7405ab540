"""Held-out grading, round 17 (issue 46, lane J15): a link rate moves with its own direction's counter and only with it
(``invariant a-rate-follows-its-own-counter``, RAC246).

``n1`` (an NVIDIA wrapper publishing NVML's NVLink TX counter as ``interconnect_rx`` and RX as ``interconnect_tx``)
was caught only by dgx-h100's ``expected.metric_values``, and with those swapped (``n1e``) reached supported; ``c1m``
(a CSV bake publishing each device's fastest link's rated GB/s as both rates, a constant) reached supported. RAC246
now advances one direction's counters of a device alone between two polls (NVML's field ids say which: 138 TX, 139
RX): the other direction's rate must not move; and doubles a named reading stating no direction that a rate equals:
the rate must not move with it. Both corpus shapes and n1's edit on the NVIDIA plugin are named; the NVIDIA plugin as
shipped and a control reading each counter for its own direction pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant, wrapped

import rayaccel_nvidia.plugin
from rayaccel_conformance.checks import rate_directions
from rayaccel_conformance.checks.readings import Reading
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_nvidia import metrics
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_rate_counters import LinkRateAsRatedSpeed, LinkRatesCrossed

INVARIANT = "invariant a-rate-follows-its-own-counter"
NVIDIA = str(Path(rayaccel_nvidia.plugin.__file__).parent)


class LinkRatesStraight(LinkRatesCrossed):
    """The counter library read right: each direction's rate from its own counter."""

    def directions(self, sent: float, received: float) -> tuple[float, float]:
        return sent, received


@pytest.mark.parametrize(("shape", "said"), [
    (LinkRatesCrossed, "with only ACME-0002-5e1f-4c2a-9d3b-000000000002's TX traffic counters advanced"),
    (LinkRateAsRatedSpeed, "cards.2.links.0.speed_gbytes_per_s (50, named 'speed_gbytes_per_s', no traffic "
                           "direction) times 1e+09")])
def test_a_rate_not_following_its_own_counter_is_named(shape: type[Healthy], said: str) -> None:
    message = failure(mutant(shape), "RAC246", "acme-4")
    assert INVARIANT in message and said in message, message


def test_rates_read_each_from_its_own_counter_pass() -> None:
    said = evidence(LinkRatesStraight("c-link-rates-straight"), "RAC246", "acme-4")
    assert "TX counters advanced alone, RX counters advanced alone" in said, said


class KeptPerHost:
    """Keeps its previous samples per host object (a sysfs plugin's natural key) instead of per library session."""

    def kept_by(self, host: Any, counters: Any) -> Any:
        return host


class CrossedPerHost(KeptPerHost, LinkRatesCrossed):
    pass


class StraightPerHost(KeptPerHost, LinkRatesStraight):
    pass


def test_samples_kept_per_host_object_give_rates_the_check_reaches() -> None:
    # The suite hands a hook the same host on each poll of one machine, as a node's monitor keeps its host: a
    # plugin keeping samples per host computes rates there, so a crossed one is named and a straight one passes.
    message = failure(CrossedPerHost("c-link-rates-crossed-per-host"), "RAC246", "acme-4")
    assert INVARIANT in message, message
    said = evidence(StraightPerHost("c-link-rates-straight-per-host"), "RAC246", "acme-4")
    assert "TX counters advanced alone, RX counters advanced alone" in said, said


def _crossed(previous: tuple[int, int, int] | None, current: tuple[int, int, int]) -> tuple[float, float] | None:
    """n1's edit: "the link's receive side is what the GPU sends"."""
    rate = _THROUGHPUT(previous, current)
    return None if rate is None else (rate[1], rate[0])


_THROUGHPUT = metrics.throughput


@pytest.mark.parametrize("fixture", ["nvidia/dgx-h100", "nvidia/a100-mig"])
def test_round_17s_n1_on_the_nvidia_plugin_is_named(monkeypatch: pytest.MonkeyPatch, fixture: str) -> None:
    monkeypatch.setattr(metrics, "throughput", _crossed)
    subject = wrapped(rayaccel_nvidia.plugin, "nvidia", NVIDIA)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC246"].function(subject, fixture)
    said = str(failed.value)
    assert INVARIANT in said and "TX traffic counters advanced" in said and "field_values.138" in said, said


def test_the_nvidia_plugin_as_shipped_passes() -> None:
    subject = wrapped(rayaccel_nvidia.plugin, "nvidia", NVIDIA)
    said = str(CHECKS["RAC246"].function(subject, "nvidia/dgx-h100"))
    assert "TX counters advanced alone, RX counters advanced alone" in said, said


@pytest.mark.parametrize(("reading", "way"), [
    (Reading("library", "nvml", ("devices", "4", "field_values", "138", "0", 0, "value"), 1.0), "tx"),
    (Reading("library", "nvml", ("devices", "4", "field_values", "141", "0"), 1.0), "rx"),
    (Reading("library", "nvml", ("devices", "4", "field_values", "155"), 1.0), None),
    (Reading("file", "/sys/class/net/eth0/statistics/tx_bytes", (), 1.0), "tx"),
    (Reading("file", "/sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", (), 1.0), "rx"),
    (Reading("table", "x-smi --query-link=a,b,gbytes_per_s --format=csv", (0, 2), 1.0, "a, b, 200"), None),
    (Reading("command", "x-smi link --json", ("cards", 0, "received_bytes"), 1.0), "rx"),
])
def test_a_counter_s_direction_is_the_one_its_names_state(reading: Reading, way: str | None) -> None:
    assert rate_directions.direction(reading) == way

