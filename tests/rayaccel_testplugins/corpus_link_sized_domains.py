"""Corpus mutants sizing their box's mesh by its links, not its cards (issue 46, held-out round 14's ``c2``: a
command-csv bake giving its fabric's domain the number of links the tool lists, 6 for a full mesh of 4 devices).
The mesh's id is made from its first card's id, not the host's name, so ``host-local-domain-is-its-members`` does
not hold it to its member count, and the fixtures expect the labels the code answers: only RAC202's
``a-domain-is-sized-by-its-devices`` sees it, with one link gone from the host (a link that is down is not listed).

Their machine is corpus_linked_members' (acme-4, and ``acme-4-mesh``). Two shapes: the mesh sized by its links, and by
the link entries the driver lists under its cards (each link at both ends).
"""

from __future__ import annotations

from typing import Any

from rayaccel import Device, Domain, Host, Topology
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, write_machine
from rayaccel_testplugins.corpus_linked_members import MACHINE, _add_mesh_machine


def _expect_mesh(plugin: str, size: int) -> None:
    """The plugin's mesh machines expecting its mesh's labels as the code answers them (the id of the first card,
    ``size``)."""
    _add_mesh_machine(plugin)
    for machine in ("acme-4", MACHINE):
        data: dict[str, Any] = read_machine(plugin, machine)
        first = min(text.strip() for path, text in data["host"]["files"].items() if path.endswith("/uuid"))
        data["expected"]["labels"].update({"rayaccel.io/scale-up-domain": f"{first}-mesh",
                                           "rayaccel.io/scale-up-domain-size": str(size)})
        write_machine(plugin, machine, data)


def _mesh(topology: Topology, size: int) -> Topology:
    """The mesh of the linked cards, its id its first card's, sized ``size``."""
    linked = sorted({ln.a for ln in topology.links} | {ln.b for ln in topology.links})
    if len(linked) < 2:
        return topology
    mesh = Domain(kind="other", id=f"{linked[0]}-mesh", size=size, members=linked)
    return topology.model_copy(update={"domains": [mesh]})


class MeshSizedByLinks(Healthy):
    DEFECT = "the box's mesh is sized by the links the driver lists (6 for a full mesh of 4 cards), not by its cards"
    KILLED_BY = ("RAC202", "invariant a-domain-is-sized-by-its-devices")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _expect_mesh(name, 6)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        topology = super().rayaccel_topology(host, devices)
        return _mesh(topology, len(topology.links))  # the defect


class MeshSizedByLinkEntries(Healthy):
    DEFECT = ("the box's mesh is sized by the link entries the driver lists under its cards (each link at both ends: "
              "12 for a full mesh of 4 cards), not by its cards")
    KILLED_BY = ("RAC202", "invariant a-domain-is-sized-by-its-devices")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _expect_mesh(name, 12)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        topology = super().rayaccel_topology(host, devices)
        entries = [peer for path in host.glob(f"{SYSFS}/acme*") if host.is_dir(f"{path}/links")
                   for peer in host.list_dir(f"{path}/links")]
        return _mesh(topology, len(entries))  # the defect


for _cls in (MeshSizedByLinks, MeshSizedByLinkEntries):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
