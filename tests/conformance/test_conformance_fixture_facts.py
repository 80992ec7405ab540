"""The fixture facts of a healthy machine (expected.problems, expected.metric_values) and the derived damage of one
device's vendor files (RAC211), on real builds of shipped fixtures and on the helpers' own verdicts."""

from __future__ import annotations

from rayaccel.hosts.expectations import compare_expected
from rayaccel.hosts.fixtures import installed_fixtures, load_fixture
from rayaccel.hosts.recorded_fixture import expected_from_inventory
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import Device, MetricSample
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.perturbations import device_files
from rayaccel_conformance.checks.supported import metric_value_differences


def test_a_healthy_build_reports_exactly_the_problems_its_fixture_expects() -> None:
    manager = PluginManager()
    fixture = load_fixture(installed_fixtures(manager)["amd/mi300x-dpx-amd-smi-26"])
    inventory = InventoryBuilder(manager, ["amd"]).build(simulated_host(fixture))
    assert fixture.expected.problems == ["fallback-device-id"] and compare_expected(inventory, fixture) == []
    # The same build against an expectation of none: the warning is a difference, named with its hook.
    none = fixture.expected.model_copy(update={"problems": []})
    assert any(d.startswith("problem fallback-device-id (warning in rayaccel_discover")
               for d in compare_expected(inventory, fixture, none))
    # ... and one it states but the build does not report is a difference too.
    extra = fixture.expected.model_copy(update={"problems": ["fallback-device-id", "no-health-data"]})
    assert compare_expected(inventory, fixture, extra) == [
        "problem no-health-data: expected on a healthy build (expected.problems), not reported"]
    # A recording states what it saw, so a recorded fixture passes as recorded.
    assert expected_from_inventory(inventory, "amd")["problems"] == ["fallback-device-id"]


def test_metric_values_are_held_within_one_percent_and_a_unit_slip_is_named() -> None:
    def sample(name: str, unit: str, value: float) -> MetricSample:
        return MetricSample(device="d0", name=name, unit=unit, value=value)

    want = {"d0": {"memory_used": 24576 * 2**20, "power": 80.0}}
    assert metric_value_differences([sample("memory_used", "bytes", 24576 * 2**20), sample("power", "watts", 80.4)],
                                    want) == []
    wrong = metric_value_differences([sample("memory_used", "bytes", 24576), sample("power", "watts", 80000)], want)
    assert wrong[0].endswith("MiB where bytes are due (not multiplied by 2^20)"), wrong
    assert "1000x the 80 watts due: a unit mix-up by 1000: a reading in milliwatts" in wrong[1], wrong
    assert metric_value_differences([], want)[0].startswith("d0 has no memory_used sample")


def test_a_devices_own_files_are_those_naming_its_entry_or_pci_address() -> None:
    device = Device(index=1, id="X-1", product_name="X", pci_bus_id="0000:11:00.0")
    read = ["/sys/class/x/x1/uuid", "/sys/class/x/x10/uuid", "/sys/class/x/x0/links/X-1", "/sys/module/x/version",
            "/sys/bus/pci/devices/0000:11:00.0/numa_node", "/sys/class/x/x1/links/X-0"]
    assert device_files(read, device) == ["/sys/bus/pci/devices/0000:11:00.0/numa_node", "/sys/class/x/x1/links/X-0",
                                          "/sys/class/x/x1/uuid"]
