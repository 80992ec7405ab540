"""The health policy applied, poll after poll: each device's reports as the operator's rules make them.

:class:`HealthDecisions` holds what a policy needs to remember between polls (the reasons each device
reported last, the times of each reason's occurrences, which ``drain-after`` rules have fired, when each
drained device was last drained) and nothing else: it reads no clock and no file, so tests give it the
times. The inventory builder runs it on every family's health reports before anything follows from them
(Ray's resources at start, labels, NFD and DRA files, metrics, the monitor's cordons); a policy that touches
none of a report's reasons leaves the report as the plugin wrote it.

A report the policy touched is ``unhealthy`` while a reason drains the device, ``degraded`` while any other
reason remains, and otherwise ``healthy`` (``unknown`` stays unknown). A drained reason is marked fatal, a
degraded or counting one not; an ignored one is dropped (its decision still says it was seen).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from rayaccel.inventory.health_policy import HealthPolicy, policy_from_env
from rayaccel.records import HealthDecision, HealthReason, HealthReport, HealthState


class HealthDecisions:
    """A policy's state over polls: give each poll's reports to :meth:`apply` with the poll's time."""

    def __init__(self, policy: HealthPolicy) -> None:
        self.policy = policy
        self._reported: dict[tuple[str, str], set[str]] = {}  # (family, device) -> codes reported last poll
        self._occurrences: dict[tuple[str, str, str], deque[float]] = {}  # (family, device, code) -> times
        self._fired: set[tuple[str, str, str]] = set()  # drain-after rules reached, while the reason stays
        self._drained: dict[tuple[str, str], tuple[float, list[HealthReason]]] = {}  # last drained at, why

    def apply(self, family: str, reports: Sequence[HealthReport],
              now: float) -> tuple[list[HealthReport], list[HealthDecision]]:
        """The reports as the policy makes them, and a decision per reason reported (``now``: seconds, any
        monotonic clock). Calling it twice for one poll counts no occurrence twice."""
        out: list[HealthReport] = []
        decisions: list[HealthDecision] = []
        for report in reports:
            changed, made = self._one(family, report, now)
            out.append(changed)
            decisions.extend(made)
        return out, decisions

    def _one(self, family: str, report: HealthReport, now: float) -> tuple[HealthReport, list[HealthDecision]]:
        key = (family, report.device)
        before = self._reported.get(key, set())
        codes = {r.code for r in report.reasons}
        self._reported[key] = codes
        self._fired -= {(family, report.device, code) for code in before - codes}
        kept: list[HealthReason] = []
        decisions: list[HealthDecision] = []
        touched = False
        for reason in report.reasons:
            rule = self.policy.rule(family, reason.code)
            if rule is None:  # the plugin's own classification
                kept.append(reason)
                if report.state in ("degraded", "unhealthy"):
                    decisions.append(HealthDecision(device=report.device, code=reason.code, rule="plugin",
                                                    action="drain" if report.drains(reason) else "degrade",
                                                    message=reason.message))
                continue
            touched = True
            occurrences = 1
            drains = rule.action == "drain"
            if rule.action == "drain-after":
                assert rule.occurrences is not None and rule.window_s is not None  # the model's check
                tracked = (family, report.device, reason.code)
                times = self._occurrences.setdefault(tracked, deque())
                if reason.code not in before:
                    times.append(now)
                while times and times[0] <= now - rule.window_s:
                    times.popleft()
                occurrences = len(times)
                if tracked in self._fired or occurrences >= rule.occurrences:
                    self._fired.add(tracked)
                    drains = True
            action = ("ignore" if rule.action == "ignore" else "drain" if drains
                      else "count" if rule.action == "drain-after" else "degrade")
            decisions.append(HealthDecision(device=report.device, code=reason.code, rule=rule.action, action=action,
                                            occurrences=occurrences, message=reason.message))
            if action != "ignore":
                kept.append(reason.model_copy(update={"fatal": drains}))
        state: HealthState = report.state
        if touched:
            if any(r.fatal for r in kept):
                state = "unhealthy"
            elif kept:
                state = "degraded" if report.state != "unknown" else "unknown"
            else:
                state = "healthy" if report.state != "unknown" else "unknown"
        state, kept = self._recovery(family, report.device, state, kept, now, decisions)
        if not touched and state == report.state:
            return report, decisions
        return report.model_copy(update={"state": state, "reasons": kept}), decisions

    def _recovery(self, family: str, device: str, state: HealthState, kept: list[HealthReason], now: float,
                  decisions: list[HealthDecision]) -> tuple[HealthState, list[HealthReason]]:
        """A device drained until a quiet period passes stays drained for the reasons it was drained for."""
        key = (family, device)
        draining = [r for r in kept if r.fatal]
        if state == "unhealthy" and draining:
            self._drained[key] = (now, draining)
            return state, kept
        recovery = self.policy.recovery(family)
        last = self._drained.get(key)
        if last is None or recovery.confirm != "quiet" or recovery.quiet_s is None:
            self._drained.pop(key, None)
            return state, kept
        at, reasons = last
        if now - at >= recovery.quiet_s:
            del self._drained[key]
            return state, kept
        left = recovery.quiet_s - (now - at)
        held = [r.model_copy(update={"message": f"{r.message} (cleared; drained until {recovery.quiet_s:g}s quiet, "
                                                f"{left:.0f}s left)"}) for r in reasons]
        decisions.extend(HealthDecision(device=device, code=r.code, rule="recovery", action="drain",
                                        occurrences=0, message=r.message) for r in held)
        return "unhealthy", held + [r for r in kept if r.code not in {h.code for h in held}]


def decisions_from_env() -> HealthDecisions | None:
    """The evaluator of the policy ``RAYACCEL_HEALTH_POLICY`` names (None without one)."""
    policy = policy_from_env()
    return HealthDecisions(policy) if policy is not None else None
