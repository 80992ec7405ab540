{% set kind = cookiecutter.probe_kind %}
"""The plugin against its simulated node: the inventory the fixture expects, the declared fault, no
driver, a vendor interface that answers garbage, and a day-zero SKU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from rayaccel import SkuMatch, SkuRecord
from rayaccel.inventory.builder import collect_inventory
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import NodeInventory
from rayaccel.simulation.expectations import compare_expected
from rayaccel.simulation.fixtures import load_fixture, parse_fixture
from rayaccel.simulation.simulated_host import SimulatedHost

from {{ cookiecutter.__module }} import plugin, probe

FAMILY = "{{ cookiecutter.__family }}"
# SAMPLE: the generated fixture and its fault. When you record a real node, point these at its fixture
# and one of its declared faults (or parametrize over your fixtures).
FIXTURE = Path(plugin.__file__).parent / "fixtures" / f"{FAMILY}-4.yaml"
SAMPLE_FAULT = "fatal-2"


@pytest.fixture
def manager() -> PluginManager:
    pm = PluginManager(autoload=False)
    assert pm.register(plugin, FAMILY), [p.render() for p in pm.problems]
    return pm


def inventory(manager: PluginManager, data: dict[str, Any], faults: tuple[str, ...] = ()) -> NodeInventory:
    return collect_inventory(manager, SimulatedHost(parse_fixture(data, "test"), faults=faults))


def fixture_data() -> dict[str, Any]:
    return yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_the_fixture_gives_its_expected_inventory_and_no_problem(manager: PluginManager) -> None:
    fixture = load_fixture(FIXTURE)
    result = collect_inventory(manager, SimulatedHost(fixture))
    assert compare_expected(result, fixture) == []
    assert [p.render() for p in result.problems] == []
    family = result.family(FAMILY)
    assert family is not None and len(family.schedulable_units) == 4
    assert {m.name for m in family.metrics} >= {"utilization", "temperature", "power", "memory_used", "memory_total"}


def test_the_declared_fault_takes_the_device_out_and_is_fatal(manager: PluginManager) -> None:
    fixture = load_fixture(FIXTURE)
    fault = fixture.fault(SAMPLE_FAULT)
    result = collect_inventory(manager, SimulatedHost(fixture, faults=[fault.name]))
    family = result.family(FAMILY)
    assert family is not None
    states = {h.device: h.state for h in family.health}
    for device, state in fault.expected.health.items():
        assert states[device] == state
    assert result.resources == fault.expected.resources
    assert any(r.fatal for h in family.health for r in h.reasons) is fault.expected.fatal


def test_no_driver_means_no_devices_and_no_problem(manager: PluginManager) -> None:
    data = fixture_data()
    data["host"] = {"hostname": "no-driver"}
    result = inventory(manager, data)
    assert result.families == [] and result.problems == []


def test_unreadable_answers_are_a_problem_for_the_plugin_not_a_crash(manager: PluginManager) -> None:
    data = fixture_data()
{% if kind == "sysfs" %}
    data["host"]["files"][f"{probe.SYSFS}/{probe.CLASS}1/memory_mib"] = "lots\n"
{% elif kind == "command-json" %}
    data["host"]["commands"][" ".join(probe.QUERIES["devices"].argv)]["stdout"] = "{not json"
{% elif kind == "command-csv" %}
    data["host"]["commands"][" ".join(probe.query("device", probe.DEVICE_COLUMNS))]["stdout"] = "0, only-two\n"
{% else %}
    del data["host"]["libraries"][probe.LIBRARY]["devices"]["1"]["uuid"]
{% endif %}
    result = inventory(manager, data)
    assert result.problems and {(p.plugin, p.hook) for p in result.problems} == {(FAMILY, "rayaccel_discover")}
{% if kind in ("sysfs", "python-library") %}
    # One device's unreadable value costs that value (or that device), never the family's other devices.
    family = result.family(FAMILY)
    assert family is not None and len(family.devices) >= 3
{% elif kind == "command-csv" %}
    assert "line 1: expected 7 columns" in result.problems[0].message  # the line is named, and skipped
{% else %}
    assert result.families == [] and result.problems[0].code == "hook-raised"  # no listing at all: no devices
{% endif %}


def test_a_day_zero_sku_fixture_resolves_to_the_new_sku(manager: PluginManager) -> None:
    sku = SkuRecord(id=f"{FAMILY}-x2", marketing_name="X2", accelerator_type="X2", memory_mib=131072,
                    match=SkuMatch(pci_device_ids=["0x0a02"], product_names=["X2 prototype"]))
    data = plugin.rayaccel_fixture_for_sku(fixture_data(), sku)
    result = inventory(manager, data)
    family = result.family(FAMILY)
    assert family is not None
    assert {d.product_name for d in family.devices} == {"X2 prototype"}
    assert {d.pci_device_id for d in family.devices} == {"0x0a02"}
    assert {d.memory_mib for d in family.devices} == {131072}
    # Not in the catalog yet: still schedulable, flagged, with the command that onboards it.
    assert family.sku_known is False and len(family.schedulable_units) == 4
    assert result.labels["rayaccel.io/sku-known"] == "false"
    warning = next(p for p in result.problems if p.code == "unknown-sku")
    assert warning.fix is not None and f"rayaccel sku add --plugin {FAMILY}" in warning.fix


def test_visible_devices_env_var_selects_units(manager: PluginManager) -> None:
    env_var = manager.family(FAMILY).visible_devices_env_var
    assert manager.visible_env(FAMILY, ["1", "3"]) == {env_var: "1,3"}
    assert manager.parse_visible(FAMILY, "1,3") == ["1", "3"]
