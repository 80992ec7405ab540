"""broken-transport: declares a tensor transport whose manager class is no TensorTransportManager; fails
RAC301."""

from __future__ import annotations

from rayaccel import TransportSpec, hookimpl
from rayaccel_testplugins.broken_base import broken_plugin

FAMILY = broken_plugin(globals(), "broken-transport")


class NotATransport:
    """Has the name of a transport manager and nothing else (the defect)."""


@hookimpl
def rayaccel_transports() -> list[TransportSpec]:
    return [TransportSpec(name="ACMELINK", devices=["acme"], link_kinds=["other"],
                          manager_class="rayaccel_testplugins.broken_transport:NotATransport")]
