"""weird-escapes: one device whose product name and id carry terminal escapes, to prove the CLI prints vendor
strings escaped (tests/support/test_bounds.py); importable, so it runs in a plugin worker like any installed plugin."""

from __future__ import annotations

from rayaccel import Device, FamilyDeclaration, Host, hookimpl

#: Clears the screen and turns the rest red on a terminal that is handed it raw.
ESCAPED = "\x1b[2J\x1b[31mWeird Escaper 9000\x1b[0m"


@hookimpl
def rayaccel_family() -> FamilyDeclaration:
    return FamilyDeclaration(name="weird-escapes", vendor="Weird", resource_name="WEIRD_ESC",
                             visible_devices_env_var="WEIRD_ESC_VISIBLE", spec_version="1.0")


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    return [Device(id="w0\x1b[8m", index=0, product_name=ESCAPED)]
