"""Corpus mutants that offer two partition profiles under one resource (issue 46, held-out round 13's ``n1``: an NVIDIA
wrapper cutting NVIDIA's option off a MIG profile, 'MIG 1g.10gb+me' -> '1g.10gb'). Card 0 of acme-4 runs in a
two-partition mode: one plain partition and one with the card's media engine (as NVIDIA's '+me' instance beside a
plain one of the same size). Both have the same slices and memory, so RAC216's sizes pass; the machine names them
apart, and RAC216's ``one-resource-one-profile`` names the merge. Each fixture expects what the code answers (the
vendor edited the expectation with the code).

Two shapes: the profile read from the driver's file with its option split off at '+' (n1's), and the profile taken
from a tool's JSON record by a pattern of its size alone (``<N>p.<M>gb``), which leaves the option out.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-partition-option-split-off`` as ``c_partition_option_split_off``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from rayaccel import Device, Host, report_problem
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

#: Card 0's two partitions: the plain one and the one with the media engine, each half the card.
PARTITIONS = (("p0", "1p.32gb"), ("p1", "1p.32gb+me"))
PARTITION_TOOL = ["acme-smi", "partitions", "--json"]


def _partitioned_machine(plugin: str, files: bool) -> None:
    """acme-4 with card 0 in its two-partition mode, stated as the driver's files or as the tool's JSON records,
    expecting what the code answers: the two partitions under one resource, card 0 offered only as them."""
    data: dict[str, Any] = read_machine(plugin)
    # Another host name: the cloud hint for an 'acme-node' counts its 4 cards whole, as that instance type boots.
    data["host"]["hostname"] = "acme-parted-node"
    card = data["host"]["files"][f"{SYSFS}/acme0/uuid"].strip()
    records = [{"card": 0, "uuid": f"{card}-{part}", "profile": profile, "memory_mib": 32768}
               for part, profile in PARTITIONS]
    if files:
        for part, profile in PARTITIONS:
            folder = f"{SYSFS}/acme0/partitions/{part}"
            data["host"]["files"].update({f"{folder}/uuid": f"{card}-{part}\n", f"{folder}/profile": f"{profile}\n"})
    else:
        data["host"]["commands"][" ".join(PARTITION_TOOL)] = {"stdout": json.dumps(records, indent=1) + "\n",
                                                              "returncode": 0}
    resource = next(k for k in data["expected"]["resources"] if not k.startswith("accelerator_type:"))
    merged = {f"{resource}_COMPUTE_PARTITION_1p.32gb": 2.0}
    data["expected"]["resources"] = {**data["expected"]["resources"], resource: 3.0, **merged}
    data["expected"]["labels"].update({"rayaccel.io/partition-kind": "compute-partition",
                                       "rayaccel.io/partition-compute-partition-1p.32gb": "2"})
    for fault in data["faults"]:
        if fault["expected"].get("resources"):
            fault["expected"]["resources"] = {**fault["expected"]["resources"], resource: 2.0, **merged}
    write_machine(plugin, "acme-4", data)


def _split(card: Device, partitions: list[tuple[str, str]]) -> Device:
    """``card`` offered as its partitions (id, profile), each half of it."""
    return Device.model_validate({
        **card.model_dump(), "partition_capacity": {"compute_slices": 2, "memory_slices": 2},
        "partitions": [{"id": ident, "kind": "compute-partition", "profile": profile, "compute_slices": 1,
                        "memory_slices": 1, "memory_mib": (card.memory_mib or 0) // 2}
                       for ident, profile in partitions]})


class PartitionOptionSplitOff(Healthy):
    DEFECT = ("card 0's partitions are read from the driver's files with the profile's option split off at '+' "
              "('1p.32gb+me' -> '1p.32gb'): the media-engine partition and the plain one share one resource")
    KILLED_BY = ("RAC216", "invariant one-resource-one-profile")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _partitioned_machine(name, files=True)

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        folder = f"{path}/partitions"
        if not host.is_dir(folder):
            return card
        parts = sorted(host.list_dir(folder))
        return _split(card, [(host.read_text(f"{folder}/{p}/uuid").strip(),
                              host.read_text(f"{folder}/{p}/profile").strip().split("+")[0]) for p in parts])


#: A partition's size as the tool writes it: the slices, then the memory.
_SIZE = re.compile(r"\d+p\.\d+gb")


class PartitionProfileFromSize(Healthy):
    DEFECT = ("card 0's partitions are read from the tool's JSON records with the profile taken as the pattern of "
              "its size ('<N>p.<M>gb'), which leaves the option out: the media-engine partition and the plain one "
              "share one resource")
    KILLED_BY = ("RAC216", "invariant one-resource-one-profile")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _partitioned_machine(name, files=False)

    def rayaccel_discover(self, host: Host) -> list[Device]:
        cards = super().rayaccel_discover(host)
        stdout = tool_output(host, PARTITION_TOOL, timeout=1.0)  # once a discovery: a hung tool costs 1 s
        try:
            records = json.loads(stdout) if stdout else []
        except ValueError as e:  # a cut or garbled answer: said, and no partition taken from it
            report_problem("partitions-unreadable", f"{' '.join(PARTITION_TOOL)} printed no JSON ({e}); the cards "
                           "are offered whole")
            records = []
        parted = []
        for card in cards:
            mine = [(str(r.get("uuid")), match.group(0)) for r in records if isinstance(r, dict)
                    and r.get("card") == card.index and (match := _SIZE.search(str(r.get("profile", "")))) is not None]
            parted.append(_split(card, mine) if mine else card)
        return parted


MUTANTS = (PartitionOptionSplitOff, PartitionProfileFromSize)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
