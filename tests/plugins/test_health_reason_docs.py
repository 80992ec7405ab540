"""Each reference plugin's health reason codes: declared by the plugin, every code its fixtures' faults produce
among them, the README table generated from the declaration, and a policy naming an unknown code warned about."""

from __future__ import annotations

import fnmatch
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from rayaccel.hosts.fixtures import installed_fixtures, load_fixture
from rayaccel.plugins.manager import PluginManager

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reason_codes", ROOT / "docs" / "gen_reason_codes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()
MANAGER = PluginManager()


@pytest.mark.parametrize("plugin", GEN.PLUGINS)
def test_each_readme_lists_the_reason_codes_its_plugin_declares(plugin: str) -> None:
    text = GEN.readme(plugin).read_text(encoding="utf-8")
    assert GEN.START in text, f"run: python docs/gen_reason_codes.py ({plugin}'s README has no reason-code table)"
    assert GEN.render(text, GEN.table(MANAGER, plugin)) == text, "stale: run python docs/gen_reason_codes.py"
    declared = MANAGER.family(plugin).health_reasons
    assert declared and len({r.code for r in declared}) == len(declared)
    assert all(r.state == "unhealthy" for r in declared if r.fatal)  # a reason that drains is not "degraded"


@pytest.mark.parametrize("plugin", GEN.PLUGINS)
def test_every_reason_a_fixture_fault_produces_is_declared(plugin: str) -> None:
    declared = [r.code for r in MANAGER.family(plugin).health_reasons]
    produced = {code for ref, path in installed_fixtures(MANAGER).items() if ref.startswith(f"{plugin}/")
                for fault in load_fixture(path).faults for codes in fault.expected.reasons.values() for code in codes}
    assert produced, f"{plugin}'s fixtures name no reason codes"
    undeclared = sorted(c for c in produced if not any(fnmatch.fnmatchcase(c, known) for known in declared))
    assert not undeclared, f"{plugin} reports {undeclared} but does not declare them (health.REASONS)"


def test_a_policy_naming_a_reason_no_plugin_reports_is_a_warning_not_an_error(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("schema: rayaccel-health-policy/1\nfamilies:\n  nvidia:\n    reasons:\n"
                      "      xid-94: {action: ignore}\n      ecc-storm: {action: drain}\n"
                      "  acme-npu:\n    reasons: {}\n")
    ran = subprocess.run([sys.executable, "-m", "rayaccel", "inspect", "--simulate", "nvidia/dgx-h100",
                          "--health-policy", str(policy), "--json"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "RAYACCEL_HEALTH_POLICY": ""})
    assert ran.returncode == 0, ran.stderr
    warnings = [line for line in ran.stderr.splitlines() if line.startswith("warning: health policy")]
    assert len(warnings) == 2, ran.stderr
    assert any("reason 'ecc-storm'" in w for w in warnings) and any("'acme-npu'" in w for w in warnings)
    assert not any("reason 'xid-94'" in w for w in warnings)
