"""Corpus mutants that drop a reading of 0 (issue 46, held-out round 4: utilization left out while a device is idle),
two shapes: RAC223 ``zero-is-a-reading``; and two that refuse or clamp a reading at the top of its range (held-out
round 4: a fully busy Gaudi's 100 % refused by a range check `<` its limit): RAC223 ``full-scale-is-a-reading``; and
one that drops a 0 on a machine none of whose readings is 0 (held-out round 9's l1: a library's fields read as
`value or None`), in two shapes: a driver file's memory in use, a tool's JSON utilization (acme-4-busy, as
corpus_siblings writes it, where no card is idle): RAC223 ``an-idle-reading-is-zero``.

Each mutant's fixture was recorded on a machine where card 2 reads 0 (idle, nothing allocated), so the sample is
missing there and its fixture says nothing of it; every sample it does report moves exactly with its reading.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-idle-utilization-dropped`` as ``c_idle_utilization_dropped``).
"""

from __future__ import annotations

from rayaccel import Device, Host, MetricSample, malformed
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, write_machine
from rayaccel_testplugins.corpus_siblings import _busy_machine, _number, _replaced, _write_machine, busy_cards


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


class IdleMemoryUnread(Healthy):
    DEFECT = ("a card's memory in use is read as `value or None`: a card with nothing allocated (0 MiB, as nvidia-smi "
              "prints an idle GPU's) is taken for one whose driver does not say, so it has no memory_used at rest")
    KILLED_BY = ("RAC223", "invariant an-idle-reading-is-zero")

    def number(self, host: Host, path: str) -> float | None:
        value = super().number(host, path)
        return (value or None) if path.endswith("/mem_used_mib") else value  # the defect: 0 is falsy


class IdleCoreBusyUnread(Healthy):
    DEFECT = ("a card's utilization is read from acme-smi's JSON utilization.core as `value or None`: an idle card's "
              "0 % is taken for a figure the tool does not give, so the card has no utilization at rest")
    KILLED_BY = ("RAC223", "invariant an-idle-reading-is-zero")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _write_machine(name, "acme-4-busy", _busy_machine)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        cards = busy_cards(host)
        out = []
        for device in devices:
            samples = Healthy.samples(self, host, device)
            if cards is not None:
                record = (cards.get(device.index) or {}).get("utilization")
                value = (record.get("core") if isinstance(record, dict) else None) or None  # the defect: 0 is falsy
                samples = _replaced(samples, device, "utilization", "percent",
                                    None if value is None else _number(value, "utilization.core", device.index))
            out += samples
        return out


for _cls in (IdleUtilizationDropped, UnusedMemoryDropped, UtilizationRefusedAtFull,
             MemoryFullClamped, IdleMemoryUnread, IdleCoreBusyUnread):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
