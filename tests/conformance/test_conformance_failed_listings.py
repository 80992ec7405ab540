"""A vendor interface that cannot answer, and a version read once (issue 46, held-out round 7: a failing listing
taken for every device lost, a library that raises taken for no devices, a driver version cached for the process).

RAC204 polls health with the devices discovered before on every state whose tool or library fails
(``a-failed-listing-loses-nothing``) and asks for a problem wherever such a failure loses devices
(``a-failed-interface-is-reported``); RAC269 builds each fixture again with its versions one release on, then as
recorded (``a-new-version-is-read``). Each invariant on its corpus mutants of two shapes, graded alone, and on the
plugins that keep it.
"""

from __future__ import annotations

import pytest

from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.first_build import next_release
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import corpus, corpus_failed_listings, corpus_first_build

LISTING_MUTANTS = ("c-status-failure-as-all-lost", "c-library-error-as-all-lost", "c-library-error-as-no-cards",
                   "c-tool-failure-as-no-driver")
VERSION_MUTANTS = ("c-tool-version-read-once", "c-library-version-read-once")


def said_by(evidence: str | list[str]) -> str:
    return evidence if isinstance(evidence, str) else "\n".join(evidence)


def corpus_subject(name: str) -> Subject:
    all_checks()
    assert corpus_failed_listings.ACME_LIB and corpus_first_build.ToolVersionReadOnce  # their mutants registered
    manager = PluginManager(autoload=False, timeout=5.0)
    manager.register(corpus.PLUGINS[name], name)
    return Subject(name, manager)


@pytest.mark.parametrize("name", LISTING_MUTANTS)
def test_a_failed_tool_or_library_taken_for_an_answer_fails_rac204_naming_the_invariant(name: str) -> None:
    plugin, subject = corpus.PLUGINS[name], corpus_subject(name)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC204"].function(subject, f"{name}/acme-4")
    said = str(failed.value)
    assert plugin.KILLED_BY is not None and plugin.KILLED_BY[1] in said, said
    scenario = "every library raises" if "library" in name else "every command fails"
    assert f"{plugin.KILLED_BY[1]}, {scenario}: " in said, said


def test_the_control_keeps_its_cards_and_their_health_when_its_tool_fails() -> None:
    subject = corpus_subject("c-healthy")
    said = said_by(CHECKS["RAC204"].function(subject, "c-healthy/acme-4"))
    assert "every command fails: 4 devices, 0 problems" in said, said


def test_gaudi_s_health_while_hl_smi_prints_only_garbage_is_unknown_not_every_module_lost() -> None:
    # hl-smi's garbage read as a listing without one module made all eight device-lost before.
    all_checks()
    said = said_by(CHECKS["RAC204"].function(Subject("gaudi", PluginManager()), "gaudi/hls-gaudi2"))
    assert "every command prints garbage: zero devices" in said, said


def test_a_version_moves_one_release_on_in_the_vendor_s_own_format() -> None:
    assert [next_release(v) for v in ("550.54.15", "535.104.05", "1.0.9", "2.19.64.0")] == [
        "550.54.16", "535.104.06", "1.0.10", "2.19.64.1"]


@pytest.mark.parametrize("name", VERSION_MUTANTS)
def test_a_version_read_once_per_process_fails_rac269_naming_the_invariant(name: str) -> None:
    subject = corpus_subject(name)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC269"].function(subject, f"{name}/acme-4")
    said = str(failed.value)
    assert "invariant a-new-version-is-read, " in said and "reports driver_version '3.1.4', the host states " \
           "'3.1.5' (a fresh process building this host first reads it)" in said, said


def test_the_control_reads_each_version_it_is_shown() -> None:
    subject = corpus_subject("c-healthy")
    said = said_by(CHECKS["RAC269"].function(subject, "c-healthy/acme-4"))
    assert "versions 3.1.4 -> 3.1.5 and back" in said, said
