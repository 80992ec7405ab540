"""broken-topology: reports every link in both directions with different bandwidths, and a link to a
device that was not discovered; fails RAC202."""

from __future__ import annotations

from rayaccel import Device, Host, Link, Topology, hookimpl
from rayaccel_testplugins import acme
from rayaccel_testplugins.broken_base import broken_plugin

FAMILY = broken_plugin(globals(), "broken-topology", keep=("rayaccel_topology",))


@hookimpl
def rayaccel_topology(host: Host, devices: list[Device]) -> Topology:
    links = acme.rayaccel_topology(host, devices).links
    # The defects: b->a at half the bandwidth of a->b, and a peer nobody discovered.
    reverse = [Link(a=ln.b, b=ln.a, kind=ln.kind, bandwidth_gbps=(ln.bandwidth_gbps or 0) / 2) for ln in links]
    ghost = [Link(a=devices[0].id, b="ACME-dead-beef", kind="other", bandwidth_gbps=100.0)] if devices else []
    return Topology(links=[*links, *reverse, *ghost])
