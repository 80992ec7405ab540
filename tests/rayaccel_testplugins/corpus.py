"""The broken-plugin corpus: a healthy day-zero plugin and many mutants of it, one realistic defect each.

:class:`Healthy` is an ACME-like plugin, probed through sysfs plus the vendor tool ``acme-smi`` (bounded,
validated), with its own labels, metrics, visible-devices hooks, SKU catalog and cloud hints: it must reach
``supported``. Each mutant subclass changes one method the way a vendor ships a mistake, and declares the
defect it carries (``DEFECT``) and the check and message fragment expected to kill it (``KILLED_BY``).
tests/conformance/test_conformance_corpus.py grades all of them and prints the kill rate.

Every plugin gets its own family (resource and env var) and its own fixture, a copy of ``acme-4`` with more
sysfs files (temperature, memory in use, busy %, power) and the ``acme-smi`` tool; the fixtures are written
at import (never from a hook) under the temp dir, so Ray node processes importing this module by
``RAYACCEL_PLUGINS=name=rayaccel_testplugins.corpus:<attr>`` find the same files.
"""

from __future__ import annotations

import contextlib
import copy
import ctypes
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from rayaccel import (
    CloudHint,
    CommandTimeout,
    Device,
    Domain,
    FamilyDeclaration,
    HealthReason,
    HealthReport,
    Host,
    HostError,
    Link,
    MetricSample,
    QuantityRule,
    ResourceContribution,
    SupportInfo,
    Topology,
    TransportSpec,
    report_problem,
)
from rayaccel.catalog import load_catalog, parse_catalog
from rayaccel.files.atomic import write_atomically
from rayaccel.labels import to_label_value
from rayaccel.records import FamilyInventory, SkuCatalog
from rayaccel_testplugins import acme
from rayaccel_testplugins.broken_base import GOOD_SCHEDULERS

HERE = Path(__file__).parent
SYSFS = acme.SYSFS
TOOL = ["acme-smi", "--version"]
LABEL_PREFIX = "acme.example.com"
SUPPORT = SupportInfo(maintainers=["Wile E. Coyote", "Road Runner"], contact="https://acme.example/support",
                      license="Apache-2.0", tested_ray_versions=["2.60.0"])
_VERSION = re.compile(r"^acme-smi (\d+\.\d+\.\d+)$")


def _token(name: str) -> str:
    return "C" + hashlib.sha1(name.encode()).hexdigest()[:6].upper()


def _fixture_root() -> Path:
    # Named from every source a corpus fixture is written from (this package's modules, the ACME fixtures), so
    # an edit to any mutant module gives fresh fixtures: writers skip a fixture already there, and one written by
    # an older module would otherwise be graded again.
    sources = sorted([*HERE.glob("*.py"), *(HERE / "acme_fixtures").rglob("*.yaml")])
    sha = hashlib.sha1()
    for source in sources:
        sha.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    digest = sha.hexdigest()[:10]
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"rayaccel-corpus-{uid}-{digest}"


FIXTURE_ROOT = _fixture_root()
#: LibYAML's parser and emitter where PyYAML has them: the pure-Python ones took ~8 s of CPU to write the corpus's
#: ~340 fixture files, at the first import of each new corpus (in CI, in each xdist worker collecting the suite).
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def read_machine(plugin: str, machine: str = "acme-4") -> dict[str, Any]:
    """The corpus plugin's fixture ``machine`` as written: the base a mutant's machine of its own is made from."""
    data: dict[str, Any] = yaml.load((FIXTURE_ROOT / plugin / f"{machine}.yaml").read_text(encoding="utf-8"),
                                     Loader=_LOADER)
    return data


def write_machine(plugin: str, machine: str, data: Mapping[str, Any]) -> None:
    """The corpus plugin's fixture ``machine`` written whole: a process or a Ray node loading the plugin's
    fixtures meanwhile (each imports the corpus and writes them again) reads the old file or the new one."""
    path = FIXTURE_ROOT / plugin / f"{machine}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, yaml.dump(dict(data), Dumper=_DUMPER, sort_keys=False), durable=False)


def tool_output(host: Host, argv: Sequence[str], timeout: float = 2.0) -> str | None:
    """What a vendor tool prints where the machine has it and it answers; None where it is not installed, hangs or
    fails (the healthy plugin then reads the driver's files, as on acme-4)."""
    try:
        result = host.run(argv, timeout=timeout)
    except HostError:
        return None
    return result.stdout if result.returncode == 0 else None


def _write_fixture(plugin: str, family: FamilyDeclaration) -> None:
    """acme-4, as the plugin's family sees it, with the extra sysfs files and the tool; written atomically."""
    path = FIXTURE_ROOT / plugin / "acme-4.yaml"
    if path.exists():
        return
    data = yaml.load((HERE / "acme_fixtures" / "acme-4.yaml").read_text(encoding="utf-8"), Loader=_LOADER)
    data["plugin"], data["description"] = plugin, f"acme-4 as seen by corpus plugin {plugin}"
    files = data["host"]["files"]
    for i in range(4):
        files[f"{SYSFS}/acme{i}/temp_mc"] = f"{41000 + 1000 * i}\n"
        files[f"{SYSFS}/acme{i}/mem_used_mib"] = f"{1024 * (i + 1)}\n"
        files[f"{SYSFS}/acme{i}/busy_percent"] = f"{10 * i}\n"
        files[f"{SYSFS}/acme{i}/power_mw"] = f"{250000 + 1000 * i}\n"
    data["host"]["commands"] = {"acme-smi --version": {"stdout": "acme-smi 3.1.4\n", "returncode": 0}}
    for variant in data.get("perturbations", []):  # a card removed takes the extra files with it
        patched = variant["patch"].get("files", {})
        for card in {k.rsplit("/", 1)[0] for k, v in patched.items() if v is None and k.endswith("/uuid")}:
            patched.update({f"{card}/{extra}": None for extra in ("temp_mc", "mem_used_mib", "busy_percent",
                                                                   "power_mw")})

    def rename(resources: dict[str, float]) -> dict[str, float]:
        return {family.resource_name if k == "ACME" else k: v for k, v in resources.items()}

    data["expected"]["resources"] = rename(data["expected"]["resources"])
    data["expected"]["labels"]["rayaccel.io/family"] = family.name
    data["expected"]["labels"][f"{LABEL_PREFIX}/mesh"] = "full"
    data["expected"]["labels"][f"{LABEL_PREFIX}/driver"] = "3.1.4"
    data["expected"]["metric_values"] = {  # what the extra files above read, in the standard units
        files[f"{SYSFS}/acme{i}/uuid"].strip(): {"memory_used": 1024 * (i + 1) * 2**20, "utilization": 10 * i,
                                                 "temperature": 41 + i, "power": 250 + i} for i in range(4)}
    for fault in data["faults"]:
        if fault["expected"].get("resources"):
            fault["expected"]["resources"] = rename(fault["expected"]["resources"])
    data["faults"].append({
        "name": "smi-hang", "description": "acme-smi hangs", "kind": "tool-hang",
        "patch": {"commands": {"acme-smi --version": {"hang": True}}}, "expected": {"devices": 4}})
    write_machine(plugin, "acme-4", data)


def _card_id(i: int) -> str:
    return f"ACME-{i:04d}-5e1f-4c2a-9d3b-{i:012d}"


def _card_files(i: int, cards: int, card_id: str | None = None) -> dict[str, str]:
    """The sysfs entry ``acme<i>`` of an ACME machine with ``cards`` cards in a full mesh, as the driver
    writes it; ``card_id`` puts another card's uuid there (the driver enumerating the cards another way)."""
    own = card_id or _card_id(i)
    path = f"{SYSFS}/acme{i}"
    files = {f"{path}/uuid": own + "\n", f"{path}/product": "ACME Roadrunner R1\n",
             f"{path}/memory_mib": "65536\n", f"{path}/pci_bus_id": f"0000:{0x10 + i:02x}:00.0\n",
             f"{path}/numa_node": f"{i * 2 // cards}\n", f"{path}/state": "ok\n", f"{path}/fatal_errors": "0\n",
             f"{path}/temp_mc": f"{41000 + 1000 * i}\n", f"{path}/mem_used_mib": f"{1024 * (i + 1)}\n",
             f"{path}/busy_percent": f"{(10 * i) % 100}\n", f"{path}/power_mw": f"{250000 + 1000 * i}\n"}
    files.update({f"{path}/links/{_card_id(j)}": "100\n" for j in range(cards) if _card_id(j) != own})
    return files


def _many_cards(plugin: str, family: FamilyDeclaration, cards: int) -> dict[str, Any]:
    """An ACME machine with more cards than acme-4 (past ten: 'acme10' sorts before 'acme2' as text), with a
    fatal error and a lost card among those numbered past ten, and the driver enumerating the cards in reverse
    after a reboot (a reorder perturbation)."""
    ids = [_card_id(i) for i in range(cards)]
    files = {"/sys/module/acme/version": "3.1.4\n"}
    for i in range(cards):
        files.update(_card_files(i, cards))
    fatal, lost = cards - 4, cards - 6
    others = {family.resource_name: cards - 1.0, "accelerator_type:R1": 1.0}
    reversed_files: dict[str, Any] = {}
    for i in range(cards):
        reversed_files.update(_card_files(i, cards, _card_id(cards - 1 - i)))
    return {
        "schema": "rayaccel-fixture/1", "plugin": plugin, "name": f"acme-{cards}",
        "description": f"{cards} ACME R1 cards, full mesh, as seen by corpus plugin {plugin}",
        "source": "generated by rayaccel_testplugins.corpus", "host": {
            "hostname": f"acme-node-{cards}", "files": files,
            "commands": {"acme-smi --version": {"stdout": "acme-smi 3.1.4\n", "returncode": 0}}},
        "expected": {
            "devices": cards, "device_ids": ids, "accelerator_type": "R1",
            "resources": {family.resource_name: float(cards), "accelerator_type:R1": 1.0},
            "links": cards * (cards - 1) // 2, "skus": dict.fromkeys(ids, "acme-r1"),
            "labels": {"rayaccel.io/family": family.name, "rayaccel.io/vendor": "ACME-Corp",
                       "rayaccel.io/sku-known": "true", "rayaccel.io/sku": "acme-r1", "rayaccel.io/count": str(cards),
                       "rayaccel.io/interconnect": "other", "rayaccel.io/health": "healthy",
                       "ray.io/accelerator-type": "R1", "rayaccel.io/memory-mib": "65536",
                       "rayaccel.io/architecture": "coyote", "rayaccel.io/driver-version": "3.1.4",
                       f"{LABEL_PREFIX}/mesh": "full", f"{LABEL_PREFIX}/driver": "3.1.4"}},
        "faults": [
            {"name": f"fatal-{fatal}", "description": f"card {fatal} reports a fatal error", "kind": "fatal-error",
             "patch": {"files": {f"{SYSFS}/acme{fatal}/fatal_errors": "1\n"}},
             "expected": {"health": {ids[fatal]: "unhealthy"}, "resources": others, "fatal": True,
                          "reasons": {ids[fatal]: ["acme-fatal"]}}},
            {"name": f"lost-{lost}", "description": f"card {lost} fell off the bus", "kind": "device-lost",
             "patch": {"files": {f"{SYSFS}/acme{lost}/state": "lost\n"}},
             "expected": {"devices": cards - 1, "resources": others, "reasons": {ids[lost]: ["acme-lost"]}}},
            {"name": "smi-hang", "description": "acme-smi hangs", "kind": "tool-hang",
             "patch": {"commands": {"acme-smi --version": {"hang": True}}}, "expected": {"devices": cards}}],
        "perturbations": [
            {"name": "enumerated-reversed", "kind": "reorder",
             "description": "the driver enumerates the cards the other way round after a reboot",
             "patch": {"files": reversed_files}}],
    }


def _write_many(plugin: str, family: FamilyDeclaration, cards: int) -> None:
    if not (FIXTURE_ROOT / plugin / f"acme-{cards}.yaml").exists():
        write_machine(plugin, f"acme-{cards}", _many_cards(plugin, family, cards))


def _read(host: Host, path: str) -> str:
    return host.read_text(path).strip()


class Healthy:
    """The healthy base: every hook right. Subclasses override one method each."""

    DEFECT = "none: the healthy control"
    KILLED_BY: tuple[str, str] | None = None
    #: Card counts of the plugin's fixtures besides acme-4: the control's, and those of the mutants whose defect
    #: shows past ten devices only (every mutant on a 16-card machine too would double the corpus's time).
    MORE_CARDS: tuple[int, ...] = (16,)

    def __init_subclass__(cls) -> None:
        if "MORE_CARDS" not in cls.__dict__:
            cls.MORE_CARDS = ()
    rule = QuantityRule(kind="whole")
    spec = "1.0"

    def __init__(self, name: str) -> None:
        self.name = name
        token = _token(name)
        self.family = FamilyDeclaration(
            name=name, vendor="ACME Corp", resource_name=self._resource(token),
            visible_devices_env_var=f"{token}_VISIBLE_DEVICES", quantity_rule=self.rule,
            spec_version=self.spec, support=SUPPORT, schedulers=GOOD_SCHEDULERS)
        _write_fixture(name, self.family)
        for cards in self.MORE_CARDS:
            _write_many(name, self.family, cards)

    def _resource(self, token: str) -> str:
        return token

    # Hooks -----------------------------------------------------------------------------------

    def rayaccel_family(self) -> FamilyDeclaration:
        return self.family

    def rayaccel_fixture_dirs(self) -> list[str]:
        return [str(FIXTURE_ROOT / self.name)]

    def tool_version(self, host: Host) -> str | None:
        stdout = tool_output(host, TOOL, timeout=1.0)
        match = _VERSION.match(stdout.strip()) if stdout is not None else None
        return match.group(1) if match else None

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        return Device(index=int(path.rsplit("acme", 1)[1]), id=_read(host, f"{path}/uuid"),
                      product_name=_read(host, f"{path}/product"),
                      memory_mib=acme._number(host, f"{path}/memory_mib"),
                      pci_bus_id=_read(host, f"{path}/pci_bus_id") or None,
                      numa_node=acme._number(host, f"{path}/numa_node"), driver_version=driver)

    def readable_device(self, host: Host, path: str, driver: str | None) -> Device | None:
        """The device of a sysfs entry; None (reported) when its identity cannot be read."""
        try:
            if host.exists(f"{path}/state") and _read(host, f"{path}/state") == "lost":
                return None
            return self.device(host, path, driver)
        except (FileNotFoundError, IsADirectoryError, ValueError) as e:  # ValueError: pydantic's, an empty id
            report_problem("unreadable-device", f"{path} cannot be read ({type(e).__name__}); it is left out")
            return None

    def rayaccel_discover(self, host: Host) -> list[Device]:
        if not host.is_dir(SYSFS):
            return []
        driver = self.tool_version(host)
        if driver is None and host.exists("/sys/module/acme/version"):
            driver = _read(host, "/sys/module/acme/version")
        devices = [d for d in (self.readable_device(host, path, driver) for path in host.glob(f"{SYSFS}/acme*")) if d]
        return sorted(devices, key=lambda d: d.index)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        return acme.rayaccel_topology(host, devices)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        return acme.rayaccel_health(host, devices)

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        path = f"{SYSFS}/acme{device.index}"
        # (name, unit, file, factor to the unit): a reading the driver left unreadable gives no sample (reported)
        readings = (("memory_used", "bytes", "mem_used_mib", 2**20), ("utilization", "percent", "busy_percent", 1),
                    ("temperature", "celsius", "temp_mc", 1e-3), ("power", "watts", "power_mw", 1e-3))
        samples = [MetricSample(device=device.id, name="memory_total", unit="bytes", value=device.memory_mib * 2**20)
                   ] if device.memory_mib is not None else []
        for name, unit, file, factor in readings:
            value = self.number(host, f"{path}/{file}")
            if value is not None and value < 0 and name != "temperature":
                report_problem("unreadable-attribute", f"{path}/{file} is negative; read as unknown")
                value = None
            if value is not None:
                samples.append(MetricSample(device=device.id, name=name, unit=unit, value=value * factor))
        return samples

    def number(self, host: Host, path: str) -> float | None:
        """A sensor file's reading; None (reported) when it is missing or no number."""
        return acme._number(host, path)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        return [s for d in devices for s in self.samples(host, d)]

    def extra(self, devices: list[Device]) -> dict[str, float]:
        return {}

    def rayaccel_resources(self, host: Host, devices: list[Device], topology: Topology) -> ResourceContribution:
        return ResourceContribution(accelerator_type=to_label_value(devices[0].product_name.split()[-1]) or None
                                    if devices else None,
                                    extra=self.extra(devices))

    def labels(self, inventory: FamilyInventory) -> dict[str, str]:
        full = len(inventory.topology.links) == len(inventory.devices) * (len(inventory.devices) - 1) // 2
        driver = inventory.devices[0].driver_version if inventory.devices else None
        return {f"{LABEL_PREFIX}/mesh": "full" if full else "partial",
                **({f"{LABEL_PREFIX}/driver": to_label_value(driver)} if driver else {})}

    def rayaccel_labels(self, host: Host, inventory: FamilyInventory) -> dict[str, str]:
        return self.labels(inventory)

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        return {self.family.visible_devices_env_var: ",".join(unit_ids)}

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        return [part.strip() for part in value.split(",") if part.strip()]

    def catalog_data(self) -> dict[str, Any]:
        return yaml.safe_load((HERE / "acme-skus.yaml").read_text(encoding="utf-8"))  # type: ignore[no-any-return]

    def rayaccel_sku_catalog(self) -> SkuCatalog:
        return parse_catalog(self.catalog_data(), f"{self.name} catalog")

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        if (provider, instance_type.strip().lower()) != ("other", "acme-node"):  # names without regard to case
            return None
        return CloudHint(provider="other", instance_type="acme-node", family=self.name, count=4, accelerator_type="R1")

    def rayaccel_cloud_hints(self, provider: str, instance_type: str) -> CloudHint | None:
        return self.hint(provider, instance_type)


# Every claim is exercised -----------------------------------------------------------------------------


class RenumberedVisible(Healthy):
    DEFECT = "rayaccel_visible_env renumbers the units it is given to 0..k-1 (units 2,3 become 0,1)"
    KILLED_BY = ("RAC107", "parses back as")

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        return {self.family.visible_devices_env_var: ",".join(str(i) for i in range(len(unit_ids)))}


class VisibleEnvWrongVar(Healthy):
    DEFECT = "rayaccel_visible_env sets the runtime's legacy variable, not the declared one"
    KILLED_BY = ("RAC107", "without")

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        return {"ACME_RT_DEVICES": ",".join(unit_ids)}


class ParseNoStrip(Healthy):
    DEFECT = "rayaccel_parse_visible splits on commas without stripping spaces ('2, 3' gives ' 3')"
    KILLED_BY = ("RAC107", "written")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        return [part for part in value.split(",") if part]


class ParseKeepsEmpty(Healthy):
    DEFECT = "rayaccel_parse_visible keeps empty entries ('2,,3' gives a unit '')"
    KILLED_BY = ("RAC107", "written")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        return [part.strip() for part in value.split(",")] if value else []


class ParseSorts(Healthy):
    DEFECT = "rayaccel_parse_visible sorts the units, losing the order Ray gave"
    KILLED_BY = ("RAC107", "parses back as")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        return sorted(part.strip() for part in value.split(",") if part.strip())


class VisibleEnvSorted(Healthy):
    DEFECT = "rayaccel_visible_env sorts the unit ids before writing them"
    KILLED_BY = ("RAC107", "parses back as")

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        return {self.family.visible_devices_env_var: ",".join(sorted(unit_ids))}


class VisibleEnvFirstOnly(Healthy):
    DEFECT = "rayaccel_visible_env writes only the first unit (a single-device runtime assumption)"
    KILLED_BY = ("RAC107", "parses back as")

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        return {self.family.visible_devices_env_var: unit_ids[0] if unit_ids else ""}


class FractionalUnshared(Healthy):
    DEFECT = "a fractional quantity rule for a card whose devices declare no sharing capability"
    KILLED_BY = ("RAC106", "sharing capability")
    rule = QuantityRule(kind="fractional")


class MetricMemoryInMib(Healthy):
    DEFECT = "memory_total reported in MiB under the unit 'bytes', contradicting the device's memory size"
    KILLED_BY = ("RAC206", "memory_total")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        return [s.model_copy(update={"value": float(device.memory_mib or 0)}) if s.name == "memory_total" else s
                for s in super().samples(host, device)]


class MetricUsedOverTotal(Healthy):
    DEFECT = "memory_used read from the wrong sysfs file (the total in KiB), more than the device has"
    KILLED_BY = ("RAC206", "more than the device's memory")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        return [s.model_copy(update={"value": (device.memory_mib or 0) * 2**20 * 1024}) if s.name == "memory_used"
                else s for s in super().samples(host, device)]


class MetricTemperatureMilli(Healthy):
    DEFECT = "temperature in millidegrees (temp_mc not divided by 1000)"
    KILLED_BY = ("RAC206", "temperature")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        return [s.model_copy(update={"value": s.value * 1000}) if s.name == "temperature" else s
                for s in super().samples(host, device)]


class MetricPowerMilliwatts(Healthy):
    DEFECT = "power in milliwatts under the unit 'watts'"
    KILLED_BY = ("RAC206", "power")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        return [s.model_copy(update={"value": s.value * 1000}) if s.name == "power" else s
                for s in super().samples(host, device)]


class MetricUtilizationFraction(Healthy):
    DEFECT = "utilization as basis points (0-10000) under the unit 'percent'"
    KILLED_BY = ("RAC206", "utilization")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        return [s.model_copy(update={"value": s.value * 100 + 100}) if s.name == "utilization" else s
                for s in super().samples(host, device)]


class MetricByIndex(Healthy):
    DEFECT = "metric samples name devices by index instead of the discovered id"
    KILLED_BY = ("RAC206", "unknown device")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        return [s.model_copy(update={"device": str(device.index)}) for s in super().samples(host, device)]


class CloudHintWrongFamily(Healthy):
    DEFECT = "the cloud hint names the family it was copied from"
    KILLED_BY = ("RAC209", "names family")

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        found = super().hint(provider, instance_type)
        return found.model_copy(update={"family": "acme"}) if found else None


class CloudHintFractionalCount(Healthy):
    DEFECT = "the cloud hint counts half cards (2.5) for a family whose rule is whole units"
    KILLED_BY = ("RAC209", "count")

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        found = super().hint(provider, instance_type)
        return found.model_copy(update={"count": 2.5}) if found else None


class CloudHintUnknownType(Healthy):
    DEFECT = "the cloud hint gives an accelerator type no SKU has (the next generation, R2)"
    KILLED_BY = ("RAC209", "accelerator type")

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        found = super().hint(provider, instance_type)
        return found.model_copy(update={"accelerator_type": "R2"}) if found else None


class CloudHintGpuExtra(Healthy):
    DEFECT = "the cloud hint adds GPU as an extra resource, so autoscalers think the node has GPUs"
    KILLED_BY = ("RAC209", "Ray reserves")

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        found = super().hint(provider, instance_type)
        return found.model_copy(update={"extra_resources": {"GPU": 4.0}}) if found else None


class CloudHintAnyProvider(Healthy):
    DEFECT = "the cloud hint ignores the provider asked and answers for its own instance type every time"
    KILLED_BY = ("RAC209", "answers for")

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        return CloudHint(provider="other", instance_type="acme-node", family=self.name, count=4,
                         accelerator_type="R1")


class SkuPatternsOverlap(Healthy):
    DEFECT = "two SKUs whose product patterns both match 'ACME Roadrunner R1'"
    KILLED_BY = ("RAC205", "ambiguous")

    def catalog_data(self) -> dict[str, Any]:
        data = super().catalog_data()
        r1 = data["skus"][0]
        r1["match"] = {"product_patterns": ["Roadrunner R1"]}
        pro = copy.deepcopy(r1)
        pro.update({"id": "acme-r1-pro", "marketing_name": "ACME Roadrunner R1 Pro", "memory_mib": 131072,
                    "match": {"product_patterns": ["Roadrunner R1( Pro)?"]}})
        data["skus"].append(pro)
        return data


class SkuPatternUnanchored(Healthy):
    DEFECT = "R1's product pattern is unanchored, so an R1X (no fixture has one) matches R1's pattern and its own"
    KILLED_BY = ("RAC205", "match product 'ACME Roadrunner R1X' by product pattern (a product name the catalog ships)")

    def catalog_data(self) -> dict[str, Any]:
        data = super().catalog_data()
        r1 = data["skus"][0]
        r1["match"] = {"product_patterns": ["Roadrunner R1"]}
        r1x = copy.deepcopy(r1)
        r1x.update({"id": "acme-r1x", "marketing_name": "ACME Roadrunner R1X", "memory_mib": 98304,
                    "match": {"product_patterns": ["Roadrunner R1X$"]}})
        data["skus"].append(r1x)
        return data


class SkuNamesDuplicate(Healthy):
    DEFECT = "two SKUs list the same exact product name (a 64 GB and a 128 GB card)"
    KILLED_BY = ("RAC205", "ambiguous")

    def catalog_data(self) -> dict[str, Any]:
        data = super().catalog_data()
        big = copy.deepcopy(data["skus"][0])
        big.update({"id": "acme-r1-128g", "memory_mib": 131072})
        data["skus"].append(big)
        return data


class SkuTypeFromExample(Healthy):
    DEFECT = "a second SKU copied from a GPU plugin's example keeps its accelerator type H100 (no fixture has it)"
    KILLED_BY = ("RAC213", "accelerator type 'H100' is NVIDIA's product name in Ray")

    def catalog_data(self) -> dict[str, Any]:
        data = super().catalog_data()
        r2 = copy.deepcopy(data["skus"][0])
        r2.update({"id": "acme-r2", "marketing_name": "ACME Roadrunner R2", "accelerator_type": "H100",
                   "match": {"product_names": ["ACME Roadrunner R2"]}})
        data["skus"].append(r2)
        return data


class TopologyCallsItNvlink(Healthy):
    DEFECT = "ACME's own fabric reported as nvlink (copied from a GPU plugin), so placement trusts a fabric it lacks"
    KILLED_BY = ("RAC213", "link kind 'nvlink' is NVIDIA's fabric")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        found = super().rayaccel_topology(host, devices)
        return found.model_copy(update={"links": [ln.model_copy(update={"kind": "nvlink"}) for ln in found.links]})


class MemoryInGib(Healthy):
    DEFECT = "Device.memory_mib given in GiB (64 instead of 65536)"
    KILLED_BY = ("RAC201", "memory-mib")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        found = super().device(host, path, driver)
        return found.model_copy(update={"memory_mib": (found.memory_mib or 0) // 1024})


class DuplicateIds(Healthy):
    DEFECT = "device ids built from the product name, so all four cards share one id"
    KILLED_BY = ("RAC105", "twice")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        found = super().device(host, path, driver)
        return found.model_copy(update={"id": found.product_name.replace(" ", "-")})


class HealthForUnknownDevices(Healthy):
    DEFECT = "health reports name devices by sysfs directory instead of id"
    KILLED_BY = ("RAC105", "unknown devices")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        return [r.model_copy(update={"device": f"acme{d.index}"})
                for r, d in zip(super().rayaccel_health(host, devices), devices, strict=True)]


# Names are owned ----------------------------------------------------------------------------------------


class ExtraGpu(Healthy):
    DEFECT = "an extra resource named GPU, so GPU tasks land on ACME cards"
    KILLED_BY = ("RAC111", "Ray reserves")

    def extra(self, devices: list[Device]) -> dict[str, float]:
        return {"GPU": float(len(devices))}


class ExtraOwnResource(Healthy):
    DEFECT = "an extra resource with the family's own name (counting partitions), overriding the unit count"
    KILLED_BY = ("RAC111", "own resource")

    def extra(self, devices: list[Device]) -> dict[str, float]:
        return {self.family.resource_name: float(2 * len(devices))}


class ExtraOtherFamily(Healthy):
    DEFECT = "an extra resource named after another installed family's resource (the control's)"
    KILLED_BY = ("RAC111", "resource of family")

    def extra(self, devices: list[Device]) -> dict[str, float]:
        return {_token("c-healthy"): 1.0}


class ExtraBuiltinFamily(Healthy):
    DEFECT = "an extra resource named HPU, Ray's built-in Gaudi resource"
    KILLED_BY = ("RAC111", "built-in accelerator")

    def extra(self, devices: list[Device]) -> dict[str, float]:
        return {"HPU": 1.0}


class ExtraNodeResource(Healthy):
    DEFECT = "an extra resource node:<ip>, which Ray sets for every node itself"
    KILLED_BY = ("RAC111", "Ray reserves")

    def extra(self, devices: list[Device]) -> dict[str, float]:
        return {"node:10.0.0.7": 1.0}


class ExtraMemory(Healthy):
    DEFECT = "an extra resource 'memory' giving device memory in bytes, clobbering Ray's host memory"
    KILLED_BY = ("RAC111", "Ray reserves")

    def extra(self, devices: list[Device]) -> dict[str, float]:
        return {"memory": float(sum((d.memory_mib or 0) * 2**20 for d in devices))}


class ExtraNegative(Healthy):
    DEFECT = "an extra resource counted as links minus devices, negative on a sparse topology"
    KILLED_BY = ("RAC111", "not a positive")

    def extra(self, devices: list[Device]) -> dict[str, float]:
        return {f"{self.family.resource_name}_spare_links": -1.0}


class LabelsOtherVendor(Healthy):
    DEFECT = "labels under another vendor's prefix (nvidia.com/gpu.product, copied from a GPU plugin)"
    KILLED_BY = ("RAC201", "not under the vendor's own prefix")

    def labels(self, inventory: FamilyInventory) -> dict[str, str]:
        return {**super().labels(inventory), "nvidia.com/gpu.product": "R1"}


class LabelsRayTpuKey(Healthy):
    DEFECT = "a Ray TPU key (ray.io/tpu-topology) from a family that is not TPU"
    KILLED_BY = ("RAC201", "Ray's")

    def labels(self, inventory: FamilyInventory) -> dict[str, str]:
        return {**super().labels(inventory), "ray.io/tpu-topology": "2x2"}


class LabelsInstanceTypeKey(Healthy):
    DEFECT = "a label under the Kubernetes prefix (node.kubernetes.io/instance-type)"
    KILLED_BY = ("RAC201", "not under the vendor's own prefix")

    def labels(self, inventory: FamilyInventory) -> dict[str, str]:
        return {**super().labels(inventory), "node.kubernetes.io/instance-type": "acme-node"}


class LabelsRawDriver(Healthy):
    DEFECT = "the driver label is the raw version string: valid for 3.1.4, invalid for 3.2.0+rc1"
    KILLED_BY = ("RAC214", "rayaccel_labels gives an invalid label")

    def labels(self, inventory: FamilyInventory) -> dict[str, str]:
        found = super().labels(inventory)
        driver = inventory.devices[0].driver_version if inventory.devices else None
        return {**found, f"{LABEL_PREFIX}/driver": driver} if driver else found


class FutureSpec(Healthy):
    DEFECT = "declares spec 1.9, a minor version this SDK has not seen"
    KILLED_BY = ("RAC103", "future minor")
    spec = "1.9"


class ResourceGpu(Healthy):
    DEFECT = "declares resource GPU with its own env var"
    KILLED_BY = ("RAC104", "GPU")

    def _resource(self, token: str) -> str:
        return "GPU"


# A hook has no side effects -------------------------------------------------------------------------------


class LabelsSortInput(Healthy):
    DEFECT = "rayaccel_labels sorts inventory.devices in place (by NUMA node) to find the first card"
    KILLED_BY = ("RAC109", "rayaccel_labels changed its input 'inventory'")

    def labels(self, inventory: FamilyInventory) -> dict[str, str]:
        inventory.devices.sort(key=lambda d: (-(d.numa_node or 0), d.index))
        return super().labels(inventory)


class LabelsMutateLabels(Healthy):
    DEFECT = "rayaccel_labels adds its label to the inventory's own label dict"
    KILLED_BY = ("RAC109", "rayaccel_labels changed its input 'inventory'")

    def labels(self, inventory: FamilyInventory) -> dict[str, str]:
        mine = super().labels(inventory)
        inventory.labels.update(mine)
        return mine


class TopologyReversesDevices(Healthy):
    DEFECT = "rayaccel_topology reverses its devices list in place while pairing them"
    KILLED_BY = ("RAC109", "rayaccel_topology changed its input 'devices'")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        devices.reverse()
        return super().rayaccel_topology(host, devices)


class HealthPopsDevices(Healthy):
    DEFECT = "rayaccel_health pops devices off its input list as it checks them"
    KILLED_BY = ("RAC109", "rayaccel_health changed its input 'devices'")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        reports = []
        while devices:
            reports += acme.rayaccel_health(host, [devices.pop(0)])
        return reports


class DiscoverSubprocess(Healthy):
    DEFECT = "discovery calls subprocess.run directly (no timeout), around the Host seam"
    KILLED_BY = ("RAC109", "ran a process outside the Host seam")

    def tool_version(self, host: Host) -> str | None:
        try:
            done = subprocess.run(["acme-smi", "--version"], capture_output=True, text=True, check=False)
        except OSError:
            return super().tool_version(host)
        return done.stdout.split()[-1] if done.returncode == 0 else super().tool_version(host)


class DiscoverOpensSysfs(Healthy):
    DEFECT = "discovery reads the driver version with open() on the real /sys"
    KILLED_BY = ("RAC109", "outside the Host seam")

    def tool_version(self, host: Host) -> str | None:
        try:
            with open("/sys/module/acme/version", encoding="utf-8") as f:
                return f.read().strip()
        except OSError:
            return super().tool_version(host)


class DiscoverOwnRealHost(Healthy):
    DEFECT = "discovery makes its own RealHost to read the driver version, bypassing the host it was given"
    KILLED_BY = ("RAC109", "read /sys/module/acme/version outside the Host seam")

    def tool_version(self, host: Host) -> str | None:
        from rayaccel.hosts.seam import RealHost

        real = RealHost()
        if real.exists("/sys/module/acme/version"):
            return real.read_text("/sys/module/acme/version").strip()
        with contextlib.suppress(OSError):
            real.read_text("/sys/module/acme/version")
        return super().tool_version(host)


class DiscoverListsDev(Healthy):
    DEFECT = "discovery lists /dev with os.listdir to count the cards"
    KILLED_BY = ("RAC109", "listed /dev outside the Host seam")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        found = super().rayaccel_discover(host)
        nodes = [n for n in os.listdir("/dev") if n.startswith("acme")]
        return found[: len(nodes)] if nodes else found


class DiscoverProbesOsPath(Healthy):
    DEFECT = ("discovery asks os.path.isdir whether the ACME class exists on the real machine (no file is opened, "
              "so no open() is seen), and finds nothing on any other host")
    KILLED_BY = ("RAC109", "probed /sys/class/acme outside the Host seam")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        if not os.path.isdir(SYSFS) and not host.is_dir(SYSFS):
            return []
        return super().rayaccel_discover(host)


class HealthExtendsSysPath(Healthy):
    DEFECT = "health puts the vendor's Python bindings directory on sys.path (and leaves it there) to import them"
    KILLED_BY = ("RAC109", "changed sys.path (added /opt/acme/python")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        if "/opt/acme/python" not in sys.path:
            sys.path.append("/opt/acme/python")
        with contextlib.suppress(ImportError):
            import acme_bindings  # noqa: F401
        return super().rayaccel_health(host, devices)


class MetricsUrllib(Healthy):
    DEFECT = "metrics scraped from the local exporter with urllib, around the Host seam"
    KILLED_BY = ("RAC109", "used the network outside the Host seam")

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        with contextlib.suppress(OSError):
            urllib.request.urlopen("http://127.0.0.1:9/metrics", timeout=0.2).read()
        return super().rayaccel_metrics(host, devices)


class DiscoverSocket(Healthy):
    DEFECT = "discovery asks the ACME fabric manager over a socket, around the Host seam"
    KILLED_BY = ("RAC109", "used the network outside the Host seam")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", 9), timeout=0.2).close()
        return super().rayaccel_discover(host)


class DiscoverPrints(Healthy):
    DEFECT = "discovery prints what it found to stdout (breaks rayaccel inspect --json)"
    KILLED_BY = ("RAC109", "rayaccel_discover wrote to stdout/stderr")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        found = super().rayaccel_discover(host)
        print(f"acme: found {len(found)} devices")
        return found


class FamilyPrintsBanner(Healthy):
    DEFECT = "rayaccel_family prints a banner when the plugin loads (before any check watches it)"
    KILLED_BY = ("RAC109", "rayaccel_family wrote")

    def rayaccel_family(self) -> FamilyDeclaration:
        print(f"ACME plugin {self.name} loaded")
        return super().rayaccel_family()


class HealthWritesStderr(Healthy):
    DEFECT = "health writes a warning to stderr for every fatal error"
    KILLED_BY = ("RAC109", "rayaccel_health wrote to stdout/stderr")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        reports = super().rayaccel_health(host, devices)
        sys.stderr.write(f"acme: checked {len(reports)} devices\n")
        return reports


class DiscoverSetsEnv(Healthy):
    DEFECT = "discovery exports ACME_DRIVER_VERSION into os.environ for the runtime"
    KILLED_BY = ("RAC109", "rayaccel_discover changed the process environment")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        found = super().rayaccel_discover(host)
        if found and found[0].driver_version:
            os.environ["ACME_DRIVER_VERSION"] = found[0].driver_version
        return found


class HealthWatchdogThread(Healthy):
    DEFECT = "health starts a watchdog thread that outlives the call"
    KILLED_BY = ("RAC109", "left 1 thread(s) running")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        threading.Thread(target=time.sleep, args=(3,), name="acme-watchdog", daemon=True).start()
        return super().rayaccel_health(host, devices)


class DiscoverSpawnsDaemon(Healthy):
    DEFECT = "discovery starts the ACME daemon (a child process) if it is not running"
    KILLED_BY = ("RAC109", "ran a process outside the Host seam")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        found = super().rayaccel_discover(host)
        if found:
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"])
        return found


class DiscoverWritesCache(Healthy):
    DEFECT = "discovery caches its result in a file under the temp dir"
    KILLED_BY = ("RAC109", "wrote a file")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        found = super().rayaccel_discover(host)
        cache = Path(tempfile.gettempdir()) / f"{self.name}-discovery-cache.json"
        cache.write_text(json.dumps([d.id for d in found]), encoding="utf-8")
        return found


class CatalogWritesBack(Healthy):
    DEFECT = "rayaccel_sku_catalog writes the catalog back to disk after loading it (normalising it)"
    KILLED_BY = ("RAC109", "wrote a file")

    def rayaccel_sku_catalog(self) -> SkuCatalog:
        catalog = load_catalog(HERE / "acme-skus.yaml")
        out = Path(tempfile.gettempdir()) / f"{self.name}-skus.json"
        out.write_text(catalog.model_dump_json(by_alias=True), encoding="utf-8")
        return super().rayaccel_sku_catalog()


class DiscoverDlopen(Healthy):
    DEFECT = "discovery loads libacme.so with ctypes instead of host.library"
    KILLED_BY = ("RAC109", "loaded native library")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        with contextlib.suppress(OSError):
            ctypes.CDLL("libacme-management.so.1")
        return super().rayaccel_discover(host)


# Discovery is a function of the host alone ---------------------------------------------------------------


class DiscoverFiltersByEnv(Healthy):
    DEFECT = "discovery keeps only the devices the process's own visible-devices variable lists"
    KILLED_BY = ("RAC110", "in the process env")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        found = super().rayaccel_discover(host)
        wanted = os.environ.get(self.family.visible_devices_env_var)
        if wanted:
            keep = {w.strip() for w in wanted.split(",")}
            found = [d for d in found if str(d.index) in keep]
        return found


class DiscoverEmptyEnvMeansNone(Healthy):
    DEFECT = "discovery returns no devices when the visible-devices variable is set but empty"
    KILLED_BY = ("RAC110", "in the process env")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        if os.environ.get(self.family.visible_devices_env_var) == "":
            return []
        return super().rayaccel_discover(host)


# Timeouts are real ---------------------------------------------------------------------------------------


class ToolLongRetries(Healthy):
    DEFECT = "acme-smi called with a 120 s timeout, retried 3 times on a timeout"
    KILLED_BY = ("RAC204", "would take")

    def tool_version(self, host: Host) -> str | None:
        for _ in range(3):
            try:
                result = host.run(TOOL, timeout=120)
            except CommandTimeout:
                continue
            except HostError:
                return None
            match = _VERSION.match(result.stdout.strip())
            return match.group(1) if match else None
        return None


class ToolManyShortRetries(Healthy):
    DEFECT = "acme-smi retried 8 times with a 2 s timeout each (16 s against a 5 s budget)"
    KILLED_BY = ("RAC204", "would take")

    def tool_version(self, host: Host) -> str | None:
        for _ in range(8):
            try:
                return self.tool_version_once(host)
            except CommandTimeout:
                continue
        return None

    def tool_version_once(self, host: Host) -> str | None:
        result = host.run(TOOL, timeout=2.0)
        match = _VERSION.match(result.stdout.strip())
        return match.group(1) if match else None


class ToolRetriesWhenFaulty(Healthy):
    DEFECT = "acme-smi retried 3 times with 10 s each while a card reports a fatal error (a recovery path)"
    KILLED_BY = ("RAC204", "every command hangs during fault fatal-2: would take")

    def tool_version(self, host: Host) -> str | None:
        faulty = any(_read(host, f"{path}/fatal_errors") != "0" for path in host.glob(f"{SYSFS}/acme*"))
        for _ in range(3 if faulty else 1):
            try:
                result = host.run(TOOL, timeout=10.0 if faulty else 1.0)
            except CommandTimeout:
                continue
            except HostError:
                return None
            match = _VERSION.match(result.stdout.strip())
            return match.group(1) if match else None
        return None


class ToolPatientOnSecondCall(Healthy):
    DEFECT = "acme-smi gets a 30 s timeout from the second call on a host, to give a slow tool more time"
    KILLED_BY = ("RAC203", "rayaccel_discover would take 30.")  # 30.0s, more where load slows the hook itself

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.calls: dict[str, int] = {}

    def tool_version(self, host: Host) -> str | None:
        self.calls[host.name] = self.calls.get(host.name, 0) + 1  # the first call on a machine looks fine
        try:
            result = host.run(TOOL, timeout=1.0 if self.calls[host.name] == 1 else 30.0)
        except HostError:
            return None
        match = _VERSION.match(result.stdout.strip())
        return match.group(1) if match else None


class ToolGarbageTrusted(Healthy):
    DEFECT = "whatever acme-smi prints is taken as the driver version, unvalidated"
    KILLED_BY = ("RAC204", "from garbage")

    def tool_version(self, host: Host) -> str | None:
        try:
            return host.run(TOOL, timeout=1.0).stdout.split("\n")[0][:80] or None
        except HostError:
            return None


# Invariants under perturbation: the suite derives the variant, not the fixture --------------------------------


class TopologyKeepsLostLinks(Healthy):
    DEFECT = "links are read for every card sysfs lists, not for the devices given, so a lost card keeps its links"
    KILLED_BY = ("RAC210", "left out of devices: rayaccel_topology reports link")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        links = []
        for path in host.glob(f"{SYSFS}/acme*"):
            me = _read(host, f"{path}/uuid")
            for peer in host.list_dir(f"{path}/links") if host.is_dir(f"{path}/links") else []:
                if me < peer:
                    gbps = float(_read(host, f"{path}/links/{peer}"))
                    links.append(Link(a=me, b=peer, kind="other", bandwidth_gbps=gbps))
        return Topology(links=links)


class TopologyStopsAtUnknownPeer(Healthy):
    DEFECT = ("the link loop stops at the first peer that is not among the devices given (break, not continue), "
              "so a lost card takes the other cards' links with it")
    KILLED_BY = ("RAC210", "links between the other devices")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        by_uuid = {d.id for d in devices}
        links = []
        for device in devices:
            base = f"{SYSFS}/acme{device.index}/links"
            for peer in host.list_dir(base) if host.is_dir(base) else []:
                if peer not in by_uuid:
                    break
                if device.id < peer:
                    gbps = float(_read(host, f"{base}/{peer}"))
                    links.append(Link(a=device.id, b=peer, kind="other", bandwidth_gbps=gbps))
        return Topology(links=links)


class HealthIgnoresLoss(Healthy):
    DEFECT = "health reads only the fatal-error counter, so a card lost since discovery stays healthy in the monitor"
    KILLED_BY = ("RAC210", "reports it healthy with no fatal reason")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        fatal = HealthReason(code="acme-fatal", message="fatal errors", fatal=True)
        failing = {d.id for d in devices if _read(host, f"{SYSFS}/acme{d.index}/fatal_errors") != "0"}
        return [HealthReport(device=d.id, state="unhealthy", reasons=[fatal]) if d.id in failing
                else HealthReport(device=d.id, state="healthy") for d in devices]


class MetricsByPosition(Healthy):
    DEFECT = "metrics read from the sysfs entry at the device's position in the list, not its index"
    KILLED_BY = ("RAC211", "with the devices reversed, the metrics answer changes")

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        return [s for position, d in enumerate(devices)
                for s in self.samples(host, d.model_copy(update={"index": position}))]



class HealthWarnsEveryPoll(Healthy):
    DEFECT = ("health warns 'no-health-data' on every poll of a healthy machine (the check for devices without "
              "counters inverted)")
    KILLED_BY = ("RAC105", "problem no-health-data (warning in rayaccel_health")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        have = [d.index for d in devices if host.exists(f"{SYSFS}/acme{d.index}/uuid")]
        if have:  # inverted: the devices that *have* counters are called missing
            report_problem("no-health-data", f"no error counters for devices {have}; their health is unknown")
        return super().rayaccel_health(host, devices)


class MetricsMemoryUsedInMib(Healthy):
    DEFECT = "memory_used sampled in MiB where the standard unit is bytes (the sysfs value passed through)"
    KILLED_BY = ("RAC206", "memory_used")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        path = f"{SYSFS}/acme{device.index}"
        in_mib = int(_read(host, f"{path}/mem_used_mib"))
        return [s if s.name != "memory_used" else s.model_copy(update={"value": in_mib})
                for s in super().samples(host, device)]


class MemoryUnreadableAsZero(Healthy):
    DEFECT = "a card's memory size the driver leaves unreadable is reported as 0 MiB (a default taken as a value)"
    KILLED_BY = ("RAC211", "is kept, wrong: its memory_mib went from 65536 to 0")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        try:
            memory = int(_read(host, f"{path}/memory_mib"))
        except (FileNotFoundError, ValueError):
            memory = 0
        return super().device(host, path, driver).model_copy(update={"memory_mib": memory})


class MetricsUnguardedReadings(Healthy):
    DEFECT = "metrics parse every sysfs reading unguarded: one missing or garbled file raises out of the hook"
    KILLED_BY = ("RAC211", "rayaccel_metrics raised instead of reporting it")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        path = f"{SYSFS}/acme{device.index}"
        return [MetricSample(device=device.id, name="temperature", unit="celsius",
                             value=int(_read(host, f"{path}/temp_mc")) / 1000), *super().samples(host, device)[1:]]

class DiscoverFailsLater(Healthy):
    DEFECT = "discovery keeps the acme-smi session of its first call and raises on every later call"
    KILLED_BY = ("RAC110", "a consequence of discovery failing in this build: error: plugin "
                           "c-discover-fails-later in rayaccel_discover")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.session_used = False

    def rayaccel_discover(self, host: Host) -> list[Device]:
        if not host.is_dir(SYSFS):
            return []
        if self.session_used:
            raise RuntimeError("acme-smi session 0x2f already closed")
        self.session_used = True
        return super().rayaccel_discover(host)


class DiscoverCachedPerHostName(Healthy):
    DEFECT = "discovery caches the device list per host name, so a card lost since is still reported"
    KILLED_BY = ("RAC212", "an answer cached from another host")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.cache: dict[str, list[Device]] = {}

    def rayaccel_discover(self, host: Host) -> list[Device]:
        if host.name not in self.cache:
            self.cache[host.name] = super().rayaccel_discover(host)
        return list(self.cache[host.name])


# Cross-consistency: hints, links and domains against what discovery finds ------------------------------------


class CloudHintCountsChips(Healthy):
    DEFECT = "cloud hints count the two chips on each card where discovery counts cards"
    KILLED_BY = ("RAC209", "hints and discovery must count the same unit")

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        found = super().hint(provider, instance_type)
        return found.model_copy(update={"count": 2 * found.count}) if found else None


class TopologyLinksBothWays(Healthy):
    DEFECT = "each link is reported from both ends, a->b and b->a"
    KILLED_BY = ("RAC202", "reported twice, as a duplicate")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        found = super().rayaccel_topology(host, devices)
        return found.model_copy(update={"links": [*found.links, *(ln.model_copy(update={"a": ln.b, "b": ln.a})
                                                                   for ln in found.links)]})


class DomainsOverlap(Healthy):
    DEFECT = "a scale-up domain per NUMA node plus one for the whole mesh, so every card is in two domains"
    KILLED_BY = ("RAC202", "is in two other domains")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        numa = sorted({d.numa_node or 0 for d in devices})
        domains = [Domain(kind="other", id=f"numa{n}", size=sum((d.numa_node or 0) == n for d in devices),
                          members=[d.id for d in devices if (d.numa_node or 0) == n]) for n in numa]
        domains.append(Domain(kind="other", id="mesh", size=max(len(devices), 1), members=[d.id for d in devices]))
        return super().rayaccel_topology(host, devices).model_copy(update={"domains": domains})



# A hook that raises under a fault, where the SDK's stand-in for it equals the right answer -------------------


class MetricsTableOfRunningCards(Healthy):
    DEFECT = ("metrics look each card up by its fatal-error count in a table of what a running card shows ('0'): "
              "a card in error raises KeyError, and the SDK's stand-in (no samples) hides the raise")
    KILLED_BY = ("RAC203", "invariant a-fault-is-an-answer")
    RUNNING = {"0": "running"}

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        states = [self.RUNNING[_read(host, f"{SYSFS}/acme{d.index}/fatal_errors")] for d in devices]
        return [s for d, _ in zip(devices, states, strict=True) for s in self.samples(host, d)]


class LabelsMeshOfHealthyCards(Healthy):
    DEFECT = ("the mesh label is 'partial' unless a table keyed by each card's health state, which knows only "
              "'healthy', says all are: an unhealthy card raises KeyError, and labels are not graded under faults")
    KILLED_BY = ("RAC203", "invariant a-fault-is-an-answer")

    def labels(self, inventory: FamilyInventory) -> dict[str, str]:
        labels = super().labels(inventory)
        if not all({"healthy": True}[h.state] for h in inventory.health):
            labels[f"{LABEL_PREFIX}/mesh"] = "partial"
        return labels


class PodHostsPerCard(Healthy):
    DEFECT = ("the cards' 2-host pod of 8 (this host's 4 and a peer host's) is reported as 8 hosts: one per card, "
              "the pod's size taken for its host count")
    KILLED_BY = ("RAC202", "invariant domain-hosts-hold-its-devices")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        pod = Domain(kind="other", id="acme-pod", size=2 * len(devices), members=[d.id for d in devices],
                     hosts=2 * len(devices), host_index=0)
        return super().rayaccel_topology(host, devices).model_copy(update={"domains": [pod]}) if devices else \
            super().rayaccel_topology(host, devices)


class PodHostsSizeLessMembers(Healthy):
    DEFECT = ("a 4-host pod of 16 cards counts its hosts as the pod's cards less this host's (16 - 4 = 12): '-' "
              "where '/' was meant, right only on a 2-host pod of 2-card hosts")
    KILLED_BY = ("RAC202", "invariant domain-hosts-hold-its-devices")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        size = 4 * len(devices)
        pod = Domain(kind="other", id="acme-pod", size=size, members=[d.id for d in devices],
                     hosts=max(1, size - len(devices)), host_index=0)
        return super().rayaccel_topology(host, devices).model_copy(update={"domains": [pod]}) if devices else \
            super().rayaccel_topology(host, devices)

class MeshSizedBySlots(Healthy):
    DEFECT = ("the box's mesh (a domain of this host alone, its id made from the host's name) is sized by the "
              "baseboard's 8 slots from the spec sheet, not by the cards in it: a 4-card box says 8")
    KILLED_BY = ("RAC202", "invariant host-local-domain-is-its-members")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        mesh = Domain(kind="other", id=f"{host.name}-mesh", size=8, members=[d.id for d in devices])
        return super().rayaccel_topology(host, devices).model_copy(update={"domains": [mesh]}) if devices else \
            super().rayaccel_topology(host, devices)


class MeshCountsListedCards(Healthy):
    DEFECT = ("the box's mesh (a domain of this host alone) is sized by the cards sysfs lists, its members by the "
              "cards given: a card lost from the bus, still listed, is counted in a mesh it is no member of")
    KILLED_BY = ("RAC203", "invariant host-local-domain-is-its-members")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        mesh = Domain(kind="other", id=f"{host.name}-mesh", size=len(host.glob(f"{SYSFS}/acme*")),
                      members=[d.id for d in devices])
        return super().rayaccel_topology(host, devices).model_copy(update={"domains": [mesh]}) if devices else \
            super().rayaccel_topology(host, devices)


class VisibleEnvSetsCuda(Healthy):
    DEFECT = "rayaccel_visible_env also sets CUDA_VISIBLE_DEVICES (copied from a GPU plugin), hiding NVIDIA GPUs"
    KILLED_BY = ("RAC107", "CUDA_VISIBLE_DEVICES, the visible-devices variable of Ray's NvidiaGPUAcceleratorManager")

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        return {**super().rayaccel_visible_env(unit_ids), "CUDA_VISIBLE_DEVICES": ",".join(unit_ids)}


# Past ten devices, reason codes and transports: what one small fixture or "some fault" does not show ----------


class DiscoverIndexFromTextOrder(Healthy):
    DEFECT = ("cards are numbered by their place in the sysfs listing sorted as text ('acme10' before 'acme2'), "
              "not by the number in their name: on 16 cards, card 2's unit opens card 10")
    KILLED_BY = ("RAC105", "index 2 is ACME-0010-5e1f-4c2a-9d3b-000000000010 here")
    MORE_CARDS = (16,)

    def rayaccel_discover(self, host: Host) -> list[Device]:
        found = super().rayaccel_discover(host)
        by_name = sorted(found, key=lambda d: f"acme{d.index}")  # as text, as a directory listing sorts
        return [d.model_copy(update={"index": position}) for position, d in enumerate(by_name)]


class HealthPairsWithTextOrder(Healthy):
    DEFECT = ("health pairs the devices, sorted by index, with the cards sysfs lists sorted as text: right on 4 "
              "cards, another card's state on 16 (card 12's fatal error shows on card 4)")
    KILLED_BY = ("RAC203", "health of ACME-0012-5e1f-4c2a-9d3b-000000000012: expected unhealthy, got healthy")
    MORE_CARDS = (16,)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        paths = sorted(p for p in host.glob(f"{SYSFS}/acme*") if _read(host, f"{p}/state") != "lost")
        ordered = sorted(devices, key=lambda d: d.index)
        return acme.rayaccel_health(host, [d.model_copy(update={"index": int(p.rsplit("acme", 1)[1])})
                                           for d, p in zip(ordered, paths, strict=False)])


class HealthOneReasonCode(Healthy):
    DEFECT = ("every unhealthy card gets the reason code acme-lost, one with fatal errors too: the state is right, "
              "the reason an operator acts on is not")
    KILLED_BY = ("RAC203", "health reasons of ACME-0002-5e1f-4c2a-9d3b-000000000002: expected ['acme-fatal']")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        return [r.model_copy(update={"reasons": [x.model_copy(update={"code": "acme-lost"}) for x in r.reasons]})
                for r in super().rayaccel_health(host, devices)]


class HealthLostAsFatalErrors(Healthy):
    DEFECT = ("a card lost since discovery is reported unhealthy with the fatal-error reason (its counter cannot be "
              "read), not as lost: the monitor drains the node for the wrong cause")
    KILLED_BY = ("RAC210", "the fixture expects ['acme-lost']")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        fatal = HealthReason(code="acme-fatal", message="fatal errors (or no counter)", fatal=True)
        failing = {d.id for d in devices if _read(host, f"{SYSFS}/acme{d.index}/state") == "lost"
                   or _read(host, f"{SYSFS}/acme{d.index}/fatal_errors") != "0"}
        return [HealthReport(device=d.id, state="unhealthy", reasons=[fatal]) if d.id in failing
                else HealthReport(device=d.id, state="healthy") for d in devices]


class TransportTakesOverNccl(Healthy):
    DEFECT = ("the card's own transport is declared under Ray's name NCCL (copied from a GPU plugin's), so Ray's "
              "NCCL would be ACME's class for every family")
    KILLED_BY = ("RAC305", "transport NCCL is Ray's own transport")

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name="NCCL", devices=["cpu"], link_kinds=["other"], one_sided=True,
                              manager_class="rayaccel.transports.shared_memory:SharedMemoryTransport")]


class TransportCopiedFromRocm(Healthy):
    DEFECT = "the transport declaration is copied from the ROCm reference plugin: RCCL, with its manager class"
    KILLED_BY = ("RAC305", "transport RCCL is AMD's, not ACME Corp's")

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name="RCCL", devices=["cuda"], link_kinds=["pcie"],
                              manager_class="rayaccel_amd.transport:RCCLTensorTransport")]


#: name -> plugin object, in the order graded; the control first.
# Partitions (issue 25): cards in a two-partition mode, each mutant with one defect in how it reports them ----


def _split(device: Device, ids: Sequence[str], memory_mib: int | None) -> Device:
    """``device`` in a two-partition mode: a compute partition per id, each of ``memory_mib``."""
    return Device.model_validate({
        **device.model_dump(), "partition_capacity": {"compute_slices": 2, "memory_slices": 2},
        "partitions": [{"id": i, "kind": "compute-partition", "profile": "half", "compute_slices": 1,
                        "memory_slices": 1, "memory_mib": memory_mib} for i in ids]})


class PartitionIdsPerCard(Healthy):
    DEFECT = "partition ids are each card's own partition index (0, 1), so every card's partitions share ids"
    KILLED_BY = ("RAC113", "partition id")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        return _split(card, ["0", "1"], (card.memory_mib or 0) // 2)


class PartitionedCardAlsoWhole(Healthy):
    DEFECT = ("card 0, in a two-partition mode, is listed with its partitions and again whole (the base "
              "enumeration under its PCI address)")
    KILLED_BY = ("RAC113", "is offered whole as well")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        cards = super().rayaccel_discover(host)
        if not cards:
            return cards
        first = cards[0]
        parted = _split(first, [f"{first.id}-p0", f"{first.id}-p1"], (first.memory_mib or 0) // 2)
        whole = first.model_copy(update={"id": f"pci-{first.pci_bus_id}"})
        return [parted, whole, *cards[1:]]


class PartitionMemoryIsTheCards(Healthy):
    DEFECT = "each partition reports its card's whole memory (the device query, not the partition's share)"
    KILLED_BY = ("RAC113", "more than the device's")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        return _split(card, [f"{card.id}-p0", f"{card.id}-p1"], card.memory_mib)


class PartitionMemoryZero(Healthy):
    DEFECT = ("each partition's memory is read from the partition query's reserved figure, 0 on every partition, "
              "not its total: the partitions report 0 MiB and their memory slices hold nothing")
    KILLED_BY = ("RAC113", "invariant partition-memory-follows-its-slices")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        return _split(card, [f"{card.id}-p0", f"{card.id}-p1"], 0)


class PartitionMemoryInGib(Healthy):
    DEFECT = "each partition's memory is the tool's GiB figure stored as MiB (a 1024th of its share)"
    KILLED_BY = ("RAC113", "invariant partition-memory-follows-its-slices")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        return _split(card, [f"{card.id}-p0", f"{card.id}-p1"], (card.memory_mib or 0) // 2 // 1024)


# Cross-record invariants (issue 46): two shapes of defect per family of invariants, RAC216-RAC220 ---------------


class SplitCardUnitsBesideWhole(Healthy):
    DEFECT = ("card 0, in a split compute mode, offers its two halves as units of the family's resource beside the "
              "whole cards: one resource name for 32 GiB and 64 GiB units")
    KILLED_BY = ("RAC216", "invariant one-resource-one-size")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        if card.index != 0:
            return card
        return Device.model_validate({**card.model_dump(), "units": ["0.0", "0.1"]})


class PartitionProfileByKind(Healthy):
    DEFECT = ("a card's partitions of 1 and 3 slices share one profile name ('part'), so one partition resource "
              "stands for 16 GiB and 48 GiB partitions")
    KILLED_BY = ("RAC216", "invariant one-resource-one-size")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        quarter = (card.memory_mib or 0) // 4
        return Device.model_validate({
            **card.model_dump(), "partition_capacity": {"compute_slices": 4, "memory_slices": 4},
            "partitions": [{"id": f"{card.id}-p{i}", "kind": "compute-partition", "profile": "part",
                            "compute_slices": size, "memory_slices": size, "memory_mib": quarter * size}
                           for i, size in enumerate((1, 3))]})


class LinksBothDirections(Healthy):
    DEFECT = ("each link's bandwidth is the sum of both directions' sysfs entries (200 GB/s), twice the one-way "
              "100 GB/s the catalog declares")
    KILLED_BY = ("RAC215", "twice the 100 GB/s SKU acme-r1 declares")

    def catalog_data(self) -> dict[str, Any]:
        data = super().catalog_data()
        data["skus"][0]["link_bandwidth_gbytes_per_s"] = 100  # the catalog is right
        return data

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        links = super().rayaccel_topology(host, devices).links
        return Topology(links=[ln.model_copy(update={"bandwidth_gbps": 2 * (ln.bandwidth_gbps or 0)})
                               for ln in links])


class LinksPcieInMegabytes(Healthy):
    DEFECT = "PCIe link bandwidth converted the wrong way (GB/s x 1000, an MB/s figure reported as GB/s)"
    KILLED_BY = ("RAC217", "invariant link-within-kind-maximum")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        links = super().rayaccel_topology(host, devices).links
        return Topology(links=[ln.model_copy(update={"kind": "pcie", "bandwidth_gbps": 1000 * (ln.bandwidth_gbps or 0)})
                               for ln in links])


class UtilizationPercentTimes100(Healthy):
    DEFECT = "utilization multiplied by 100 although busy_percent is already a percentage (0-3000 %)"
    KILLED_BY = ("RAC218", "invariant metric-in-unit-range")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        return [s if s.name != "utilization" else MetricSample(device=s.device, name=s.name, unit=s.unit,
                                                                value=s.value * 100)
                for s in super().samples(host, device)]


class MemoryUsedMibAsGib(Healthy):
    DEFECT = "memory_used scaled from MiB with 2^30 instead of 2^20: more memory in use than the card has"
    KILLED_BY = ("RAC218", "invariant memory-used-within-capacity")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        return [s if s.name != "memory_used" else MetricSample(device=s.device, name=s.name, unit=s.unit,
                                                                value=s.value * 1024)
                for s in super().samples(host, device)]


class PciBusFromFirstCard(Healthy):
    DEFECT = "every card's PCI address read from acme0's entry (a path left from a one-card prototype)"
    KILLED_BY = ("RAC219", "invariant owned-by-one-device")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        return card.model_copy(update={"pci_bus_id": _read(host, f"{SYSFS}/acme0/pci_bus_id") or None})


class DeviceFileFromDrmList(Healthy):
    DEFECT = ("each card's device file taken by position from the machine's DRM cards, assumed all ACME's: a "
              "display card of another vendor becomes card 0's")
    KILLED_BY = ("RAC219", "invariant unrelated-device-changes-nothing")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        drm = sorted(host.glob("/dev/dri/card*"))
        own = drm[card.index] if card.index < len(drm) else f"/dev/acme{card.index}"
        return Device.model_validate({**card.model_dump(), "attributes": {**card.attributes, "device_file": own}})


class ParseOneCharIds(Healthy):
    DEFECT = ("the visible-devices parser takes each character as an id (right for the fixture's units 0-3, wrong "
              "from unit 10 on)")
    KILLED_BY = ("RAC114", "property visible-round-trip")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        return [c for c in value if c.isalnum()]


class ParseKeepsEight(Healthy):
    DEFECT = "the visible-devices parser keeps the first eight ids ('a node has at most 8 cards')"
    KILLED_BY = ("RAC114", "property visible-round-trip")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        return super().rayaccel_parse_visible(value)[:8]


class HintsBySizeSuffix(Healthy):
    DEFECT = "a cloud hint for every '*.48xlarge' instance type (matched by size), NVIDIA and Trainium ones too"
    KILLED_BY = ("RAC220", "invariant hints-only-for-own-devices")

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        if instance_type.endswith(".48xlarge"):
            return CloudHint(provider=provider, instance_type=instance_type, family=self.name, count=4,
                             accelerator_type="R1")
        return super().hint(provider, instance_type)


class HintsWholeProvider(Healthy):
    DEFECT = "a cloud hint for every GCP instance type asked (a provider-wide default), TPU and A3 VMs included"
    KILLED_BY = ("RAC220", "invariant hints-only-for-own-devices")

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        if provider == "gcp":
            return CloudHint(provider=provider, instance_type=instance_type, family=self.name, count=4,
                             accelerator_type="R1")
        return super().hint(provider, instance_type)


PLUGINS: dict[str, Healthy] = {}


def _name(cls: type[Healthy]) -> str:
    if cls is Healthy:
        return "c-healthy"
    return "c-" + re.sub(r"(?<!^)(?=[A-Z])", "-", cls.__name__).lower()


_CLASSES: list[type[Healthy]] = [Healthy, *Healthy.__subclasses__()]
for _cls in _CLASSES:
    _plugin = _cls(_name(_cls))
    PLUGINS[_plugin.name] = _plugin
    globals()[_plugin.name.replace("-", "_")] = _plugin  # importable as rayaccel_testplugins.corpus:<attr>

#: Mutants whose defect is in their module's import: each lives in a module of its own (importing this one
#: stays clean), which adds it to PLUGINS when imported (tests/conformance/test_conformance_corpus.py imports them).
IMPORT_DEFECT_MODULES = ("rayaccel_testplugins.corpus_import_thread", "rayaccel_testplugins.corpus_slow_import")
#: Every module of mutants beside this one (each adds its mutants to PLUGINS when imported): the import defects,
#: the contract's mutants (rayaccel_testplugins.corpus_contract: RAC215, RAC217, RAC221-RAC223) and those held-out
#: grading found (rayaccel_testplugins.corpus_heldout: RAC240-RAC244; rayaccel_testplugins.corpus_readings: RAC245;
#: rayaccel_testplugins.corpus_signals: RAC250-RAC255) and make mutation found
#: (rayaccel_testplugins.corpus_vendor_json: RAC260, RAC261; rayaccel_testplugins.corpus_declared: RAC264, RAC265).
MUTANT_MODULES = (*IMPORT_DEFECT_MODULES, "rayaccel_testplugins.corpus_contract",
                  "rayaccel_testplugins.corpus_heldout", "rayaccel_testplugins.corpus_readings",
                  "rayaccel_testplugins.corpus_whole_affinities",
                  "rayaccel_testplugins.corpus_vendor_json", "rayaccel_testplugins.corpus_signals",
                  "rayaccel_testplugins.corpus_declared", "rayaccel_testplugins.corpus_links_pci",
                  "rayaccel_testplugins.corpus_sensors", "rayaccel_testplugins.corpus_first_build",
                  "rayaccel_testplugins.corpus_ray_parity", "rayaccel_testplugins.corpus_identity",
                  "rayaccel_testplugins.corpus_units", "rayaccel_testplugins.corpus_label_attributes",
                  "rayaccel_testplugins.corpus_zero", "rayaccel_testplugins.corpus_listing",
                  "rayaccel_testplugins.corpus_missing_records",
                  "rayaccel_testplugins.corpus_affinities", "rayaccel_testplugins.corpus_text_numbers",
                  "rayaccel_testplugins.corpus_stated_machines", "rayaccel_testplugins.corpus_losses",
                  "rayaccel_testplugins.corpus_missing_keys",
                  "rayaccel_testplugins.corpus_used_as_total",
                  "rayaccel_testplugins.corpus_contained_health", "rayaccel_testplugins.corpus_siblings",
                  "rayaccel_testplugins.corpus_link_states", "rayaccel_testplugins.corpus_linked_members",
                  "rayaccel_testplugins.corpus_error_statuses",
                  "rayaccel_testplugins.corpus_dropped_variables", "rayaccel_testplugins.corpus_cut_listings",
                  "rayaccel_testplugins.corpus_failed_listings", "rayaccel_testplugins.corpus_quoted_cells",
                  "rayaccel_testplugins.corpus_fault_counters", "rayaccel_testplugins.corpus_transport_reach",
                  "rayaccel_testplugins.corpus_fatal_counts", "rayaccel_testplugins.corpus_transport_names",
                  "rayaccel_testplugins.corpus_transport_links",
                  "rayaccel_testplugins.corpus_fault_joins", "rayaccel_testplugins.corpus_pod_counts",
                  "rayaccel_testplugins.corpus_trimmed_ids", "rayaccel_testplugins.corpus_counter_layouts",
                  "rayaccel_testplugins.corpus_fault_metrics", "rayaccel_testplugins.corpus_declared_thresholds",
                  "rayaccel_testplugins.corpus_module_versions", "rayaccel_testplugins.corpus_numbered_reasons",
                  "rayaccel_testplugins.corpus_not_supported_rows", "rayaccel_testplugins.corpus_unseen_failures",
                  "rayaccel_testplugins.corpus_demoted_readings", "rayaccel_testplugins.corpus_unknown_products",
                  "rayaccel_testplugins.corpus_day_zero_names",
                  "rayaccel_testplugins.corpus_unreachable_skus",
                  "rayaccel_testplugins.corpus_link_routes", "rayaccel_testplugins.corpus_offered_resources",
                  "rayaccel_testplugins.corpus_summed_parts",
                  "rayaccel_testplugins.corpus_domain_fabrics", "rayaccel_testplugins.corpus_fabric_domains",
                  "rayaccel_testplugins.corpus_link_sized_domains",
                  "rayaccel_testplugins.corpus_stated_slices",
                  "rayaccel_testplugins.corpus_high_water_marks",
                  "rayaccel_testplugins.corpus_instance_entries", "rayaccel_testplugins.corpus_untyped_hints",
                  "rayaccel_testplugins.corpus_live_labels", "rayaccel_testplugins.corpus_recounted_devices",
                  "rayaccel_testplugins.corpus_fabric_names", "rayaccel_testplugins.corpus_merged_profiles",
                  "rayaccel_testplugins.corpus_visibility_variables",
                  "rayaccel_testplugins.corpus_counter_polls",
                  "rayaccel_testplugins.corpus_stated_metrics",
                  "rayaccel_testplugins.corpus_fatal_states",
                  "rayaccel_testplugins.corpus_counted_errors",
                  "rayaccel_testplugins.corpus_host_transport_devices",
                  "rayaccel_testplugins.corpus_shared_domains",
                  "rayaccel_testplugins.corpus_group_readings",
                  "rayaccel_testplugins.corpus_pooled_quantities",
                  "rayaccel_testplugins.corpus_shared_slices",
                  "rayaccel_testplugins.corpus_failed_queries", "rayaccel_testplugins.corpus_assumed_cpus",
                  "rayaccel_testplugins.corpus_kept_entries", "rayaccel_testplugins.corpus_provider_hints",
                  "rayaccel_testplugins.corpus_own_ids", "rayaccel_testplugins.corpus_hint_listing",
                  "rayaccel_testplugins.corpus_down_ports",
                  "rayaccel_testplugins.corpus_freed_transfers", "rayaccel_testplugins.corpus_aborted_transfers",
                  "rayaccel_testplugins.corpus_partition_ids", "rayaccel_testplugins.corpus_lane_ports",
                  "rayaccel_testplugins.corpus_attribute_fields", "rayaccel_testplugins.corpus_rate_counters",
                  "rayaccel_testplugins.corpus_vanished_entries", "rayaccel_testplugins.corpus_rising_errors",
                  "rayaccel_testplugins.corpus_switch_attributes",
                  "rayaccel_testplugins.corpus_polled_losses",
                  "rayaccel_testplugins.corpus_lost_answers", "rayaccel_testplugins.corpus_left_out_signals")


def add_import_defect(cls: type[Healthy]) -> Healthy:
    """Register a mutant defined in a module of its own; returns it, to be bound to that module's ``plugin``."""
    plugin = cls(_name(cls))
    PLUGINS[plugin.name] = plugin
    return plugin


def plugins_env(names: Sequence[str]) -> str:
    """RAYACCEL_PLUGINS value that loads these corpus plugins in another process (a Ray node)."""
    def target(name: str) -> str:
        module, attr = type(PLUGINS[name]).__module__, name.replace("-", "_")
        return f"{module}:{attr if hasattr(sys.modules[module], attr) else 'plugin'}"

    return ",".join(f"{n}={target(n)}" for n in names)
