"""The conformance report as a page for people: each plugin's tier on the tier ladder and why it is not
higher, every failed check with its fix (the check's help, the docs anchor), links to each fixture's node
picture (``rayaccel inspect --html``, written beside the report), then every check.

One self-contained file: no script, no stylesheet fetched; every string from a plugin or a check's evidence
is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from urllib.parse import urlsplit

from rayaccel_conformance.registry import TIERS
from rayaccel_conformance.report.document import CheckRecord, ConformanceReport, standing

STYLE = """body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;margin:2em;color:#202124;max-width:1400px}
table{border-collapse:collapse;margin-bottom:2em}td,th{border:1px solid #dadce0;padding:4px 8px;text-align:left;
vertical-align:top}th{background:#f8f9fa}.passed{color:#1e8e3e}.failed,.error{color:#c5221f;font-weight:bold}
.skipped{color:#5f6368}code,pre{font-size:90%}pre{white-space:pre-wrap;margin:0}
.ladder span{display:inline-block;padding:2px 10px;margin-right:4px;border-radius:10px;background:#f1f3f4;
color:#5f6368}.ladder span.reached{background:#1e8e3e;color:#fff}.ladder span.missed{border:2px dashed #c5221f}
.fail{border-left:5px solid #c5221f;padding:6px 12px;margin-bottom:1em;background:#fce8e6}
.fail h3{margin:0 0 4px 0;font-size:1.05em}.incomplete{color:#c5221f;font-weight:bold}"""


#: The link schemes a page follows from a report: the web, and paths relative to the page (no scheme).
LINK_SCHEMES = frozenset({"", "http", "https"})


def href(url: str) -> str:
    """``url`` as a link target, quoted: a report's link with another scheme (``javascript:``, ``data:``,
    ``file:``) or with control characters (which browsers strip, so ``java\tscript:`` would pass) goes nowhere."""
    if any(not c.isprintable() for c in url) or urlsplit(url).scheme.lower() not in LINK_SCHEMES:
        return "#"
    return html.escape(url, quote=True)


def _fix(check_id: str) -> str:
    """The check's help: its docstring, which is also its failure help."""
    from rayaccel_conformance.checks import all_checks

    found = {c.id: c for c in all_checks()}.get(check_id)
    return found.help.strip() if found is not None else "see the check's section in docs/conformance.md"


def _ladder(tier: str | None, why: str) -> str:
    reached = TIERS.index(tier) if tier in TIERS else -1
    spans = []
    for i, name in enumerate(TIERS):
        css = "reached" if i <= reached else "missed" if i == reached + 1 and "not reached" in why else ""
        spans.append(f'<span class="{css}">{html.escape(name)}</span>')
    return f'<span class="ladder">{"".join(spans)}</span>'


def _picture_links(fixtures: list[str], pictures: Mapping[str, str]) -> str:
    e = html.escape
    links = [f'<a class="node-picture" href="{href(pictures[f])}">{e(f)}</a>' for f in fixtures
             if f in pictures]
    return ", ".join(links) if links else "none"


def _failed(check: CheckRecord, pictures: Mapping[str, str]) -> str:
    e = html.escape
    where = e(check.plugin) + (f" on {e(check.fixture)}" if check.fixture else "")
    picture = (f' &middot; <a class="node-picture" href="{href(pictures[check.fixture])}">node picture of '
               f"{e(check.fixture)}</a>" if check.fixture and check.fixture in pictures else "")
    evidence = "".join(f"<li>{e(x)}</li>" for x in check.evidence) or "<li>(no evidence recorded)</li>"
    return (f'<div class="fail check-{check.outcome}"><h3><a href="{href(check.docs)}">{e(check.id)}</a> '
            f"{e(check.title)} &middot; {e(check.tier)} &middot; {where} &middot; {check.outcome}{picture}</h3>"
            f"<b>What was found</b><ul>{evidence}</ul><b>How to fix it</b><pre>{e(_fix(check.id))}</pre></div>")


def render_html(report: ConformanceReport, pictures: Mapping[str, str] | None = None) -> str:
    """The page; ``pictures``: fixture ref (``plugin/fixture``) -> link to that fixture's node picture."""
    e = html.escape
    pictures = pictures or {}
    v = report.versions
    rows = "".join(
        f"<tr class=\"plugin\"><td>{e(p.name)}</td><td>{e(p.family or '')}</td><td>{_ladder(p.tier, p.tier_reason)}"
        f"<br><b>{e(p.tier or 'no tier')}</b></td><td>{e(p.tier_reason)}</td><td>{p.passed}</td><td>{p.failed}</td>"
        f"<td>{p.skipped}</td><td>{_picture_links(p.fixtures, pictures)}</td></tr>"
        for p in report.plugins)
    failed = [c for c in report.checks if c.outcome in ("failed", "error")]
    failures = "".join(_failed(c, pictures) for c in failed) or "<p class=\"passed\">No check failed.</p>"
    checks = "".join(
        f"<tr><td><a href=\"{href(c.docs)}\">{e(c.id)}</a></td><td>{e(c.tier)}</td><td>{e(c.plugin)}</td>"
        f"<td>{e(c.fixture or '')}</td><td class=\"{e(c.outcome)}\">{e(c.outcome)}</td><td>{e(c.title)}</td>"
        f"<td>{'<br>'.join(e(x) for x in c.evidence)}</td><td>{c.duration_s:.2f}s</td></tr>"
        for c in report.checks)
    from rayaccel_conformance.report.environment import lines as environment_lines

    environment = "<br>".join(e(line) for line in environment_lines(report.environment))
    figures = "".join(
        f"<tr class=\"{'regressed' if f.regressed else 'figure'}\"><td>{e(f.plugin)}</td><td>{e(f.name)}</td>"
        f"<td>{f.value:.4g} {e(f.unit)}</td><td>{'-' if f.baseline is None else f'{f.baseline:.4g} {e(f.unit)}'}</td>"
        f"<td>{e(f.better)} is better</td><td>{e(f.check)}{' REGRESSED' if f.regressed else ''}</td></tr>"
        for f in report.figures)
    measured = (f"<h2>Performance figures</h2><table><tr><th>plugin</th><th>figure</th><th>value</th><th>baseline</th>"
                f"<th></th><th>check</th></tr>{figures}</table>" if report.figures else "")
    incomplete = (f'<p class="incomplete">Incomplete run: {e(report.incomplete_reason or "")}</p>'
                  if not report.complete else "")
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>rayaccel conformance</title>"
            f"<style>{STYLE}</style></head><body><h1>rayaccel conformance report</h1>"
            f"<p>{e(report.created)} &middot; hardware <b>{e(report.hardware)}</b> &middot; rayaccel {e(v.sdk)} "
            f"(spec {e(v.spec)}) &middot; Ray {e(v.ray)} &middot; Python {e(v.python)} &middot; {e(v.platform)}"
            f"{' &middot; tiers up to ' + e(report.tier_limit) if report.tier_limit else ''}</p>{incomplete}"
            f"<h2>Tiers</h2><table><tr><th>plugin</th><th>family</th><th>tier</th><th>why not higher</th>"
            f"<th>passed</th><th>failed</th><th>skipped</th><th>node pictures</th></tr>{rows}</table>"
            f"<h2>Environment</h2><p class=\"environment\">{environment}</p>{measured}"
            f"<h2>Failed checks ({len(failed)})</h2>{failures}"
            f"<h2>Every check</h2><table><tr><th>id</th><th>tier</th><th>plugin</th><th>fixture</th><th>outcome</th>"
            f"<th>check</th><th>evidence</th><th>time</th></tr>{checks}</table>"
            f"<p>{e(standing(report))} &middot; <code>{e(report.digest)}</code></p></body></html>\n")
