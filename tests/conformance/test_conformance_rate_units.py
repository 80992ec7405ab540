"""Held-out grading, round 9 (issue 46, lane Y): a rate 1000x off names the time step, not only a size one.

The NVIDIA wrapper ``n1`` divided NVLink's field-value timestamps as milliseconds (NVML stamps them in
microseconds): every rate 1/1000 of the traffic due, which RAC246 called "a size unit mix-up by 1000: kB where
bytes_per_second are due". A rate is a counter's advance over the time between two samples, so a power of 1000 is a
time step as much as a size one; the machine's recorded counters tell them apart where the counter's own unit needs
no decimal step (NVML's KiB left unconverted shows as 1/1024, not 1/1000; a bytes counter needs none).
"""

from __future__ import annotations

from typing import Any

import pytest
from mutant_grading import failure, mutant

from rayaccel import Device
from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.readings import Reading
from rayaccel_conformance.checks.value_relations import rate_mixup
from rayaccel_conformance.harness.subject import Subject
from rayaccel_nvidia import metrics
from rayaccel_testplugins.corpus_readings import RatesOverMillisecondStamps

RAC246 = next(c for c in all_checks() if c.id == "RAC246")
RIGHT = metrics.throughput
TIME_STEP = ("a time unit mix-up, the interval between the counter's two samples taken 1000x too long (timestamps "
             "in microseconds divided as milliseconds, or in milliseconds as seconds)")
COUNTER_IN_KB = "a kB counter's advance taken for bytes"


def _stamps_as_milliseconds(previous: Any, current: Any) -> tuple[float, float] | None:
    """n1's rate: the interval between NVML's microsecond stamps divided by 1e3."""
    rate = RIGHT(previous, current)
    return None if rate is None else (rate[0] / 1000, rate[1] / 1000)


def _kib_left_as_bytes(previous: Any, current: Any) -> tuple[float, float] | None:
    """NVML's KiB counters taken for bytes: 1/1024 of the rate, a size step only."""
    rate = RIGHT(previous, current)
    return None if rate is None else (rate[0] / 1024, rate[1] / 1024)


def _rac246(monkeypatch: pytest.MonkeyPatch, defect: Any) -> list[str]:
    monkeypatch.setattr(metrics, "throughput", defect)
    result = Subject("nvidia", PluginManager(autoload=True)).run(RAC246, "nvidia/dgx-h100")
    assert result.outcome == "failed", result.evidence
    return result.evidence


def test_nvml_stamps_taken_as_milliseconds_name_the_time_step(monkeypatch: pytest.MonkeyPatch) -> None:
    said = _rac246(monkeypatch, _stamps_as_milliseconds)
    line = next(line for line in said if "interconnect_tx of GPU-8f47ace1-99a7-58d0-9b68-36d06bed0644" in line)
    assert "is 1/1000 of the 2.94912e+11 bytes/s due: " + TIME_STEP in line, line
    assert ("the machine's counters (library nvml devices.0.field_values.138.0, recorded twice) are stamped in "
            "microseconds and count KiB") in line, line
    # The counter counts KiB: its advance taken for bytes would be 1/1024, so that slip is not offered.
    assert COUNTER_IN_KB not in line and "size unit mix-up by 1000" not in line, line


def test_nvml_kib_left_as_bytes_names_the_size_step_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    line = next(line for line in _rac246(monkeypatch, _kib_left_as_bytes) if "interconnect_tx" in line)
    assert "a size unit mix-up by 2^10: KiB where bytes_per_second are due (not multiplied by 1024)" in line, line
    assert "time unit" not in line, line


def test_a_bytes_counter_over_millisecond_stamps_names_the_time_step() -> None:
    """Another shape: ACME's own link library (per card, bytes), read by a plugin dividing its stamps as ms."""
    plugin = mutant(RatesOverMillisecondStamps)
    said = failure(plugin, "RAC246", "acme-4")
    assert "is 1/1000 of the 4e+10 bytes/s due: " + TIME_STEP in said, said
    assert ("the machine's counters (library acmelink cards.0.tx, recorded twice) are stamped in microseconds and "
            "count bytes") in said, said
    assert COUNTER_IN_KB not in said, said


CARD = Device(id="card-0", index=0, product_name="ACME X1")


def _counter(per_second: float) -> list[Reading]:
    """Card 0's counter recorded twice, a second apart (stamps in microseconds since 1970)."""
    stamps = (1_733_400_000_000_000, 1_733_400_001_000_000)
    return [reading for i, stamp in enumerate(stamps) for reading in (
        Reading("library", "lnk", ("cards", "0", "tx", i, "timestamp"), float(stamp)),
        Reading("library", "lnk", ("cards", "0", "tx", i, "value"), 2.0**30 + i * per_second))]


def test_a_decimal_counter_leaves_both_steps_named() -> None:
    """A kB counter: its advance taken for bytes and a stamp divided as ms are both 1/1000; both are said."""
    said = rate_mixup(4e7, 4e10, CARD, _counter(4e7)) or ""
    assert TIME_STEP in said and COUNTER_IN_KB in said and "count kB" in said, said


def test_without_recorded_counters_both_steps_are_named() -> None:
    said = rate_mixup(4e7, 4e10, CARD, []) or ""
    assert TIME_STEP in said and COUNTER_IN_KB in said and "stamped" not in said, said
    assert rate_mixup(4e10 / 1024, 4e10, CARD, []) is None  # not a power of 1000: ratio_mixup's size steps name it
