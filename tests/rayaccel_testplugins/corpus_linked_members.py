"""Corpus mutants that keep a card in its box's mesh after every link of it is gone (issue 46, held-out round 10's
``g2``: a Gaudi module with no internal RoCE port up kept in the scale-up domain). RAC203 under the fault
(``invariant a-member-without-links-is-no-member``).

Their machine (``acme-4-mesh``): acme-4, whose driver lists each card's links to the three others under
``links/<peer>``, with a fault ``links-gone-2``: card 2's links are gone at both ends (the driver lists a link while
it is up), the card itself still present and healthy. The right reader (:class:`MeshOfLinkedCards`) makes the mesh
of the cards linked to another; one mutant puts every card given in it (g2's shape), the other every card whose
driver state reads ``ok`` (membership taken from health, not from the fabric).
"""

from __future__ import annotations

from typing import Any

from rayaccel import Device, Domain, Host, Topology
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, write_machine

MACHINE = "acme-4-mesh"
#: The card whose links the fault takes away.
CUT = 2


def _with_mesh_labels(data: dict[str, Any]) -> dict[str, Any]:
    """The machine expecting the labels of its box's mesh of four cards."""
    host = data["host"].get("hostname") or "acme-node"
    labels = {"rayaccel.io/scale-up-domain": f"{host}-mesh", "rayaccel.io/scale-up-domain-kind": "other",
              "rayaccel.io/scale-up-domain-size": "4"}
    return {**data, "expected": {**data["expected"], "labels": {**data["expected"]["labels"], **labels}}}


def _add_mesh_machine(plugin: str) -> None:
    """acme-4 expecting the mesh's labels, and acme-4-mesh with the fault ``links-gone-2`` beside acme-4's own."""
    data: dict[str, Any] = _with_mesh_labels(read_machine(plugin))
    write_machine(plugin, "acme-4", data)
    files = data["host"]["files"]
    cut = files[f"{SYSFS}/acme{CUT}/uuid"].strip()
    gone: dict[str, None] = {path: None for path in files
                             if path.startswith(f"{SYSFS}/acme{CUT}/links/") or path.endswith(f"/links/{cut}")}
    data["name"], data["description"] = MACHINE, f"{data['description']}, a fault taking card {CUT}'s links away"
    data["faults"] = [*data.get("faults", []), {
        "name": f"links-gone-{CUT}", "kind": "other",
        "description": f"every link of card {CUT} is down: the driver lists none of them, at either end; the card "
                       "is still present and healthy, and leaves the box's mesh",
        "patch": {"files": gone},
        "expected": {"resources": dict(data["expected"]["resources"])}}]
    write_machine(plugin, MACHINE, data)


def _mesh(host: Host, topology: Topology, members: list[str]) -> Topology:
    """The topology with the box's mesh (this host's alone, its id made from the host's name) of ``members``."""
    if len(members) < 2:
        return topology
    mesh = Domain(kind="other", id=f"{host.name}-mesh", size=len(members), members=members)
    return topology.model_copy(update={"domains": [mesh]})


class MeshOfLinkedCards(Healthy):
    """The mesh of the cards linked to another (the right reader)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_mesh_machine(name)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        topology = super().rayaccel_topology(host, devices)
        linked = {ln.a for ln in topology.links} | {ln.b for ln in topology.links}
        return _mesh(host, topology, [d.id for d in devices if d.id in linked])


class MeshOfEveryCard(Healthy):
    DEFECT = ("every card given is put in the box's mesh ('every card of the box is on its fabric'), also one whose "
              "links are all gone")
    KILLED_BY = ("RAC203", "invariant a-member-without-links-is-no-member")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_mesh_machine(name)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        return _mesh(host, super().rayaccel_topology(host, devices), [d.id for d in devices])  # the defect


class MeshOfHealthyCards(Healthy):
    DEFECT = ("the box's mesh is the cards whose driver state reads ok: membership taken from health, so a healthy "
              "card with every link gone stays in it")
    KILLED_BY = ("RAC203", "invariant a-member-without-links-is-no-member")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_mesh_machine(name)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        states = {d.id: f"{SYSFS}/acme{d.index}/state" for d in devices}
        ok = [i for i, path in states.items() if host.exists(path) and host.read_text(path).strip() == "ok"]  # defect
        return _mesh(host, super().rayaccel_topology(host, devices), ok)


for _cls in (MeshOfEveryCard, MeshOfHealthyCards):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
