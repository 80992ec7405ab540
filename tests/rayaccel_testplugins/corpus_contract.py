"""Corpus mutants of the pure hooks' contract, the readings, renumbered entries and the links (issue 46: RAC215,
RAC217, RAC221-RAC225), two shapes each (with corpus.py's ``c-links-both-directions`` and
``c-links-pcie-in-megabytes`` for the links).

Each is the healthy control of :mod:`rayaccel_testplugins.corpus` with one defect that its own fixture cannot
show: the devices are listed in one order and numbered from 0, the instance type is spelled one way, every
reading is read once, the links are compared with nothing. Imported by tests/conformance/test_conformance_corpus.py
(``corpus.MUTANT_MODULES``), which adds them to the corpus; each is bound here under its name
(``c-labels-numa-in-given-order`` as ``c_labels_numa_in_given_order``) so a Ray node loads it by
``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

from typing import Any

from rayaccel import CloudHint, Device, Host, MetricSample, ResourceContribution, Topology
from rayaccel.records import FamilyInventory
from rayaccel_testplugins.corpus import LABEL_PREFIX, SYSFS, Healthy, add_import_defect

#: The card's board power limit: what a vendor tool's power reading is "never above" (it is, under a spike).
TDP_WATTS = 300.0


# Labels and resources free of the devices' order (RAC221) -------------------------------------------------------


class LabelsNumaInGivenOrder(Healthy):
    DEFECT = ("a label lists the cards' NUMA nodes in the order the devices are given ('0-0-1-1'), not sorted: "
              "another order is another label value")
    KILLED_BY = ("RAC221", "property labels-free-of-device-order")

    def labels(self, inventory: FamilyInventory) -> dict[str, str]:
        numa = "-".join(str(d.numa_node) for d in inventory.devices)
        return {**super().labels(inventory), f"{LABEL_PREFIX}/numa": numa}


class ResourcesHeadByFirstCard(Healthy):
    DEFECT = ("the node's head resource is offered when the first device listed is card 0, so the resources depend "
              "on the order the devices are given")
    KILLED_BY = ("RAC221", "property resources-free-of-device-order")

    def rayaccel_resources(self, host: Host, devices: list[Device], topology: Topology) -> ResourceContribution:
        found = super().rayaccel_resources(host, devices, topology)
        head = {f"{self.family.resource_name}-head": 1.0} if devices and devices[0].index == 0 else {}
        return found.model_copy(update={"extra": {**found.extra, **head}})


# Cloud hints free of spelling, listed hints round-trip (RAC222) ------------------------------------------------


class HintsCaseSensitive(Healthy):
    DEFECT = "cloud hints compare the instance type exactly, so 'ACME-NODE' (another case, the same machine) gets none"
    KILLED_BY = ("RAC222", "property hints-free-of-case")

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        if (provider, instance_type) != ("other", "acme-node"):
            return None
        return super().hint(provider, instance_type)


class ListedHintsDrift(Healthy):
    DEFECT = ("rayaccel_cloud_instance_types lists acme-node with 8 cards (a table kept beside the hints and not "
              "updated), while rayaccel_cloud_hints answers 4")
    KILLED_BY = ("RAC222", "property listed-hints-round-trip")

    def rayaccel_cloud_instance_types(self) -> list[CloudHint]:
        return [CloudHint(provider="other", instance_type="acme-node", family=self.name, count=8,
                          accelerator_type="R1")]


# Metrics move with their readings (RAC223) ---------------------------------------------------------------------


class UtilizationReadOnce(Healthy):
    DEFECT = "each card's busy % is read once and kept ('the counter is slow to read'), so utilization never moves"
    KILLED_BY = ("RAC223", "invariant metric-moves-with-its-reading")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.kept: dict[str, float] = {}

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        fresh = super().samples(host, device)
        for s in fresh:
            if s.name == "utilization":
                self.kept.setdefault(device.id, s.value)
        return [s.model_copy(update={"value": self.kept[device.id]}) if s.name == "utilization" else s
                for s in fresh]


class PowerClampedToTdp(Healthy):
    DEFECT = f"power is clamped to the board's {TDP_WATTS:g} W limit ('a higher reading is a glitch'), spikes too"
    KILLED_BY = ("RAC223", "moved by another factor")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        return [s.model_copy(update={"value": min(s.value, TDP_WATTS)}) if s.name == "power" else s
                for s in super().samples(host, device)]


# Links against the catalog (RAC215) and their kind's fastest product (RAC217) -----------------------------------


class LinksInGigabits(Healthy):
    DEFECT = ("link bandwidth reported in Gbit/s (the sysfs GB/s figure multiplied by 8), 8x the 100 GB/s the "
              "catalog declares")
    KILLED_BY = ("RAC215", "invariant link-in-gbytes-per-s")

    def catalog_data(self) -> dict[str, Any]:
        data = super().catalog_data()
        data["skus"][0]["link_bandwidth_gbytes_per_s"] = 100  # the catalog is right
        return data

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        links = super().rayaccel_topology(host, devices).links
        return Topology(links=[ln.model_copy(update={"bandwidth_gbps": 8 * (ln.bandwidth_gbps or 0)})
                               for ln in links])


class LinksRoceLineRate(Healthy):
    DEFECT = ("the scale-out RoCE link is reported at its port's 400 Gbit/s line rate as GB/s (no catalog declares "
              "a link bandwidth to compare with)")
    KILLED_BY = ("RAC217", "invariant link-within-kind-maximum")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        links = super().rayaccel_topology(host, devices).links
        return Topology(links=[ln.model_copy(update={"kind": "roce", "bandwidth_gbps": 400.0}) for ln in links])


# Entries renumbered by the driver (RAC224) --------------------------------------------------------------------


class DiscoverCountsFromZero(Healthy):
    DEFECT = ("discovery counts the card entries and reads acme0..acme<n-1> ('the driver numbers them from 0'), "
              "so cards the driver numbers otherwise are lost")
    KILLED_BY = ("RAC224", "invariant renumbering-keeps-the-devices")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        if not host.is_dir(SYSFS):
            return []
        driver = self.tool_version(host)
        count = len(host.glob(f"{SYSFS}/acme*"))
        found = (self.readable_device(host, f"{SYSFS}/acme{i}", driver) for i in range(count))
        return [d for d in found if d]


class IndexFromLastCharacter(Healthy):
    DEFECT = ("a card's index is the last character of its entry's name (right for acme0-acme9), so the metrics and "
              "health read under acme<index> are another card's or none past acme9")
    KILLED_BY = ("RAC224", "invariant renumbering-keeps-the-devices")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        return super().device(host, path, driver).model_copy(update={"index": int(path[-1])})


# A product name padded as tools pad it (RAC225) ----------------------------------------------------------------


class ProductKeepsPadding(Healthy):
    DEFECT = ("the product name is read with only its newline removed, so a tool's padding stays in it and the "
              "catalog's exact name no longer matches (the card's SKU is lost)")
    KILLED_BY = ("RAC225", "property name-padding-keeps-the-sku")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        raw = host.read_text(f"{path}/product").rstrip("\n")
        return super().device(host, path, driver).model_copy(update={"product_name": raw})


class CardsFilteredByExactName(Healthy):
    DEFECT = ("discovery keeps only entries whose product file reads exactly 'ACME Roadrunner R1' (to skip other "
              "boards), so a padded name drops the card")
    KILLED_BY = ("RAC225", "property name-padding-keeps-the-sku")

    def readable_device(self, host: Host, path: str, driver: str | None) -> Device | None:
        if host.exists(f"{path}/product") and host.read_text(f"{path}/product").rstrip("\n") != "ACME Roadrunner R1":
            return None
        return super().readable_device(host, path, driver)


# Files of another kind beside the devices (RAC219's unrelated device, its render node and connector) ----------


class DeviceFileFromRenderNodes(Healthy):
    DEFECT = ("each card's device file taken by position from the machine's DRM render nodes, assumed all ACME's: "
              "another vendor's display card's render node becomes card 0's")
    KILLED_BY = ("RAC219", "invariant unrelated-device-changes-nothing")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        nodes = sorted(host.glob("/dev/dri/renderD*"))
        own = nodes[card.index] if card.index < len(nodes) else f"/dev/acme{card.index}"
        return Device.model_validate({**card.model_dump(), "attributes": {**card.attributes, "device_file": own}})


for _cls in (LabelsNumaInGivenOrder, ResourcesHeadByFirstCard, HintsCaseSensitive, ListedHintsDrift,
             UtilizationReadOnce, PowerClampedToTdp, LinksInGigabits, LinksRoceLineRate, DiscoverCountsFromZero,
             IndexFromLastCharacter, ProductKeepsPadding, CardsFilteredByExactName, DeviceFileFromRenderNodes):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
