"""Corpus mutants found by grading a third batch of held-out broken plugins (issue 46, lane D: RAC268): a device
drained because one of its measurements cannot be read, two shapes (neither the held-out plugin's own: hl-smi's
any live field N/A taken for a module that stopped responding); and one whose sensor the driver does not offer
(RAC271's not-supported-is-not-a-lost-device, beside corpus_vendor_json's N/A read as 0).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it (``c-thermal-trip-on-garbage`` as
``c_thermal_trip_on_garbage``).
"""

from __future__ import annotations

from rayaccel import Device, HealthReason, HealthReport, Host
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect


def _drained(device: Device, code: str, message: str) -> HealthReport:
    return HealthReport(device=device.id, state="unhealthy", reasons=[HealthReason(code=code, message=message,
                                                                                   fatal=True)])


class ThermalTripOnGarbage(Healthy):
    DEFECT = ("a card whose temperature file does not parse is taken for one whose thermal sensor tripped (the "
              "driver's documented answer to an overheat is the card going away, not garbage) and drained")
    KILLED_BY = ("RAC268", "invariant unreadable-sensor-costs-its-reading")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        reports = []
        for report, device in zip(acme.rayaccel_health(host, devices), devices, strict=True):
            path = f"{SYSFS}/acme{device.index}/temp_mc"
            if report.state == "healthy" and host.exists(path) and not host.read_text(path).strip().isdigit():
                report = _drained(device, "acme-thermal-trip", "the thermal sensor reads no temperature")
            reports.append(report)
        return reports


class DrainedWithoutEverySample(Healthy):
    DEFECT = ("health counts a card's metric samples and calls one with any missing 'not responding' (the author's "
              "cards always answered every reading)")
    KILLED_BY = ("RAC268", "one measurement that cannot be read is not a device that fails")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        full = max((len(self.samples(host, d)) for d in devices), default=0)
        return [_drained(device, "acme-not-responding", "the card does not answer every reading")
                if report.state == "healthy" and len(self.samples(host, device)) < full else report
                for report, device in zip(acme.rayaccel_health(host, devices), devices, strict=True)]


#: The sensor attributes the driver creates for a card that has the sensor.
SENSOR_FILES = ("power_mw", "temp_mc", "busy_percent")


class AbsentSensorIsLostCard(Healthy):
    DEFECT = ("a card whose driver does not create one of its sensor attributes (power_mw on a card without a power "
              "sensor: the driver's 'not supported') is taken for a card going away and drained")
    KILLED_BY = ("RAC271", "invariant not-supported-is-not-a-lost-device")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        reports = []
        for report, device in zip(acme.rayaccel_health(host, devices), devices, strict=True):
            path = f"{SYSFS}/acme{device.index}"
            gone = [name for name in SENSOR_FILES if not host.exists(f"{path}/{name}")]
            if report.state == "healthy" and gone:
                report = _drained(device, "acme-going-away", f"{path} lost {gone[0]}: the card is going away")
            reports.append(report)
        return reports


for _cls in (ThermalTripOnGarbage, DrainedWithoutEverySample, AbsentSensorIsLostCard):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
