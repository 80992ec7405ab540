"""Distributed and recovery checks (issue 45), and the baseline a plugin declares, in ONE real ``pytest
--conformance`` run (one shared Ray cluster, one fixture per plugin):

- RAC311: the corpus plugin ``c-transport-leaks-dead-peer`` (``corpus_leaky_buffers``) moves tensors between two
  nodes (two simulated hosts of acme-4), leaves its killed sender's file in /dev/shm and fails, naming it; the
  corpus plugin ``c-shm-declared-cluster-wide`` (``corpus_shm_cluster_wide``: the SDK's shared-memory transport
  declared without ``reach="node"``) fails at its first receive, naming the step ("recv: same node"); the
  reference plugins' transports need their devices, so it is skipped for them, as RAC301.
- RAC312: a fatal fault written to each node's fault file is cordoned by the node's health monitor, Ray offers
  fewer units, and everything comes back once the file is emptied: the five reference plugins pass.
- RAC310 (for ``c-declares-baseline`` alone: ``corpus_declared_baseline``): the node start is a figure, and
  the plugin's declared baseline, with one figure out of reach, fails RAC310 naming that figure.

``acme_wired`` passing RAC311 (its ``ACME_FILE`` between two nodes, a sender killed mid-transfer, the file freed)
and RAC312 is read from the registry's release 1.0 run (test_conformance_registry.py: release 1.0 is
``acme_wired``), which grades both anyway.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from test_conformance_attestation import conformance, env_for

from rayaccel_testplugins import corpus_leaky_buffers

TESTS_DIR = Path(__file__).parents[1]  # tests/, where the test plugins are
REFERENCE = {"amd": "mi210-pair", "gaudi": "hls-gaudi2", "neuron": "trn1.32xlarge", "nvidia": "dgx-h100",
             "tpu": "tpu7x-8"}
LEAKY = "c-transport-leaks-dead-peer"
DECLARED = "c-declares-baseline"
CLUSTER_WIDE = "c-shm-declared-cluster-wide"
PLUGINS = (f"{LEAKY}=rayaccel_testplugins.corpus_leaky_buffers:plugin,"
           f"{DECLARED}=rayaccel_testplugins.corpus_declared_baseline:plugin,"
           f"{CLUSTER_WIDE}=rayaccel_testplugins.corpus_shm_cluster_wide:plugin")

NO_TRANSPORTS = "not applicable: the plugin declares no tensor transports"
#: How long the run waits for a killed sender's buffers to go (--conformance-release-timeout): the leaky transport
#: never frees them, so it fails whatever the wait, and nothing in this run passes RAC311 (acme_wired's pass is
#: shown in the registry's run, at the default 30 s).
RELEASE_TIMEOUT_S = 3

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _leaked() -> set[str]:
    return set(corpus_leaky_buffers.files())


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    run = tmp_path_factory.mktemp("recovery")
    env = env_for(TESTS_DIR, plugins=PLUGINS)
    del env["RAYACCEL_NO_AUTOLOAD"]  # the reference plugins load by their entry points
    names = [LEAKY, DECLARED, CLUSTER_WIDE, *REFERENCE]
    fixtures = ["acme-4", *(f"{plugin}/{fixture}" for plugin, fixture in REFERENCE.items())]
    leaked_before = _leaked()
    try:
        proc = conformance(run, env, *(a for n in names for a in ("--conformance-plugin", n)),
                           *(a for f in fixtures for a in ("--conformance-fixture", f)),
                           "-k", "RAC311 or (RAC312 and not cluster-wide) or (RAC310 and declares)",
                           "--conformance-release-timeout", str(RELEASE_TIMEOUT_S),
                           "--conformance-report", "report.json", timeout=900)
    finally:
        for path in _leaked() - leaked_before:  # what the leaky transport's killed senders left: this test's doing
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    report = run / "report.json"
    assert report.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(report.read_text())
    return {"data": data, "out": proc.stdout, "checks": {(c["id"], c["plugin"]): c for c in data["checks"]}}


def outcome(graded: dict[str, Any], check_id: str, plugin: str) -> tuple[str, str]:
    found = graded["checks"][(check_id, plugin)]
    return found["outcome"], "\n".join(found["evidence"])


def test_a_transport_that_leaks_a_dead_peers_buffers_fails_rac311_naming_the_file(graded: dict[str, Any]) -> None:
    result, evidence = outcome(graded, "RAC311", LEAKY)
    assert result == "failed", evidence
    assert ("ACME_LEAKY_FILE: RuntimeError: the killed sender's buffers are still on the machine "
            f"{RELEASE_TIMEOUT_S} s after") in evidence
    assert f"/dev/shm/{corpus_leaky_buffers.FILE_PREFIX}" in evidence


def test_a_node_only_transport_declared_for_the_cluster_fails_rac311_naming_the_step(graded: dict[str, Any]) -> None:
    result, evidence = outcome(graded, "RAC311", CLUSTER_WIDE)
    assert result == "failed", evidence
    assert evidence.startswith("ACME_SHM: TransportError: ACME_SHM transfer failed at step 'recv: same node'"), evidence


def test_rac311_finds_a_transport_declared_node_only_not_applicable_before_starting_ray() -> None:
    """Declared reach="node" (the template's transport as its docstring shows it), RAC311 has nothing to run:
    not applicable, with the reason, before any node is asked for; RAC301 runs it on one node (tests/template)."""
    from rayaccel import TransportSpec
    from rayaccel_conformance.checks.recovery import distributed_transports
    from rayaccel_conformance.registry import NotApplicable
    from rayaccel_testplugins import corpus, corpus_shm_cluster_wide

    class NodeOnly(corpus.Healthy):
        def rayaccel_transports(self) -> list[TransportSpec]:
            return [spec.model_copy(update={"reach": "node"})
                    for spec in corpus_shm_cluster_wide.plugin.rayaccel_transports()]

    with pytest.raises(NotApplicable) as skipped:
        distributed_transports(_subject(NodeOnly("c-node-only")))
    assert str(skipped.value) == ("not applicable: declared node-only: ACME_SHM moves tensors within one node only; "
                                  "RAC301 runs it on one node")


def test_every_reference_plugin_recovers_a_fault_through_its_nodes_monitor(graded: dict[str, Any]) -> None:
    for plugin, fixture in REFERENCE.items():
        result, evidence = outcome(graded, "RAC312", plugin)
        assert result == "passed", (plugin, evidence)
        assert evidence.startswith(f"{plugin}/{fixture}: monitor up and polling in "), evidence
        assert "cordoned" in evidence and "recovered in" in evidence and "a task asking for 1 " in evidence
    for plugin in REFERENCE:  # device tensors, or NIXL's package missing (Gaudi declares none): skipped, as RAC301
        result, evidence = outcome(graded, "RAC311", plugin)
        assert result == "skipped", (plugin, evidence)
        assert " not run here: " in evidence or evidence == NO_TRANSPORTS, (plugin, evidence)


def test_rac310_records_the_node_start_and_holds_a_plugin_to_its_declared_baseline(graded: dict[str, Any]) -> None:
    figures = {(f["plugin"], f["name"]): f for f in graded["data"]["figures"]}
    assert {plugin for plugin, _ in figures} == {DECLARED}  # the only plugin whose RAC310 this run selects
    start = figures[(DECLARED, "node start")]
    assert start["unit"] == "ms" and 0 < start["value"] < 600_000 and start["check"] == "RAC310", start
    assert start["baseline"] == 600_000 and not start["regressed"]
    result, evidence = outcome(graded, "RAC310", DECLARED)
    assert result == "failed", evidence
    lines = evidence.splitlines()
    assert [line.split(":")[0] for line in lines if "regressed" in line] == [
        "transport RAYACCEL_SHM bandwidth regressed"], evidence
    assert "held to the plugin's declared baseline for simulated hardware (tolerance 10%)" in evidence
    held = figures[(DECLARED, "transport RAYACCEL_SHM bandwidth")]
    assert held["baseline"] == 1e9 and held["regressed"]


class _Declaring:
    """ACME with a baseline declaration given by the test."""

    def __init__(self, *baselines: object) -> None:
        from rayaccel_testplugins import acme

        self.baselines = list(baselines)
        for hook in ("rayaccel_family", "rayaccel_discover", "rayaccel_fixture_dirs"):
            setattr(self, hook, getattr(acme, hook))

    def rayaccel_performance_baseline(self) -> list[object]:
        return self.baselines


def _subject(plugin: object, hardware: str = "simulated") -> Any:
    from rayaccel.plugins.manager import PluginManager
    from rayaccel_conformance.harness.subject import Subject

    manager = PluginManager(autoload=False)
    assert manager.register(plugin, "acme")
    return Subject("acme", manager, hardware)  # type: ignore[arg-type]


def test_a_declared_baseline_is_chosen_by_hardware_and_a_malformed_one_fails_naming_the_hook() -> None:
    from rayaccel import PerformanceBaseline
    from rayaccel_conformance.checks.performance import declared_baseline
    from rayaccel_conformance.registry import CheckFailed

    simulated = PerformanceBaseline(hardware="simulated", figures={"node start": 9000.0}, tolerance_percent=20)
    real = PerformanceBaseline(hardware="real", figures={"transport ACME_FILE bandwidth": 5000.0})
    chosen = declared_baseline(_subject(_Declaring(simulated, real), "real"))
    assert chosen is not None and chosen.values == {"acme": {"transport ACME_FILE bandwidth": 5000.0}}
    assert chosen.tolerance == 0.5 and chosen.source == "the plugin's declared baseline for real hardware"
    assert declared_baseline(_subject(_Declaring(real))) is None  # nothing declared for simulated runs
    for bad, said in (({"hardware": "simulated", "figures": {"node start": -1.0}}, "figures/node start"),
                      ({"hardware": "simulated", "figures": {}}, "figures"),
                      ({"hardware": "lab", "figures": {"node start": 1.0}}, "hardware")):
        with pytest.raises(CheckFailed) as failed:
            declared_baseline(_subject(_Declaring(bad)))
        assert "rayaccel_performance_baseline" in str(failed.value) and said in str(failed.value), failed.value
    with pytest.raises(CheckFailed, match="declares 2 baselines for simulated hardware"):
        declared_baseline(_subject(_Declaring(simulated, simulated)))
