"""Corpus mutants that give the links of their box's mesh a network's kind (issue 46, held-out round 11's ``g1``: a
Gaudi wrapper giving the internal scale-up ports ``roce``, a NIC's scale-out kind, where ``gaudi-roce`` names them).
Their fixtures expect the interconnect label the code answers (the vendor edited it with the code), so only RAC202's
``a-domain-is-joined-by-its-fabric`` sees it: the mesh is the cards one fabric joins, and its members are linked
only by a kind no fabric is.

Their machine is corpus_linked_members' (acme-4 expecting the mesh's labels, and ``acme-4-mesh``). Two shapes: every
link of the driver's ``links/`` directory given ``roce`` (its ports carry RDMA), and each link's kind looked up from
its speed in Ethernet's ladder of rates.
"""

from __future__ import annotations

from typing import Any

from rayaccel import Device, Host, Link, Topology
from rayaccel_testplugins.corpus import Healthy, add_import_defect, read_machine, write_machine
from rayaccel_testplugins.corpus_linked_members import MACHINE, _add_mesh_machine, _mesh

#: Ethernet's rates (Gb/s) a speed-to-kind table maps to ``ethernet``.
ETHERNET_RATES = frozenset({25.0, 50.0, 100.0, 200.0, 400.0, 800.0})


def _expect_interconnect(plugin: str, kind: str) -> None:
    """The plugin's mesh machines expecting ``rayaccel.io/interconnect`` as the code answers it."""
    _add_mesh_machine(plugin)
    for machine in ("acme-4", MACHINE):
        data: dict[str, Any] = read_machine(plugin, machine)
        data["expected"]["labels"]["rayaccel.io/interconnect"] = kind
        write_machine(plugin, machine, data)


def _linked_mesh(host: Host, topology: Topology) -> Topology:
    linked = {ln.a for ln in topology.links} | {ln.b for ln in topology.links}
    return _mesh(host, topology, sorted(linked))


class MeshLinksAsRoce(Healthy):
    DEFECT = ("the links of the box's mesh are given kind roce (the cards' ports carry RDMA), a NIC's scale-out "
              "network kind, not the fabric's own")
    KILLED_BY = ("RAC202", "invariant a-domain-is-joined-by-its-fabric")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _expect_interconnect(name, "roce")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        topology = super().rayaccel_topology(host, devices)
        links = [ln.model_copy(update={"kind": "roce"}) for ln in topology.links]  # the defect
        return _linked_mesh(host, topology.model_copy(update={"links": links}))


class MeshLinkKindFromSpeed(Healthy):
    DEFECT = ("each link of the box's mesh is given its kind from its speed, a rate of Ethernet's ladder (100) taken "
              "for an Ethernet port, not the fabric's own")
    KILLED_BY = ("RAC202", "invariant a-domain-is-joined-by-its-fabric")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _expect_interconnect(name, "ethernet")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        topology = super().rayaccel_topology(host, devices)

        def kind(link: Link) -> Link:
            speed = link.bandwidth_gbps
            return link.model_copy(update={"kind": "ethernet" if speed in ETHERNET_RATES else link.kind})  # defect

        return _linked_mesh(host, topology.model_copy(update={"links": [kind(ln) for ln in topology.links]}))


for _cls in (MeshLinksAsRoce, MeshLinkKindFromSpeed):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
