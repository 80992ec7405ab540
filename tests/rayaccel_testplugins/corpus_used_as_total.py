"""Corpus mutants whose memory in use is the card's memory size, on a machine whose fixture states no memory in use
(issue 46, held-out round 6: memory used read as total): every sample moves with a reading of the card's own, so only
the pair shows it, one reading moving two metrics (RAC223 ``invariant one-reading-one-metric``). Two shapes: the size's
file read for the memory in use, and the memory in use taken from the discovered device's size.

Each mutant is graded on ``acme-4-unstated`` alone (acme-4 whose expectation states no memory in use, as most recorded
fixtures state none), in a fixture directory of its own. Imported by tests/conformance/test_conformance_corpus.py
(``corpus.MUTANT_MODULES``); each is bound here under its name (``c-used-from-size-file`` as
``c_used_from_size_file``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

from rayaccel import Device, Host, MetricSample
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import FIXTURE_ROOT, SYSFS, Healthy, add_import_defect, read_machine, write_machine


def _unstated_machine(plugin: str) -> str:
    """The plugin's acme-4 without stated memory in use, alone in a directory of its own; returns the directory."""
    data = read_machine(plugin)
    data["name"], data["description"] = "acme-4-unstated", f"{data['description']}, no memory in use stated"
    for values in (data["expected"].get("metric_values") or {}).values():
        values.pop("memory_used", None)
    write_machine(f"{plugin}-unstated", "acme-4-unstated", data)
    return str(FIXTURE_ROOT / f"{plugin}-unstated")


def _used(samples: list[MetricSample], device: Device, mib: float | None) -> list[MetricSample]:
    kept = [s for s in samples if s.name != "memory_used"]
    return kept if mib is None else [*kept, MetricSample(device=device.id, name="memory_used", unit="bytes",
                                                         value=mib * 2**20)]


class UsedFromSizeFile(Healthy):
    DEFECT = ("a card's memory in use is read from memory_mib (its size) where mem_used_mib was meant: every card "
              "reads full")
    KILLED_BY = ("RAC223", "invariant one-reading-one-metric")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.directory = _unstated_machine(name)

    def rayaccel_fixture_dirs(self) -> list[str]:
        return [self.directory]

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        size = acme._number(host, f"{SYSFS}/acme{device.index}/memory_mib")  # the defect: the size's file
        return _used(super().samples(host, device), device, size)


class UsedFromDeviceSize(Healthy):
    DEFECT = ("a card's memory in use is taken from the discovered device's memory_mib, not read at the poll: every "
              "card reads full")
    KILLED_BY = ("RAC223", "invariant one-reading-one-metric")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.directory = _unstated_machine(name)

    def rayaccel_fixture_dirs(self) -> list[str]:
        return [self.directory]

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        return _used(super().samples(host, device), device, device.memory_mib)  # the defect: the size, not a reading


for _cls in (UsedFromSizeFile, UsedFromDeviceSize):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
