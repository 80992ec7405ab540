"""broken-transport: declares a tensor transport whose manager class is no TensorTransportManager; fails
RAC301."""

from __future__ import annotations

from rayaccel import TransportSpec, hookimpl
from rayaccel_testplugins.broken_base import declare, fixture_dirs, inherit

PLUGIN = "broken-transport"
FAMILY = declare(PLUGIN)
inherit(globals())


class NotATransport:
    """Has the name of a transport manager and nothing else (the defect)."""


@hookimpl
def rayaccel_family():  # type: ignore[no-untyped-def]
    return FAMILY


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return fixture_dirs(PLUGIN)


@hookimpl
def rayaccel_transports() -> list[TransportSpec]:
    return [TransportSpec(name="ACMELINK", devices=["acme"], link_kinds=["other"],
                          manager_class="rayaccel_testplugins.broken_transport:NotATransport")]
