"""Performance figures held to a baseline: what counts as a regression, for the check (RAC310), ``certify diff``
and the registry alike.

A figure regresses when it is worse than the baseline's by more than the tolerance (a fraction of the
baseline, ``--conformance-tolerance``, default 50 %: timings on shared CI runners wander) and, for a time, by
more than :data:`MIN_SLACK_MS` (a 1 ms cost that doubles is noise, not a regression).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: The default tolerance: a figure may be this fraction worse than its baseline.
DEFAULT_TOLERANCE = 0.5
#: A time figure must also be this much slower before it counts.
MIN_SLACK_MS = 2.0


@dataclass
class Baseline:
    """What this run's figures are held to: plugin -> figure name -> value (from ``--conformance-baseline``)."""

    values: dict[str, dict[str, float]] = field(default_factory=dict)
    tolerance: float = DEFAULT_TOLERANCE
    source: str | None = None  #: where the values came from, for the evidence


#: Set once per run by the pytest plugin (``--conformance-baseline``); read by RAC310.
BASELINE = Baseline()
#: Figures measured in this run, per plugin, in the order measured: the report's ``figures``.
MEASURED: dict[str, list[dict[str, Any]]] = {}


def regressed(value: float, baseline: float, better: str, unit: str, tolerance: float) -> bool:
    if better == "higher":
        return value < baseline * (1 - tolerance)
    slack = MIN_SLACK_MS if unit == "ms" else 0.0
    return value > baseline * (1 + tolerance) and value - baseline > slack


def change(before: float, after: float) -> str:
    """The change in words, e.g. '-83%'."""
    if before == 0:
        return "from 0"
    return f"{(after - before) / before * 100:+.0f}%"


def baseline_from_report(figures: Iterable[Any]) -> dict[str, dict[str, float]]:
    values: dict[str, dict[str, float]] = {}
    for f in figures:
        values.setdefault(f.plugin, {})[f.name] = f.value
    return values


def held_to(plugin: str, measured: list[dict[str, Any]], baseline: Baseline = BASELINE) -> list[str]:
    """Fill in each figure's baseline and regression; the lines naming each regression (empty when none)."""
    mine: Mapping[str, float] = baseline.values.get(plugin, {})
    worse = []
    for f in measured:
        before = mine.get(f["name"])
        if before is None:
            continue
        f["baseline"] = before
        f["regressed"] = regressed(f["value"], before, f["better"], f["unit"], baseline.tolerance)
        if f["regressed"]:
            worse.append(f"{f['name']} regressed: {f['value']:.4g} {f['unit']}, baseline {before:.4g} {f['unit']} "
                         f"({change(before, f['value'])}; tolerance {baseline.tolerance:.0%})")
    return worse
