"""``rayaccel certify verify`` without ``--key`` still checks that a report adds up (issue 39: a report whose
counts disagree with its checks, whose every check is duplicated, or with an orphaned plugin record verified),
and a report's strings reach the terminal escaped."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_conformance_report import report_content

from rayaccel_conformance.report.document import ReportError, load_report, seal, write_json

RAYACCEL = str(Path(sys.executable).parent / "rayaccel")


def certify(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RAYACCEL, "certify", *args], capture_output=True, text=True, timeout=120, check=False)


def _counts_off(content: dict[str, Any]) -> None:
    content["plugins"][0]["passed"] += 3


def _every_check_twice(content: dict[str, Any]) -> None:
    content["checks"] = content["checks"] + copy.deepcopy(content["checks"])
    for key in ("passed", "failed", "skipped"):
        content["plugins"][0][key] *= 2  # counts that agree with the doubled checks: still refused


def _orphaned_plugin_record(content: dict[str, Any]) -> None:
    content["plugins"].append({"name": "ghost", "fixtures": [], "tier": None, "tier_reason": "r", "passed": 0,
                               "failed": 0, "skipped": 0})


def _check_of_an_unlisted_plugin(content: dict[str, Any]) -> None:
    content["checks"].append(dict(content["checks"][0], plugin="ghost"))


def _two_records_of_one_plugin(content: dict[str, Any]) -> None:
    content["plugins"].append(copy.deepcopy(content["plugins"][0]))


BROKEN: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "counts": (_counts_off, "counts passed/failed/skipped"),
    "duplicated": (_every_check_twice, "is recorded 2 times"),
    "orphaned-record": (_orphaned_plugin_record, "has a record but no check"),
    "orphaned-check": (_check_of_an_unlisted_plugin, "has no plugin record"),
    "two-records": (_two_records_of_one_plugin, "has 2 plugin records"),
}


def broken_report(tmp_path: Path, case: str) -> Path:
    content = report_content()
    BROKEN[case][0](content)
    path = tmp_path / "r.json"
    write_json(seal(content), path)  # a fresh digest: integrity is not consistency
    return path


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_self_assessed_report_that_does_not_add_up_does_not_load(tmp_path: Path, case: str) -> None:
    with pytest.raises(ReportError, match=re.escape(BROKEN[case][1])) as refused:
        load_report(broken_report(tmp_path, case))
    assert "\n" not in str(refused.value)


def test_certify_verify_without_a_key_refuses_it_in_one_line(tmp_path: Path) -> None:
    done = certify("verify", str(broken_report(tmp_path, "duplicated")))
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert done.stderr.count("\n") == 1 and "is recorded 2 times" in done.stderr, done.stderr


def test_a_key_id_with_terminal_escapes_prints_escaped(tmp_path: Path) -> None:
    content = report_content()
    content["attestation"] = {"payload": "e30=", "payloadType": "application/vnd.in-toto+json",
                              "signatures": [{"keyid": "\x1b[2J\x1b[31mevil\u2028line", "sig": "c2ln"}]}
    path = tmp_path / "r.json"
    write_json(seal(content), path)
    done = certify("summary", str(path))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\u2028" not in done.stdout
    assert "\\x1b[31mevil" in done.stdout


@pytest.mark.parametrize("link", ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "java\tscript:alert(1)",
                                  "data:text/html,<script>alert(1)</script>", "file:///etc/shadow",
                                  " javascript:alert(1)", "vbscript:msgbox(1)"])
def test_a_check_link_with_another_scheme_goes_nowhere(link: str) -> None:
    from rayaccel_conformance.report.html_view import render_html

    content = report_content(outcome="failed")
    content["checks"][0]["docs"] = link
    content["checks"][-1]["docs"] = link  # RAC303: failed, so also in the failures section
    page = render_html(seal(content))
    assert "script:" not in page.lower().replace("<script", "") and "data:text" not in page and "file:" not in page
    assert 'href="#"' in page


@pytest.mark.parametrize("link", ["docs/conformance.md#rac101", "https://example.com/docs#rac101"])
def test_web_and_relative_check_links_are_kept(link: str) -> None:
    from rayaccel_conformance.report.html_view import render_html

    content = report_content()
    content["checks"][0]["docs"] = link
    assert f'href="{link}"' in render_html(seal(content))
