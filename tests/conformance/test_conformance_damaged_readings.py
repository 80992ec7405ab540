"""RAC233: a reading a device's metric comes from, made garbage in a tool's output, is reported, never raised and
never another number. Gaudi (hl-smi's CSV) passes; two defects of different shape fail naming the invariant:
a metrics hook that lets the parse error out, and one that puts 0 where it could not read; a plugin reading
only files (ACME) is not applicable (RAC211 damages those)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mutant_grading import replaced

import rayaccel
from rayaccel.catalog import load_catalog
from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Subject
from rayaccel_gaudi import plugin as gaudi
from rayaccel_testplugins import acme_onboard

RAC233 = next(c for c in all_checks() if c.id == "RAC233")
Metrics = Callable[[Any, list[rayaccel.Device]], list[rayaccel.MetricSample]]


def unread(samples: list[rayaccel.MetricSample], devices: list[rayaccel.Device]) -> list[tuple[str, str]]:
    """(device, metric) of each sample one device lacks that the others have: a value the parser gave up on."""
    names = {s.name for s in samples}
    have = {(s.device, s.name) for s in samples}
    return [(d.id, name) for d in devices for name in sorted(names) if (d.id, name) not in have]


def raises_on_garbage(host: Any, devices: list[rayaccel.Device]) -> list[rayaccel.MetricSample]:
    """The defect: a value hl-smi printed as text ends the hook (as float('garbage!') would)."""
    samples = gaudi.rayaccel_metrics(host, devices)
    if unread(samples, devices):
        raise ValueError("could not convert string to float: 'garbage!'")
    return samples


def zero_for_garbage(host: Any, devices: list[rayaccel.Device]) -> list[rayaccel.MetricSample]:
    """The defect: a value that could not be read becomes 0."""
    samples = gaudi.rayaccel_metrics(host, devices)
    like = {s.name: s for s in samples}
    return samples + [like[name].model_copy(update={"device": device, "value": 0.0})
                      for device, name in unread(samples, devices)]


def gaudi_with(metrics: Metrics) -> Subject:
    here = Path(gaudi.__file__).parent  # the SDK finds these beside a plugin's module; a namespace has none
    return replaced(gaudi, "gaudi", rayaccel_metrics=metrics, rayaccel_fixture_dirs=lambda: [str(here / "fixtures")],
                    rayaccel_sku_catalog=lambda: load_catalog(here / "skus.yaml"))


@pytest.mark.parametrize(("metrics", "said"), [
    (raises_on_garbage, "rayaccel_metrics raised instead of reporting it"),
    (zero_for_garbage, "to 0: a reading that cannot be read gives no sample"),
])
def test_a_damaged_reading_raised_or_made_a_number_fails_naming_the_invariant(metrics: Metrics, said: str) -> None:
    result = gaudi_with(metrics).run(RAC233, "gaudi/hls-gaudi2")
    assert result.outcome == "failed", result.evidence
    text = " ".join(result.evidence)
    assert "invariant 'a damaged reading is reported, never another value', gaudi/hls-gaudi2 with `hl-smi -Q" in text
    assert "made 'garbage!'" in text and said in text, text


def test_gaudi_passes_and_a_plugin_reading_only_files_is_not_applicable() -> None:
    passed = gaudi_with(gaudi.rayaccel_metrics).run(RAC233, "gaudi/hls-gaudi2")
    assert passed.outcome == "passed", passed.evidence
    assert "metric readings of" in passed.evidence[0] and "made garbage in turn" in passed.evidence[0]
    files_only = PluginManager(autoload=False)
    assert files_only.register(SimpleNamespace(**{name: getattr(acme_onboard, name) for name in dir(acme_onboard)
                                                  if name.startswith("rayaccel_")}), "acme"), files_only.problems
    skipped = Subject("acme", files_only).run(RAC233, "acme/acme-4")
    assert skipped.outcome == "skipped" and "files are RAC211's" in skipped.evidence[0], skipped.evidence
