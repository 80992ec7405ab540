"""What changed between two conformance reports: every version, tier, check outcome and performance figure.

One line per change, in a fixed order (versions, environment, tiers, checks, figures), as ``rayaccel certify
diff A B`` prints them; the registry highlights the same changes between two releases.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rayaccel_conformance.harness.figures import DEFAULT_TOLERANCE, change, regressed
from rayaccel_conformance.registry import TIERS
from rayaccel_conformance.report.document import ConformanceReport


def _changed(what: str, before: object, after: object) -> list[str]:
    return [] if before == after else [f"{what}: {before if before is not None else '-'} -> "
                                       f"{after if after is not None else '-'}"]


def _environment(report: ConformanceReport) -> dict[str, Any]:
    """Flat name -> value of everything the manifest records."""
    e = report.environment
    flat: dict[str, Any] = {f"version {k}": v for k, v in report.versions.model_dump().items()}
    if e is None:
        return flat
    flat.update({"kernel": e.kernel, "os": e.os, "torch": e.torch, "hardware fingerprint": e.hardware_fingerprint,
                 "devices": e.devices})
    for p in e.plugins:
        flat[f"plugin {p.plugin} release"] = p.release
        for name, version in p.dependencies.items():
            flat[f"plugin {p.plugin} dependency {name}"] = version
        for f in p.families:
            for kind in ("driver", "runtime", "firmware"):
                flat[f"family {f.family} {kind}"] = ", ".join(getattr(f, kind)) or None
    return flat


def _tier_rank(tier: str | None) -> int:
    return TIERS.index(tier) + 1 if tier in TIERS else 0  # type: ignore[arg-type,unused-ignore]


def tier_changes(a: ConformanceReport, b: ConformanceReport) -> list[str]:
    before = {p.name: p.tier for p in a.plugins}
    after = {p.name: p.tier for p in b.plugins}
    lines = []
    for name in sorted(set(before) | set(after)):
        if name not in after:
            lines.append(f"plugin {name}: graded before, not now")
        elif name not in before:
            lines.append(f"plugin {name}: graded now, not before (tier {after[name] or 'none'})")
        elif before[name] != after[name]:
            down = _tier_rank(after[name]) < _tier_rank(before[name])
            lines.append(f"tier {name}: {before[name] or 'none'} -> {after[name] or 'none'}"
                         + (" (REGRESSION)" if down else ""))
    return lines


def check_changes(a: ConformanceReport, b: ConformanceReport) -> list[str]:
    def key(c: Any) -> str:
        return f"{c.id} {c.plugin}" + (f" on {c.fixture}" if c.fixture else "")

    before = {key(c): c.outcome for c in a.checks}
    after = {key(c): c.outcome for c in b.checks}
    lines = []
    for k in sorted(set(before) | set(after)):
        was, now = before.get(k, "not run"), after.get(k, "not run")
        if was != now:
            bad = was == "passed" and now in ("failed", "error")
            lines.append(f"check {k}: {was} -> {now}" + (" (REGRESSION)" if bad else ""))
    return lines


def figure_changes(a: ConformanceReport, b: ConformanceReport, tolerance: float = DEFAULT_TOLERANCE) -> list[str]:
    before = {(f.plugin, f.name): f for f in a.figures}
    after = {(f.plugin, f.name): f for f in b.figures}
    lines = []
    for k in sorted(set(before) | set(after)):
        was, now = before.get(k), after.get(k)
        where = f"figure {k[0]} {k[1]}"
        if was is None or now is None:
            lines.append(f"{where}: {'not measured' if was is None else f'{was.value:.4g} {was.unit}'} -> "
                         f"{'not measured' if now is None else f'{now.value:.4g} {now.unit}'}")
        elif was.value != now.value:
            worse = regressed(now.value, was.value, now.better, now.unit, tolerance)
            lines.append(f"{where}: {was.value:.4g} -> {now.value:.4g} {now.unit} ({change(was.value, now.value)})"
                         + (f" (REGRESSION, checked by {now.check})" if worse else ""))
    return lines


def differences(a: ConformanceReport, b: ConformanceReport, tolerance: float = DEFAULT_TOLERANCE) -> list[str]:
    env_a, env_b = _environment(a), _environment(b)
    lines: list[str] = []
    for name in sorted(set(env_a) | set(env_b)):
        lines += _changed(name, env_a.get(name), env_b.get(name))
    lines += _changed("hardware", a.hardware, b.hardware)
    return lines + tier_changes(a, b) + check_changes(a, b) + figure_changes(a, b, tolerance)


def count(lines: Iterable[str]) -> str:
    lines = list(lines)
    regressions = sum("(REGRESSION" in line for line in lines)
    return f"{len(lines)} changes, {regressions} regressions"
