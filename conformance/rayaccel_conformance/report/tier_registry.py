"""The tier registry: a static site (one HTML page and a JSON index) built from a folder of signed reports.

Every report is hostile input: read bounded (:func:`~rayaccel_conformance.report.document.load_report`),
verified against the registry's trusted public keys (a report that does not verify is listed as rejected,
with why, and never counted), and every string from it is HTML-escaped on the page. Per plugin and family,
its releases in order with their tiers, and the level it holds under :data:`RULE`; the regressions between
consecutive releases (a lower tier, a check that passed and now fails, a figure worse than the tolerance)
are highlighted.
"""

from __future__ import annotations

import datetime as dt
import html
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from rayaccel.errors import RayaccelError
from rayaccel_conformance.harness.figures import DEFAULT_TOLERANCE, change, regressed
from rayaccel_conformance.registry import TIERS
from rayaccel_conformance.report.document import ConformanceReport, PluginRecord, ReportError, check_claimed_tiers

RULE = ("A plugin holds a level once two consecutive releases reach it, and loses it once two consecutive "
        "releases fall below it (it then holds the higher of those two releases' tiers). A report that fails "
        "verification against a trusted key is rejected and never counted.")
#: A registry folder holds reports, not a file system: stop at this many files.
MAX_REPORTS = 2000
INDEX_SCHEMA = "rayaccel-tier-registry/1"


class RegistryError(RayaccelError):
    """A registry that cannot be built: no such folder, no trusted key, an output path that is a file."""


@dataclass
class Release:
    plugin: str
    family: str | None
    release: str
    ray: str
    tier: str | None
    tier_reason: str
    created: str
    hardware: str
    report: str  #: the report's path, relative to the folder
    keyid: str
    regressions: list[str] = field(default_factory=list)
    held: str | None = None  #: the level held after this release


@dataclass
class Rejected:
    report: str
    reason: str


def _rank(tier: str | None) -> int:
    return TIERS.index(tier) + 1 if tier in TIERS else 0  # type: ignore[arg-type,unused-ignore]


def _tier(rank: int) -> str | None:
    return TIERS[rank - 1] if rank else None


def held_levels(tiers: Sequence[str | None]) -> list[str | None]:
    """The level held after each release, under :data:`RULE`."""
    held = 0
    out: list[str | None] = []
    for i, tier in enumerate(tiers):
        if i >= 1:
            now, before = _rank(tier), _rank(tiers[i - 1])
            if min(now, before) > held:
                held = min(now, before)
            elif now < held and before < held:
                held = max(now, before)
        out.append(_tier(held))
    return out


def _verify(path: Path, keys: Sequence[Ed25519PublicKey]) -> tuple[ConformanceReport, str]:
    from rayaccel_conformance.report.attestation import verify
    from rayaccel_conformance.report.document import load_report
    from rayaccel_conformance.report.signing import key_id

    # Tiers are checked against the report's own checks, not this suite's: a release graded by an older suite
    # (fewer checks) stays listed; a tier its own checks do not give is still refused.
    report = load_report(path, check_tiers=False)
    _tiers_follow_from_own_checks(report, path)
    if report.attestation is None:
        raise ReportError(f"{path.name}: not signed (self-assessed): the registry lists signed reports only")
    why = ""
    for key in keys:
        try:
            verify(report, path, key, compare_builds=False)
            return report, key_id(key)
        except ReportError as e:
            why = str(e)
    raise ReportError(why or f"{path.name}: no trusted key")


def _tiers_follow_from_own_checks(report: ConformanceReport, path: Path) -> None:
    required: dict[str, set[str]] = {}
    for c in report.checks:
        required.setdefault(c.tier, set()).add(c.id)
    check_claimed_tiers(report, required, path.name)


def _release_of(report: ConformanceReport, plugin: PluginRecord) -> str:
    env = report.environment
    recorded = next((p.release for p in env.plugins if p.plugin == plugin.name), None) if env else None
    return recorded or plugin.version or f"unversioned {report.created}"


def _order(release: Release) -> tuple[Any, str]:
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(release.release)), release.created
    except InvalidVersion:
        return (1, release.release), release.created


def regressions(before: ConformanceReport, after: ConformanceReport, plugin: str,
                tolerance: float = DEFAULT_TOLERANCE) -> list[str]:
    """A plugin's regressions from one release's report to the next: tier, checks, figures."""
    lines = []
    was = next((p.tier for p in before.plugins if p.name == plugin), None)
    now = next((p.tier for p in after.plugins if p.name == plugin), None)
    if _rank(now) < _rank(was):
        lines.append(f"tier {was} -> {now or 'none'}")
    passed = {(c.id, c.fixture) for c in before.checks if c.plugin == plugin and c.outcome == "passed"}
    for c in after.checks:
        if c.plugin == plugin and c.outcome in ("failed", "error") and (c.id, c.fixture) in passed:
            where = f" on {c.fixture}" if c.fixture else ""
            lines.append(f"check {c.id}{where} passed -> {c.outcome}: {c.title}: {'; '.join(c.evidence)[:300]}")
    old = {f.name: f for f in before.figures if f.plugin == plugin}
    for f in after.figures:
        base = old.get(f.name)
        if f.plugin == plugin and base is not None and regressed(f.value, base.value, f.better, f.unit, tolerance):
            lines.append(f"figure {f.name}: {base.value:.4g} -> {f.value:.4g} {f.unit} "
                         f"({change(base.value, f.value)}), checked by {f.check}")
    return lines


def build(folder: Path, keys: Sequence[Ed25519PublicKey]) -> tuple[list[Release], list[Rejected]]:
    try:
        is_folder = folder.is_dir()
    except OSError as e:  # a name too long, a loop of links
        raise RegistryError(f"{str(folder)[:200]}: cannot read it: {e.strerror or e}") from None
    if not is_folder:
        raise RegistryError(f"{folder}: not a folder of reports; give the folder the CI jobs upload reports to")
    if not keys:
        raise RegistryError("no trusted key: pass each vendor's public key with --key PUB")
    try:
        paths = sorted(p for p in folder.rglob("*.json") if not p.is_symlink())
    except OSError as e:
        raise RegistryError(f"{folder}: cannot list it: {e.strerror or e}") from None
    if len(paths) > MAX_REPORTS:
        raise RegistryError(f"{folder}: {len(paths)} JSON files, more than {MAX_REPORTS}: split the registry")
    accepted: list[tuple[ConformanceReport, str, str]] = []
    rejected = []
    for path in paths:
        rel = path.relative_to(folder).as_posix()
        try:
            report, keyid = _verify(path, keys)
        except RayaccelError as e:
            rejected.append(Rejected(rel, str(e).replace(str(path), rel)))
            continue
        accepted.append((report, rel, keyid))
    by_plugin: dict[tuple[str, str | None], list[tuple[Release, ConformanceReport]]] = {}
    for report, rel, keyid in accepted:
        for p in report.plugins:
            entry = Release(p.name, p.family, _release_of(report, p), report.versions.ray, p.tier, p.tier_reason,
                            report.created, report.hardware, rel, keyid)
            by_plugin.setdefault((p.name, p.family), []).append((entry, report))
    releases: list[Release] = []
    for (name, _family), entries in sorted(by_plugin.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        # One report per release: the latest run of it counts.
        latest: dict[str, tuple[Release, ConformanceReport]] = {}
        for entry, report in sorted(entries, key=lambda e: e[0].created):
            latest[entry.release] = (entry, report)
        ordered = sorted(latest.values(), key=lambda e: _order(e[0]))
        for (entry, _), level in zip(ordered, held_levels([e.tier for e, _ in ordered]), strict=True):
            entry.held = level
        for (_, before), (entry, after) in itertools.pairwise(ordered):
            entry.regressions = regressions(before, after, name)
        releases += [entry for entry, _ in ordered]
    return releases, rejected


def index(releases: Sequence[Release], rejected: Sequence[Rejected]) -> dict[str, Any]:
    plugins: dict[str, dict[str, Any]] = {}
    for r in releases:
        key = f"{r.plugin}/{r.family or '-'}"
        entry = plugins.setdefault(key, {"plugin": r.plugin, "family": r.family, "held": None, "releases": []})
        entry["releases"].append({k: v for k, v in r.__dict__.items() if k not in ("plugin", "family")})
        entry["held"] = r.held
    return {"schema": INDEX_SCHEMA, "rule": RULE,
            "built": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
            "plugins": list(plugins.values()), "rejected": [r.__dict__ for r in rejected]}


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def page(data: dict[str, Any]) -> str:
    """The registry's one page; every string from a report escaped (reports are hostile input)."""
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
             "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">",
             "<title>rayaccel tier registry</title><style>",
             "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1.5em}",
             "td,th{border:1px solid #999;padding:.3em .6em;text-align:left;vertical-align:top}",
             ".regression{background:#fdd}.rejected{color:#a00}.held{font-weight:bold}</style></head><body>",
             "<h1>rayaccel tier registry</h1>", f"<p id='rule'>{_e(data['rule'])}</p>"]
    for plugin in data["plugins"]:
        pid = _e(f"{plugin['plugin']}/{plugin['family'] or '-'}")
        parts.append(f"<h2 data-plugin='{pid}'>{_e(plugin['plugin'])} ({_e(plugin['family'] or 'no family')}): "
                     f"holds <span class='held'>{_e(plugin['held'] or 'no level')}</span></h2>")
        parts.append("<table><tr><th>release</th><th>Ray</th><th>hardware</th><th>tier</th><th>level held</th>"
                     "<th>regressions since the release before</th><th>report</th></tr>")
        for r in plugin["releases"]:
            cls = " class='regression'" if r["regressions"] else ""
            shown = "<br>".join(_e(line) for line in r["regressions"]) or "none"
            parts.append(f"<tr{cls}><td>{_e(r['release'])}</td><td>{_e(r['ray'])}</td><td>{_e(r['hardware'])}</td>"
                         f"<td title='{_e(r['tier_reason'])}'>{_e(r['tier'] or 'none')}</td>"
                         f"<td>{_e(r['held'] or 'none')}</td><td>{shown}</td>"
                         f"<td>{_e(r['report'])}<br>key {_e(r['keyid'][:16])}</td></tr>")
        parts.append("</table>")
    parts.append("<h2>Rejected reports (never counted)</h2><table><tr><th>report</th><th>why</th></tr>")
    for r in data["rejected"]:
        parts.append(f"<tr class='rejected'><td>{_e(r['report'])}</td><td>{_e(r['reason'])}</td></tr>")
    parts.append("</table></body></html>\n")
    return "".join(parts)


def write_site(folder: Path, keys: Sequence[Ed25519PublicKey], site: Path) -> dict[str, Any]:
    from rayaccel.files.atomic import write_atomically

    try:
        a_file = site.exists() and not site.is_dir()
    except OSError as e:
        raise RegistryError(f"-o {str(site)[:200]}: cannot use it: {e.strerror or e}") from None
    if a_file:
        raise RegistryError(f"-o {site}: a file, not a folder: give the folder to write the site into")
    releases, rejected = build(folder, keys)
    data = index(releases, rejected)
    try:
        site.mkdir(parents=True, exist_ok=True)
        write_atomically(site / "registry.json", json.dumps(data, indent=2, sort_keys=True) + "\n", 0o644)
        write_atomically(site / "index.html", page(data), 0o644)
    except OSError as e:
        raise RegistryError(f"cannot write the site into {site}: {e.strerror or e}") from None
    return data
