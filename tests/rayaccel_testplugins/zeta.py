"""ZETA: a day-zero family whose runtime names devices in its own syntax (``zeta0+zeta2``) and wants
a second variable beside the visible-devices one. Tests that the Ray bridge uses the plugin's
``rayaccel_parse_visible`` / ``rayaccel_visible_env`` instead of comma lists. It finds no devices."""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Device, FamilyDeclaration, Host, hookimpl


@hookimpl
def rayaccel_family() -> FamilyDeclaration:
    return FamilyDeclaration(name="zeta", vendor="Zeta Labs", resource_name="ZETA",
                             visible_devices_env_var="ZETA_VISIBLE_DEVICES", spec_version="1.0",
                             visible_env_companions=["ZETA_DEVICE_COUNT"])


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    return []


@hookimpl
def rayaccel_parse_visible(value: str) -> list[str]:
    return [part.removeprefix("zeta") for part in value.split("+") if part]


@hookimpl
def rayaccel_visible_env(unit_ids: Sequence[str]) -> dict[str, str]:
    return {"ZETA_VISIBLE_DEVICES": "+".join(f"zeta{u}" for u in unit_ids), "ZETA_DEVICE_COUNT": str(len(unit_ids))}
