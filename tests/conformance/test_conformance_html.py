"""The conformance report's HTML view: the tier ladder and why not higher, each failed check with its fix and
the node picture of its fixture, escaped evidence. (A real ``pytest --conformance`` run writing the page and
the node pictures is tests/conformance/test_conformance_broken.py's.)"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.report.document import seal
from rayaccel_conformance.report.html_view import render_html

SCRIPT = "<script>alert(1)</script>"


def failing_report() -> Any:
    checks = [{"id": c.id, "tier": c.tier, "title": c.title, "plugin": "acme", "fixture": "acme/acme-4",
               "outcome": "failed" if c.id == "RAC202" else "passed",
               "evidence": [f"acme/acme-4: link to {SCRIPT}"] if c.id == "RAC202" else ["ok"], "duration_s": 0.1,
               "docs": c.docs_url} for c in all_checks()]
    return seal({"schema": "rayaccel-conformance-report/2", "created": "2026-01-01T00:00:00+00:00",
                 "versions": {"sdk": "0.1.0", "spec": "1.0", "ray": "2.60.0", "python": "3.11", "platform": "linux"},
                 "hardware": "simulated", "tier_limit": None, "complete": True, "incomplete_reason": None,
                 "checks": checks, "plugins": [{"name": "acme", "fixtures": ["acme/acme-4"], "tier": "experimental",
                                                "tier_reason": "supported not reached: RAC202 failed",
                                                "passed": len(checks) - 1, "failed": 1, "skipped": 0}]})


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[tuple[str, str]] = []  # (class, href)
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        found = dict(attrs)
        if tag == "a":
            self.links.append((found.get("class") or "", found.get("href") or ""))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_the_page_shows_the_tier_ladder_each_failure_with_its_fix_and_the_node_picture():
    page = render_html(failing_report(), {"acme/acme-4": "conformance-report.nodes/acme-acme-4.html"})
    parsed = Page()
    parsed.feed(page)
    text = "".join(parsed.text)
    assert "supported not reached: RAC202 failed" in text
    assert page.count('class="reached"') == 1 and page.count('class="missed"') == 1  # experimental held
    assert "Failed checks (1)" in text and "How to fix it" in text
    help_text = next(c.help for c in all_checks() if c.id == "RAC202").strip()
    assert help_text.splitlines()[0] in text  # the check's help is the fix
    pictures = [href for css, href in parsed.links if css == "node-picture"]
    assert pictures == ["conformance-report.nodes/acme-acme-4.html"] * 2  # in the plugin row and the failure
    assert ("", "docs/conformance.md#rac202") in parsed.links


def test_evidence_and_plugin_strings_are_escaped():
    page = render_html(failing_report())
    parsed = Page()
    parsed.feed(page)
    assert "script" not in parsed.tags and SCRIPT in "".join(parsed.text)
    assert 'class="node-picture"' not in page  # no pictures given: no dead links
