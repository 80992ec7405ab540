"""The conformance report: what was run, on what, with which outcome; sealed with a sha256 digest, and
signed when the run was given a key.

The JSON Schema generated from :class:`ConformanceReport` ships as
``rayaccel/schemas/conformance-report.schema.json``. The digest is sha256 over the canonical JSON of the
report without its ``digest`` and ``attestation`` fields (sorted keys, no whitespace, UTF-8): it catches
accidents, not forgery (anyone can recompute it). What cannot be forged is the ``attestation``: an in-toto
Statement about the report and the graded builds in a DSSE envelope signed with ed25519
(:mod:`rayaccel_conformance.attestation`). A report without one is self-assessed.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rayaccel.errors import RayaccelError
from rayaccel_conformance.signing import Envelope

REPORT_SCHEMA_ID = "rayaccel-conformance-report/2"
#: Reports of a few hundred checks are well under 1 MiB; anything past this is not one.
MAX_REPORT_BYTES = 64 * 1024 * 1024

Outcome = Literal["passed", "failed", "skipped", "error"]
TierName = Literal["experimental", "supported", "certified"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Versions(_Model):
    sdk: str
    spec: str
    ray: str
    python: str
    platform: str


class CheckRecord(_Model):
    id: str = Field(pattern=r"^RAC[123]\d\d$")
    tier: TierName
    title: str
    plugin: str
    fixture: str | None = None
    outcome: Outcome
    evidence: list[str]
    duration_s: float = Field(ge=0)
    docs: str


class PluginRecord(_Model):
    name: str
    distribution: str | None = None
    version: str | None = None
    family: str | None = None
    resource_name: str | None = None
    fixtures: list[str]
    tier: TierName | None = Field(description="Highest tier reached; null when not even experimental")
    tier_reason: str = Field(description="Why the plugin holds no higher tier")
    passed: int = Field(ge=0)
    failed: int = Field(ge=0)
    skipped: int = Field(ge=0)


class ConformanceReport(_Model):
    """A ``pytest --conformance`` run, as ``rayaccel certify`` verifies it."""

    schema_: Literal["rayaccel-conformance-report/2"] = Field("rayaccel-conformance-report/2", alias="schema")
    created: str = Field(description="UTC time the run ended, ISO 8601")
    versions: Versions
    hardware: Literal["simulated", "real"]
    tier_limit: TierName | None = None
    complete: bool = Field(description="Every check collected ran and the session ended normally (not "
                                       "interrupted, not stopped by -x/--maxfail, no internal error)")
    incomplete_reason: str | None = Field(None, description="Why the run is incomplete; null when complete")
    plugins: list[PluginRecord]
    checks: list[CheckRecord]
    digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    attestation: Envelope | None = Field(None, description="DSSE envelope of the signed in-toto Statement about "
                                                           "this report; null when self-assessed (unsigned)")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def canonical(content: dict[str, Any]) -> bytes:
    body = {k: v for k, v in content.items() if k not in ("digest", "attestation")}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def digest_of(content: dict[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(canonical(content)).hexdigest()


def seal(content: dict[str, Any]) -> ConformanceReport:
    """The report with its digest filled in (content: every field but ``digest``, as JSON data)."""
    # Digest what will be written: the validated dump, defaults filled in, not the caller's dict.
    draft = ConformanceReport.model_validate(dict(content, digest="sha256:" + "0" * 64))
    data = report_json(draft)
    data["digest"] = digest_of(data)
    return ConformanceReport.model_validate(data)


def report_json(report: ConformanceReport) -> dict[str, Any]:
    return report.model_dump(mode="json", by_alias=True)


def report_content(report: ConformanceReport) -> dict[str, Any]:
    """What the digest covers and the attestation's predicate holds: the report less digest and attestation."""
    return {k: v for k, v in report_json(report).items() if k not in ("digest", "attestation")}


def write_atomic(path: Path, text: str) -> None:
    """Write via a temp file in the same directory and rename: never a half-written report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; a report is meant to be read (and published)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(report: ConformanceReport, path: Path) -> None:
    write_atomic(path, json.dumps(report_json(report), indent=2, sort_keys=True, ensure_ascii=False) + "\n")


_STYLE = """body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
.passed{color:#070}.failed,.error{color:#b00}.skipped{color:#777}code{font-size:90%}"""


def render_html(report: ConformanceReport) -> str:
    e = html.escape
    v = report.versions
    rows = "".join(
        f"<tr><td>{e(p.name)}</td><td>{e(p.family or '')}</td><td><b>{e(p.tier or 'none')}</b></td>"
        f"<td>{p.passed}</td><td>{p.failed}</td><td>{p.skipped}</td><td>{e(p.tier_reason)}</td></tr>"
        for p in report.plugins)
    checks = "".join(
        f"<tr><td><a href=\"{e(c.docs)}\">{e(c.id)}</a></td><td>{e(c.tier)}</td><td>{e(c.plugin)}</td>"
        f"<td>{e(c.fixture or '')}</td><td class=\"{c.outcome}\">{c.outcome}</td><td>{e(c.title)}</td>"
        f"<td>{'<br>'.join(e(x) for x in c.evidence)}</td><td>{c.duration_s:.2f}s</td></tr>"
        for c in report.checks)
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>rayaccel conformance</title>"
            f"<style>{_STYLE}</style></head><body><h1>rayaccel conformance report</h1>"
            f"<p>{e(report.created)} &middot; hardware <b>{e(report.hardware)}</b> &middot; rayaccel {e(v.sdk)} "
            f"(spec {e(v.spec)}) &middot; Ray {e(v.ray)} &middot; Python {e(v.python)} &middot; {e(v.platform)}</p>"
            f"<h2>Tiers</h2><table><tr><th>plugin</th><th>family</th><th>tier</th><th>passed</th><th>failed</th>"
            f"<th>skipped</th><th>why not higher</th></tr>{rows}</table>"
            f"<h2>Checks</h2><table><tr><th>id</th><th>tier</th><th>plugin</th><th>fixture</th><th>outcome</th>"
            f"<th>check</th><th>evidence</th><th>time</th></tr>{checks}</table>"
            f"<p>{e(standing(report))} &middot; <code>{e(report.digest)}</code></p></body></html>\n")


def standing(report: ConformanceReport) -> str:
    """Signed or self-assessed, complete or not: in words, for people (``certify verify --key`` proves it)."""
    if report.attestation is None:
        signed = "self-assessed (unsigned)"
    else:
        signed = "signed by key " + ", ".join(s.keyid for s in report.attestation.signatures)
    return signed + ("" if report.complete else f"; INCOMPLETE run: {report.incomplete_reason}")


class ReportError(RayaccelError):
    """A conformance report that does not verify: unreadable, off-schema, or changed after the run."""


def load_report(path: str | Path) -> ConformanceReport:
    """Read and verify a report: JSON Schema, model, digest, and tiers recomputed from the checks.

    Raises :class:`ReportError` with one sentence naming what is wrong.
    """
    from pydantic import ValidationError

    from rayaccel.inputfiles import parse, read_text
    from rayaccel.schemas import schema_errors

    path = Path(path)
    # Regular files only, size-bounded, UTF-8, depth-limited: a FIFO or /dev/zero is one line, not a hang.
    text = read_text(path, "conformance report", ReportError, max_bytes=MAX_REPORT_BYTES)
    data = parse(text, str(path), "conformance report", "json", ReportError)
    errors = schema_errors("conformance-report", data)
    if errors:
        raise ReportError(f"{path}: does not match the conformance report schema {errors[0]}")
    try:
        report = ConformanceReport.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise ReportError(f"{path}: invalid report at {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    expected = digest_of(data)
    if report.digest != expected:
        raise ReportError(f"{path}: digest mismatch: the content was changed after the run (it hashes to "
                          f"{expected}, the report says {report.digest})")
    _check_tiers(report, path)
    return report


def _check_tiers(report: ConformanceReport, path: Path) -> None:
    """The tiers claimed must follow from the checks (a digest proves integrity, not honesty)."""
    from rayaccel_conformance.checks import CHECKS, all_checks
    from rayaccel_conformance.tiers import Result, reached_tier

    required: dict[str, set[str]] = {}
    for c in all_checks():
        required.setdefault(c.tier, set()).add(c.id)
    for record in report.checks:
        known = CHECKS.get(record.id)
        if known is None or known.tier != record.tier:
            raise ReportError(f"{path}: check {record.id} is not a {record.tier} check of this rayaccel_conformance")
    for plugin in report.plugins:
        results = [Result(c.id, c.tier, c.outcome, c.fixture, c.evidence) for c in report.checks
                   if c.plugin == plugin.name]
        tier, why = reached_tier(results, required, report.tier_limit)
        if tier != plugin.tier:
            # "not run" here usually means a report made by a suite with other checks than this one's.
            raise ReportError(f"{path}: plugin {plugin.name} claims tier {plugin.tier}, but its checks give "
                              f"{tier or 'none'} ({why})")
