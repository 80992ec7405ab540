"""Plugins of one family with one device, whose names carry what a vendor's tool may print (markup, terminal
escapes): :func:`one_device_plugin` makes a module one, and the module states only its strings."""

from __future__ import annotations

from typing import Any

from rayaccel import Device, FamilyDeclaration, Host, hookimpl


def one_device_plugin(namespace: dict[str, Any], family: str, *, resource: str, device_id: str,
                      product_name: str) -> None:
    """Make the module whose ``globals()`` this is the plugin ``family``: resource ``resource`` selected by
    ``<resource>_VISIBLE``, and one device ``device_id`` named ``product_name``."""

    def rayaccel_family() -> FamilyDeclaration:
        return FamilyDeclaration(name=family, vendor="Weird", resource_name=resource,
                                 visible_devices_env_var=f"{resource}_VISIBLE", spec_version="1.0")

    def rayaccel_discover(host: Host) -> list[Device]:
        return [Device(id=device_id, index=0, product_name=product_name)]

    for hook in (rayaccel_family, rayaccel_discover):
        hook.__module__ = namespace["__name__"]  # the plugin module's own hooks, where a report names them
        namespace[hook.__name__] = hookimpl(hook)
