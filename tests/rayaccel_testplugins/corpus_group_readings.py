"""Corpus mutants naming a fabric's group by less than what its cards state (issue 46, held-out round 15's ``n2``: an
NVIDIA plugin naming its NVLink clique by the fabric's cluster UUID alone, ``cliqueId`` dropped, so two NVLink
partitions of one cluster became one domain). ACME's driver states each card's fabric as NVML does: the cluster's
UUID beside the partition the fabric manager put the card in. Cards of two partitions cannot reach each other's
memory; RAC202's ``a-device-of-another-group-is-no-member`` gives one card another partition at the host seam and
requires it out of the others' domain. Two shapes:

- ``c-fabric-by-cluster-alone``: the driver's files (``fabric/cluster_uuid``, ``fabric/partition_id`` under each
  card); the domain is every card of the cluster, named by the cluster;
- ``c-fabric-by-first-partition``: ``acme-smi fabric --json`` (one record a card, ``cluster`` and ``partitionId``);
  the domain is every card of the cluster, named by the cluster and the first card's partition.

Each fixture expects the code's own labels. Imported by tests/conformance/test_conformance_corpus.py
(``corpus.MUTANT_MODULES``); each is bound here under its name so a Ray node or a fresh process loads it.
"""

from __future__ import annotations

import json
from typing import Any

from rayaccel import Device, Domain, Host, Topology
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

CLUSTER = "3d8e5b21-94c7-4f0a-b6e2-7c1f9a0d4e58"
PARTITION = 7
FABRIC_TOOL = ["acme-smi", "fabric", "--json"]
KILLED_BY = ("RAC202", "invariant a-device-of-another-group-is-no-member")


def _cards(data: dict[str, Any]) -> list[int]:
    return sorted(int(path.split("/")[4].removeprefix("acme")) for path in data["host"]["files"]
                  if path.endswith("/uuid"))


def _in_a_fabric(plugin: str, files: bool, named: str) -> None:
    """The plugin's acme-4 with every card in partition ``PARTITION`` of cluster ``CLUSTER`` (as the driver's files
    or the tool's records), expecting the domain ``named`` of its 4 cards (written once)."""
    data = read_machine(plugin)
    cards = _cards(data)
    if files:
        if f"{SYSFS}/acme0/fabric/cluster_uuid" in data["host"]["files"]:
            return
        for card in cards:
            data["host"]["files"][f"{SYSFS}/acme{card}/fabric/cluster_uuid"] = f"{CLUSTER}\n"
            data["host"]["files"][f"{SYSFS}/acme{card}/fabric/partition_id"] = f"{PARTITION}\n"
    else:
        if " ".join(FABRIC_TOOL) in data["host"].get("commands", {}):
            return
        records = [{"card": card, "fabric": {"cluster": CLUSTER, "partitionId": PARTITION, "state": "registered"}}
                   for card in cards]
        data["host"].setdefault("commands", {})[" ".join(FABRIC_TOOL)] = {
            "stdout": json.dumps({"cards": records}) + "\n", "returncode": 0}
    data["expected"]["labels"].update({"rayaccel.io/scale-up-domain": named,
                                       "rayaccel.io/scale-up-domain-kind": "other",
                                       "rayaccel.io/scale-up-domain-size": str(len(cards))})
    write_machine(plugin, "acme-4", data)


def _with_domain(topology: Topology, named: str, members: list[str]) -> Topology:
    if len(members) < 2:
        return topology
    domain = Domain(kind="other", id=named, size=len(members), members=members)
    return topology.model_copy(update={"domains": [*topology.domains, domain]})


class FabricByClusterAlone(Healthy):
    DEFECT = ("the fabric's domain is every card of the cluster the driver names, called by the cluster alone: the "
              "partition each card is in (fabric/partition_id) is dropped, so two partitions are one domain")
    KILLED_BY = KILLED_BY

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _in_a_fabric(name, files=True, named=CLUSTER)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        topology = super().rayaccel_topology(host, devices)
        clusters: dict[str, list[str]] = {}
        for device in devices:
            path = f"{SYSFS}/acme{device.index}/fabric/cluster_uuid"
            if host.exists(path):
                clusters.setdefault(host.read_text(path).strip(), []).append(device.id)
        for cluster, members in clusters.items():
            topology = _with_domain(topology, cluster, members)  # the defect: the partition is not read
        return topology


class FabricByFirstPartition(Healthy):
    DEFECT = ("the fabric's domain is every card of the cluster acme-smi names, called by the cluster and the first "
              "card's partition: a card of another partition is put in the first card's")
    KILLED_BY = KILLED_BY

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _in_a_fabric(name, files=False, named=f"{CLUSTER}.{PARTITION}")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        topology = super().rayaccel_topology(host, devices)
        stdout = tool_output(host, FABRIC_TOOL)
        try:
            records = json.loads(stdout or "")["cards"]
        except (ValueError, KeyError, TypeError):
            return topology
        by_index = {d.index: d.id for d in devices}
        fabric = {int(r["card"]): r["fabric"] for r in records if int(r["card"]) in by_index}
        if not fabric:
            return topology
        first = fabric[min(fabric)]
        members = [by_index[i] for i in sorted(fabric) if fabric[i]["cluster"] == first["cluster"]]
        return _with_domain(topology, f"{first['cluster']}.{first['partitionId']}", members)  # the defect


GROUP_READING_MUTANTS = (FabricByClusterAlone, FabricByFirstPartition)
for _cls in GROUP_READING_MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
