"""A corpus mutant that reads a driver's counter only as a file, where the driver may publish it as a directory
holding its ``total`` (issue 46, held-out round 9's ``e2``: Neuron's sysfs counters read only as files, the
trn2u UltraServer's ``mem_ecc_uncorrected/total`` unread; here another counter, ACME's ``power_mw``).

Its machines: acme-4 (each card's ``power_mw`` a file) and ``acme-4-dirs`` (the same cards, the driver's other
layout: ``power_mw/total``). Its power sample is gone on the second; RAC255 (and RAC206) name the layout, from the
two machines' files. The right reader (:class:`CounterEitherLayout`) reads ``<counter>/total`` where the counter is
a directory.
"""

from __future__ import annotations

from typing import Any

from rayaccel import Host
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, write_machine

MACHINE = "acme-4-dirs"
COUNTER = "power_mw"


def _add_directory_machine(plugin: str) -> None:
    data: dict[str, Any] = read_machine(plugin)
    files = data["host"]["files"]
    for i in range(4):
        files[f"{SYSFS}/acme{i}/{COUNTER}/total"] = files.pop(f"{SYSFS}/acme{i}/{COUNTER}")
    data["name"], data["description"] = MACHINE, f"{data['description']}, its counters as <counter>/total directories"
    data["faults"], data["perturbations"] = [], []
    write_machine(plugin, MACHINE, data)


class CounterFileOnly(Healthy):
    DEFECT = ("a card's power counter read only as the file power_mw: a driver publishing it as the directory "
              "power_mw/total (its other layout) gives no power sample")
    KILLED_BY = ("RAC255", "the driver's other layout of it")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_directory_machine(name)


class CounterEitherLayout(CounterFileOnly):
    """The right reader: a counter that is a directory is read from its ``total``."""

    def number(self, host: Host, path: str) -> float | None:
        return acme._number(host, f"{path}/total" if host.is_dir(path) else path)


plugin = add_import_defect(CounterFileOnly)
c_counter_file_only = plugin
