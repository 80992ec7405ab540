"""The pure hooks' contract, scaled readings, renumbered entries, padded names (issue 46: RAC221-RAC225), beyond the
corpus's kills (tests/conformance/test_conformance_corpus.py grades two mutants each): the control holds them on
every fixture, a memory size the SDK filled in from the catalog is named as such rather than blamed on the
plugin's read, the readings the suite scales are found in files, library data and a tool's CSV output alike, and
a device file a plugin reports under its entry follows the entry's new number."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from rayaccel import Device, Host
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import MetricSample
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.readings import Reading, candidates, host_readings, scaled_host, with_reading
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS
from rayaccel_testplugins import corpus

all_checks()
CONTRACT = ("RAC221", "RAC222", "RAC223", "RAC224", "RAC225")


class MemoryFromTheCatalog(corpus.Healthy):
    """Discovery reads no memory size (the SDK fills it in from the catalog's SKU), and memory_total is sampled
    from that size: scaling the card's memory file moves nothing the plugin read."""

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        return super().device(host, path, driver).model_copy(update={"memory_mib": None})


def _grade(name: str, plugin: corpus.Healthy) -> Subject:
    manager = PluginManager(autoload=False, timeout=5.0)
    manager.register(plugin, name)
    subject = Subject(name, manager)
    for check_id in CONTRACT:
        for ref in list(subject.fixture_paths()) if CHECKS[check_id].scope == "fixture" else [None]:
            subject.run(CHECKS[check_id], ref)
    return subject


@pytest.fixture(scope="module")
def control() -> Subject:
    return _grade("c-healthy", corpus.PLUGINS["c-healthy"])


def test_the_control_holds_the_contract_on_every_fixture(control: Subject) -> None:
    outcomes = {(o.check_id, o.fixture): o for o in control.outcomes}
    assert {o.outcome for o in outcomes.values()} == {"passed"}, [
        (o.check_id, o.fixture, o.evidence) for o in outcomes.values() if o.outcome != "passed"]
    moved = outcomes[("RAC223", "c-healthy/acme-4")].evidence[0]
    assert "memory_total x2, memory_used x2, power x2, temperature x2, utilization x2 moved exactly" in moved
    # On 16 cards the middle card is busy 80%: twice would leave the percent's range, so it is halved.
    assert "utilization x0.5" in outcomes[("RAC223", "c-healthy/acme-16")].evidence[0]


def test_a_size_the_sdk_filled_from_the_catalog_is_named_not_blamed_on_the_read() -> None:
    subject = _grade("c-memory-from-catalog", MemoryFromTheCatalog("c-memory-from-catalog"))
    rac223 = next(o for o in subject.outcomes if o.check_id == "RAC223" and o.fixture.endswith("acme-4"))
    assert rac223.outcome == "failed", rac223.evidence
    line = next(e for e in rac223.evidence if "memory_total" in e)
    assert "file /sys/class/acme/acme2/memory_mib" in line and "it stayed put" in line
    assert "filled by the SDK from SKU acme-r1's catalog memory_mib; the plugin's discovery gave none" in line


def test_readings_are_found_in_files_library_data_and_csv_rows_and_scaled_as_written() -> None:
    device = Device(index=2, id="CARD-2", pci_bus_id="0000:4d:00.0")
    host = {"files": {"/sys/class/acme/acme2/power_mw": "252000\n", "/sys/class/acme/acme1/power_mw": "251000\n"},
            "libraries": {"vendorlib": {"devices": {"2": {"power_usage": 252000}, "1": {"power_usage": 1}}}},
            "commands": {"tool -q": {"stdout": "1, CARD-1, 0000:34:00.0, 97 W\n2, CARD-2, 0000:4d:00.0, 252 W\n"}}}
    power = MetricSample(device="CARD-2", name="power", unit="watts", value=252.0)
    found = {r.describe(): factor for r, factor in candidates(power, device, host_readings(host))}
    assert found == {"file /sys/class/acme/acme2/power_mw": 1e-3,
                     "library vendorlib devices.2.power_usage": 1e-3,
                     "`tool -q` output line 1 field 3": 1.0}
    row = next(r for r in host_readings(host) if r.where == "table" and r.value == 252)
    scaled = scaled_host(host, row, 2.0)["commands"]["tool -q"]["stdout"]
    assert scaled.splitlines()[1] == "2, CARD-2, 0000:4d:00.0, 504 W"
    leaf = Reading("library", "vendorlib", ("devices", "2", "power_usage"), 252000.0)
    assert scaled_host(host, leaf, 0.5)["libraries"]["vendorlib"]["devices"]["2"]["power_usage"] == 126000
    assert scaled_host(host, Reading("file", "/sys/class/acme/acme2/power_mw", (), 252000.0), 2.0)["files"][
        "/sys/class/acme/acme2/power_mw"] == "504000\n"


def test_a_rewritten_reading_leaves_the_host_given_and_every_earlier_rewrite_as_they_were() -> None:
    """with_reading copies only the containers on the way to the reading: the host given, and a state an earlier
    rewrite returned (the checks chain them), must keep their values wherever the reading is."""
    host: dict[str, Any] = {"hostname": "n", "files": {"/sys/class/acme/acme2/power_mw": "252000\n"},
                            "libraries": {"vendorlib": {"devices": {"2": {"power_usage": 252000, "temp": [41, 42]}}}},
                            "commands": {"tool -q": {"stdout": "2, CARD-2, 252 W\n", "exit": 0},
                                         "tool --json": {"stdout": json.dumps({"gpus": [{"power": 252}]}), "exit": 0}}}
    pristine = copy.deepcopy(host)
    places = [Reading("file", "/sys/class/acme/acme2/power_mw", (), 252000.0),
              Reading("library", "vendorlib", ("devices", "2", "temp", 1), 42.0),
              Reading("table", "tool -q", (0, 2), 252.0, "2, CARD-2, 252 W"),
              Reading("command", "tool --json", ("gpus", 0, "power"), 252.0)]
    state, returned = host, []
    for reading in places:
        state = with_reading(state, reading, lambda old: "9", lambda old: 9)
        returned.append((state, copy.deepcopy(state)))
        assert host == pristine, reading.describe()
    for earlier, as_returned in returned:
        assert earlier == as_returned
    assert state["files"]["/sys/class/acme/acme2/power_mw"] == "9\n"
    assert state["libraries"]["vendorlib"]["devices"]["2"]["temp"] == [41, 9]
    assert state["commands"]["tool -q"] == {"stdout": "2, CARD-2, 9 W\n", "exit": 0}
    assert json.loads(state["commands"]["tool --json"]["stdout"]) == {"gpus": [{"power": 9}]}
    once = with_reading(host, places[1], lambda old: "7", lambda old: 7)
    assert host == pristine and state["libraries"]["vendorlib"]["devices"]["2"]["temp"] == [41, 9]
    assert once["libraries"]["vendorlib"]["devices"]["2"]["temp"] == [41, 7]


def test_a_device_file_under_a_renumbered_entry_follows_it_and_the_tpu_plugin_keeps_its_chips() -> None:
    subject = Subject("tpu", PluginManager(autoload=True))
    result = subject.run(CHECKS["RAC224"], "tpu/tpu7x-8-accel")
    assert result.outcome == "passed", result.evidence
    assert "with accel0..accel3 renumbered accel13..accel10, the 4 devices keep" in result.evidence[0]
    # NVML answers name every GPU: renaming paths alone would contradict them, so nothing is renumbered.
    skipped = Subject("nvidia", PluginManager(autoload=True)).run(CHECKS["RAC224"], "nvidia/dgx-h100")
    assert skipped.outcome == "skipped", skipped.evidence
