"""RAC112 loads a plugin in a fresh interpreter: what Ray's own import does is never the plugin's, and a plugin
object reachable from no module is a clear failure, not a traceback."""

from __future__ import annotations

from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS
from rayaccel_testplugins import acme_imports_ray, corpus

all_checks()  # registers every check


def test_a_plugin_importing_ray_at_module_level_passes_with_rays_own_import_counted_out() -> None:
    manager = PluginManager(autoload=False)
    manager.register(acme_imports_ray, "acme")
    outcome = Subject("acme", manager).run(CHECKS["RAC112"], None)
    assert outcome.outcome == "passed", outcome.evidence
    assert "measured with Ray loaded first" in outcome.evidence[0]
    # The suite's in-process checks do not blame it either (RAY_CLIENT_MODE is Ray's).
    subject = Subject("acme", manager)
    ref = next(iter(subject.fixture_paths()))
    for check_id in ("RAC102", "RAC109"):
        assert subject.run(CHECKS[check_id], ref if CHECKS[check_id].scope == "fixture" else None).outcome == "passed"


def test_a_plugin_object_no_module_holds_is_a_failure_naming_why() -> None:
    manager = PluginManager(autoload=False)
    manager.register(type(corpus.PLUGINS["c-healthy"])("c-orphan"), "c-orphan")
    outcome = Subject("c-orphan", manager).run(CHECKS["RAC112"], None)
    assert outcome.outcome == "failed"
    assert "reachable from no module attribute" in outcome.evidence[0]
