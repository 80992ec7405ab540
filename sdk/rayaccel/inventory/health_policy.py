"""The operator's health policy: what each reason a plugin reports does to the device on this fleet.

A plugin classifies its reasons (``HealthReason.fatal``: drain); an operator who knows better for their
fleet (XID 94 is a contained application error here; a correctable-ECC storm should drain only after three
within a minute) writes a policy file instead of forking the plugin. Per family, per reason code, one rule:

- ``drain``: out of scheduling now (the monitor cordons the device; NFD counts it out; DRA taints it
  ``NoSchedule``);
- ``drain-after``: drained on the ``occurrences``-th occurrence within ``window_s`` seconds, scheduling kept
  until then (an occurrence is a poll that reports the reason when the poll before did not: a reason that
  stays reported is one occurrence);
- ``degrade``: kept scheduling, labelled and counted (health ``degraded``; DRA taint effect ``None``);
- ``ignore``: as if the plugin had not reported it.

A reason without a rule keeps the plugin's classification. ``recovery`` says when a drained device takes
work again: ``immediate`` (as soon as no reason drains it) or ``quiet`` (after ``quiet_s`` seconds without
one). The file is YAML or JSON, checked against ``rayaccel/schemas/health-policy.schema.json`` (generated from
:class:`HealthPolicy`), read within :data:`MAX_POLICY_BYTES`, and may carry no YAML tags: a bad one is one
line naming the file, where and what. ``RAYACCEL_HEALTH_POLICY`` names it for every inventory built in that
environment (``rayaccel inspect``, ``rayaccel start``, and so the node's health monitor and its workers);
``--health-policy`` sets it. :mod:`rayaccel.inventory.health_decisions` applies it, poll after poll.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from rayaccel.errors import RayaccelError
from rayaccel.files import reading
from rayaccel.records import NodeInventory, Record
from rayaccel.schemas import validate_document

POLICY_ENV = "RAYACCEL_HEALTH_POLICY"
SCHEMA_ID = "rayaccel-health-policy/1"
#: Largest policy file read: a policy is a few rules per family, a few KiB.
MAX_POLICY_BYTES = 64 * 1024
#: Longest window and quiet period (seconds): a week.
MAX_SECONDS = 7 * 24 * 3600.0

RuleName = Literal["drain", "drain-after", "degrade", "ignore"]


class HealthPolicyError(RayaccelError):
    """A health policy file that cannot be read or does not validate."""


class ReasonRule(Record):
    """What one reason code does to the device that reports it."""

    action: RuleName
    occurrences: int | None = Field(None, ge=1, le=10_000, description="drain-after: drain on this occurrence")
    window_s: float | None = Field(None, gt=0, le=MAX_SECONDS,
                                   description="drain-after: seconds the occurrences are counted over")

    @model_validator(mode="after")
    def _window_only_for_drain_after(self) -> ReasonRule:
        windowed = self.occurrences is not None or self.window_s is not None
        if self.action == "drain-after" and (self.occurrences is None or self.window_s is None):
            raise ValueError("drain-after needs occurrences and window_s, e.g. {action: drain-after, "
                             "occurrences: 3, window_s: 60}")
        if self.action != "drain-after" and windowed:
            raise ValueError(f"{self.action} takes no occurrences or window_s (only drain-after counts)")
        return self


class Recovery(Record):
    """When a drained device takes work again."""

    confirm: Literal["immediate", "quiet"] = Field(
        "immediate", description="immediate: when no reason drains it any more; quiet: after quiet_s seconds "
        "without one")
    quiet_s: float | None = Field(None, gt=0, le=MAX_SECONDS)

    @model_validator(mode="after")
    def _quiet_needs_seconds(self) -> Recovery:
        if (self.confirm == "quiet") != (self.quiet_s is not None):
            raise ValueError("confirm: quiet needs quiet_s (seconds), and only quiet takes it")
        return self


class FamilyPolicy(Record):
    reasons: dict[str, ReasonRule] = Field(default_factory=dict, description="Reason code -> its rule")
    recovery: Recovery = Field(default_factory=Recovery)


class HealthPolicy(Record):
    """A health policy file: per family (the plugin's family name, e.g. ``nvidia``), per reason code, a rule."""

    schema_: Literal["rayaccel-health-policy/1"] = Field("rayaccel-health-policy/1", alias="schema")
    families: dict[str, FamilyPolicy] = Field(default_factory=dict)

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    #: The file it was read from (shown by ``rayaccel inspect``).
    _source: str | None = PrivateAttr(None)

    @property
    def source(self) -> str | None:
        return self._source

    def rule(self, family: str, code: str) -> ReasonRule | None:
        policy = self.families.get(family)
        return policy.reasons.get(code) if policy is not None else None

    def recovery(self, family: str) -> Recovery:
        policy = self.families.get(family)
        return policy.recovery if policy is not None else Recovery()


def _refuse_tags(text: str, shown: str) -> None:
    """A policy is plain data: a YAML tag (``!!python/object``, ``!!binary``, a local ``!tag``) is refused."""
    import yaml

    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if isinstance(token, yaml.TagToken):
                mark = token.start_mark
                raise HealthPolicyError(f"{shown}: line {mark.line + 1}: YAML tags are not allowed in a health "
                                        "policy; write plain values")
    except yaml.YAMLError:
        return  # the parser says what is wrong, in its own words


def load_policy(path: str | Path) -> HealthPolicy:
    """The policy at ``path``, or :class:`HealthPolicyError` with one line naming the file and the problem."""
    shown = reading.shown(path)
    text = reading.read_text(path, "health policy", HealthPolicyError, max_bytes=MAX_POLICY_BYTES)
    fmt = "json" if str(path).endswith(".json") else "yaml"
    if fmt == "yaml":
        _refuse_tags(text, shown)
    data = reading.parse(text, shown, "health policy", fmt, HealthPolicyError)
    if data is None:
        raise HealthPolicyError(f"{shown}: the health policy is empty; start it with 'schema: {SCHEMA_ID}'")
    policy = validate_document(data, HealthPolicy, schema="health-policy", what="health policy", origin=shown,
                               error=HealthPolicyError)
    policy._source = str(path)
    return policy


def policy_from_env(environ: Mapping[str, str] | None = None) -> HealthPolicy | None:
    """The policy ``RAYACCEL_HEALTH_POLICY`` names (None when unset or empty)."""
    path = (os.environ if environ is None else environ).get(POLICY_ENV, "")
    if not path:
        return None
    try:
        return load_policy(path)
    except HealthPolicyError as e:  # say where the path came from: the user may not know it is set
        raise HealthPolicyError(f"{POLICY_ENV}: {e} (fix the file, or unset {POLICY_ENV})") from None


def unknown_reasons(policy: HealthPolicy, declared: Mapping[str, list[str]]) -> list[str]:
    """A warning per family or reason the policy names that no installed plugin reports. ``declared``: family
    -> the reason codes its plugin documents (patterns like ``xid-*`` match many)."""
    warnings: list[str] = []
    for family, rules in sorted(policy.families.items()):
        if family not in declared:
            warnings.append(f"health policy {policy.source}: family {family!r} is no installed plugin's "
                            f"(installed: {', '.join(sorted(declared)) or 'none'}); its rules do nothing")
            continue
        codes = declared[family]
        for code in sorted(rules.reasons):
            if not any(fnmatch.fnmatchcase(code, known) for known in codes):
                warnings.append(f"health policy {policy.source}: no installed plugin of family {family!r} reports "
                                f"reason {code!r} (its reasons: {', '.join(codes) or 'none documented'}); the "
                                "rule does nothing")
    return warnings


def policy_warnings(policy: HealthPolicy, inventory: NodeInventory) -> list[str]:
    """:func:`unknown_reasons` against the plugins the inventory was built with (those that found devices and
    the idle ones), each family's reasons as its plugin declares them."""
    declarations = [f.family for f in inventory.families] + [f.family for f in inventory.idle]
    return unknown_reasons(policy, {d.name: [r.code for r in d.health_reasons] for d in declarations})
