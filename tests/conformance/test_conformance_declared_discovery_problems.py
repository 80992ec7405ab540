"""A discovery problem the fixture declares is the machine's state, not discovery failing (lane K5 noticed, s59).

A fixture's ``expected.problems`` names the warnings a healthy build of its machine legitimately reports (a fallback
the machine forces: AMD's ``fallback-device-id`` where compute partitions share the card's uuid). A check that
rebuilds the machine with a reading perturbed, and takes any discovery warning of that build for discovery failing,
fails a correct plugin on such a machine (RAC267's link-follows-its-reading raised "a consequence of discovery
failing" for it). ``Subject.discovery_failed`` leaves the declared codes out; an undeclared warning still stops it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from mutant_grading import replaced

from rayaccel import Device, Host, hookimpl, report_problem
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import acme

FALLBACK = "acme-serial-from-bus-id"


@hookimpl
def _discover_with_a_fallback(host: Host) -> list[Device]:
    devices: list[Device] = acme.rayaccel_discover(host)
    if devices:  # the machine forces a fallback on every build: said as a warning, the devices all there
        report_problem(FALLBACK, "the cards print no serial: serials derived from their bus ids")
    return devices


def _acme(tmp_path: Path, declared: bool) -> Any:
    machine = yaml.safe_load((Path(acme.__file__).parent / "acme_fixtures" / "acme-4.yaml").read_text())
    if declared:
        machine["expected"]["problems"] = [FALLBACK]
    (tmp_path / "acme-4.yaml").write_text(yaml.safe_dump(machine))
    all_checks()
    return replaced(acme, "acme", rayaccel_discover=_discover_with_a_fallback,
                    rayaccel_fixture_dirs=hookimpl(lambda: [str(tmp_path)]))


def test_a_declared_discovery_warning_leaves_link_follows_its_reading_to_the_links(tmp_path: Path) -> None:
    subject = _acme(tmp_path, declared=True)  # first: it registers the checks that CHECKS holds
    said = str(CHECKS["RAC267"].function(subject, "acme/acme-4"))
    assert "consequence of discovery failing" not in said, said


def test_an_undeclared_discovery_warning_is_still_quoted_as_the_cause(tmp_path: Path) -> None:
    subject = _acme(tmp_path, declared=False)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC267"].function(subject, "acme/acme-4")
    said = str(failed.value)
    assert "a consequence of discovery failing in this build" in said and "serials derived from" in said, said
