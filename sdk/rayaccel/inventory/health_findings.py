"""What the health monitor acts on, as records: the fatal findings of one poll of a node's inventory.

A finding names its family, device and reason code, so the monitor groups and cordons by device without
parsing its own messages; :attr:`HealthFinding.phrase` is the sentence a cordon's message and Ray's log show.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass

from rayaccel.records import NodeInventory

#: Devices missing from discovery that were there before are reported with this code.
LOST_CODE = "device-lost"


@dataclass(frozen=True)
class HealthFinding:
    """One device of one family that is unhealthy for a fatal reason, or no longer enumerated."""

    family: str
    device: str
    code: str
    message: str

    @property
    def phrase(self) -> str:
        if self.code == LOST_CODE:
            return f"{self.family} device {self.device} is no longer enumerated ({LOST_CODE})"
        return f"{self.family} device {self.device} is unhealthy ({self.code}: {self.message})"


def fatal_findings(inventory: NodeInventory, baseline: Set[str]) -> list[HealthFinding]:
    """Each fatal reason of a device that is unhealthy now and was not already bad at start."""
    return [HealthFinding(family.family.name, report.device, reason.code, reason.message)
            for family in inventory.families for report in family.health
            if report.state == "unhealthy" and report.device not in baseline
            for reason in report.reasons if reason.fatal]


def vanished_findings(seen: Mapping[str, str], present: Set[str], baseline: Set[str]) -> list[HealthFinding]:
    """Each device seen earlier (device -> family) that discovery no longer lists and that was fine at start.

    A device that stops being enumerated fell off the bus (what XID 79 reports, when the driver still
    answers): as fatal as any reason a plugin marks fatal.
    """
    return [HealthFinding(family, device, LOST_CODE, "no longer enumerated")
            for device, family in seen.items() if device not in present and device not in baseline]


def by_family(findings: list[HealthFinding]) -> dict[str, list[HealthFinding]]:
    grouped: dict[str, list[HealthFinding]] = {}
    for finding in findings:
        grouped.setdefault(finding.family, []).append(finding)
    return grouped
