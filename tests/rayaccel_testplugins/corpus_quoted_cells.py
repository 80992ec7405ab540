"""Corpus mutants that read a tool's CSV by splitting each line on every comma, not with a CSV reader (issue 46,
held-out round 8's ``c1``): no fixture's cell holds a comma, so both read every fixture right; a tool asked for
``--format=csv`` quotes a cell holding one (RFC 4180: ``0, "ACME Roadrunner R1, rev B", 0000:10:00.0``), and RAC225
writes the middle card's product name so (``invariant quoted-cell-keeps-the-row``). Two shapes: a row of the wrong
number of cells skipped (the card lost), and cells taken by position with the quotes stripped (the name cut at the
comma, the card kept).

Each mutant reads the product names from ``acme-smi`` on a machine of its own beside acme-4 (``acme-4-names``: the
tool lists each card's index, product name and PCI address; the driver's files give no product name); on acme-4
(the tool not installed) it reads the driver's files as the healthy plugin does. Imported by
tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its name
(``c-csv-row-split-on-commas`` as ``c_csv_row_split_on_commas``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

from collections.abc import Callable

from rayaccel import Device, Host, report_problem
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

NAMES = ("acme-smi", "--query-cards=index,name,pci.bus_id", "--format=csv,noheader")


def _add_names_machine(plugin: str) -> None:
    """The plugin's acme-4 as ``acme-4-names``: acme-smi lists each card's product name; no product file."""
    data = read_machine(plugin)
    files = data["host"]["files"]
    rows = []
    for i in range(4):
        rows.append(f"{i}, {files.pop(f'{SYSFS}/acme{i}/product').strip()}, "
                    f"{files[f'{SYSFS}/acme{i}/pci_bus_id'].strip()}\n")
    data["name"] = "acme-4-names"
    data["description"] = f"{data['description']}, the product names listed by acme-smi"
    data["host"]["commands"] = {**(data["host"].get("commands") or {}), " ".join(NAMES): {"stdout": "".join(rows)}}
    write_machine(plugin, "acme-4-names", data)


def tool_names(host: Host, parse: Callable[[str], dict[int, str]]) -> dict[int, str]:
    """Each card's product name by index, as ``parse`` reads acme-smi's CSV; none where the tool is missing."""
    stdout = tool_output(host, NAMES)
    return {} if stdout is None else parse(stdout)


def named_device(plugin: Healthy, names: dict[int, str], host: Host, path: str, driver: str | None) -> Device:
    """The healthy reader's device, its product name the tool's where the driver's files give none."""
    if host.exists(f"{path}/product"):
        return Healthy.device(plugin, host, path, driver)
    index = int(path.rsplit("acme", 1)[1])
    if index not in names:
        raise FileNotFoundError(f"{path}: acme-smi lists no product name")
    return Device(index=index, id=host.read_text(f"{path}/uuid").strip(), product_name=names[index],
                  memory_mib=acme._number(host, f"{path}/memory_mib"),
                  pci_bus_id=host.read_text(f"{path}/pci_bus_id").strip() or None,
                  numa_node=acme._number(host, f"{path}/numa_node"), driver_version=driver)


def split_rows(stdout: str) -> dict[int, str]:
    found = {}
    for line in stdout.splitlines():
        cells = [cell.strip() for cell in line.split(",")]  # the defect: no CSV reader
        if len(cells) != 3:
            report_problem("malformed-output", f"acme-smi line {line[:40]!r} has {len(cells)} cells, not 3")
            continue
        found[int(cells[0])] = cells[1]
    return found


def cells_by_position(stdout: str) -> dict[int, str]:
    rows = [line.split(",") for line in stdout.splitlines() if line.strip()]  # the defect: no CSV reader
    return {int(row[0]): row[1].strip().strip('"') for row in rows if len(row) >= 3}


class CsvRowSplitOnCommas(Healthy):
    DEFECT = ("acme-smi's CSV read by splitting each line on every comma, a line of another number of cells skipped: "
              "a product name holding a comma, quoted as CSV quotes it, makes its card's line 4 cells (the card lost)")
    KILLED_BY = ("RAC225", "invariant quoted-cell-keeps-the-row")
    PARSE = staticmethod(split_rows)

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.names: dict[int, str] = {}
        _add_names_machine(name)

    def rayaccel_discover(self, host: Host) -> list[Device]:
        self.names = tool_names(host, self.PARSE)
        return Healthy.rayaccel_discover(self, host)

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        return named_device(self, self.names, host, path, driver)


class CsvCellsByPosition(Healthy):
    DEFECT = ("acme-smi's CSV read by splitting each line on every comma and taking cells by position, quotes "
              "stripped: a product name holding a comma is cut at it ('\"ACME Roadrunner R1' becomes the name)")
    KILLED_BY = ("RAC225", "invariant quoted-cell-keeps-the-row")
    PARSE = staticmethod(cells_by_position)

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.names: dict[int, str] = {}
        _add_names_machine(name)

    def rayaccel_discover(self, host: Host) -> list[Device]:
        self.names = tool_names(host, self.PARSE)
        return Healthy.rayaccel_discover(self, host)

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        return named_device(self, self.names, host, path, driver)


for _cls in (CsvRowSplitOnCommas, CsvCellsByPosition):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
