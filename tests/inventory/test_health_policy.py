"""The operator's health policy: the file (schema, limits, one line for a bad one), its evaluation over polls
with explicit clock values, and what it does to a simulated DGX H100's inventory, ``inspect`` and metrics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.inventory.health_decisions import HealthDecisions
from rayaccel.inventory.health_policy import (
    POLICY_ENV,
    HealthPolicy,
    HealthPolicyError,
    load_policy,
    unknown_reasons,
)
from rayaccel.outputs.metric_series import HEALTH, HEALTH_REASON, node_series
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import HealthReason, HealthReport, NodeInventory
from rayaccel.simulation.host_factory import make_host

RAYACCEL = [sys.executable, "-m", "rayaccel"]


def policy(families: dict[str, object]) -> HealthPolicy:
    return HealthPolicy.model_validate({"schema": "rayaccel-health-policy/1", "families": families})


def xid(code: str = "xid-94", fatal: bool = True) -> HealthReason:
    """XID 94 as NVIDIA's plugin reports it: fatal (NVIDIA's device plugin marks the GPU unhealthy)."""
    return HealthReason(code=code, message="XID 94: contained ECC error", fatal=fatal)


def report(*reasons: HealthReason, state: str = "unhealthy") -> HealthReport:
    return HealthReport(device="GPU-4", state=state if reasons else "healthy", reasons=list(reasons))


# The evaluator, with explicit clock values ------------------------------------------------------------------

def test_drain_after_three_in_sixty_seconds_drains_on_the_third_occurrence_within_the_window_only() -> None:
    decisions = HealthDecisions(policy({"nvidia": {"reasons": {
        "xid-94": {"action": "drain-after", "occurrences": 3, "window_s": 60}}}}))

    def poll(now: float, reported: bool) -> HealthReport:
        return decisions.apply("nvidia", [report(xid()) if reported else report()], now)[0][0]

    # The plugin drains XID 94 at once; this rule counts it instead. Three occurrences 50 s apart: never three
    # within one 60 s window, so never drained.
    for now in (0, 50, 100):
        assert poll(now, True).state == "degraded"
        assert poll(now + 1, False).state == "healthy"
    # A reason that stays reported is one occurrence, however many polls report it.
    for now in range(200, 260, 5):
        assert poll(now, True).state == "degraded"
    assert poll(260, False).state == "healthy"
    # Three within 60 s (at 300, 320, 340): the first two count, the third drains.
    first = decisions.apply("nvidia", [report(xid())], 300)
    assert first[1][0].action == "count" and first[1][0].occurrences == 1
    poll(301, False)
    second = decisions.apply("nvidia", [report(xid())], 320)
    assert second[0][0].state == "degraded" and second[1][0].occurrences == 2
    poll(321, False)
    third = decisions.apply("nvidia", [report(xid())], 340)
    assert third[0][0].state == "unhealthy" and third[0][0].reasons[0].fatal
    assert third[1][0].action == "drain" and third[1][0].occurrences == 3
    # Drained while it stays reported, even once the window has passed; recovered when it clears.
    assert poll(500, True).state == "unhealthy"
    assert poll(501, False).state == "healthy"
    # A second evaluation of the same poll counts nothing twice.
    decisions.apply("nvidia", [report(xid())], 600)
    again = decisions.apply("nvidia", [report(xid())], 600)
    assert again[1][0].occurrences == 1


def test_ignore_degrade_and_drain_rewrite_the_report_and_unnamed_reasons_keep_the_plugins_classification() -> None:
    decisions = HealthDecisions(policy({"nvidia": {"reasons": {
        "xid-94": {"action": "ignore"}, "xid-92": {"action": "degrade"}, "row-remap-pending": {"action": "drain"}}}}))
    ignored, made = decisions.apply("nvidia", [report(xid())], 0)
    assert ignored[0].state == "healthy" and ignored[0].reasons == []
    assert [(d.code, d.rule, d.action) for d in made] == [("xid-94", "ignore", "ignore")]
    degraded = decisions.apply("nvidia", [report(xid("xid-92"))], 1)[0][0]
    assert degraded.state == "degraded" and not degraded.reasons[0].fatal
    drained = decisions.apply("nvidia", [report(xid("row-remap-pending", fatal=False), state="degraded")], 2)[0][0]
    assert drained.state == "unhealthy" and drained.reasons[0].fatal
    plugin = report(xid("xid-79"))
    kept, made = decisions.apply("nvidia", [plugin], 3)
    assert kept[0] == plugin and [(d.rule, d.action) for d in made] == [("plugin", "drain")]
    other = report(xid("xid-94"))
    assert decisions.apply("amd", [other], 4)[0][0] == other  # another family's rules are not this one's


def test_quiet_recovery_keeps_a_drained_device_out_until_the_quiet_period_passes() -> None:
    decisions = HealthDecisions(policy({"nvidia": {"recovery": {"confirm": "quiet", "quiet_s": 300}}}))
    fatal = report(xid("xid-79"))
    assert decisions.apply("nvidia", [fatal], 0)[0][0].state == "unhealthy"
    held, made = decisions.apply("nvidia", [report()], 10)
    assert held[0].state == "unhealthy" and held[0].reasons[0].code == "xid-79"
    assert "290s left" in held[0].reasons[0].message and made[0].rule == "recovery"
    assert decisions.apply("nvidia", [report()], 299)[0][0].state == "unhealthy"
    assert decisions.apply("nvidia", [report()], 300)[0][0].state == "healthy"
    immediate = HealthDecisions(policy({}))
    immediate.apply("nvidia", [fatal], 0)
    assert immediate.apply("nvidia", [report()], 1)[0][0].state == "healthy"


# The file ---------------------------------------------------------------------------------------------------

def write(tmp_path: Path, text: str, name: str = "policy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


GOOD = """schema: rayaccel-health-policy/1
families:
  nvidia:
    reasons:
      xid-94: {action: ignore}
      xid-92: {action: drain-after, occurrences: 3, window_s: 60}
    recovery: {confirm: quiet, quiet_s: 120}
"""


def test_a_good_policy_loads_and_names_its_source(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    loaded = load_policy(path)
    assert loaded.source == str(path)
    rule = loaded.rule("nvidia", "xid-92")
    assert rule is not None and (rule.action, rule.occurrences, rule.window_s) == ("drain-after", 3, 60)


@pytest.mark.parametrize(("text", "expected"), [
    (GOOD.replace("action: ignore", "action: reboot"),
     "at families/nvidia/reasons/xid-94/action: 'reboot' is not one of"),
    (GOOD.replace("window_s: 60", "window_s: -60"), "at families/nvidia/reasons/xid-92/window_s"),
    (GOOD.replace("occurrences: 3, ", ""), "drain-after needs occurrences and window_s"),
    (GOOD.replace("{action: ignore}", "!!python/object:os.system {action: ignore}"),
     "line 5: YAML tags are not allowed"),
    (GOOD.replace("{action: ignore}", "{action: !!str ignore}"), "YAML tags are not allowed"),
    ("schema: rayaccel-health-policy/1\nfamilies: [", "not valid YAML"),
    ("", "the health policy is empty"),
])
def test_a_bad_policy_is_one_line_naming_the_file_and_the_problem(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(HealthPolicyError) as raised:
        load_policy(path)
    message = str(raised.value)
    assert expected in message and str(path) in message and "\n" not in message


def test_a_ten_megabyte_policy_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + "#" * (10 * 1024 * 1024))
    with pytest.raises(HealthPolicyError, match="more than the 65536 allowed"):
        load_policy(path)


def test_reasons_no_installed_plugin_reports_are_warnings(tmp_path: Path) -> None:
    loaded = load_policy(write(tmp_path, GOOD.replace("xid-92", "xid-nine") + "  acme:\n    reasons: {}\n"))
    warnings = unknown_reasons(loaded, {"nvidia": ["xid-*", "gpu-lost"]})
    assert len(warnings) == 1 and "family 'acme' is no installed plugin's" in warnings[0]
    warnings = unknown_reasons(loaded, {"nvidia": ["gpu-lost", "xid-94"], "acme": []})
    assert len(warnings) == 1 and "reason 'xid-nine'" in warnings[0]


# On a simulated DGX H100 with XID 94 injected on GPU 4 ------------------------------------------------------

GPU4 = "GPU-a62c2f11-60a6-56b5-96cc-2b7ce4439f2e"


def dgx_inventory(policy_file: Path | None, monkeypatch: pytest.MonkeyPatch) -> NodeInventory:
    if policy_file is None:
        monkeypatch.delenv(POLICY_ENV, raising=False)
    else:
        monkeypatch.setenv(POLICY_ENV, str(policy_file))
    manager = PluginManager()
    builder = InventoryBuilder(manager, ["nvidia"])
    return builder.build(make_host("nvidia/dgx-h100", ["xid-94"], manager=manager))


def gpu4(inventory: NodeInventory) -> HealthReport:
    family = inventory.families[0]
    device = next(d for d in family.devices if d.index == 4)
    return next(h for h in family.health if h.device == device.id)


def metrics_of_gpu4(inventory: NodeInventory) -> tuple[list[float], list[tuple[str, str, str]]]:
    """GPU 4's health gauge values and its reason series' (reason, rule, action)."""
    device = gpu4(inventory).device
    series = [s for s in node_series(inventory, "n1") if s.labels.get("device") == device]
    return ([s.value for s in series if s.metric == HEALTH],
            [(s.labels["reason"], s.labels["rule"], s.labels["action"]) for s in series if s.metric == HEALTH_REASON])


def test_xid_94_by_default_as_nvidia_classifies_it_and_by_the_operators_policy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    default = dgx_inventory(None, monkeypatch)
    assert gpu4(default).state == "unhealthy" and [(r.code, r.fatal) for r in gpu4(default).reasons] == [
        ("xid-94", True)]
    assert default.resources["GPU"] == 7  # NVIDIA's device plugin marks the GPU unhealthy: drained
    assert default.families[0].labels["rayaccel.io/count"] == "7"
    assert metrics_of_gpu4(default) == ([3.0], [("xid-94", "plugin", "drain")])
    degrade = dgx_inventory(write(tmp_path, GOOD.replace("action: ignore", "action: degrade"), "degrade.yaml"),
                            monkeypatch)
    assert gpu4(degrade).state == "degraded" and degrade.resources["GPU"] == 8
    assert degrade.families[0].labels["rayaccel.io/count"] == "8"
    assert metrics_of_gpu4(degrade) == ([2.0], [("xid-94", "degrade", "degrade")])
    ignore = dgx_inventory(write(tmp_path, GOOD), monkeypatch)
    assert gpu4(ignore).state == "healthy" and ignore.resources["GPU"] == 8
    assert ignore.families[0].labels["rayaccel.io/count"] == "8"
    assert [(d.code, d.action) for d in ignore.families[0].decisions] == [("xid-94", "ignore")]
    assert metrics_of_gpu4(ignore) == ([0.0], [("xid-94", "ignore", "ignore")])


def test_inspect_shows_the_policy_and_what_it_did(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    env = {**os.environ, POLICY_ENV: ""}
    shown = subprocess.run([*RAYACCEL, "inspect", "--simulate", "nvidia/dgx-h100", "--fault", "xid-94",
                            "--health-policy", str(path), "--json"], capture_output=True, text=True, env=env,
                           timeout=120)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["health_policy"]["file"] == str(path)
    assert [(d["code"], d["action"]) for d in data["health_policy"]["decisions"]] == [("xid-94", "ignore")]
    # Kept schedulable: NVIDIA's classification would drain it (7 GPUs, test above).
    assert data["resources"]["GPU"] == 8 and data["labels"]["rayaccel.io/count"] == "8"
    assert [h["state"] for h in data["health"] if h["device"] == GPU4] == ["healthy"]
    text = subprocess.run([*RAYACCEL, "inspect", "--simulate", "nvidia/dgx-h100", "--fault", "xid-94"],
                          capture_output=True, text=True, env={**env, POLICY_ENV: str(path)}, timeout=120)
    assert text.returncode == 0, text.stderr
    assert f"health policy {path}" in " ".join(text.stdout.split()) and "xid-94" in text.stdout


@pytest.mark.parametrize("command", [["inspect", "--simulate", "nvidia/dgx-h100"],
                                     ["start", "--head", "--simulate", "nvidia/dgx-h100"]])
def test_a_bad_policy_stops_inspect_and_start_with_one_line_and_nothing_started(
        tmp_path: Path, command: list[str]) -> None:
    path = write(tmp_path, GOOD.replace("action: ignore", "action: reboot"))
    ran = subprocess.run([*RAYACCEL, *command, "--health-policy", str(path)], capture_output=True, text=True,
                         timeout=120, env={**os.environ, POLICY_ENV: ""})
    assert ran.returncode == 2 and ran.stdout == ""
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and "'reboot' is not one of" in lines[0] and "Traceback" not in ran.stderr


def test_a_family_with_nothing_left_to_schedule_says_so_in_one_metric(monkeypatch: pytest.MonkeyPatch) -> None:
    from rayaccel.outputs.metric_series import FAMILY_DRAINED
    from rayaccel.ray.monitor import family_status

    inventory = dgx_inventory(None, monkeypatch)
    family = inventory.families[0]
    emptied = family.model_copy(update={"schedulable_units": [], "partition_units": {}})
    for fam, drained in ((family, 0.0), (emptied, 1.0)):
        node = inventory.model_copy(update={"families": [fam]})
        assert [s.value for s in node_series(node, "n1") if s.metric == FAMILY_DRAINED] == [drained]
        assert family_status(fam)["drained"] is bool(drained)


def test_a_bad_policy_named_by_the_environment_says_where_it_came_from(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.yaml"
    ran = subprocess.run([*RAYACCEL, "export", "--format", "nfd", "--simulate", "nvidia/dgx-h100"],
                         capture_output=True, text=True, timeout=120, env={**os.environ, POLICY_ENV: str(missing)})
    assert ran.returncode == 2 and ran.stdout == ""
    assert ran.stderr.strip().splitlines() == [
        f"error: {POLICY_ENV}: health policy file {missing} does not exist (fix the file, or unset {POLICY_ENV})"]


def test_a_fatal_reason_on_a_device_not_unhealthy_is_published_as_degrading_what_the_sdk_does_to_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Held-out round 14's s3: a plugin reporting a degraded device with a fatal reason. The SDK drains only an
    # unhealthy device (the monitor's cordon, the resources), so the metrics and decisions say degrade, not drain.
    default = dgx_inventory(None, monkeypatch)
    family = default.families[0]
    degraded = gpu4(default).model_copy(update={"state": "degraded"})
    assert degraded.reasons[0].fatal and not degraded.drains(degraded.reasons[0])
    health = [degraded if h.device == degraded.device else h for h in family.health]
    as_built = default.model_copy(update={"families": [family.model_copy(update={"health": health})]})
    assert metrics_of_gpu4(as_built)[1] == [("xid-94", "plugin", "degrade")]
    made = HealthDecisions(policy({"nvidia": {"reasons": {"xid-92": {"action": "degrade"}}}})).apply(
        "nvidia", [degraded, gpu4(default)], 0)[1]
    assert [(d.rule, d.action) for d in made] == [("plugin", "degrade"), ("plugin", "drain")]
