"""Real-hardware semantics (issue 15): health follows the volatile ECC counter, not the lifetime one.

hl-smi reports ``ecc.errors.uncorrected.aggregate.total`` (every error over the device's life, never reset)
and ``ecc.errors.uncorrected.volatile.total`` (since the driver loaded). One old error must not drain a card
forever: only the volatile counter makes a device unhealthy.
"""

from __future__ import annotations

from rayaccel.testing import SimulatedHost, build_inventory
from rayaccel_gaudi.hlsmi import QUERY_FIELDS, parse_query


def row(aggregate: tuple[int, int], volatile: tuple[str, str]) -> str:
    return ("0, 2, HL-325L, 01P0-HL3090A0-18-U4V1S3-22-01-01, AN31100450, 0000:33:00.0, 131072 MiB, 672 MiB, "
            f"1.21.0-ca4c3bd, 25 C, 178 W, 0 %, {aggregate[0]}, {aggregate[1]}, {volatile[0]}, {volatile[1]}")


def test_the_query_asks_for_both_counters() -> None:
    assert {"ecc.errors.uncorrected.volatile.total", "ecc.errors.corrected.volatile.total",
            "ecc.errors.uncorrected.aggregate.total", "ecc.errors.corrected.aggregate.total"} <= set(QUERY_FIELDS)


def test_volatile_counters_are_the_current_ones_and_lifetime_is_kept_apart() -> None:
    (record,) = parse_query(row((1, 5), ("0", "0")))
    assert (record.ecc_uncorrected, record.ecc_corrected) == (0, 0)
    assert (record.ecc_uncorrected_lifetime, record.ecc_corrected_lifetime) == (1, 5)


def test_without_volatile_counters_the_lifetime_ones_stand_in() -> None:
    (record,) = parse_query(row((2, 0), ("N/A", "N/A")))
    assert record.ecc_uncorrected == 2


def test_an_old_uncorrectable_error_does_not_drain_the_card(rayaccel_manager, rayaccel_fixtures) -> None:
    fixture = rayaccel_fixtures["hls-gaudi3"]
    result = build_inventory(rayaccel_manager, SimulatedHost(fixture, faults=["lifetime-ecc-only"]))
    family = result.family("gaudi")
    assert family is not None
    assert result.resources == {"HPU": 8.0, "accelerator_type:Intel-GAUDI3": 1.0}
    report = next(h for h in family.health if h.device == "01P0-HL3090A0-18-U4V1S3-22-04-22")
    assert report.state == "healthy"
    assert [(r.code, r.fatal) for r in report.reasons] == [("ecc-uncorrectable-history", False)]
    assert family.labels["rayaccel.io/health"] == "healthy"
    metrics = {m.name: m.value for m in family.metrics if m.device == report.device}
    assert metrics["ecc_errors_uncorrected"] == 0  # the standard metric is the volatile count


def test_a_fresh_uncorrectable_error_still_drains_it(rayaccel_manager, rayaccel_fixtures) -> None:
    result = build_inventory(rayaccel_manager, SimulatedHost(rayaccel_fixtures["hls-gaudi3"], faults=["module-ecc"]))
    family = result.family("gaudi")
    assert family is not None
    report = next(h for h in family.health if h.device == "01P0-HL3090A0-18-U4V1S3-24-02-08")
    assert (report.state, [r.code for r in report.reasons if r.fatal]) == ("unhealthy", ["ecc-uncorrectable"])
