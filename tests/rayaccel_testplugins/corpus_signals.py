"""Corpus mutants found by grading a second batch of held-out broken plugins (issue 46, lane G: RAC250-RAC255): a
device's answer that does not follow what the vendor reports for it, or follows the complement the vendor reports
beside it, each right on the fixture as recorded, two shapes each (neither the held-out plugin's own).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it (``c-health-counter-defaults-zero`` as
``c_health_counter_defaults_zero``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rayaccel import Device, HealthReason, HealthReport, Host, MetricSample
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, write_machine
from rayaccel_testplugins.corpus_heldout import _record_from

# A health signal that cannot be read is not "healthy" (RAC250) ------------------------------------------------


class HealthCounterDefaultsZero(Healthy):
    DEFECT = ("the fatal-error counter is parsed with a default: text that is not a number counts as 0 errors, so "
              "a card whose counter reads garbage is called healthy")
    KILLED_BY = ("RAC250", "invariant unreadable-health-signal-is-not-healthy")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        reports = []
        for report, device in zip(acme.rayaccel_health(host, devices), devices, strict=True):
            if report.state == "unknown" and host.exists(f"{SYSFS}/acme{device.index}/fatal_errors"):
                text = host.read_text(f"{SYSFS}/acme{device.index}/fatal_errors").strip()
                count = int(text) if text.isdigit() else 0
                report = acme.health_from_count(device.id, count)
            reports.append(report)
        return reports


_POSITIVE = re.compile(r"^[1-9][0-9]*$")


class HealthFaultPatternOnly(Healthy):
    DEFECT = ("a card is judged by a pattern that recognises a fault ('a positive count') and calls everything else "
              "healthy: a counter that reads garbage is no fault, so the card is healthy")
    KILLED_BY = ("RAC250", "is still reported healthy, though its signal cannot be read")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        reports = []
        for device in devices:
            path = f"{SYSFS}/acme{device.index}"
            if host.exists(f"{path}/state") and host.read_text(f"{path}/state").strip() == "lost":
                reports.append(HealthReport(device=device.id, state="unhealthy", reasons=[
                    HealthReason(code="acme-lost", message="the card fell off the bus", fatal=True)]))
                continue
            text = host.read_text(f"{path}/fatal_errors").strip() if host.exists(f"{path}/fatal_errors") else ""
            reports.append(acme.health_from_count(device.id, int(text) if _POSITIVE.match(text) else 0))
        return reports


# A device the vendor says changed has other answers (RAC251) ----------------------------------------------------


class MemoryFromCatalog(Healthy):
    DEFECT = ("a card's memory is the SKU catalog's for its product name, not what the card reports: a card "
              "reporting half its memory (a partitioned firmware) keeps the catalog's size")
    KILLED_BY = ("RAC251", "invariant change-is-seen")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        sizes = {sku["marketing_name"]: sku.get("memory_mib") for sku in self.catalog_data()["skus"]}
        return card.model_copy(update={"memory_mib": sizes.get(card.product_name, card.memory_mib)})


class DeviceRecordsKeptPerCard(Healthy):
    DEFECT = ("discovery keeps each card's record from the first time it saw the card (keyed by its uuid, to spare "
              "sysfs reads on every poll): a card whose values change later keeps its old ones")
    KILLED_BY = ("RAC251", "yet its record, health and links are exactly as before")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.kept: dict[str, Device] = {}

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        kept = self.kept.setdefault(card.id, card)
        return kept.model_copy(update={"index": card.index, "pci_bus_id": card.pci_bus_id})


# A partition's memory slices are its memory's share (RAC252) ----------------------------------------------------

#: Each card is split in two partitions: 4 compute and 8 memory slices per card, 2 and 4 per partition.
CAPACITY = {"compute_slices": 4, "memory_slices": 8}


def _halves(card: Device, memory_slices: int) -> Device:
    memory = None if card.memory_mib is None else card.memory_mib // 2
    return Device.model_validate({
        **card.model_dump(), "partition_capacity": CAPACITY,
        "partitions": [{"id": f"{card.id}-h{k}", "kind": "compute-partition", "profile": "half",
                        "compute_slices": 2, "memory_slices": memory_slices, "memory_mib": memory}
                       for k in range(2)]})


class PartitionSlicesFromCompute(Healthy):
    DEFECT = ("a partition's memory slices are copied from its compute slices (2 of the card's 8) while it holds "
              "half the card's memory (4 of 8)")
    KILLED_BY = ("RAC252", "invariant partition-memory-slices-are-its-share")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        return _halves(super().device(host, path, driver), memory_slices=2)


class PartitionSlicesAlwaysOne(Healthy):
    DEFECT = "every partition is said to take one memory slice, whatever its memory (half a card takes 4 of 8)"
    KILLED_BY = ("RAC252", "memory slices, but its")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        return _halves(super().device(host, path, driver), memory_slices=1)


# A metric is its quantity, not the complement the vendor reports beside it (RAC253) ------------------------------


def _with_complements(plugin: str, reads: Callable[[int], dict[str, float]]) -> None:
    """The plugin's acme-4 with each card's free memory (MiB) and idle share (percent) beside its used and busy
    ones, its metric values what the plugin reads (``reads(card)``): a fixture recorded from the plugin."""
    data = read_machine(plugin)
    files = data["host"]["files"]
    for i in range(4):
        files[f"{SYSFS}/acme{i}/mem_free_mib"] = f"{65536 - 1024 * (i + 1)}\n"
        files[f"{SYSFS}/acme{i}/idle_percent"] = f"{100 - 10 * i}\n"
        uuid = files[f"{SYSFS}/acme{i}/uuid"].strip()
        data["expected"]["metric_values"][uuid].update(reads(i))
    for variant in data.get("perturbations", []):  # a card removed takes these files with it
        patched = variant["patch"].get("files", {})
        for card in {k.rsplit("/", 1)[0] for k, v in patched.items() if v is None and k.endswith("/uuid")}:
            patched.update({f"{card}/mem_free_mib": None, f"{card}/idle_percent": None})
    write_machine(plugin, "acme-4", data)


def _replaced(samples: list[MetricSample], name: str, value: float | None) -> list[MetricSample]:
    kept = [s for s in samples if s.name != name]
    return kept if value is None else [*kept, MetricSample(device=samples[0].device, name=name,
                                                           unit="bytes" if name == "memory_used" else "percent",
                                                           value=value)]


class MemoryUsedFromFreeFile(Healthy):
    DEFECT = ("memory in use is read from the card's mem_free_mib file, the one beside mem_used_mib: on an idle card "
              "as plausible a number, within the card's memory")
    KILLED_BY = ("RAC253", "invariant metric-is-not-its-complement")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _with_complements(name, lambda i: {"memory_used": (65536 - 1024 * (i + 1)) * 2**20})

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        free = acme._number(host, f"{SYSFS}/acme{device.index}/mem_free_mib")
        samples = super().samples(host, device)
        return _replaced(samples, "memory_used", None if free is None else free * 2**20) if samples else samples


class UtilizationFromIdleFile(Healthy):
    DEFECT = ("utilization is read from the card's idle_percent file instead of busy_percent: a share within "
              "0-100 either way")
    KILLED_BY = ("RAC253", "which is named 'idle'")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _with_complements(name, lambda i: {"utilization": 100 - 10 * i})

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        idle = acme._number(host, f"{SYSFS}/acme{device.index}/idle_percent")
        samples = super().samples(host, device)
        return _replaced(samples, "utilization", None if idle is None else float(idle)) if samples else samples


# A product pattern matches one model, not the next of its line (RAC254) -----------------------------------------


class SkuPatternModelWildcard(Healthy):
    DEFECT = ("the R1's product pattern takes any model digit after the R ('Roadrunner R\\d', to tolerate a driver's "
              "spelling), so an R10 resolves to the R1's SKU, memory and type")
    KILLED_BY = ("RAC254", "invariant pattern-matches-one-model")

    def catalog_data(self) -> dict[str, Any]:
        data = super().catalog_data()
        data["skus"][0]["match"] = {"product_patterns": [r"Roadrunner R\d"]}
        return data


class SkuPatternStartAnchored(Healthy):
    DEFECT = "the R1's product pattern is anchored at the start only ('^ACME Roadrunner R1'): an R1X matches it"
    KILLED_BY = ("RAC254", "'ACME Roadrunner R1X', another model's name")

    def catalog_data(self) -> dict[str, Any]:
        data = super().catalog_data()
        data["skus"][0]["match"] = {"product_patterns": ["^ACME Roadrunner R1"]}
        return data


# The metrics a device reports belong to its SKU, not to its node (RAC255) ---------------------------------------


def _dense(host: Host) -> bool:
    """A node with more than 8 cards (the corpus's 16-card fixture), where these two mutants read less."""
    return len(host.glob(f"{SYSFS}/acme*")) > 8


class MetricsSummaryOnDenseNodes(Healthy):
    DEFECT = ("on a node with more than 8 cards the plugin reads the driver's summary instead of each card's files, "
              "and the summary has no per-card readings: only memory_total is left there")
    KILLED_BY = ("RAC255", "invariant metrics-follow-the-sku")
    MORE_CARDS = (16,)

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        samples = super().samples(host, device)
        return [s for s in samples if s.name == "memory_total"] if _dense(host) else samples


class PowerDroppedOnDenseNodes(Healthy):
    DEFECT = ("power is read on nodes of up to 8 cards only (the dense chassis' shared power sensor was left for "
              "later): a 16-card node of the same SKU reports no power")
    KILLED_BY = ("RAC255", "report power on")
    MORE_CARDS = (16,)

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        samples = super().samples(host, device)
        return [s for s in samples if s.name != "power"] if _dense(host) else samples


for _cls in (HealthCounterDefaultsZero, HealthFaultPatternOnly, MemoryFromCatalog, DeviceRecordsKeptPerCard,
             PartitionSlicesFromCompute, PartitionSlicesAlwaysOne, MemoryUsedFromFreeFile, UtilizationFromIdleFile,
             SkuPatternModelWildcard, SkuPatternStartAnchored, MetricsSummaryOnDenseNodes, PowerDroppedOnDenseNodes):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
    if _cls in (PartitionSlicesFromCompute, PartitionSlicesAlwaysOne):
        _record_from(_plugin)  # their fixtures recorded from themselves: only the invariant can tell
