"""Corpus mutants found by grading held-out broken plugins (issue 46, lane H): defects their own fixture
cannot show because each answer is right on the poll or the layout the fixture gives, two shapes each.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it (``c-health-kept-per-card`` as ``c_health_kept_per_card``).
"""

from __future__ import annotations

from rayaccel import Device, HealthReason, HealthReport, Host
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect

# Health from the host, not from the polls before (RAC240) -------------------------------------------------------


class HealthKeptPerCard(Healthy):
    DEFECT = ("each card's health is read on its first poll and kept for the process's life (a cache keyed on the "
              "card), so a fault that starts later is never seen by the monitor that polls on")
    KILLED_BY = ("RAC240", "invariant health-answers-the-host")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.kept: dict[str, HealthReport] = {}

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        unseen = [d for d in devices if d.id not in self.kept]
        self.kept.update({r.device: r for r in acme.rayaccel_health(host, unseen)} if unseen else {})
        return [self.kept[d.id] for d in devices if d.id in self.kept]


class HealthFromCounterDelta(Healthy):
    DEFECT = ("a card is unhealthy only on the poll where its fatal-error counter grew: the next poll of the same "
              "dead card says healthy again (health flaps while the fault lasts)")
    KILLED_BY = ("RAC240", "invariant health-holds-while-the-fault-does")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.last: dict[str, int] = {}

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        reports = []
        for report, device in zip(acme.rayaccel_health(host, devices), devices, strict=True):
            count = acme._number(host, f"{SYSFS}/acme{device.index}/fatal_errors")
            grew = count is not None and count > self.last.get(device.id, 0)
            self.last[device.id] = count or 0
            if report.reasons and report.reasons[0].code == "acme-fatal" and not grew:
                report = HealthReport(device=device.id, state="healthy")
            elif grew and report.state == "healthy":
                report = HealthReport(device=device.id, state="unhealthy", reasons=[
                    HealthReason(code="acme-fatal", message=f"{count} fatal errors", fatal=True)])
            reports.append(report)
        return reports


for _cls in (HealthKeptPerCard, HealthFromCounterDelta):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
