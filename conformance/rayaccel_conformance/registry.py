"""The check registry: every conformance check, with its stable ID, tier, title and help.

A check is a function decorated with :func:`check`. Its docstring's first sentence is the title; the whole
docstring is the help shown when it fails. It returns evidence (a short sentence, or a list of them) when
it passes and raises :class:`CheckFailed` with evidence when it does not. IDs never change meaning: RAC1xx
are experimental, RAC2xx supported, RAC3xx certified.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

Tier = Literal["experimental", "supported", "certified"]
TIERS: tuple[Tier, ...] = ("experimental", "supported", "certified")
_TIER_OF_HUNDRED = {1: "experimental", 2: "supported", 3: "certified"}

#: What a check is run for: once per plugin, or once per fixture of the plugin.
Scope = Literal["plugin", "fixture"]

Evidence = str | Sequence[str]
CheckFunction = Callable[..., Evidence]

DOCS_PAGE = "docs/conformance.md"


class CheckFailed(Exception):
    """The plugin does not meet the check; the evidence says what was found instead."""

    def __init__(self, evidence: Evidence) -> None:
        self.evidence = [evidence] if isinstance(evidence, str) else list(evidence)
        super().__init__("; ".join(self.evidence))


class CheckSkipped(Exception):
    """The check could not be run (and so does not count as passed): the reason says why."""


#: Evidence of a check that had nothing to test here starts with this; such a skip is not a pass, and it does
#: not hold a tier back either (see :func:`rayaccel_conformance.report.tiers.reached_tier`).
NOT_APPLICABLE = "not applicable: "


class NotApplicable(CheckSkipped):
    """The check had nothing to test on this plugin or fixture: skipped with the reason, never passed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason if reason.startswith(NOT_APPLICABLE) else NOT_APPLICABLE + reason)


@dataclass(frozen=True)
class Check:
    id: str
    tier: Tier
    title: str
    help: str
    scope: Scope
    function: CheckFunction
    #: Starts Ray: run after the cheap checks, and only while the tier can still be reached.
    uses_ray: bool = False

    @property
    def anchor(self) -> str:
        return self.id.lower()

    @property
    def docs_url(self) -> str:
        return f"{DOCS_PAGE}#{self.anchor}"

    def run(self, subject: object, fixture: str | None) -> list[str]:
        """``subject``: the harness's :class:`~rayaccel_conformance.harness.subject.Subject`, passed on unread (the
        registry sits below the harness and names nothing of it, not even for a type checker)."""
        result = self.function(subject, fixture) if self.scope == "fixture" else self.function(subject)
        return [result] if isinstance(result, str) else list(result)


CHECKS: dict[str, Check] = {}
_ID = re.compile(r"^RAC([123])\d\d$")


def check(check_id: str, scope: Scope = "plugin", uses_ray: bool = False) -> Callable[[CheckFunction], CheckFunction]:
    """Register a check function under a stable ID; the ID's hundreds digit is its tier."""

    def register(function: CheckFunction) -> CheckFunction:
        match = _ID.match(check_id)
        if not match:
            raise ValueError(f"check id {check_id!r} must be RAC followed by 3 digits, 1xx-3xx")
        if check_id in CHECKS:
            raise ValueError(f"check id {check_id} is registered twice")
        doc = inspect.cleandoc(function.__doc__ or "")
        if not doc:
            raise ValueError(f"check {check_id} ({function.__name__}) has no docstring: it is the failure help")
        title = " ".join(doc.split("\n\n", 1)[0].split()).rstrip(".")  # the first paragraph, on one line
        tier: Tier = _TIER_OF_HUNDRED[int(match.group(1))]  # type: ignore[assignment]
        CHECKS[check_id] = Check(check_id, tier, title, doc, scope, function, uses_ray)
        return function

    return register


def tier_index(tier: str) -> int:
    return TIERS.index(tier)  # type: ignore[arg-type,unused-ignore]
