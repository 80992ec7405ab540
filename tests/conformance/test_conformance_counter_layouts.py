"""Held-out grading, round 9 (issue 46, lane Y): a counter read in one driver layout only names the layout.

The Neuron wrapper ``e2`` read its sysfs counters only as files: on the trn2u UltraServer fixture, whose driver
publishes ``mem_ecc_uncorrected/total``, every device lost its ECC counts, which RAC206 called "read by a key that
finds a device on one node only" (a guess) and RAC255 named without a cause. :func:`metric_coverage.
layout_difference` compares the two machines' files: the metric's file on one is a directory holding the counter
on the other.
"""

from __future__ import annotations

import pytest
from mutant_grading import graded, mutant

from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks.metric_coverage import files_become_directories, layout_difference
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus_counter_layouts import MACHINE, CounterEitherLayout, CounterFileOnly


def test_a_counter_read_as_a_file_only_names_the_directory_layout() -> None:
    """Another shape than e2's: ACME's power counter, a file on acme-4 and power_mw/total on acme-4-dirs."""
    plugin = mutant(CounterFileOnly)
    subject = graded(plugin)
    with pytest.raises(CheckFailed) as failed:  # RAC255 compares the plugin's fixtures: no fixture argument
        CHECKS["RAC255"].function(subject)
    said = str(failed.value)
    assert (f"power is read on {plugin.name}/acme-4 from the file /sys/class/acme/acme0/power_mw; on "
            f"{plugin.name}/{MACHINE} power_mw is a directory holding the counter (/sys/class/acme/acme0/power_mw/"
            "total), the driver's other layout of it, which the plugin does not read") in said, said


def test_the_reader_of_both_layouts_has_no_layout_to_name() -> None:
    right = CounterEitherLayout("c-counter-either-layout")
    subject = Subject(right.name, PluginManager(autoload=False))
    subject.manager.register(right, right.name)
    fam = subject.inventory(f"{right.name}/{MACHINE}").family(right.name)
    assert fam is not None and {s.name for s in fam.metrics} >= {"power"}


def test_neuron_ultraserver_counters_name_the_total_directory() -> None:
    subject = Subject("neuron", PluginManager(autoload=True))
    here, there = (subject.fixture(f"neuron/{name}") for name in ("trn2u.48xlarge-ultraserver-x2", "trn2.48xlarge"))
    said = layout_difference(here, there, ["ecc_errors_uncorrected"]) or ""
    assert ("on neuron/trn2u.48xlarge-ultraserver-x2 mem_ecc_uncorrected is a directory holding the counter "
            "(/sys/class/neuron_device/neuron0/stats/hardware/mem_ecc_uncorrected/total)") in said, said
    assert layout_difference(there, subject.fixture("neuron/trn1.32xlarge"), ["ecc_errors_uncorrected"]) is None


def test_rac105_names_the_names_a_machine_publishes_as_directories() -> None:
    """RAC105, where e2's health goes unknown, names every counter the UltraServer's driver nests: each a file on
    another fixture of the plugin, a directory holding ``total`` here."""
    subject = Subject("neuron", PluginManager(autoload=True))
    here = subject.fixture("neuron/trn2u.48xlarge-ultraserver-x2")
    moved = files_become_directories(here, subject.fixture("neuron/inf2.48xlarge"))
    assert [name for name, _, _ in moved] == ["mem_ecc_repairable_uncorrected", "mem_ecc_uncorrected",
                                              "sram_ecc_uncorrected"], moved
    assert moved[1][2] == "/sys/class/neuron_device/neuron0/stats/hardware/mem_ecc_uncorrected/total", moved
    assert files_become_directories(subject.fixture("neuron/trn2.48xlarge"), subject.fixture("neuron/trn1.32xlarge")) \
        == []
