"""A corpus mutant that counts a pod's cards from the count its name ends in, divided by a per-card unit count the
machine's cards do not have (issue 46, held-out round 9's ``p2``: TPU v6e taken for a two-TensorCore generation, a
v6e-256 slice's 256 chips counted 128; here another shape, a driver's pod files rather than GCE metadata).

Its machine (``acme-4-pod``): acme-4 with the driver's pod entry, ``/sys/class/acme/pod/name`` ``acme-r1-16`` and
``/sys/class/acme/pod/topology`` ``4x4``: 16 cards (4 hosts of 4), one core each. The right reader
(:class:`PodFromTopology`) sizes the pod by its topology; the mutant takes the name's count as cores at 2 per card
("our cards have two cores") and says 8 (RAC201, the label ``rayaccel.io/scale-up-domain-size``).
"""

from __future__ import annotations

import math
from typing import Any

from rayaccel import Device, Domain, Host, Topology
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, write_machine

MACHINE = "acme-4-pod"
POD = f"{SYSFS}/pod"
#: The pod the machine is in: its name's count and its topology agree (16 single-core cards).
NAME, TOPOLOGY, HOSTS = "acme-r1-16", "4x4", 4


def _add_pod_machine(plugin: str) -> None:
    data: dict[str, Any] = read_machine(plugin)
    data["name"], data["description"] = MACHINE, f"{data['description']}, one of 4 hosts of a 16-card pod"
    data["host"]["files"].update({f"{POD}/name": f"{NAME}\n", f"{POD}/topology": f"{TOPOLOGY}\n"})
    size = math.prod(int(n) for n in TOPOLOGY.split("x"))
    data["expected"]["labels"].update({"rayaccel.io/scale-up-domain": NAME, "rayaccel.io/scale-up-domain-kind": "other",
                                       "rayaccel.io/scale-up-domain-size": str(size)})
    data["faults"], data["perturbations"] = [], []
    write_machine(plugin, MACHINE, data)


def _pod(host: Host, devices: list[Device], size: int) -> Domain:
    return Domain(kind="other", id=host.read_text(f"{POD}/name").strip(), size=size,
                  members=[d.id for d in devices], hosts=HOSTS, host_index=0)


class PodFromTopology(Healthy):
    """The pod sized by the cards its topology holds (the right reader)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_pod_machine(name)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        topology = super().rayaccel_topology(host, devices)
        if not devices or not host.exists(f"{POD}/topology"):
            return topology
        size = math.prod(int(n) for n in host.read_text(f"{POD}/topology").strip().split("x"))
        return topology.model_copy(update={"domains": [_pod(host, devices, size)]})


class PodCoresTakenForCards(Healthy):
    DEFECT = ("a pod's card count is the count its name ends in divided by 2 ('two cores per card', copied from "
              "another generation): a pod of single-core cards counts half its cards")
    KILLED_BY = ("RAC201", "so no per-chip factor of 2 applies to this machine")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_pod_machine(name)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        topology = super().rayaccel_topology(host, devices)
        if not devices or not host.exists(f"{POD}/name"):
            return topology
        # the defect: the name's count taken as cores at 2 per card
        size = int(host.read_text(f"{POD}/name").strip().rsplit("-", 1)[1]) // 2
        return topology.model_copy(update={"domains": [_pod(host, devices, size)]})


plugin = add_import_defect(PodCoresTakenForCards)
c_pod_cores_taken_for_cards = plugin
