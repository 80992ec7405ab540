"""RAC211 (issue 46): a damaged device file read as unknown, at any depth, or reported as a problem, is honest.

Two correct plugins used to fail RAC211 as "silently wrong": one whose partitions' ``memory_mib`` becomes
unknown (with a warning) when the card's memory file is unreadable, and one that drops an optional attribute
and reports a problem naming the file. Both must pass now; the corpus mutant that reads an unreadable size as
0 MiB, reporting nothing, must still be killed with the field named.
"""

from __future__ import annotations

import pytest

from rayaccel import Device, Host, report_problem
from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.perturbations import silent_changes
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS
from rayaccel_testplugins import corpus

all_checks()


class PartitionMemoryUnknown(corpus.Healthy):
    """Two partitions per card, each half the card's memory; unknown (the card's read warned) when it is."""

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        half = card.memory_mib // 2 if card.memory_mib is not None else None
        return Device.model_validate({
            **card.model_dump(), "partition_capacity": {"compute_slices": 2, "memory_slices": 2},
            "partitions": [{"id": f"{card.id}-p{i}", "kind": "compute-partition", "profile": "half",
                            "compute_slices": 1, "memory_slices": 1, "memory_mib": half} for i in range(2)]})


class AttributeDroppedWithProblem(corpus.Healthy):
    """The NUMA node as an attribute too, from its own file; dropped, with a problem naming the file, when
    that file cannot be read (and the board revision defaulted, with the same problem)."""

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        try:
            numa = int(host.read_text(f"{path}/numa_node").strip())
        except (FileNotFoundError, ValueError):
            report_problem("unreadable-attribute", f"{path}/numa_node cannot be read; numa-node left out")
            return card.model_copy(update={"attributes": {"board": "unknown"}})
        return card.model_copy(update={"attributes": {"numa-node": numa, "board": "rev-a"}})


CORRECT = {"c-partition-memory-unknown": PartitionMemoryUnknown,
           "c-attribute-dropped-with-problem": AttributeDroppedWithProblem}
KILLED = "c-memory-unreadable-as-zero"


@pytest.fixture(scope="module")
def graded() -> dict[str, Subject]:
    manager = PluginManager(autoload=False, timeout=5.0)
    plugins = {name: cls(name) for name, cls in CORRECT.items()} | {KILLED: corpus.PLUGINS[KILLED]}
    for name, plugin in plugins.items():
        manager.register(plugin, name)
    subjects = {}
    for name in plugins:
        subject = Subject(name, manager)
        for ref in subject.fixture_paths():
            subject.run(CHECKS["RAC211"], ref)
        subjects[name] = subject
    return subjects


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_unknown_nested_values_and_reported_problems_pass_rac211(graded: dict[str, Subject], name: str) -> None:
    outcomes = [(o.outcome, o.evidence) for o in graded[name].outcomes]
    assert outcomes and all(outcome == "passed" for outcome, _ in outcomes), outcomes
    assert any("missing, empty and garbage" in line for _, evidence in outcomes for line in evidence), outcomes


def test_a_default_taken_as_a_value_unreported_is_still_killed(graded: dict[str, Subject]) -> None:
    outcomes = [(o.outcome, o.evidence) for o in graded[KILLED].outcomes]
    assert outcomes and all(outcome == "failed" for outcome, _ in outcomes), outcomes
    assert any("is kept, wrong: its memory_mib went from 65536 to 0; a problem names it" in line
               for _, evidence in outcomes for line in evidence), outcomes


def test_silent_changes_accepts_unknown_at_any_depth() -> None:
    before = {"memory_mib": 65536, "partitions": [{"id": "p0", "memory_mib": 32768}, {"id": "p1", "memory_mib": 32768}],
              "attributes": {"numa-node": 0, "board": "rev-a"}}
    unknown = {"memory_mib": None, "partitions": [{"id": "p0", "memory_mib": None}, {"id": "p1", "memory_mib": None}],
               "attributes": {"board": "rev-a"}}
    assert silent_changes(before, unknown, garbage=False) == []
    zeroed = {**unknown, "partitions": [{"id": "p0", "memory_mib": None}, {"id": "p1", "memory_mib": 0}]}
    assert silent_changes(before, zeroed, garbage=False) == [("partitions[p1].memory_mib", 32768, 0)]
    renumbered = {**unknown, "attributes": {"numa-node": 1, "board": "rev-a"}}
    assert silent_changes(before, renumbered, garbage=False) == [("attributes.numa-node", 0, 1)]
    assert silent_changes({"product_name": "ACME X1"}, {"product_name": "\u00bf#?"}, garbage=True) == []

