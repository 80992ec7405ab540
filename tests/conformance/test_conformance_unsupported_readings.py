"""RAC271: a value the vendor answers as not supported, as each place a reading lives says it (a library's data
without the field, N/A in a tool's output, a sysfs attribute absent), leaves the value unknown and the device
whole; a declared reason that drains a device for a not-supported answer is named."""

from __future__ import annotations

from typing import Any

from rayaccel.plugins.manager import PluginManager
from rayaccel.records import Device, ReasonCode
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.readings import Reading
from rayaccel_conformance.checks.unsupported_readings import not_supported_reasons_that_drain, unsupported_host
from rayaccel_conformance.harness.subject import Subject

RAC271 = next(c for c in all_checks() if c.id == "RAC271")
DEVICE = Device(index=2, id="GPU-2", product_name="X")


def test_each_place_says_not_supported_its_own_way() -> None:
    host: dict[str, Any] = {"files": {"/sys/class/x/x2/power_mw": "250000\n"},
            "libraries": {"lib": {"devices": {"2": {"memory": {"used": 5, "total": 9}, "power": 7}}}},
            "commands": {"tool --json": {"stdout": '{"cards": [{}, {}, {"power": 7}]}'}}}
    state, how = unsupported_host(host, Reading("library", "lib", ("devices", "2", "memory", "used"), 5.0), DEVICE) \
        or ({}, "")
    assert state["libraries"]["lib"]["devices"]["2"] == {"power": 7} and "devices.2.memory absent" in how
    state, how = unsupported_host(host, Reading("file", "/sys/class/x/x2/power_mw", (), 250000.0), DEVICE) or ({}, "")
    assert state["files"] == {} and "absent" in how
    state, how = unsupported_host(host, Reading("command", "tool --json", ("cards", 2, "power"), 7.0), DEVICE) \
        or ({}, "")
    assert state["commands"]["tool --json"]["stdout"] == '{"cards": [{}, {}, {"power": "N/A"}]}'
    assert host["libraries"]["lib"]["devices"]["2"]["memory"] == {"used": 5, "total": 9}  # the state is a copy
    assert unsupported_host(host, Reading("library", "lib", ("devices", "2"), 2.0), DEVICE) is None


def test_a_declared_reason_draining_a_device_for_a_not_supported_answer_is_named() -> None:
    family = Subject("amd", PluginManager(autoload=True)).family()
    assert not_supported_reasons_that_drain(family) == []
    lost = ReasonCode(code="amdsmi-not-supported", state="unhealthy", fatal=True,
                      meaning="a health query fails with AMDSMI_STATUS_NOT_SUPPORTED: the GPU stopped answering")
    named = not_supported_reasons_that_drain(family.model_copy(update={"health_reasons": [
        *(family.health_reasons or []), lost]}))
    assert len(named) == 1 and "invariant not-supported-is-not-a-lost-device" in named[0]
    assert "'amdsmi-not-supported'" in named[0] and "unhealthy, fatal" in named[0]
    unknown = lost.model_copy(update={"state": "unknown", "fatal": False})
    assert not_supported_reasons_that_drain(family.model_copy(update={"health_reasons": [unknown]})) == []


def test_the_reference_plugins_answers_keep_the_device_and_lose_the_value() -> None:
    manager = PluginManager(autoload=True)
    for ref in ("nvidia/dgx-h100", "amd/mi300x-8", "gaudi/hls-gaudi2"):
        result = Subject(ref.split("/")[0], manager).run(RAC271, ref)
        assert result.outcome == "passed" and "answered as not supported in turn" in result.evidence[0], result
