"""Real-hardware semantics (issue 15): Neuron 2.34's neuron-ls, a sysfs fallback, unknown ECC, UltraServer sizes.

- Neuron 2.34 replaces ``neuron-ls --json-output`` by ``--output-format json`` (an object with top-level
  instance details): both are read, the new flag first.
- neuron-ls failing while the driver's sysfs tree is there used to mean zero devices: sysfs is read instead.
- A missing ECC counter is unknown, not 0.
- An UltraServer group has 4, 2 or 1 nodes (``NEURON_RT_ULTRASERVER_MODE``), not always 4
  (a job of several groups: tests/test_neuron_ultraserver_jobs.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rayaccel.testing import Fixture, PluginManager, SimulatedHost, build_inventory, load_fixture, parse_fixture
from rayaccel_neuron import instance, neuronls, plugin

FIXTURES = Path(plugin.__file__).parent / "fixtures"
ULTRA = "trn2u.48xlarge-ultraserver-x2"


@pytest.fixture(scope="module")
def manager(rayaccel_manager: PluginManager) -> PluginManager:
    return rayaccel_manager  # the testing kit's: just this plugin, under its entry-point name


def fixture(name: str) -> Fixture:
    return load_fixture(FIXTURES / f"{name}.yaml")


def with_env(name: str, **env: str) -> SimulatedHost:
    data = fixture(name).model_dump(mode="json", by_alias=True)
    data["host"]["env"] = {**data["host"].get("env", {}), **env}
    return SimulatedHost(parse_fixture(data, f"{name} with {env}"))


def test_the_2_34_json_object_is_read_with_its_top_level_instance_facts(manager: PluginManager) -> None:
    host = SimulatedHost(fixture(ULTRA))
    stdout = host.run([neuronls.NEURON_LS, *neuronls.NEURON_LS_NEW_ARGS]).stdout
    assert host.run([neuronls.NEURON_LS, *neuronls.NEURON_LS_ARGS]).returncode == 2  # the old flag is gone
    infos = neuronls.parse_neuron_ls(stdout)
    assert len(infos) == 16 and {i.logical_nc_config for i in infos} == {2}
    assert {i.instance_type for i in infos} == {"trn2u.48xlarge"}
    result = build_inventory(manager, host)
    assert result.problems == []
    assert result.resources == {"neuron_cores": 64.0, "accelerator_type:aws-neuron-core": 1.0}
    family = result.family("neuron")
    assert family is not None and {d.memory_mib for d in family.devices} == {98304}


def test_tools_before_2_34_refuse_the_new_flag_and_answer_the_old_one(manager: PluginManager) -> None:
    host = SimulatedHost(fixture("trn1.32xlarge"))
    assert host.run([neuronls.NEURON_LS, *neuronls.NEURON_LS_NEW_ARGS]).returncode != 0
    assert build_inventory(manager, host).resources["neuron_cores"] == 32.0


def test_a_failing_neuron_ls_with_the_driver_loaded_falls_back_to_sysfs(manager: PluginManager) -> None:
    result = build_inventory(manager, SimulatedHost(fixture(ULTRA), faults=["neuron-ls-fails"]))
    family = result.family("neuron")
    assert family is not None and len(family.devices) == 16
    assert result.resources["neuron_cores"] == 64.0
    assert family.devices[0].id == fixture(ULTRA).expected.device_ids[0]  # same ids: serials from sysfs
    assert [d.unit_ids for d in family.devices[:2]] == [["0", "1", "2", "3"], ["4", "5", "6", "7"]]
    (problem,) = result.problems
    assert (problem.code, problem.severity) == ("neuron-ls-failed", "warning")
    assert "exited with 1" in problem.message and "/sys/class/neuron_device" in problem.message


@pytest.mark.parametrize(("fault", "device", "events"), [("hbm-ecc-uncorrected", 3, 2), ("sram-ecc-uncorrected", 5, 1)])
def test_uncorrected_ecc_counts_device_memory_and_sram_events(manager: PluginManager, fault: str, device: int,
                                                              events: int) -> None:
    # The driver counts uncorrected events in two places (stats/hardware/mem_ecc_uncorrected, sram_ecc_uncorrected):
    # the metric is their sum, an SRAM event as much as an HBM one (held-out round 14's e2 dropped SRAM's; no
    # vendor-neutral check tells two sources from two windows of one count, so this plugin's test holds it).
    result = build_inventory(manager, SimulatedHost(fixture("trn1.32xlarge"), faults=[fault]))
    family = result.family("neuron")
    assert family is not None
    counts = {m.device: m.value for m in family.metrics if m.name == "ecc_errors_uncorrected"}
    assert counts.pop(family.devices[device].id) == events
    assert set(counts.values()) == {0}


def test_missing_ecc_counters_are_unknown_not_zero(manager: PluginManager) -> None:
    result = build_inventory(manager, SimulatedHost(fixture(ULTRA), faults=["ecc-counters-missing"]))
    family = result.family("neuron")
    assert family is not None
    report = next(h for h in family.health if h.device == family.devices[3].id)
    assert (report.state, [r.code for r in report.reasons]) == ("unknown", ["neuron-ecc-unreadable"])
    assert result.resources["neuron_cores"] == 64.0  # unknown stays schedulable
    assert not [m for m in family.metrics if m.device == report.device and m.name == "ecc_errors_uncorrected"]


@pytest.mark.parametrize(("suffix", "text"), [("", "?#\n"), ("", ""), ("", "\n"), ("/total", "?#\n")],
                         ids=["garbage", "empty", "blank-line", "garbled-total-directory"])
def test_a_garbled_ecc_counter_is_unknown_though_the_other_reads(manager: PluginManager, suffix: str,
                                                                 text: str) -> None:
    # The SRAM counter reads 0, the HBM one is published but holds no number (garbage, or empty mid-reset): HBM
    # errors cannot be seen, so the device is not healthy.
    trn1 = fixture("trn1.32xlarge")
    hbm = "/sys/devices/virtual/neuron_device/neuron3/stats/hardware/mem_ecc_uncorrected"
    files = {**{k: v for k, v in trn1.host.files.items() if k != hbm}, hbm + suffix: text}
    garbled = trn1.model_copy(update={"host": trn1.host.model_copy(update={"files": files})})
    family = build_inventory(manager, SimulatedHost(garbled)).family("neuron")
    assert family is not None
    report = next(h for h in family.health if h.device == family.devices[3].id)
    assert (report.state, [r.code for r in report.reasons]) == ("unknown", ["neuron-ecc-unreadable"])
    assert hbm in report.reasons[0].message


def test_ecc_counters_published_as_total_directories_are_read(manager: PluginManager) -> None:
    data = fixture(ULTRA).model_dump(mode="json", by_alias=True)
    data["host"]["files"]["/sys/class/neuron_device/neuron5/stats/hardware/mem_ecc_uncorrected/total"] = "2\n"
    result = build_inventory(manager, SimulatedHost(parse_fixture(data, "ultra with HBM ECC errors")))
    family = result.family("neuron")
    assert family is not None
    report = next(h for h in family.health if h.device == family.devices[5].id)
    assert (report.state, [r.code for r in report.reasons]) == ("unhealthy", ["neuron-hbm-ecc-uncorrected"])


@pytest.mark.parametrize(("mode", "hosts"), [("1", 4), ("2", 2), ("3", 2), ("4", 1), (None, 4)])
def test_ultraserver_group_size_follows_the_configured_mode(manager: PluginManager, mode: str | None,
                                                            hosts: int) -> None:
    """The mode is an enum, not a host count: AWS's init script (aws-neuron/aws-neuron-sdk,
    src/k8/k8s-ultraserver-init-script.sh) writes NEURON_ULTRASERVER_MODE_X4=1, _X2H=2, _X2V=3, _X1=4 for its 4-, 2-
    and 1-node configs, so 1 is four hosts and 4 is one. Only the vendor's table says so (neither neuron-ls nor Ray's
    Neuron manager states a group's host count), so this test, not a conformance check, pins it (held-out round 12's
    e2 read the mode as the count and passed the suite once the fixture's expectation was edited to match)."""
    # The ids the script writes beside each mode: the driver's server_id_<nodes>/node_id_<nodes>, none in X1.
    ids = ({"NEURON_RT_ULTRASERVER_SERVER_ID": "0000000000000000", "NEURON_RT_ULTRASERVER_NODE_ID": "-1"}
           if hosts == 1 else {})
    host = with_env(ULTRA, NEURON_RT_ULTRASERVER_MODE=mode, **ids) if mode else with_env(ULTRA)
    if mode is None:
        data = fixture(ULTRA).model_dump(mode="json", by_alias=True)
        data["host"]["env"].pop("NEURON_RT_ULTRASERVER_MODE")
        host = SimulatedHost(parse_fixture(data, "ultra without a mode"))  # AWS's init script defaults to 4
    result = build_inventory(manager, host)
    family = result.family("neuron")
    assert family is not None
    (domain,) = family.topology.domains
    assert (domain.kind, domain.hosts, domain.size) == ("ultraserver", hosts, 16 * hosts)
    # Every mode AWS's init script sets, with the ids it writes beside it, is a set-up, not a malformed value.
    assert result.problems == []
    # Worker 1 of the job: node 1 of its pair or UltraServer; in X1 a group of itself (the job's second).
    assert domain.host_index == (1 if hosts > 1 else 0)


@pytest.mark.parametrize(("product_name", "expected"), [
    ("trn2u.48xlarge", "trn2u.48xlarge"),         # EC2 (Nitro) writes the instance type
    ("Standard PC (Q35 + ICH9, 2009)", None),    # QEMU's q35 board
    ("KVM", None),                               # a KVM guest (systemd's virt.c matches it in product_name)
    ("HVM domU", None),                          # Xen
])
def test_only_an_ec2_instance_type_shape_is_an_instance_type(product_name: str, expected: str | None) -> None:
    data = fixture(ULTRA).model_dump(mode="json", by_alias=True)
    data["host"]["files"][instance.DMI_PRODUCT_NAME] = f"{product_name}\n"
    assert instance.instance_type(SimulatedHost(parse_fixture(data, f"DMI product name {product_name!r}"))) == expected
