"""broken-labels: adds labels with a key Ray's syntax refuses and a made-up ``rayaccel.io/`` key; fails
RAC201."""

from __future__ import annotations

from rayaccel import FamilyInventory, Host, hookimpl
from rayaccel_testplugins.broken_base import declare, fixture_dirs, inherit

PLUGIN = "broken-labels"
FAMILY = declare(PLUGIN)
inherit(globals(), keep=("rayaccel_labels",))


@hookimpl
def rayaccel_family():  # type: ignore[no-untyped-def]
    return FAMILY


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return fixture_dirs(PLUGIN)


@hookimpl
def rayaccel_labels(host: Host, inventory: FamilyInventory) -> dict[str, str]:
    return {"acme.example/mesh size!": "4", "rayaccel.io/mesh": "full"}  # the defects
