{% set kind = cookiecutter.probe_kind %}
"""Tests of this plugin's own beyond the common ones (test_{{ cookiecutter.__module }}_plugin.py): what the
sample fixture offers, a vendor interface that answers garbage, and a day-zero SKU. They use the testing kit's
fixtures: ``rayaccel_kit`` (this project's plugin, its fixtures, hosts and inventories) and ``rayaccel_manager``."""

from __future__ import annotations

from typing import Any

from rayaccel import NodeInventory, SkuMatch, SkuRecord
from rayaccel.testing import PluginKit, PluginManager, collect_problems, parse_fixture

from {{ cookiecutter.__module }} import health, plugin, probe, readings, topology

FAMILY = "{{ cookiecutter.__family }}"
# SAMPLE: the generated fixture. When you record a real node, point this at its fixture.
SAMPLE_FIXTURE = f"{FAMILY}-4"


def inventory(kit: PluginKit, data: dict[str, Any]) -> NodeInventory:
    return kit.inventory(parse_fixture(data, "test"))


def test_the_sample_fixture_offers_every_device_and_its_metrics(rayaccel_kit: PluginKit) -> None:
    result = rayaccel_kit.inventory(SAMPLE_FIXTURE)
    assert [p.render() for p in result.problems] == []
    family = result.family(FAMILY)
    assert family is not None and len(family.schedulable_units) == 4
    assert {m.name for m in family.metrics} >= {"utilization", "temperature", "power", "memory_used", "memory_total"}


def test_unreadable_answers_are_a_problem_for_the_plugin_not_a_crash(rayaccel_kit: PluginKit) -> None:
    data = rayaccel_kit.data(SAMPLE_FIXTURE)
{% if kind == "sysfs" %}
    data["host"]["files"][f"{probe.SYSFS}/{probe.CLASS}1/memory_mib"] = "lots\n"
{% elif kind == "command-json" %}
    data["host"]["commands"][" ".join(probe.QUERIES["devices"].argv)]["stdout"] = "{not json"
{% elif kind == "command-csv" %}
    data["host"]["commands"][" ".join(probe.query("device", probe.DEVICE_COLUMNS))]["stdout"] = "0, only-two\n"
{% else %}
    del data["host"]["libraries"][probe.LIBRARY]["devices"]["1"]["uuid"]
{% endif %}
    result = inventory(rayaccel_kit, data)
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


def test_a_pci_id_in_another_form_or_a_size_past_the_hardware_is_reported_not_used() -> None:
    # The vendor writes a PCI device id as 0x and four hex digits; the SKU catalog matches that form only.
    with collect_problems() as sink:
        ids = [readings.pci_id(v) for v in ("0x0A01", "0x0a01ff", "0x0a0g", "0a01", "x")]
        # No accelerator has 95 TiB of memory: a garbled size, not a device to schedule by.
        sizes = [readings.memory_size(v, "memory_mib") for v in ("131072", "99999999")]
    assert ids == ["0x0a01", None, None, None, None] and sizes == [131072, None]
    assert [r.code for r in sink.drain()] == ["malformed-value"] * 5


def test_counters_missing_for_every_device_are_an_error_for_some_a_warning(rayaccel_kit: PluginKit) -> None:
    family = rayaccel_kit.inventory(SAMPLE_FIXTURE).family(FAMILY)
    assert family is not None and len(family.devices) > 1
    devices = family.devices
    for answered, severity in (([], "error"), (devices[1:], "warning")):
        with collect_problems() as sink:
            reports = health.to_reports(devices, {d.id: readings.DeviceHealth(d.id, 0, 0) for d in answered})
        assert [(r.code, r.severity) for r in sink.drain()] == [("no-health-data", severity)]
        unknown = len(devices) - len(answered)
        assert [r.state for r in reports] == ["unknown"] * unknown + ["healthy"] * len(answered)


def test_a_link_listed_from_either_end_is_one_link_and_no_device_is_its_own_peer(rayaccel_kit: PluginKit) -> None:
    family = rayaccel_kit.inventory(SAMPLE_FIXTURE).family(FAMILY)
    assert family is not None
    first, second = sorted(family.devices[:2], key=lambda d: d.id)
    for a, b in ((first.id, second.id), (second.id, first.id)):
        links = topology.to_topology(family.devices, [readings.PeerLink(a, b, 50.0)]).links
        assert [(link.a, link.b) for link in links] == [(first.id, second.id)]
    # The peer's name as read from the vendor (its own string, equal to the device's id): not a link.
    assert topology.to_topology(family.devices, [readings.PeerLink(first.id, "".join(first.id), 50.0)]).links == []


def test_a_day_zero_sku_fixture_resolves_to_the_new_sku(rayaccel_kit: PluginKit) -> None:
    sku = SkuRecord(id=f"{FAMILY}-x2", marketing_name="X2", accelerator_type="X2", memory_mib=131072,
                    match=SkuMatch(pci_device_ids=["0x0a02"], product_names=["X2 prototype"]))
    data = plugin.rayaccel_fixture_for_sku(rayaccel_kit.data(SAMPLE_FIXTURE), sku)
    result = inventory(rayaccel_kit, data)
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


def test_visible_devices_env_var_selects_units(rayaccel_manager: PluginManager) -> None:
    env_var = rayaccel_manager.family(FAMILY).visible_devices_env_var
    assert rayaccel_manager.visible_env(FAMILY, ["1", "3"]) == {env_var: "1,3"}
    assert rayaccel_manager.parse_visible(FAMILY, "1,3") == ["1", "3"]


def test_a_devices_units_select_that_device_alone(rayaccel_kit: PluginKit, rayaccel_manager: PluginManager) -> None:
    # VENDOR: what your runtime reads in the variable. The kit's takes device indexes as the vendor tool lists them,
    # so a task given one device's units must see that device's index alone. Only the runtime knows this (the
    # suite checks what Ray and the plugin agree on): a runtime selecting smaller units (cores, dies) numbers them
    # itself, so state its ids here, never a numbering of your own (two dies a device numbered 0-7 flat, under a
    # variable taking device indexes, give device 1's task '2,3': devices 2 and 3).
    family = rayaccel_kit.inventory(SAMPLE_FIXTURE).family(FAMILY)
    assert family is not None
    env_var = rayaccel_manager.family(FAMILY).visible_devices_env_var
    seen = {d.index: rayaccel_manager.visible_env(FAMILY, d.unit_ids).get(env_var) for d in family.devices}
    assert seen == {d.index: str(d.index) for d in family.devices}
