"""Held-out round 19's ``j2`` (issue 46), its part that counts: the command-json bake ``quill`` (the vendor
template's command-json plugin, family ``quill``) reading each device's error counters from ``quill-smi health
--json``, with the round's edit in ``_health``: a key the entry leaves out read as 0 ("firmware before 2.x leaves a
counter out until it first counts something"). The bake's listing (``quill-smi list --json``), its health entries and
its thresholds are the bake's own; its links, stats and SKU catalog are left out (nothing here reads them). With
``LEFT_OUT = None`` it is the template's reading (a counter left out is unread: the entry is reported, the device
``unknown``), the round's control. Its machine: the bake's quill-4 with its two counter faults, in
heldout19_quill_fixtures/.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rayaccel import (
    Device,
    FamilyDeclaration,
    HealthReason,
    HealthReport,
    Host,
    QuantityRule,
    SupportInfo,
    hookimpl,
    report_problem,
)

HERE = Path(__file__).resolve().parent
CORRECTED_ERRORS_DEGRADED = 1000
#: What a counter the entry leaves out reads as: 0 is j2's edit; None is the template's (unread).
LEFT_OUT: Any = 0


def _json(host: Host, argv: tuple[str, ...]) -> Any:
    result = host.run(argv, timeout=5.0)
    return json.loads(result.stdout) if result.returncode == 0 else None


def _count(value: Any) -> int | None:
    """The template's ``vendor_int``: a whole count, None for anything else (``N/A``, text, a negative number)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


@hookimpl
def rayaccel_family() -> FamilyDeclaration:
    return FamilyDeclaration(name="quill", vendor="Quill Systems", resource_name="QUILL",
                             visible_devices_env_var="QUILL_VISIBLE_DEVICES", quantity_rule=QuantityRule(kind="whole"),
                             spec_version="1.0", support=SupportInfo(maintainers=["Quill Systems accelerator team"]))


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return [str(HERE / "heldout19_quill_fixtures")]


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    listing = _json(host, ("quill-smi", "list", "--json")) or {"devices": []}
    return [Device(index=r["index"], id=r["uuid"], product_name=r["product"], memory_mib=r["memory_mib"],
                   pci_bus_id=r["pci_bus_id"], numa_node=r["numa_node"], driver_version=listing["driver_version"])
            for r in listing["devices"]]


def _health(row: dict[str, Any]) -> tuple[int, int] | None:
    """The bake's ``probe._health``, with j2's edit where ``LEFT_OUT`` is 0."""
    fatal, corrected = _count(row.get("fatal_errors", LEFT_OUT)), _count(row.get("corrected_errors", LEFT_OUT))
    if fatal is None or corrected is None:
        report_problem("malformed-output", f"quill-smi health --json: the entry of {row.get('uuid')} has no readable "
                       "fatal_errors and corrected_errors; it is ignored", severity="error")
        return None
    return fatal, corrected


@hookimpl
def rayaccel_health(host: Host, devices: Sequence[Device]) -> list[HealthReport]:
    """The bake's ``health.to_reports`` over what ``_health`` read."""
    rows = (_json(host, ("quill-smi", "health", "--json")) or {"devices": []})["devices"]
    counters = {r["uuid"]: c for r in rows if (c := _health(r)) is not None}
    reports = []
    for device in devices:
        fatal, corrected = counters.get(device.id, (None, None))
        if fatal is None or corrected is None:
            reports.append(HealthReport(device=device.id, state="unknown", reasons=[
                HealthReason(code="no-health-data", message="the driver reported no error counters")]))
        elif fatal:
            reports.append(HealthReport(device=device.id, state="unhealthy", reasons=[
                HealthReason(code="fatal-error", message=f"{fatal} fatal errors", fatal=True)]))
        elif corrected >= CORRECTED_ERRORS_DEGRADED:
            reports.append(HealthReport(device=device.id, state="degraded", reasons=[
                HealthReason(code="corrected-errors", message=f"{corrected} corrected errors")]))
        else:
            reports.append(HealthReport(device=device.id, state="healthy"))
    return reports
