"""Corpus mutants that drop a reading of 0 (issue 46, held-out round 4: utilization left out while a device is idle),
two shapes: RAC223 ``zero-is-a-reading``; and two that refuse or clamp a reading at the top of its range (held-out
round 4: a fully busy Gaudi's 100 % refused by a range check `<` its limit): RAC223 ``full-scale-is-a-reading``.

Each mutant's fixture was recorded on a machine where card 2 reads 0 (idle, nothing allocated), so the sample is
missing there and its fixture says nothing of it; every sample it does report moves exactly with its reading.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-idle-utilization-dropped`` as ``c_idle_utilization_dropped``).
"""

from __future__ import annotations

from rayaccel import Device, Host, MetricSample, malformed
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, write_machine


def recorded_with_card_two_at_zero(name: str, file: str) -> None:
    """The mutant's fixture as recorded on a machine where card 2's ``file`` reads 0."""
    data = read_machine(name)
    data["host"]["files"][f"{SYSFS}/acme2/{file}"] = "0\n"
    write_machine(name, "acme-4", data)


def without_zero(samples: list[MetricSample], name: str) -> list[MetricSample]:
    return [s for s in samples if s.name != name or s.value]


class IdleUtilizationDropped(Healthy):
    DEFECT = "utilization reported only while a card is busy: `if busy:` leaves an idle card's 0 out"
    KILLED_BY = ("RAC223", "invariant zero-is-a-reading")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        recorded_with_card_two_at_zero(name, "busy_percent")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        return without_zero(super().samples(host, device), "utilization")


class UnusedMemoryDropped(Healthy):
    DEFECT = "memory_used reported only when the card holds something: a card with nothing allocated reports none"
    KILLED_BY = ("RAC223", "invariant zero-is-a-reading")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        recorded_with_card_two_at_zero(name, "mem_used_mib")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        return without_zero(super().samples(host, device), "memory_used")


class UtilizationRefusedAtFull(Healthy):
    DEFECT = ("a card's busy_percent is range-checked 0 <= value < 100, so a fully busy card's 100 is refused as "
              "malformed")
    KILLED_BY = ("RAC223", "invariant full-scale-is-a-reading")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        samples = super().samples(host, device)
        busy = next((s for s in samples if s.name == "utilization"), None)
        if busy is not None and not 0 <= busy.value < 100:  # the defect: the limit itself excluded
            malformed("busy_percent", busy.value, "a percentage in [0, 100)", where=f"card {device.index}")
            return [s for s in samples if s is not busy]
        return samples


class MemoryFullClamped(Healthy):
    DEFECT = ("a card's memory in use is clamped to one MiB below its capacity (as if the driver's reserve could not "
              "be allocated), so a card with its memory full reads short of memory_total")
    KILLED_BY = ("RAC223", "invariant full-scale-is-a-reading")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        if device.memory_mib is None:
            return super().samples(host, device)
        ceiling = (device.memory_mib - 1) * 2**20
        return [s.model_copy(update={"value": min(s.value, ceiling)}) if s.name == "memory_used" else s
                for s in super().samples(host, device)]


for _cls in (IdleUtilizationDropped, UnusedMemoryDropped, UtilizationRefusedAtFull,
             MemoryFullClamped):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
