"""Corpus mutants publishing an on/off attribute that contradicts the switch the vendor states under the same name
(issue 46, mutation round 10's ``nvidia.discovery:231``: the NVIDIA plugin's ``mig_mode`` attribute, published to
DRA, inverted, where NVML's ``nvmlDeviceGetMigMode`` states the mode as ``NVML_DEVICE_MIG_ENABLE`` 1 or
``_DISABLE`` 0). RAC216's ``an-attribute-holds-its-field`` compared text attributes with text fields only, and the
vendor states a switch as a number or a boolean, so no check read it; no fixture expects the attribute. Two shapes:
a configuration library's record per card (by uuid) stating ``persistence_mode`` 1 or 0, read the way a C return
code is (0 taken for on); and ``acme-smi config --json`` stating ``ecc_mode`` and ``persistence_mode`` as booleans
side by side, ``ecc_mode`` read from its neighbour.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-persistence-zero-as-on`` as ``c_persistence_zero_as_on``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json
from typing import Any

from rayaccel import Device, Host, LibraryAdapter, LibraryUnavailable
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

LIBRARY_MACHINE = "acme-4-config-library"
JSON_MACHINE = "acme-4-config-json"
CONFIG_ARGV = ("acme-smi", "config", "--json")
#: Cards 0 and 1 with persistence mode on, 2 and 3 off; ECC on every card but 3 (the other way round from them).
PERSISTENCE = (1, 1, 0, 0)
ECC = (True, True, True, False)


class CardConfig:
    """ACME's configuration library, simulated: per card (by index), its record (uuid, switches)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.cards: dict[str, dict[str, Any]] = data.get("cards") or {}

    def record(self, index: int) -> dict[str, Any] | None:
        return self.cards.get(str(index))


def _no_real_library() -> Any:
    raise LibraryUnavailable("acmeconf: simulated only")


ACME_CONFIG = LibraryAdapter("acmeconf", _no_real_library, CardConfig)


def _ids(data: dict[str, Any]) -> list[str]:
    return [data["host"]["files"][f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]


def add_library_machine(plugin: str) -> None:
    """The plugin's acme-4 with each card's persistence mode in ACME's configuration library (1 on, 0 off)."""
    data = read_machine(plugin)
    data["name"], data["description"] = LIBRARY_MACHINE, f"{data['description']}, switches in acmeconf"
    data["host"]["libraries"] = {**(data["host"].get("libraries") or {}), "acmeconf": {"cards": {
        str(i): {"uuid": card, "persistence_mode": PERSISTENCE[i]} for i, card in enumerate(_ids(data))}}}
    write_machine(plugin, LIBRARY_MACHINE, data)


def add_json_machine(plugin: str) -> None:
    """The plugin's acme-4 with ``acme-smi config --json`` stating each card's switches as booleans."""
    data = read_machine(plugin)
    data["name"], data["description"] = JSON_MACHINE, f"{data['description']}, acme-smi config --json"
    records = [{"uuid": card, "ecc_mode": ECC[i], "persistence_mode": bool(PERSISTENCE[i])}
               for i, card in enumerate(_ids(data))]
    data["host"]["commands"] = {**(data["host"].get("commands") or {}),
                                " ".join(CONFIG_ARGV): {"stdout": json.dumps(records) + "\n", "returncode": 0}}
    write_machine(plugin, JSON_MACHINE, data)


def _word(on: bool) -> str:
    return "enabled" if on else "disabled"


class PersistenceZeroAsOn(Healthy):
    DEFECT = ("a card's persistence_mode attribute from the configuration library's enum read as a C return code: "
              "0 taken for enabled, where the library states 1 for on")
    KILLED_BY = ("RAC216", "invariant an-attribute-holds-its-field")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_library_machine(name)

    def on(self, value: int) -> bool:
        return value == 0  # the defect: 1 is on

    def rayaccel_discover(self, host: Host) -> list[Device]:
        devices = super().rayaccel_discover(host)
        try:
            config = host.library(ACME_CONFIG)
        except LibraryUnavailable:
            return devices
        found = []
        for device in devices:
            record = config.record(device.index)
            if record is not None and isinstance(record.get("persistence_mode"), int):
                device = device.model_copy(update={"attributes": {
                    **device.attributes, "persistence_mode": _word(self.on(record["persistence_mode"]))}})
            found.append(device)
        return found


class EccModeFromNeighbour(Healthy):
    DEFECT = ("a card's ecc_mode attribute read from the persistence_mode switch beside it in acme-smi's JSON record "
              "(the fields taken in the wrong order)")
    KILLED_BY = ("RAC216", "invariant an-attribute-holds-its-field")
    #: The field ecc_mode is read from (the defect: persistence_mode).
    ecc_field = "persistence_mode"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_json_machine(name)

    def rayaccel_discover(self, host: Host) -> list[Device]:
        devices = super().rayaccel_discover(host)
        try:
            records = {str(r["uuid"]): r for r in json.loads(tool_output(host, CONFIG_ARGV) or "")}
        except (ValueError, KeyError, TypeError):
            return devices
        return [d.model_copy(update={"attributes": {
            **d.attributes, "ecc_mode": _word(bool(records[d.id][self.ecc_field]))}}) if d.id in records else d
            for d in devices]


for _cls in (PersistenceZeroAsOn, EccModeFromNeighbour):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
