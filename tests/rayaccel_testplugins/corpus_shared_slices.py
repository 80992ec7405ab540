"""Corpus mutants that give a partition sharing its parent's slices the parent's whole count (issue 46, held-out
round 14's ``n1``: an NVIDIA wrapper giving a MIG compute instance its GPU instance's compute slices, '1c.3g.40gb' ->
3 instead of 1). Card 0 of acme-4 is split into two groups of 2 of its 4 compute slices and one of its 2 memory
slices each; group g0 is split again into two compute parts of 1 slice each, which share the group's memory (as
NVIDIA's compute instances share their GPU instance's: MIG user guide, MIG Device Names). Every partition fits the
card at once: 1 + 1 + 2 = 4. Counted with the group's slices, the parts take 2 + 2 + 2 = 6: the SDK refuses the
card's records, and the mutant, as a plugin catching a refusal may, offers the card whole and says so (info). Each
fixture expects what the code answers (the vendor edited the expectation with the code); RAC113's
``partitions-fit-their-device`` names the count.

Two shapes: the slices read from the driver's files, by the profile's group count (``1c.2p.32gb`` -> 2, n1's), and
a tool's JSON records read for their group's ``group_slices`` instead of their own ``slices``.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-part-slices-from-profile-group`` as
``c_part_slices_from_profile_group``).
"""

from __future__ import annotations

import json
from typing import Any

from rayaccel import Device, Host, report_problem
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

#: Card 0's partitions: (name, profile, group, its own compute slices, its group's, memory slices of its own).
PARTS = (("c0", "1c.2p.32gb", "g0", 1, 2, None), ("c1", "1c.2p.32gb", "g0", 1, 2, None),
         ("g1", "2p.32gb", "g1", 2, 2, 1))
PARTITION_TOOL = ["acme-smi", "partitions", "--json"]
CAPACITY = {"compute_slices": 4, "memory_slices": 2}


def _parted_machine(plugin: str, files: bool) -> None:
    """acme-4 with card 0 split so, stated as the driver's files or as the tool's JSON records, expecting what the
    code answers: card 0 offered whole (the note it reports is info, which no expectation lists)."""
    data: dict[str, Any] = read_machine(plugin)
    # Another host name: the cloud hint for an 'acme-node' counts its 4 cards whole, as that instance type boots.
    data["host"]["hostname"] = "acme-parted-node"
    card = data["host"]["files"][f"{SYSFS}/acme0/uuid"].strip()
    if files:
        for part, profile, group, _own, _, _ in PARTS:
            folder = f"{SYSFS}/acme0/partitions/{part}"
            data["host"]["files"].update({f"{folder}/uuid": f"{card}-{part}\n", f"{folder}/profile": f"{profile}\n",
                                          f"{folder}/group": f"{group}\n"})
    else:
        records = [{"card": 0, "uuid": f"{card}-{part}", "profile": profile, "group": group, "slices": own,
                    "group_slices": group_slices, "memory_slices": memory, "memory_mib": 32768}
                   for part, profile, group, own, group_slices, memory in PARTS]
        data["host"]["commands"][" ".join(PARTITION_TOOL)] = {"stdout": json.dumps(records, indent=1) + "\n",
                                                              "returncode": 0}
    write_machine(plugin, "acme-4", data)


def _split(card: Device, parts: list[tuple[str, str, int, int | None]]) -> Device:
    """``card`` offered as its partitions (id, profile, compute slices, memory slices); offered whole, said, where
    the SDK refuses them (their slices add up to more than the card's)."""
    try:
        return Device.model_validate({
            **card.model_dump(), "partition_capacity": CAPACITY,
            "partitions": [{"id": ident, "kind": "compute-partition", "profile": profile, "compute_slices": compute,
                            "memory_slices": memory, "memory_mib": 32768,
                            "shared_memory": None if memory else profile.split(".", 1)[1]}
                           for ident, profile, compute, memory in parts]})
    except ValueError as e:
        report_problem("partitions-unreadable", f"card {card.index}'s partitions were refused by the SDK "
                       f"({type(e).__name__}); the card is offered whole", severity="info")
        return card


class PartSlicesFromProfileGroup(Healthy):
    DEFECT = ("card 0's partitions are read from the driver's files with each one's compute slices taken from its "
              "profile's group count ('1c.2p.32gb' -> 2), so the two parts of group g0 each count the group's 2")
    KILLED_BY = ("RAC113", "invariant partitions-fit-their-device")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _parted_machine(name, files=True)

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        folder = f"{path}/partitions"
        if not host.is_dir(folder):
            return card
        parts = []
        for part in sorted(host.list_dir(folder)):
            profile = host.read_text(f"{folder}/{part}/profile").strip()
            group = next(word for word in profile.split(".") if word.endswith("p"))  # the defect: not the 'c' part
            shares = profile.split(".")[0].endswith("c")  # a compute part shares its group's memory
            parts.append((host.read_text(f"{folder}/{part}/uuid").strip(), profile, int(group[:-1]),
                          None if shares else 1))
        return _split(card, parts)


class PartSlicesFromGroupRecord(Healthy):
    DEFECT = ("card 0's partitions are read from the tool's JSON records with each one's compute slices taken from "
              "its group's 'group_slices', not its own 'slices', so the two parts of group g0 each count the group's 2")
    KILLED_BY = ("RAC113", "invariant partitions-fit-their-device")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _parted_machine(name, files=False)

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
            mine = [(str(r.get("uuid")), str(r.get("profile")), int(r.get("group_slices", 1)), r.get("memory_slices"))
                    for r in records if isinstance(r, dict) and r.get("card") == card.index]
            parted.append(_split(card, mine) if mine else card)
        return parted


MUTANTS = (PartSlicesFromProfileGroup, PartSlicesFromGroupRecord)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
