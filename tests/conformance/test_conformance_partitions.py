"""RAC113 (issue 25): a plugin that reports partitions is checked for the isolation whole devices get.

The reference NVIDIA plugin's MIG fixtures pass it (and RAC107/RAC110 round-trip its MIG ids, the units a
partition-only node offers); the corpus's three partition mutants are killed by it, each with its cause
named: ids shared between cards, a MIG-mode-like card also offered whole, partitions larger than their card.
The same mutants are graded with the whole corpus in tests/conformance/test_conformance_corpus.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rayaccel.plugins.manager import PluginManager, default_manager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS
from rayaccel_testplugins import corpus

all_checks()
PARTITION_MUTANTS = ["c-partition-ids-per-card", "c-partitioned-card-also-whole", "c-partition-memory-is-the-cards"]


@pytest.fixture(scope="module")
def graded() -> dict[str, Subject]:
    manager = PluginManager(autoload=False, timeout=5.0)
    for name in ["c-healthy", *PARTITION_MUTANTS]:
        manager.register(corpus.PLUGINS[name], name)
    subjects = {}
    for name in ["c-healthy", *PARTITION_MUTANTS]:
        subject = Subject(name, manager)
        for check_id in ("RAC105", "RAC107", "RAC113"):
            for ref in subject.fixture_paths():
                subject.run(CHECKS[check_id], ref)
        subjects[name] = subject
    return subjects


def outcomes(subject: Subject, check_id: str) -> list[tuple[str, list[str]]]:
    return [(o.outcome, o.evidence) for o in subject.outcomes if o.check_id == check_id]


@pytest.mark.parametrize("name", PARTITION_MUTANTS)
def test_rac113_kills_each_partition_mutant_naming_its_defect(graded: dict[str, Subject], name: str) -> None:
    check_id, fragment = corpus.PLUGINS[name].KILLED_BY  # type: ignore[misc]
    assert check_id == "RAC113"
    found = outcomes(graded[name], "RAC113")
    assert found
    for outcome, evidence in found:  # every fixture of the plugin
        assert outcome == "failed", evidence
        assert any(fragment in line for line in evidence), evidence


def test_shared_partition_ids_are_named_with_the_id(graded: dict[str, Subject]) -> None:
    for _, evidence in outcomes(graded["c-partition-ids-per-card"], "RAC113"):
        assert any("partition id 0, 1" in line for line in evidence), evidence


def test_partitions_larger_than_their_card_say_by_how_much(graded: dict[str, Subject]) -> None:
    subject = graded["c-partition-memory-is-the-cards"]
    for ref in subject.fixture_paths():
        card = subject.devices(subject.inventory(ref))[0]
        (evidence,) = [o.evidence for o in subject.outcomes if o.check_id == "RAC113" and o.fixture == ref]
        assert any(f"take {2 * (card.memory_mib or 0)} MiB, more than the device's {card.memory_mib} MiB" in line
                   for line in evidence), evidence


def test_the_healthy_control_has_no_partitions_so_rac113_is_not_applicable(graded: dict[str, Subject]) -> None:
    found = outcomes(graded["c-healthy"], "RAC113")
    assert found and all(o == "skipped" and e[0].startswith("not applicable: ") for o, e in found)


def test_a_partitioned_card_with_its_own_ids_round_trips_them_through_rac107(graded: dict[str, Subject]) -> None:
    # The oversized mutant's ids are right: RAC107 round-trips them (the partitions are all a card offers).
    found = outcomes(graded["c-partition-memory-is-the-cards"], "RAC107")
    assert found and all(outcome == "passed" for outcome, _ in found), found


@pytest.mark.parametrize("fixture", ["nvidia/a100-mig", "nvidia/h100-mig"])
def test_the_reference_mig_fixtures_pass_rac113_rac107_and_rac110(fixture: str) -> None:
    subject = Subject("nvidia", default_manager())
    for check_id in ("RAC113", "RAC107", "RAC110"):
        outcome = subject.run(CHECKS[check_id], fixture)
        assert outcome.outcome == "passed", (check_id, outcome.evidence)
    (rac113,) = [o for o in subject.outcomes if o.check_id == "RAC113"]
    assert "none offered whole" in rac113.evidence[0]
    assert "round-trip through CUDA_VISIBLE_DEVICES" in rac113.evidence[0]


# -- RAC108 on a real Ray node: a task on a partition other than the first sees only its own ---------------

@pytest.fixture(scope="module")
def ray_graded() -> Iterator[dict[str, Any]]:
    from rayaccel_conformance.harness.raycluster import shared_cluster, shutdown_shared_cluster

    found: dict[str, Any] = {}
    try:
        for plugin, fixture in (("nvidia", "nvidia/a100-mig"), ("amd", "amd/mi300x-dpx-amd-smi-26")):
            # Only this fixture: a plugin's first Ray check starts a node for each fixture the subject grades.
            subject = Subject(plugin, default_manager(), only_fixtures=[fixture])
            found[fixture] = subject.run(CHECKS["RAC108"], fixture)
            if shared_cluster().cluster is not None:
                shared_cluster().release(subject)
    finally:
        shutdown_shared_cluster()
    return found


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.parametrize(("fixture", "resource", "var"), [
    ("nvidia/a100-mig", "GPU_MIG_2g.10gb", "CUDA_VISIBLE_DEVICES"),
    ("amd/mi300x-dpx-amd-smi-26", "GPU_COMPUTE_PARTITION_dpx", "HIP_VISIBLE_DEVICES")])
def test_rac108_runs_a_task_on_a_second_partition_seeing_only_its_own(ray_graded: dict[str, Any], fixture: str,
                                                                       resource: str, var: str) -> None:
    outcome = ray_graded[fixture]
    assert outcome.outcome == "passed", outcome.evidence
    assert any(f"a task asking for 1 {resource} saw {var}=" in line for line in outcome.evidence), outcome.evidence
    # An actor held one partition of the profile and a task beside it got another, each seeing only its own.
    assert any("a task got unit" in line for line in outcome.evidence), outcome.evidence
