"""The report and the tier rule, in-process: digest, schema, verification, tier computation, and the checks
no broken plugin covers (RAC207 discovery time, RAC303 real hardware)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from rayaccel.manager import PluginManager
from rayaccel.schemas import generate, load_schema
from rayaccel_conformance import supported
from rayaccel_conformance.checks import CHECKS, CheckFailed, CheckSkipped, all_checks
from rayaccel_conformance.report import ReportError, digest_of, load_report, seal, write_json
from rayaccel_conformance.subject import Subject
from rayaccel_conformance.tiers import Result, reached_tier
from rayaccel_testplugins import acme

REQUIRED: dict[str, set[str]] = {}
for _c in all_checks():
    REQUIRED.setdefault(_c.tier, set()).add(_c.id)


def results(outcomes: dict[str, str] | None = None) -> list[Result]:
    outcomes = outcomes or {}
    return [Result(c.id, c.tier, outcomes.get(c.id, "passed"), None, ["evidence"]) for c in all_checks()]


def test_every_check_passing_is_certified() -> None:
    assert reached_tier(results(), REQUIRED) == ("certified", "every check of every tier passed")


def test_a_skipped_check_is_not_a_pass_and_the_reason_names_it() -> None:
    tier, why = reached_tier(results({"RAC303": "skipped"}), REQUIRED)
    assert tier == "supported" and why.startswith("certified not reached: RAC303 skipped")


def test_a_lower_tier_failure_caps_the_tier_even_when_higher_checks_pass() -> None:
    assert reached_tier(results({"RAC107": "failed"}), REQUIRED)[0] is None
    assert reached_tier(results({"RAC204": "error"}), REQUIRED)[0] == "experimental"


def test_a_tier_whose_checks_did_not_all_run_is_not_reached() -> None:
    partial = [r for r in results() if r.check_id != "RAC208"]
    tier, why = reached_tier(partial, REQUIRED)
    assert tier == "experimental" and "RAC208 not run" in why


def test_the_tier_limit_stops_there() -> None:
    tier, why = reached_tier(results(), REQUIRED, limit="experimental")
    assert tier == "experimental" and "--conformance-tier experimental" in why


def report_content(tier: str | None = "supported", outcome: str = "skipped") -> dict[str, Any]:
    checks = [{"id": c.id, "tier": c.tier, "title": c.title, "plugin": "acme", "fixture": None,
               "outcome": outcome if c.id == "RAC303" else "passed", "evidence": ["e"], "duration_s": 0.1,
               "docs": c.docs_url} for c in all_checks()]
    return {"schema": "rayaccel-conformance-report/1", "created": "2026-01-01T00:00:00+00:00",
            "versions": {"sdk": "0.1.0", "spec": "1.0", "ray": "2.60.0", "python": "3.11", "platform": "linux"},
            "hardware": "simulated", "tier_limit": None, "checks": checks,
            "plugins": [{"name": "acme", "fixtures": ["acme/acme-4"], "tier": tier, "tier_reason": "r",
                         "passed": len(checks) - 1, "failed": 0, "skipped": 1}]}


def test_a_sealed_report_verifies_and_matches_the_shipped_schema(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_json(seal(report_content()), path)
    assert load_report(path).plugins[0].tier == "supported"
    # The schema shipped in the package is the one the model generates (regenerate with python -m rayaccel.schemas).
    assert load_schema("conformance-report") == json.loads(json.dumps(generate("conformance-report")))


def test_the_digest_covers_every_field_but_itself() -> None:
    content = report_content()
    changed = json.loads(json.dumps(content))
    changed["checks"][0]["evidence"] = ["other"]
    assert digest_of(content) != digest_of(changed)
    assert digest_of(content) == digest_of({**content, "digest": "sha256:" + "0" * 64})


def test_a_report_claiming_more_than_its_checks_give_fails_even_with_a_fresh_digest(tmp_path: Path) -> None:
    path = tmp_path / "inflated.json"
    write_json(seal(report_content(tier="certified")), path)  # RAC303 skipped, yet certified claimed
    with pytest.raises(ReportError, match="claims tier certified, but its checks give supported"):
        load_report(path)


@pytest.mark.parametrize("text, message", [
    ("{not json", "not valid JSON"),
    (json.dumps({"schema": "rayaccel-conformance-report/1"}), "does not match the conformance report schema"),
])
def test_an_unreadable_report_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ReportError, match=message):
        load_report(path)


class SlowAcme:
    """ACME whose discovery takes 0.1 s: over a (lowered) budget."""

    rayaccel_family = staticmethod(acme.rayaccel_family)
    rayaccel_fixture_dirs = staticmethod(acme.rayaccel_fixture_dirs)
    rayaccel_sku_catalog = staticmethod(acme.rayaccel_sku_catalog)

    @staticmethod
    def rayaccel_discover(host):  # type: ignore[no-untyped-def]
        time.sleep(0.1)
        return acme.rayaccel_discover(host)


def subject_for(plugin: object, hardware: str = "simulated") -> Subject:
    manager = PluginManager(autoload=False)
    assert manager.register(plugin, "acme")
    return Subject("acme", manager, hardware)  # type: ignore[arg-type]


def test_discovery_over_the_time_budget_fails_rac207(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supported, "DISCOVERY_BUDGET_S", 0.08)
    with pytest.raises(CheckFailed, match=r"fastest of 3 inventories took 0\.1\d?s"):
        CHECKS["RAC207"].run(subject_for(SlowAcme()), "acme/acme-4")
    assert "ms (best of 3)" in CHECKS["RAC207"].run(subject_for(acme), "acme/acme-4")[0]


def test_real_hardware_evidence_rac303_is_skipped_when_simulated_and_fails_without_devices() -> None:
    with pytest.raises(CheckSkipped, match="simulated-only run"):
        CHECKS["RAC303"].run(subject_for(acme), None)
    with pytest.raises(CheckFailed, match="no acme device found"):  # this machine has no ACME cards
        CHECKS["RAC303"].run(subject_for(acme, hardware="real"), None)
