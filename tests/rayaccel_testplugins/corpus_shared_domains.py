"""Corpus mutants naming a multi-host domain after the node instead of the group (issue 46, held-out round 14's e1:
a Neuron wrapper naming its UltraServer domain ``<group>-node<N>``, so each host of one group reported another id).
A scheduler places a job's workers on the hosts whose labels name the same domain: the hosts of one group must
report one id, each at its own place. RAC202's ``one-domain-one-id-on-its-hosts`` moves each number the host's
variables state and finds each id at one place only. Two shapes, each joining the ACME cards to a fabric of two hosts
that ACME's set-up names in the environment (the group's leader's host, the hosts in it, the node's worker number in
the job, whose place in its group is that number modulo the hosts, as AWS's UltraServer set-up numbers
``NEURON_GLOBAL_TOPOID``):

- ``c-fabric-id-with-its-place``: the id is the leader's host and the node's place in the group;
- ``c-fabric-id-with-its-worker``: the id is the leader's host and the node's worker number in the job.

Each fixture expects the code's own labels. Imported by tests/conformance/test_conformance_corpus.py
(``corpus.MUTANT_MODULES``); each is bound here under its name so a Ray node or a fresh process loads it.
"""

from __future__ import annotations

from rayaccel import Device, Domain, Host, Topology
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import Healthy, add_import_defect, read_machine, write_machine

LEADER, HOSTS, WORKER = "ACME_FABRIC_LEADER", "ACME_FABRIC_HOSTS", "ACME_FABRIC_WORKER"
LEADER_HOST = "acme-node-0.fabric.example"
KILLED_BY = ("RAC202", "invariant one-domain-one-id-on-its-hosts")


def joined(host: Host) -> tuple[str, int, int] | None:
    """(leader, hosts, worker) as the set-up states them, or None where one is missing or no number."""
    leader = (host.getenv(LEADER) or "").strip()
    hosts, worker = (host.getenv(HOSTS) or "").strip(), (host.getenv(WORKER) or "").strip()
    if not leader or not hosts.isdigit() or int(hosts) < 2 or not worker.isdigit():
        return None
    return leader, int(hosts), int(worker)


def group_id(leader: str, hosts: int, worker: int) -> str:
    """The group's own id: the job's first group is named after its leader, the k-th after the leader and k."""
    k = worker // hosts
    return leader if k == 0 else f"{leader}.{k}"


def fabric(host: Host, devices: list[Device], named: str | None) -> Topology:
    """ACME's topology with the fabric domain ``named`` (none without a set-up)."""
    topology = acme.rayaccel_topology(host, devices)
    setup = joined(host)
    if setup is None or named is None or not devices:
        return topology
    _, hosts, worker = setup
    domain = Domain(kind="other", id=named, size=len(devices) * hosts, members=[d.id for d in devices],
                    hosts=hosts, host_index=worker % hosts)
    return topology.model_copy(update={"domains": [*topology.domains, domain]})


def in_a_fabric(plugin: str, named: str) -> None:
    """The plugin's fixture as worker 1 of a two-host fabric, expecting the domain ``named`` (written once)."""
    data = read_machine(plugin)
    if data["host"].get("env", {}).get(LEADER):
        return
    data["host"]["env"] = {**(data["host"].get("env") or {}), LEADER: LEADER_HOST, HOSTS: "2", WORKER: "1"}
    data["expected"]["labels"].update({"rayaccel.io/scale-up-domain": named,
                                       "rayaccel.io/scale-up-domain-kind": "other",
                                       "rayaccel.io/scale-up-domain-size": "8"})
    write_machine(plugin, "acme-4", data)


class FabricIdWithItsPlace(Healthy):
    DEFECT = ("the fabric's id is the leader's host and the node's place in the group ('<leader>-1'): the two hosts "
              "of one fabric each name another group")
    KILLED_BY = KILLED_BY

    def __init__(self, name: str) -> None:
        super().__init__(name)
        in_a_fabric(name, f"{LEADER_HOST}-1")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        setup = joined(host)
        return fabric(host, devices, f"{setup[0]}-{setup[2] % setup[1]}" if setup else None)


class FabricIdWithItsWorker(Healthy):
    DEFECT = ("the fabric's id is the leader's host and the node's worker number in the job ('<leader>.w1'): every "
              "host names a group of its own")
    KILLED_BY = KILLED_BY

    def __init__(self, name: str) -> None:
        super().__init__(name)
        in_a_fabric(name, f"{LEADER_HOST}.w1")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        setup = joined(host)
        return fabric(host, devices, f"{setup[0]}.w{setup[2]}" if setup else None)


SHARED_DOMAIN_MUTANTS = (FabricIdWithItsPlace, FabricIdWithItsWorker)
for _cls in SHARED_DOMAIN_MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
