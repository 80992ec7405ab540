"""Corpus mutants that name a partitioned card by one of its partitions' uuids (issue 46, held-out round 16's ``a2``:
an AMD wrapper naming a partitioned GPU whose uuid is not in amdsmi's form by its first partition's uuid). Card 0 of
acme-4 runs in a two-partition mode: each partition has the index its runtime takes (4 and 5, after the whole cards)
and a uuid of its own, stated as the driver's files; the driver lists no links of a partitioned card. Each fixture
expects what the code answers (the vendor edited the expectation with the code).
RAC113's ``a-device-is-none-of-its-partitions`` names a card whose id is one of its partitions' uuids.

Two shapes: the card named by its first partition's uuid file ("the partition that answers for the card"), and the
card named by the uuid of the partition folder read last (a loop's variable kept past the loop, which reads each
partition's files itself).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-card-id-from-first-partition`` as
``c_card_id_from_first_partition``).
"""

from __future__ import annotations

import json
from typing import Any

from rayaccel import Device, Host
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, write_machine

#: Card 0's partitions: the folder the driver writes each in, the index its runtime takes, its uuid's last part.
PARTITIONS = (("p0", "4", "a"), ("p1", "5", "b"))
PROFILE = "1p.32gb"


def _partitioned_machine(plugin: str, named_by: str | None) -> None:
    """acme-4 with card 0 in its two-partition mode, stated as the driver's files (the driver lists no links of a
    partitioned card, and no reordered boot is stated), expecting what the plugin answers: card 0 offered only as its
    two partitions, under the uuid of partition ``named_by`` where it names it so."""
    data: dict[str, Any] = read_machine(plugin)
    data["perturbations"] = []
    data["host"]["hostname"] = "acme-parted-node"  # an 'acme-node' boots its 4 cards whole (the cloud hint)
    files = data["host"]["files"]
    card = files[f"{SYSFS}/acme0/uuid"].strip()
    for path in [p for p in files if "/links/" in p and (p.startswith(f"{SYSFS}/acme0/") or p.endswith(card))]:
        del files[path]
    uuids = {folder: f"ACMP-{card[5:-1]}{tail}" for folder, _, tail in PARTITIONS}
    for folder, index, _ in PARTITIONS:
        base = f"{SYSFS}/acme0/partitions/{folder}"
        files.update({f"{base}/uuid": f"{uuids[folder]}\n", f"{base}/index": f"{index}\n",
                      f"{base}/profile": f"{PROFILE}\n"})
    expected = data["expected"]
    resource = next(k for k in expected["resources"] if not k.startswith("accelerator_type:"))
    parts = {f"{resource}_COMPUTE_PARTITION_{PROFILE}": 2.0}
    expected["resources"] = {**expected["resources"], resource: 3.0, **parts}
    expected["links"] = 3
    expected["labels"].update({"acme.example.com/mesh": "partial", "rayaccel.io/partition-kind": "compute-partition",
                               f"rayaccel.io/partition-compute-partition-{PROFILE}": "2"})
    for fault in data["faults"]:
        if fault["expected"].get("resources"):
            fault["expected"]["resources"] = {**fault["expected"]["resources"], resource: 2.0, **parts}
    if named_by is not None:  # the vendor's expectations edited with the code: card 0 under that uuid
        data["expected"] = json.loads(json.dumps(data["expected"]).replace(card, uuids[named_by]))
        data["faults"] = json.loads(json.dumps(data["faults"]).replace(card, uuids[named_by]))
    write_machine(plugin, "acme-4", data)


def _partitions(host: Host, path: str) -> list[dict[str, str]]:
    """The card's partitions as the driver's files state them, in the driver's order."""
    folder = f"{path}/partitions"
    return [{key: host.read_text(f"{folder}/{part}/{key}").strip() for key in ("index", "uuid", "profile")}
            for part in (sorted(host.list_dir(folder)) if host.is_dir(folder) else [])]


def _split(card: Device, partitions: list[dict[str, str]], ident: str) -> Device:
    """``card`` offered as its partitions, each half of it with its uuid as an attribute, under the id ``ident``."""
    return Device.model_validate({
        **card.model_dump(), "id": ident, "partition_capacity": {"compute_slices": 2, "memory_slices": 2},
        "partitions": [{"id": p["index"], "kind": "compute-partition", "profile": p["profile"], "compute_slices": 1,
                        "memory_slices": 1, "memory_mib": (card.memory_mib or 0) // 2,
                        "attributes": {"uuid": p["uuid"]}} for p in partitions]})


class PartitionedCards(Healthy):
    """A card the driver lists partitions of is offered as them, under its own id: the control of the two shapes
    (no defect; not in the corpus)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _partitioned_machine(name, None)

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        partitions = _partitions(host, path)
        return _split(card, partitions, card.id) if partitions else card


class CardIdFromFirstPartition(Healthy):
    DEFECT = ("a partitioned card is named by its first partition's uuid (the partition that answers for the card): "
              "the card and that partition share one id")
    KILLED_BY = ("RAC113", "invariant a-device-is-none-of-its-partitions")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _partitioned_machine(name, PARTITIONS[0][0])

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        partitions = _partitions(host, path)
        return _split(card, partitions, partitions[0]["uuid"]) if partitions else card


class CardIdFromLastFolder(Healthy):
    DEFECT = ("a partitioned card is named by the uuid of the partition folder read last (a loop's variable kept "
              "past the loop that reads the folders): the card and that partition share one id")
    KILLED_BY = ("RAC113", "invariant a-device-is-none-of-its-partitions")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _partitioned_machine(name, PARTITIONS[-1][0])

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        folder = f"{path}/partitions"
        if not host.is_dir(folder):
            return card
        ident, partitions = card.id, []
        for part in sorted(host.list_dir(folder)):
            ident = host.read_text(f"{folder}/{part}/uuid").strip()
            partitions.append({"id": host.read_text(f"{folder}/{part}/index").strip(), "kind": "compute-partition",
                               "profile": host.read_text(f"{folder}/{part}/profile").strip(), "compute_slices": 1,
                               "memory_slices": 1, "memory_mib": (card.memory_mib or 0) // 2,
                               "attributes": {"uuid": ident}})
        return Device.model_validate({**card.model_dump(), "id": ident, "partitions": partitions,
                                      "partition_capacity": {"compute_slices": 2, "memory_slices": 2}})


MUTANTS = (CardIdFromFirstPartition, CardIdFromLastFolder)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
