"""ZETA-SUB: a day-zero family whose runtime takes a sub-host bounds variable beside its visible-devices one for a
task of one device only, as TPU's runtime takes ``TPU_CHIPS_PER_HOST_BOUNDS`` for one or two chips and its own
defaults otherwise. Tests that a worker reused for a larger task does not keep the bounds of a smaller one. It finds
no devices."""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Device, FamilyDeclaration, Host, hookimpl

VISIBLE, BOUNDS = "ZETASUB_VISIBLE_DEVICES", "ZETASUB_HOST_BOUNDS"


@hookimpl
def rayaccel_family() -> FamilyDeclaration:
    return FamilyDeclaration(name="zetasub", vendor="Zeta Labs", resource_name="ZETASUB",
                             visible_devices_env_var=VISIBLE, spec_version="1.0", visible_env_companions=[BOUNDS])


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    return []


@hookimpl
def rayaccel_visible_env(unit_ids: Sequence[str]) -> dict[str, str]:
    env = {VISIBLE: ",".join(unit_ids)}
    return {**env, BOUNDS: "1,1,1"} if len(unit_ids) == 1 else env
