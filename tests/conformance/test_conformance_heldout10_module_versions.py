"""Held-out grading, round 10 (issue 46, lane Ya): the driver version is the module's version, not its source
checksum (``invariant a-module-directory-as-the-kernel-writes-it``, RAC261).

The sysfs bake ``s3`` read ``/sys/module/<class>/srcversion``; its fixture, like every recorded one, holds the module's
``version`` alone, so the label went missing and only the fixture's expected label caught it (an expectation is edited
with the code). The kernel writes ``srcversion`` wherever it writes ``version`` (Documentation/ABI/stable/sysfs-module),
so RAC261 adds it and the inventory must stay the same. Two corpus shapes: srcversion read first, and the first file of
a ``*version`` glob; the healthy control passes.
"""

from __future__ import annotations

import pytest
from mutant_grading import evidence, failure, mutant

from rayaccel_conformance.checks.extra_content import srcversion, with_module_checksums
from rayaccel_testplugins import corpus
from rayaccel_testplugins.corpus_module_versions import DriverFromSrcversion, DriverFromVersionGlob

CHECKSUM = srcversion("acme", "3.1.4")


@pytest.mark.parametrize("shape", [DriverFromSrcversion, DriverFromVersionGlob], ids=["srcversion-first", "glob"])
def test_a_driver_version_read_from_the_source_checksum_is_named(shape: type[DriverFromSrcversion]) -> None:
    text = failure(mutant(shape), "RAC261", "acme-4")
    assert "invariant a-module-directory-as-the-kernel-writes-it, " in text, text
    assert "with the kernel's srcversion beside a module's version of file /sys/module/acme/srcversion" in text, text
    assert (f"/sys/module/acme/srcversion holds {CHECKSUM!r}, the checksum of the module's source" in text
            and "a version is read from srcversion, which is no version; read /sys/module/acme/version" in text), text
    assert f"driver_version: 3.1.4 -> {CHECKSUM}" in text, text


def test_a_plugin_reading_the_version_passes() -> None:
    assert "the kernel's srcversion beside a module's version: 1 answers, the same inventory" in evidence(
        mutant(corpus.Healthy), "RAC261", "acme-4")


def test_the_checksum_is_added_only_beside_a_version_that_lacks_one() -> None:
    host = {"files": {"/sys/module/acme/version": "3.1.4\n", "/sys/module/other/version": "1.0\n",
                      "/sys/module/other/srcversion": "0123456789ABCDEF0123456\n", "/sys/module/bare/refcnt": "0\n"}}
    state, changed = with_module_checksums(host)
    assert changed == ["file /sys/module/acme/srcversion"]
    assert state["files"]["/sys/module/acme/srcversion"] == CHECKSUM + "\n" and len(CHECKSUM) == 23
    assert "/sys/module/acme/srcversion" not in host["files"]  # the host given is not changed
