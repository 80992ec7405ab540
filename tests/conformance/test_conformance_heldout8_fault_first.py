"""Held-out grading, round 8 (issue 46, lane H4): the untaken path its survivor s1 needed.

A fault counter read relative to the process's first read (a sysfs bake: fatal errors since the first look, kept in
a module global): the suite builds every fault after a healthy build of the same machine in the same process, so a
count from the first read looks right. RAC269's ``a-fault-built-first-is-seen`` builds the fixture's first fault
that takes a device off healthy as a fresh process's first build: each device's health must be the suite's
(c-fatal-counted-from-first-read: a driver file's count, module global; c-library-fatal-from-first-read: a counter
library's count, kept by the plugin).
"""

from __future__ import annotations

from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant

from rayaccel_testplugins import corpus
from rayaccel_testplugins.corpus_first_build import FatalCountedFromFirstRead, LibraryFatalFromFirstRead


@pytest.mark.parametrize(("cls", "machine"), [(FatalCountedFromFirstRead, "acme-4"),
                                              (LibraryFatalFromFirstRead, "acme-4-errlib")],
                         ids=["driver-file-module-global", "library-kept-by-plugin"])
def test_a_fault_counted_from_the_first_read_fails_rac269_naming_the_invariant(cls: type[Any], machine: str) -> None:
    plugin = mutant(cls)
    said = failure(plugin, "RAC269", machine)
    assert (f"invariant a-fault-built-first-is-seen, {plugin.name}/{machine} under fault fatal-2: "
            "ACME-0002-5e1f-4c2a-9d3b-000000000002 is healthy in a fresh process whose first build is the faulted "
            "host, unhealthy in the suite's process after a healthy build (the fault expects unhealthy)") in said, said


def test_the_healthy_control_passes_rac269_with_its_fault_built_first() -> None:
    said = evidence(corpus.PLUGINS["c-healthy"], "RAC269", "acme-4")
    assert "and fault fatal-2 as a fresh process's first build: nothing kept" in said, said
