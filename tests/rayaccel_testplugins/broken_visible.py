"""broken-visible: sets the visible-devices env var space-separated but parses it comma-separated, so a
process given units 0 and 1 sees one unit "0 1"; fails RAC107."""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import hookimpl
from rayaccel_testplugins.broken_base import broken_plugin

FAMILY = broken_plugin(globals(), "broken-visible", keep=("rayaccel_visible_env",))


@hookimpl
def rayaccel_visible_env(unit_ids: Sequence[str]) -> dict[str, str]:
    return {FAMILY.visible_devices_env_var: " ".join(unit_ids)}  # the defect
