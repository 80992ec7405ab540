"""RAC257 (a CPU list as the kernel writes it, read alike in any of its forms) and RAC258 (a device's NUMA node in
the topology): the pure helpers over the forms the kernel and the tools write, and both checks run on corpus
plugins of two shapes each and on the Neuron plugin (neuron-ls states CPU lists as text), with no Ray."""

from __future__ import annotations

import json

import pytest

from rayaccel.plugins.manager import PluginManager
from rayaccel.records import Affinity, Device, FamilyInventory, Topology
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.affinities import (
    canonical_list,
    canonical_problem,
    cpu_set,
    cpu_texts,
    mask_set,
    mask_text,
    mask_words,
    numa_topology_differences,
    other_form,
    rewritten_host,
    with_lone_cpu,
)
from rayaccel_conformance.harness.subject import Subject
from rayaccel_testplugins import corpus, corpus_affinities

CHECKS = {c.id: c for c in all_checks() if c.id in ("RAC257", "RAC258")}


def test_a_cpu_list_in_any_form_the_kernel_parses_is_its_cpus_and_anything_else_none() -> None:
    cpus = {*range(4), *range(8, 12)}
    assert cpu_set("0-3,8-11") == cpu_set("0,1,2,3,8,9,10,11") == cpu_set("0-1,2-3,8,9-11") == cpus
    assert cpu_set("") == frozenset()
    assert [cpu_set(bad) for bad in ("3-1", "0, 1", "0-", "a", "0x3")] == [None] * 5


def test_the_kernel_s_text_joins_runs_and_writes_a_lone_cpu_alone() -> None:
    assert canonical_list(frozenset({9, 0, 1, 2, 3, 5, 8})) == "0-3,5,8-9"
    assert canonical_problem("0-3,5,8-9") is None
    assert "lone CPU is written as a range" in (canonical_problem("0-3,5-5") or "")
    assert "'0-3'" in (canonical_problem("0,1,2,3") or "")
    assert "not a Linux CPU list" in (canonical_problem("0 - 3") or "")


@pytest.mark.parametrize("cpus", [frozenset({0}), frozenset({31, 32}), frozenset({*range(16), *range(32, 48), 200})])
def test_a_mask_of_any_word_count_reads_back_its_cpus(cpus: frozenset[int]) -> None:
    for words in (1, 2, 9):
        text = mask_text(cpus, words)
        assert all(len(word) == 8 for word in text.split(","))
        assert mask_set(text) == cpus
    assert mask_text(frozenset({0, 1, 40}), 1) == "00000100,00000003"


def test_cpu_lists_are_found_where_the_host_states_them_and_written_in_the_other_form() -> None:
    host = {"files": {"/sys/bus/pci/devices/0000:10:00.0/local_cpulist": "0-3,8-11\n",
                      "/sys/bus/pci/devices/0000:10:00.0/local_cpus": "00000f0f\n",
                      "/sys/class/x/x0/temp": "40\n"},
            "libraries": {"lib": {"devices": {"0": {"cpuList": "0,1,2,3"}}}},
            "commands": {"ls --json": {"stdout": json.dumps([{"cpu_affinity": "0-7", "cpu_count": "8"}])}}}
    texts = {t.describe(): t for t in cpu_texts(host)}
    assert set(texts) == {"file /sys/bus/pci/devices/0000:10:00.0/local_cpulist",
                          "file /sys/bus/pci/devices/0000:10:00.0/local_cpus", "library lib devices.0.cpuList",
                          "`ls --json` output 0.cpu_affinity"}  # a count ("8") is no list
    assert [other_form(t) for t in texts.values()] == ["0,1,2,3,8,9,10,11", "00000000,00000f0f", "0-3",
                                                       "0,1,2,3,4,5,6,7"]
    moved = rewritten_host(host, list(texts.values()))
    assert moved["files"]["/sys/bus/pci/devices/0000:10:00.0/local_cpus"] == "00000000,00000f0f\n"
    assert moved["libraries"]["lib"]["devices"]["0"]["cpuList"] == "0-3"
    assert json.loads(moved["commands"]["ls --json"]["stdout"]) == [{"cpu_affinity": "0,1,2,3,4,5,6,7",
                                                                     "cpu_count": "8"}]
    assert {t.cpus for t in cpu_texts(moved)} == {t.cpus for t in texts.values()}


def _family(nodes: list[int | None], affinities: list[Affinity]) -> FamilyInventory:
    devices = [Device(index=i, id=f"D{i}", numa_node=n) for i, n in enumerate(nodes)]
    return FamilyInventory.model_construct(devices=devices, topology=Topology(affinities=affinities))


def test_a_device_node_missing_from_the_topology_or_another_there_is_named() -> None:
    assert numa_topology_differences(_family([0, 1, None, -1], [
        Affinity(device="D0", numa_node=0), Affinity(device="D1", numa_node=1, cpus="0-3"),
        Affinity(device="D3", numa_node=-1)])) == []
    wrong = numa_topology_differences(_family([0, 1, None], [
        Affinity(device="D1", numa_node=0), Affinity(device="D2", numa_node=1)]))
    assert [w.split(":")[0] for w in wrong] == ["invariant device-node-in-the-topology",
                                                "invariant affinity-node-is-the-device-node",
                                                "invariant affinity-node-is-the-device-node"]
    assert "D0 is on NUMA node 0" in wrong[0] and "states NUMA node 0, discovery read 1" in wrong[1]


def _subject(name: str) -> Subject:
    manager = PluginManager(autoload=False)
    assert manager.register(corpus.PLUGINS[name], name), manager.problems
    return Subject(name, manager)


@pytest.mark.parametrize(("plugin", "check_id", "invariant"), [
    ("c-cpus-one-at-a-time", "RAC257", "invariant cpu-list-is-the-kernels-text"),
    ("c-cpu-mask-two-words", "RAC257", "invariant cpu-list-in-any-form"),
    ("c-affinity-node-zero-dropped", "RAC258", "invariant device-node-in-the-topology"),
    ("c-affinity-node-from-pci-bus", "RAC258", "invariant affinity-node-is-the-device-node")])
def test_each_corpus_shape_fails_the_invariant_it_breaks(plugin: str, check_id: str, invariant: str) -> None:
    assert corpus_affinities.__name__ in corpus.MUTANT_MODULES
    subject = _subject(plugin)
    outcomes = [subject.run(CHECKS[check_id], ref) for ref in subject.fixture_paths()]
    failed = [o for o in outcomes if o.outcome == "failed"]
    assert failed and all(invariant in o.evidence[0] for o in failed), [(o.outcome, o.evidence) for o in outcomes]


def test_the_healthy_reader_of_the_cpus_machine_and_the_control_pass() -> None:
    name = "c-cpus-one-at-a-time"  # its machine, read and written right
    manager = PluginManager(autoload=False)
    assert manager.register(corpus_affinities.CpuReader(name), name), manager.problems
    subject = Subject(name, manager)
    outcomes = {(c, ref): subject.run(CHECKS[c], ref) for c in CHECKS for ref in subject.fixture_paths()}
    assert outcomes[("RAC257", f"{name}/acme-4-cpus")].outcome == "passed", outcomes
    assert {o.outcome for o in outcomes.values()} <= {"passed", "skipped"}, outcomes
    control = _subject("c-healthy")
    assert {control.run(CHECKS["RAC258"], ref).outcome for ref in control.fixture_paths()} == {"passed"}


def test_the_neuron_plugin_reads_neuron_ls_cpu_lists_in_any_form() -> None:
    manager = PluginManager(autoload=True)
    subject = Subject("neuron", manager, only_fixtures=["trn2.48xlarge"])
    (ref,) = subject.fixture_paths()
    outcome = subject.run(CHECKS["RAC257"], ref)
    assert outcome.outcome == "passed" and "written in the kernel's other form" in outcome.evidence[0], outcome


def test_a_mask_stated_as_data_is_found_in_its_device_s_entry_and_given_a_lone_cpu() -> None:
    host = {"libraries": {"nvml": {"devices": {"0": {"cpu_affinity": [0xF]}, "1": {"cpu_affinity": [0xF0, 0],
                                                                                      "pci": [1, 2]}}}}}
    (mask,) = mask_words(host, 1)
    assert mask.describe() == "library nvml devices.1.cpu_affinity" and mask.cpus == {4, 5, 6, 7}
    words, cpus = with_lone_cpu(mask)
    assert words == [0xF0 | 1 << 9, 0] and canonical_list(cpus) == "4-7,9"
    full = mask_words({"libraries": {"l": {"devices": {"0": {"cpuSet": [2**64 - 1]}}}}}, 0)[0]
    words, cpus = with_lone_cpu(full)  # past the last word: a word more
    assert words == [2**64 - 1, 2] and canonical_list(cpus) == "0-63,65"


def test_nvidia_s_mask_given_a_lone_cpu_is_followed_in_the_kernel_s_text() -> None:
    subject = Subject("nvidia", PluginManager(autoload=True), only_fixtures=["l4-single"])
    (ref,) = subject.fixture_paths()
    outcome = subject.run(CHECKS["RAC257"], ref)
    assert outcome.outcome == "passed" and "given a lone CPU 5: its cpus followed ('0-3,5')" in outcome.evidence[0]
