"""Tier computation: a plugin holds the highest tier whose checks, and all lower tiers' checks, pass."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rayaccel_conformance.registry import NOT_APPLICABLE, TIERS, Tier


@dataclass(frozen=True)
class Result:
    check_id: str
    tier: str
    outcome: str
    fixture: str | None
    evidence: Sequence[str]


def reached_tier(results: Iterable[Result], required: dict[str, set[str]],
                 limit: str | None = None) -> tuple[Tier | None, str]:
    """(tier reached or None, why it is not higher).

    ``required``: tier -> every check id of that tier; a tier whose checks did not all run is not reached,
    so a report cannot claim a tier by leaving a check out. A skipped check is not a pass; one skipped as not
    applicable (it had nothing to test, e.g. RAC204 on a plugin that reads no vendor tool) does not block.
    """
    results = list(results)
    reached: Tier | None = None
    for tier in TIERS:
        if limit is not None and TIERS.index(tier) > TIERS.index(limit):  # type: ignore[arg-type,unused-ignore]
            return reached, f"stopped at {limit} (--conformance-tier {limit})"
        mine = [r for r in results if r.tier == tier]
        bad = [r for r in mine if r.outcome in ("failed", "error")]
        if bad:
            ids = sorted({r.check_id for r in bad})
            return reached, f"{tier} not reached: {', '.join(ids)} failed"
        # A check that had nothing to test (NotApplicable) is skipped, not passed, and holds no tier back.
        skipped = [r for r in mine if r.outcome == "skipped"
                   and not (r.evidence and str(r.evidence[0]).startswith(NOT_APPLICABLE))]
        if skipped:
            first = skipped[0]
            why = first.evidence[0] if first.evidence else "skipped"
            return reached, f"{tier} not reached: {first.check_id} skipped ({why})"
        missing = sorted(required.get(tier, set()) - {r.check_id for r in mine})
        if missing:
            return reached, f"{tier} not reached: {', '.join(missing)} not run"
        reached = tier
    return reached, "every check of every tier passed"
