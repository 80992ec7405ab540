"""weird: one device whose product name is Rich markup, emoji codes and a link, to prove the CLI prints vendor
strings as data (tests/support/test_bounds.py); importable, so it runs in a plugin worker like any installed plugin."""

from __future__ import annotations

from rayaccel import Device, FamilyDeclaration, Host, hookimpl

WEIRD = "Weird [/] [link=https://example.com]click[/link] 0000:ab:00.0 :smile: [bold]x"


@hookimpl
def rayaccel_family() -> FamilyDeclaration:
    return FamilyDeclaration(name="weird", vendor="Weird", resource_name="WEIRD",
                             visible_devices_env_var="WEIRD_VISIBLE", spec_version="1.0")


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    return [Device(id="w0", index=0, product_name=WEIRD)]
