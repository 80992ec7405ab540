"""Corpus mutants that handle a lost card right only when it is the last one listed (issue 46, held-out round 6: a
device lost other than the last): acme-4's recorded loss is card 3, the last, so losing it leaves nothing listed
after it to get wrong. Two shapes: the listing loop stops at the lost card, and the first cards are kept up to the
count of those not lost. RAC210 moves the recorded loss to the first card and a middle one (``invariant
a-loss-anywhere-is-the-same-loss``).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-discover-stops-at-lost-card`` as
``c_discover_stops_at_lost_card``).
"""

from __future__ import annotations

from rayaccel import Device, Host, report_problem
from rayaccel_testplugins.corpus import SYSFS, Healthy, _read, add_import_defect


def _lost(host: Host, path: str) -> bool:
    return host.exists(f"{path}/state") and _read(host, f"{path}/state") == "lost"


def _by_number(path: str) -> int:
    return int(path.rsplit("acme", 1)[1])


class DiscoverStopsAtLostCard(Healthy):
    DEFECT = ("discovery leaves the listing loop (break) at the first card marked lost, so the cards numbered "
              "after it are never found")
    KILLED_BY = ("RAC210", "invariant a-loss-anywhere-is-the-same-loss")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        if not host.is_dir(SYSFS):
            return []
        driver = self.tool_version(host)
        devices = []
        for path in sorted(host.glob(f"{SYSFS}/acme*"), key=_by_number):
            if _lost(host, path):
                break  # the defect: continue was meant
            device = self.readable_device(host, path, driver)
            if device is not None:
                devices.append(device)
        return devices


class DiscoverKeepsLiveCount(Healthy):
    DEFECT = ("discovery reads every card and keeps the first n, n the cards not marked lost (as if the driver "
              "listed lost cards last), so a lost card ahead of others is kept and the last card dropped")
    KILLED_BY = ("RAC210", "invariant a-loss-anywhere-is-the-same-loss")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        if not host.is_dir(SYSFS):
            return []
        driver = self.tool_version(host)
        paths = sorted(host.glob(f"{SYSFS}/acme*"), key=_by_number)
        live = sum(not _lost(host, path) for path in paths)
        devices = []
        for path in paths:
            try:
                devices.append(self.device(host, path, driver))
            except (FileNotFoundError, IsADirectoryError, ValueError) as e:
                report_problem("unreadable-device", f"{path} cannot be read ({type(e).__name__}); it is left out")
        return devices[:live]  # the defect: the lost cards filtered out was meant


for _cls in (DiscoverStopsAtLostCard, DiscoverKeepsLiveCount):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
