"""broken-labels: adds labels with a key Ray's syntax refuses and a made-up ``rayaccel.io/`` key; fails
RAC201."""

from __future__ import annotations

from rayaccel import FamilyInventory, Host, hookimpl
from rayaccel_testplugins.broken_base import broken_plugin

FAMILY = broken_plugin(globals(), "broken-labels", keep=("rayaccel_labels",))


@hookimpl
def rayaccel_labels(host: Host, inventory: FamilyInventory) -> dict[str, str]:
    return {"acme.example/mesh size!": "4", "rayaccel.io/mesh": "full"}  # the defects
