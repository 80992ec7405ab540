"""Corpus mutants that make a multi-host group up when the set-up left its id out (held-out round 6: a Neuron
UltraServer node without ``NEURON_GLOBAL_TOPOID0_HOST``, its leader's host name), two shapes: the node's own host
name taken for the group's id, and one constant id for every group. RAC202's
``a-group-without-its-variable-is-no-group`` kills both; every fixture records a set-up that wrote all its variables.

Each joins the ACME cards to a fabric of several hosts that ACME's set-up names in the environment (the group's
leader's host name, as AWS's UltraServer set-up does, and the hosts in it); its fixture's host is one of two.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it (``c-group-named-by-own-host`` as ``c_group_named_by_own_host``).
"""

from __future__ import annotations

from rayaccel import Device, Domain, Host, Topology
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import Healthy, add_import_defect, read_machine, write_machine

LEADER, HOSTS = "ACME_FABRIC_LEADER", "ACME_FABRIC_HOSTS"
LEADER_HOST = "acme-node-0.fabric.example"


def in_a_fabric(plugin: str) -> None:
    """The plugin's fixture as the second host of a two-host fabric (written atomically, once)."""
    data = read_machine(plugin)
    if data["host"].get("env", {}).get(LEADER):
        return
    data["host"]["env"] = {**(data["host"].get("env") or {}), LEADER: LEADER_HOST, HOSTS: "2"}
    data["expected"]["labels"].update({"rayaccel.io/scale-up-domain": LEADER_HOST,
                                       "rayaccel.io/scale-up-domain-kind": "other",
                                       "rayaccel.io/scale-up-domain-size": "8"})
    write_machine(plugin, "acme-4", data)


def fabric(host: Host, devices: list[Device], group: str | None) -> Topology:
    """ACME's topology with the fabric domain of ``group`` (none without one)."""
    topology = acme.rayaccel_topology(host, devices)
    hosts = (host.getenv(HOSTS) or "").strip()
    if not group or not devices or not hosts.isdigit() or int(hosts) < 1:
        return topology
    domain = Domain(kind="other", id=group, size=len(devices) * int(hosts), members=[d.id for d in devices],
                    hosts=int(hosts))
    return topology.model_copy(update={"domains": [*topology.domains, domain]})


class GroupNamedByOwnHost(Healthy):
    DEFECT = (f"without {LEADER} the node names the fabric after its own host: the two hosts of one fabric each "
              "name a different group of 8")
    KILLED_BY = ("RAC202", "invariant a-group-without-its-variable-is-no-group")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        in_a_fabric(name)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        return fabric(host, devices, host.getenv(LEADER) or host.name)


class GroupNamedByConstant(Healthy):
    DEFECT = (f"without {LEADER} the fabric is called 'acme-fabric': every fabric of the cluster whose set-up left "
              "the leader out is one group to the scheduler")
    KILLED_BY = ("RAC202", "invariant a-group-without-its-variable-is-no-group")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        in_a_fabric(name)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        return fabric(host, devices, host.getenv(LEADER) or "acme-fabric")


for _cls in (GroupNamedByOwnHost, GroupNamedByConstant):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
