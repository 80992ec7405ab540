"""RAC113 (issue 25): a plugin that reports partitions is checked for the isolation whole devices get.

The reference NVIDIA plugin's MIG fixtures pass it (and RAC107/RAC110 round-trip its MIG ids, the units a
partition-only node offers); the corpus's partition mutants are killed by it, each with its cause named: ids
shared between cards, a MIG-mode-like card also offered whole, partitions larger than their card, partitions of
0 MiB or of their GiB figure stored as MiB (invariant partition-memory-follows-its-slices).
The same mutants are graded with the whole corpus in tests/conformance/test_conformance_corpus.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rayaccel import Device, Host, hookimpl
from rayaccel.plugins.manager import PluginManager, default_manager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS
from rayaccel_testplugins import corpus

all_checks()
PARTITION_MUTANTS = ["c-partition-ids-per-card", "c-partitioned-card-also-whole", "c-partition-memory-is-the-cards",
                     "c-partition-memory-zero", "c-partition-memory-in-gib"]


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


def test_a_partition_memory_off_its_slices_share_says_the_share_and_the_factor(graded: dict[str, Subject]) -> None:
    subject = graded["c-partition-memory-in-gib"]
    for ref in subject.fixture_paths():
        card = subject.devices(subject.inventory(ref))[0]
        (evidence,) = [o.evidence for o in subject.outcomes if o.check_id == "RAC113" and o.fixture == ref]
        share = (card.memory_mib or 0) // 2
        assert any(f"reports {share // 1024} MiB for 1 of the device's 2 memory slices" in line
                   and f"is {share} MiB (x0.000977" in line for line in evidence), evidence


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


# RAC244 on the AMD plugin (issue 46): one compute-partition name, one size across a fleet ------------------------

#: An MI300X node and an MI350X node in the same compute mode, DPX: partitions of 98,296 and 147,456 MiB.
DPX_FLEET = ["amd/mi300x-dpx-amd-smi-25", "amd/mi350x-dpx-nps2-pod"]


class AmdNamedByMode:
    """The AMD plugin as it named compute partitions before issue 46: by the mode alone ('dpx'), as AMD's own
    Kubernetes device plugin does, whatever the product's memory."""

    def __init__(self) -> None:
        from rayaccel_amd import plugin as amd_plugin

        self._amd = amd_plugin
        for name in dir(amd_plugin):
            if name.startswith("rayaccel_") and name != "rayaccel_discover":
                setattr(self, name, getattr(amd_plugin, name))

    @hookimpl
    def rayaccel_fixture_dirs(self) -> list[str]:
        return [str(Path(self._amd.__file__).parent / "fixtures")]  # the AMD plugin's, beside its module

    @hookimpl
    def rayaccel_discover(self, host: Host) -> list[Device]:
        devices = [d.model_dump() for d in self._amd.rayaccel_discover(host)]
        for device in devices:
            for partition in device["partitions"]:
                partition["profile"] = partition["profile"].split(".")[0]
        return [Device.model_validate(d) for d in devices]


def rac244(manager: PluginManager) -> tuple[Subject, str, list[str]]:
    """RAC244 on the DPX fleet alone, as the plugin ``amd`` of ``manager``."""
    subject = Subject("amd", manager, only_fixtures=DPX_FLEET)
    assert sorted(subject.fixture_paths()) == DPX_FLEET
    outcome = subject.run(CHECKS["RAC244"], None)
    return subject, outcome.outcome, outcome.evidence


def test_rac244_passes_an_amd_fleet_of_mi300x_and_mi350x_in_dpx_each_size_named() -> None:
    subject, outcome, evidence = rac244(default_manager())
    assert outcome == "passed", evidence
    # One mode, two sizes, two names: the MI300X's 98,296 MiB and the MI350X's 147,456 MiB partitions.
    assert {ref: {(p.profile, p.memory_mib) for d in subject.devices(subject.inventory(ref)) for p in d.partitions}
            for ref in DPX_FLEET} == {DPX_FLEET[0]: {("dpx.4xcd.96gb", 98296)},
                                       DPX_FLEET[1]: {("dpx.4xcd.144gb", 147456)}}


def test_rac244_fails_the_same_fleet_with_partitions_named_by_their_mode_alone() -> None:
    manager = PluginManager(autoload=False, timeout=5.0)  # under the AMD plugin's name: its fixtures say 'amd'
    assert manager.register(AmdNamedByMode(), "amd"), manager.problems
    _, outcome, evidence = rac244(manager)
    assert outcome == "failed", evidence
    assert any("invariant one-partition-name-one-size, compute-partition 'dpx': 98296 MiB on "
               "amd/mi300x-dpx-amd-smi-25, 147456 MiB on amd/mi350x-dpx-nps2-pod" in line
               for line in evidence), evidence


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.parametrize(("fixture", "resource", "var"), [
    ("nvidia/a100-mig", "GPU_MIG_2g.10gb", "CUDA_VISIBLE_DEVICES"),
    ("amd/mi300x-dpx-amd-smi-26", "GPU_COMPUTE_PARTITION_dpx.4xcd.96gb", "HIP_VISIBLE_DEVICES")])
def test_rac108_runs_a_task_on_a_second_partition_seeing_only_its_own(ray_graded: dict[str, Any], fixture: str,
                                                                       resource: str, var: str) -> None:
    outcome = ray_graded[fixture]
    assert outcome.outcome == "passed", outcome.evidence
    assert any(f"a task asking for 1 {resource} saw {var}=" in line for line in outcome.evidence), outcome.evidence
    # An actor held one partition of the profile and a task beside it got another, each seeing only its own.
    assert any("a task got unit" in line for line in outcome.evidence), outcome.evidence
