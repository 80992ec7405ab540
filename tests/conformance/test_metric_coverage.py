"""RAC255 (the metrics of one SKU on every fixture) against what a fixture states its machine offers: a metric
lost on a denser node fails it, unless that node's fixture says its vendor interface does not offer it (ECC
off, vGPU), as a correct plugin reading that machine reports no such sample."""

from __future__ import annotations

import pytest

from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Subject
from rayaccel_testplugins import corpus_signals  # noqa: F401  (registers the RAC255 mutants)
from rayaccel_testplugins.corpus import PLUGINS

RAC255 = next(c for c in all_checks() if c.id == "RAC255")


def subject_of(name: str) -> Subject:
    manager = PluginManager(autoload=False, timeout=5)
    assert manager.register(PLUGINS[name], name), manager.problems
    return Subject(name, manager)


def test_a_metric_lost_on_a_denser_node_of_the_sku_fails_naming_both_fixtures() -> None:
    outcome = subject_of("c-power-dropped-on-dense-nodes").run(RAC255, None)
    assert outcome.outcome == "failed"
    assert "report power on c-power-dropped-on-dense-nodes/acme-4 but not on c-power-dropped-on-dense-nodes/acme-16" \
        in outcome.evidence[0]


def test_a_fixture_stating_its_machine_does_not_offer_the_metric_is_not_held_to_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    subject = subject_of("c-power-dropped-on-dense-nodes")
    recorded = subject.fixture

    def stating(ref: str | None):  # type: ignore[no-untyped-def]
        fixture = recorded(ref)
        if ref is not None and ref.endswith("/acme-16"):  # the dense node's machine offers no power reading
            expected = fixture.expected.model_copy(
                update={"metrics": ["memory_total", "memory_used", "temperature", "utilization"]})
            # ... and states none: its cards write no power_mw (RAC255's an-unoffered-metric-is-not-stated holds
            # the statement to the answers, test_conformance_heldout13_stated_metrics)
            files = {path: text for path, text in fixture.host.files.items() if not path.endswith("/power_mw")}
            host = fixture.host.model_copy(update={"files": files})
            return fixture.model_copy(update={"expected": expected, "host": host})
        return fixture

    monkeypatch.setattr(subject, "fixture", stating)
    outcome = subject.run(RAC255, None)
    assert outcome.outcome == "passed", outcome.evidence
