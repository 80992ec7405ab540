"""Corpus mutants sizing a multi-host slice otherwise than the chips the machine states twice (held-out round 19's
``p2``: TPU v6e taken for a two-core generation, a v6e-256 slice, topology ``16x16``, sized 128). Each fixture
expects the code's labels, so only RAC202's ``a-slice-holds-the-chips-its-topology-states`` kills them. Two shapes,
neither a per-chip factor: a tool's JSON slice record whose 3-D topology is read as 2-D (``2x4x4`` taken for 8
cards), and a driver's slice file whose slice is sized by the cards this host lists (a 16-card slice said to be 4).
In both the machine names the slice, states its topology and a type whose count agrees with it; the right reader
sizes the slice by the topology's product.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-slice-topology-read-flat`` as ``c_slice_topology_read_flat``) so a Ray node loads it by
``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from rayaccel import Device, Domain, Host, Topology
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

SLICE_ARGV = ("acme-smi", "slice", "--json")
#: The tool's slice record: 8 hosts of 4 cards, a 2x4x4 torus of 32 single-core cards, its type counting them.
SLICE_ID = "acme-slice-a"
SLICE_RECORD = {"slice_id": SLICE_ID, "accelerator_type": "acme-x1-32", "topology": "2x4x4", "worker": 0}
SLICE_FILE = f"{SYSFS}/slice/info"
#: The driver's slice file: 4 hosts of 4 cards, a 4x4 mesh, the node the second worker.
SLICE_INFO = {"SLICE_NAME": "acme-pod-b", "SLICE_TYPE": "acme-r2-16", "SLICE_TOPOLOGY": "4x4", "WORKER": "1"}


def _slice_machine(plugin: str, machine: str, what: str, update: dict[str, Any], slice_id: str, size: int) -> None:
    """acme-4 with the slice the plugin reads (``update`` to its host), expecting the plugin's labels for it: the
    slice ``slice_id`` of ``size`` cards (the code's answer)."""
    data: dict[str, Any] = read_machine(plugin)
    data["name"], data["description"] = machine, f"{data['description']}, one host of a slice ({what})"
    for section, entries in update.items():
        data["host"][section] = {**(data["host"].get(section) or {}), **entries}
    data["expected"]["labels"].update({"rayaccel.io/scale-up-domain": slice_id,
                                       "rayaccel.io/scale-up-domain-kind": "other",
                                       "rayaccel.io/scale-up-domain-size": str(size)})
    data["faults"], data["perturbations"] = [], []
    write_machine(plugin, machine, data)


class SliceTopologyReadFlat(Healthy):
    DEFECT = ("a slice's card count read from its topology's first two dimensions ('rows x columns', as a 2-D mesh "
              "is written): acme-smi's 2x4x4 torus of 32 cards, its type acme-x1-32, sized 8")
    KILLED_BY = ("RAC202", "invariant a-slice-holds-the-chips-its-topology-states")
    MACHINE = "acme-4-slice-json"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        stdout = json.dumps(SLICE_RECORD) + "\n"
        commands = {" ".join(SLICE_ARGV): {"stdout": stdout, "returncode": 0}}
        _slice_machine(name, self.MACHINE, "acme-smi slice --json", {"commands": commands}, SLICE_ID, 8)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        topology = super().rayaccel_topology(host, devices)
        try:
            record = json.loads(tool_output(host, SLICE_ARGV) or "")
            dims = [int(n) for n in str(record["topology"]).split("x")]
            slice_id, worker = str(record["slice_id"]), int(record["worker"])
        except (ValueError, KeyError, TypeError):
            return topology
        if not devices:
            return topology
        size = math.prod(dims[:2])  # the defect: a third dimension dropped
        domain = Domain(kind="other", id=slice_id, size=size, members=[d.id for d in devices],
                        hosts=max(1, size // len(devices)), host_index=worker)
        return topology.model_copy(update={"domains": [domain]})


class SliceSizedByOwnCards(Healthy):
    DEFECT = ("a slice sized by the cards this host lists ('the domain is what the node sees'), where the driver's "
              "slice file states its 4x4 topology and its type acme-r2-16: a 16-card slice said to be 4")
    KILLED_BY = ("RAC202", "invariant a-slice-holds-the-chips-its-topology-states")
    MACHINE = "acme-4-slice-file"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        info = "".join(f"{key}={value}\n" for key, value in SLICE_INFO.items())
        _slice_machine(name, self.MACHINE, "the driver's slice file", {"files": {SLICE_FILE: info}},
                       SLICE_INFO["SLICE_NAME"], 4)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        topology = super().rayaccel_topology(host, devices)
        if not devices or not host.exists(SLICE_FILE):
            return topology
        info = dict(line.split("=", 1) for line in host.read_text(SLICE_FILE).splitlines() if "=" in line)
        if "SLICE_NAME" not in info:
            return topology
        domain = Domain(kind="other", id=info["SLICE_NAME"].strip(), size=len(devices),  # the defect
                        members=[d.id for d in devices])
        return topology.model_copy(update={"domains": [domain]})


for _cls in (SliceTopologyReadFlat, SliceSizedByOwnCards):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
