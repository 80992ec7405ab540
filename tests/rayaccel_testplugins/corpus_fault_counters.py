"""Corpus mutants that read two error counters from each other's fields (issue 46, held-out round 8's ``j2``:
corrected and uncorrected ECC errors swapped): every fixture's counters are 0, and scaling a 0 leaves it 0, so only a
fault raising one counter tells them apart; RAC223's ``a-fault-moves-its-own-metric`` sees the raised number in the
other counter's metric. Two shapes: a JSON record's ``corrected``/``uncorrected`` keys swapped, and a CSV row's
``ecc.corrected``/``ecc.uncorrected`` cells taken by the wrong position.

Each mutant's acme-4 has ``acme-smi`` listing each card's ECC counters, all 0, and a fault ``corrected-2`` raising card
2's corrected count to 12, as a card correcting errors does (healthy). Imported by
tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its name
(``c-ecc-keys-swapped`` as ``c_ecc_keys_swapped``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from rayaccel import Device, Host, MetricSample, malformed
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

ECC_JSON = ("acme-smi", "--json", "--query-ecc")
ECC_CSV = ("acme-smi", "--query-ecc=index,uuid,ecc.corrected,ecc.uncorrected", "--format=csv,noheader")
#: Card 2's corrected count under the machine's fault.
RAISED = 12


def _json_output(ids: list[str], corrected: list[int]) -> str:
    cards = [{"index": i, "uuid": ids[i], "ecc": {"corrected": corrected[i], "uncorrected": 0}} for i in range(4)]
    return json.dumps({"cards": cards}, indent=1) + "\n"


def _csv_output(ids: list[str], corrected: list[int]) -> str:
    return "".join(f"{i}, {ids[i]}, {corrected[i]}, 0\n" for i in range(4))


def _add_ecc_tool(plugin: str, command: tuple[str, ...], render: Callable[[list[str], list[int]], str]) -> None:
    """The plugin's acme-4 with ``command`` printing each card's ECC counters (``render``), all 0, and a fault
    raising card 2's corrected count (on acme-4 itself: the SKU's metrics are the same on every machine); once,
    though every process that imports the corpus calls it again (a fault appended twice is built twice)."""
    data = read_machine(plugin)
    ids = [data["host"]["files"][f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]
    line = " ".join(command)
    if line in (data["host"].get("commands") or {}):
        return
    data["description"] = f"{data['description']}, ECC counters listed by acme-smi"
    data["host"]["commands"] = {**(data["host"].get("commands") or {}), line: {"stdout": render(ids, [0] * 4)}}
    data["perturbations"] = []  # the tool names each card by its uuid: renaming the driver's files contradicts it
    data["faults"] = [*(data.get("faults") or []), {
        "name": "corrected-2", "description": "card 2 corrected 12 memory errors (still healthy)", "kind": "ecc",
        "patch": {"commands": {line: {"stdout": render(ids, [0, 0, RAISED, 0])}}},
        "expected": {"health": {ids[2]: "healthy"}}}]
    write_machine(plugin, "acme-4", data)


def _with_ecc(plugin: Healthy, host: Host, devices: list[Device], counts: dict[int, tuple[int, int]],
              ) -> list[MetricSample]:
    """The healthy samples of each card and, where the tool gave them, its (corrected, uncorrected) counts."""
    out = []
    for device in devices:
        out += Healthy.samples(plugin, host, device)
        if device.index in counts:
            corrected, uncorrected = counts[device.index]
            out += [MetricSample(device=device.id, name="ecc_errors_corrected", unit="count", value=corrected),
                    MetricSample(device=device.id, name="ecc_errors_uncorrected", unit="count", value=uncorrected)]
    return out


def _count(value: object, what: str, card: int) -> int | None:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**53:
        malformed(what, value, "a whole number", where=f"card {card}")
        return None
    return value


class EccKeysSwapped(Healthy):
    DEFECT = ("acme-smi's ECC record read with its keys swapped: ecc_errors_corrected from 'uncorrected', "
              "ecc_errors_uncorrected from 'corrected' (both 0 on every fixture)")
    KILLED_BY = ("RAC223", "invariant a-fault-moves-its-own-metric")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_ecc_tool(name, ECC_JSON, _json_output)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        stdout = tool_output(host, ECC_JSON)
        counts: dict[int, tuple[int, int]] = {}
        try:
            cards = json.loads(stdout)["cards"] if stdout is not None else []
        except (ValueError, KeyError, TypeError):
            malformed(" ".join(ECC_JSON), "its output", "JSON with an ECC record per card")
            cards = []
        for card in cards:
            index, ecc = card.get("index"), card.get("ecc") or {}
            # the defect: each count from the other's key
            corrected = _count(ecc.get("uncorrected"), "ecc.uncorrected", index)
            uncorrected = _count(ecc.get("corrected"), "ecc.corrected", index)
            if isinstance(index, int) and corrected is not None and uncorrected is not None:
                counts[index] = (corrected, uncorrected)
        return _with_ecc(self, host, devices, counts)


class EccCellsSwapped(Healthy):
    DEFECT = ("acme-smi's ECC CSV read by the wrong positions: ecc_errors_corrected from the ecc.uncorrected cell "
              "(the 4th), ecc_errors_uncorrected from ecc.corrected (the 3rd; both 0 on every fixture)")
    KILLED_BY = ("RAC223", "invariant a-fault-moves-its-own-metric")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_ecc_tool(name, ECC_CSV, _csv_output)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        counts: dict[int, tuple[int, int]] = {}
        for line in (tool_output(host, ECC_CSV) or "").splitlines():
            cells = [cell.strip() for cell in line.split(",")]
            if len(cells) != 4 or not cells[0].isdigit():
                if line.strip():
                    malformed(" ".join(ECC_CSV), line, "index, uuid, ecc.corrected, ecc.uncorrected")
                continue
            index = int(cells[0])
            corrected, uncorrected = _count(cells[3], "ecc.uncorrected", index), _count(cells[2], "ecc.corrected",
                                                                                          index)  # the defect
            if corrected is not None and uncorrected is not None:
                counts[index] = (corrected, uncorrected)
        return _with_ecc(self, host, devices, counts)


for _cls in (EccKeysSwapped, EccCellsSwapped):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
