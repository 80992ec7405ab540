"""Corpus mutants that convert one device's sizes in two unit families (issue 46, held-out round 4: memory_used
taken as MB from a tool that prints MiB), two shapes: RAC223 ``one-device-one-byte-unit``.

Each sample still moves exactly with its reading and stays within its device's capacity, so only the pair shows
it: one byte metric is its reading times 10**6 beside another that is its reading times 2**20.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-memory-used-in-megabytes`` as ``c_memory_used_in_megabytes``).
"""

from __future__ import annotations

from rayaccel import Device, Host, MetricSample
from rayaccel_testplugins.corpus import Healthy, add_import_defect


def _rescaled(samples: list[MetricSample], name: str, factor: float) -> list[MetricSample]:
    return [s.model_copy(update={"value": s.value * factor}) if s.name == name else s for s in samples]


class MemoryUsedInMegabytes(Healthy):
    DEFECT = "memory_used converted from the driver's MiB with 10**6 (MB), memory_total with 2**20"
    KILLED_BY = ("RAC223", "invariant one-device-one-byte-unit")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        return _rescaled(super().samples(host, device), "memory_used", 1e6 / 2**20)


class MemoryTotalInMegabytes(Healthy):
    DEFECT = "memory_total converted from the device's memory_mib with 10**6 (MB), memory_used with 2**20"
    KILLED_BY = ("RAC223", "invariant one-device-one-byte-unit")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        return _rescaled(super().samples(host, device), "memory_total", 1e6 / 2**20)


for _cls in (MemoryUsedInMegabytes, MemoryTotalInMegabytes):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
