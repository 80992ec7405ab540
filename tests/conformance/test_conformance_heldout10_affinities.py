"""Held-out grading, round 10 (issue 46, lane F2): an affinity right only where the machine agrees with a shortcut.

``l2`` (a python-library bake) computed each device's NUMA node in the topology from its position, the first half on
socket 0: every fixture has nodes 0, 0, 1, 1, so RAC258 saw the node discovery read. ``e1`` (a Neuron wrapper) cut
neuron-ls's cpu_affinity to its first range ("0-47,96-143" -> "0-47"): still a CPU list in the kernel's text. RAC245
now asks the topology to follow a node moved where the host states it (``invariant affinity-node-follows-the-host``),
RAC257 every stated CPU list given a lone CPU past all of them to be read whole (``invariant cpu-list-read-whole``);
two corpus shapes each, and the readers of the same machines pass.
"""

from __future__ import annotations

import pytest
from mutant_grading import evidence, failure, mutant

from rayaccel_testplugins import corpus, corpus_affinities
from rayaccel_testplugins.corpus_whole_affinities import (
    AffinityNodeFromBoard,
    AffinityNodeFromPosition,
    CpuMaskLowestWord,
    CpusFirstRange,
    first_run,
)


def test_a_first_run_stops_at_the_first_gap() -> None:
    assert first_run([0, 1, 2, 8, 9]) == [0, 1, 2]
    assert first_run([]) == []


@pytest.mark.parametrize(("cls", "check_id", "machine", "fragment"), [
    (CpusFirstRange, "RAC257", "acme-4-cpus", "'s cpus are '0-15' (were '0-15'), not the whole of its file "
     "/sys/bus/pci/devices/"),
    (CpuMaskLowestWord, "RAC257", "acme-4-cpus", "'s cpus are '0-15' (were '0-15'), not the whole of its file "
     "/sys/bus/pci/devices/"),
    (AffinityNodeFromPosition, "RAC245", "acme-4", "'s affinity states NUMA node 1, discovery read 0 (the "
     "topology did not follow the node the host now states)"),
    (AffinityNodeFromBoard, "RAC245", "acme-4", "'s affinity states NUMA node 0, discovery read 1 (the topology "
     "did not follow the node the host now states)")],
    ids=["list-first-range", "mask-lowest-word", "node-from-position", "node-from-board"])
def test_an_affinity_that_does_not_follow_the_machine_fails_naming_the_invariant(
        cls: type[corpus.Healthy], check_id: str, machine: str, fragment: str) -> None:
    plugin = mutant(cls)
    said = failure(plugin, check_id, machine)
    assert f"invariant {cls.KILLED_BY[1].removeprefix('invariant ')}" in said, said  # type: ignore[index]
    assert f"{plugin.name}/{machine}" in said and fragment in said, said


def test_the_readers_of_the_same_machines_follow_it() -> None:
    name = mutant(CpusFirstRange).name  # its machine, read whole
    said = evidence(corpus_affinities.CpuReader(name), "RAC257", "acme-4-cpus")
    assert "affinities' CPUs given a lone CPU more where the host states them: each followed, whole" in said, said
    said = evidence(corpus.PLUGINS["c-healthy"], "RAC245", "acme-4")
    assert "its numa_node followed" in said, said
