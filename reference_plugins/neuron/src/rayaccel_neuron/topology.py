"""NeuronLink between devices, from neuron-ls's ``connected_to``; NUMA/CPU affinity; UltraServer."""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Affinity, Device, Domain, Link, Topology, plain_int
from rayaccel_neuron.instance import UltraServerPlace


def neuronlink_links(devices: Sequence[Device], connected: dict[int, list[int]]) -> list[Link]:
    """One link per pair that either end reports (the tool lists both ends; a lost peer drops it)."""
    by_index = {d.index: d for d in devices}
    pairs = {(min(a, b), max(a, b)) for a, peers in connected.items() for b in peers
             if a in by_index and b in by_index and a != b}
    return [Link(a=by_index[a].id, b=by_index[b].id, kind="neuronlink") for a, b in sorted(pairs)]


def affinities(devices: Sequence[Device], cpus: dict[int, str | None]) -> list[Affinity]:
    return [Affinity(device=d.id, numa_node=d.numa_node, cpus=cpus.get(d.index)) for d in devices
            if d.numa_node is not None or cpus.get(d.index)]


def ultraserver_domain(place: UltraServerPlace | None, devices: Sequence[Device]) -> Domain | None:
    if place is None or not devices:
        return None
    return Domain(kind="ultraserver", id=place.group, size=len(devices) * place.hosts,
                  members=[d.id for d in devices], hosts=place.hosts, host_index=place.node)


def topology_of(devices: Sequence[Device], place: UltraServerPlace | None) -> Topology:
    """NeuronLink links, NUMA/CPU affinities, and the UltraServer domain the devices belong to."""
    cpus = {d.index: str(d.attributes["cpu_affinity"]) if "cpu_affinity" in d.attributes else None
            for d in devices}
    domain = ultraserver_domain(place, devices)
    return Topology(links=neuronlink_links(devices, _connected(devices)),
                    affinities=affinities(devices, cpus), domains=[domain] if domain else [])


def _connected(devices: Sequence[Device]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for d in devices:
        raw = str(d.attributes.get("connected_to", ""))
        out[d.index] = [n for n in map(plain_int, raw.split(",")) if n is not None]
    return out
