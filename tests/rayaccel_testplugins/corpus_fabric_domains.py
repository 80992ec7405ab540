"""Corpus mutants whose box's mesh takes a domain kind naming a fabric its cards' links are not (issue 46, held-out
round 14's ``a1``: an AMD wrapper building the xGMI hive from every peer link, PCIe's too, so an MI210 or MI50 pair
linked by PCIe alone became an ``xgmi-hive`` of two). Their fixtures expect the labels the code answers (the vendor
edited them with the code), so only RAC202's ``a-domain-is-joined-by-its-fabric`` sees it: a domain whose kind
names a fabric is the devices that fabric's links join.

Their machine is corpus_linked_members' (acme-4 expecting the mesh's labels, and ``acme-4-mesh``). Each family is
named for its fabric's vendor (a kind is its vendor's own, RAC213). Two shapes: an AMD plugin calling the mesh of
every link its driver lists (kind ``other``) an ``xgmi-hive`` (a1's shape), and a Gaudi one reading the links as
PCIe peer-to-peer and calling their mesh its ``gaudi-scaleup`` domain.
"""

from __future__ import annotations

from typing import Any

from rayaccel import Device, Host, Topology
from rayaccel_testplugins.corpus import Healthy, add_import_defect, read_machine, write_machine
from rayaccel_testplugins.corpus_linked_members import MACHINE, _add_mesh_machine, _mesh


def _expect_mesh(plugin: str, domain_kind: str, link_kind: str) -> None:
    """The plugin's mesh machines expecting the labels its mesh of kind ``domain_kind`` over links of kind
    ``link_kind`` gives, as the code answers them."""
    _add_mesh_machine(plugin)
    for machine in ("acme-4", MACHINE):
        data: dict[str, Any] = read_machine(plugin, machine)
        host = data["host"].get("hostname") or "acme-node"
        data["expected"]["labels"].update({"rayaccel.io/scale-up-domain-kind": domain_kind,
                                           "rayaccel.io/interconnect": link_kind, "ray.io/gpu-domain": f"{host}-mesh"})
        write_machine(plugin, machine, data)


def _kinded_mesh(host: Host, topology: Topology, domain_kind: str, link_kind: str) -> Topology:
    """The mesh of the linked cards, given domain kind ``domain_kind``, its links kind ``link_kind``."""
    links = [ln.model_copy(update={"kind": link_kind}) for ln in topology.links]
    linked = {ln.a for ln in links} | {ln.b for ln in links}
    meshed = _mesh(host, topology.model_copy(update={"links": links}), sorted(linked))
    return meshed.model_copy(update={"domains": [d.model_copy(update={"kind": domain_kind}) for d in meshed.domains]})


class AmdHiveOfDriverLinks(Healthy):
    DEFECT = ("an AMD-style plugin calls the mesh of every peer link its driver lists (kind other, no xGMI among "
              "them) an xgmi-hive")
    KILLED_BY = ("RAC202", "invariant a-domain-is-joined-by-its-fabric")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _expect_mesh(name, "xgmi-hive", "other")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        return _kinded_mesh(host, super().rayaccel_topology(host, devices), "xgmi-hive", "other")  # the defect


class GaudiScaleupOfPcieLinks(Healthy):
    DEFECT = ("a Gaudi-style plugin reads its cards' peer links as PCIe (kind pcie) and calls the mesh they make its "
              "gaudi-scaleup domain, which the box's internal RoCE ports (gaudi-roce) are")
    KILLED_BY = ("RAC202", "invariant a-domain-is-joined-by-its-fabric")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _expect_mesh(name, "gaudi-scaleup", "pcie")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        return _kinded_mesh(host, super().rayaccel_topology(host, devices), "gaudi-scaleup", "pcie")  # the defect


for _cls in (AmdHiveOfDriverLinks, GaudiScaleupOfPcieLinks):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
