"""Every TPU fixture gives its expected inventory; faults give theirs, and removing them recovers."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rayaccel import FixtureError, RealHost, SkuMatch, SkuRecord
from rayaccel.ray.driver import configure_node
from rayaccel.testing import (
    PluginManager,
    SimulatedHost,
    build_inventory,
    load_fixture,
    parse_fixture,
    plugin_suite,
)
from rayaccel_tpu import plugin, slice_info

FIXTURES = sorted((Path(plugin.__file__).parent / "fixtures").glob("*.yaml"))


@pytest.fixture(scope="module")
def manager(rayaccel_manager: PluginManager) -> PluginManager:
    return rayaccel_manager  # the testing kit's: just this plugin, under its entry-point name


def build(manager, host):  # type: ignore[no-untyped-def]
    return build_inventory(manager, host, plugins=["tpu"])


def test_the_issue_fixtures_are_shipped() -> None:
    assert {p.stem for p in FIXTURES} >= {"v5e-8", "v5p-16-worker0", "v5p-16-worker1", "v6e-256-worker", "tpu7x-8"}


# Every fixture gives its expected inventory, every fault its expected state and recovers, and the rest of
# what every plugin is held to (rayaccel.testing.plugin_suite).
TestTpuPlugin = plugin_suite(plugin)


def test_a_hung_metadata_server_is_bounded_by_the_timeout(manager) -> None:  # type: ignore[no-untyped-def]
    fixture = load_fixture(next(p for p in FIXTURES if p.stem == "v5e-8"))
    host = SimulatedHost(fixture, faults=["metadata-hang"])
    calls: list[float] = []
    real_get = host.http_get

    def recording_get(url, headers=None, timeout=1.0):  # type: ignore[no-untyped-def]
        calls.append(timeout)
        return real_get(url, headers, timeout)

    host.http_get = recording_get  # type: ignore[method-assign]
    started = time.monotonic()
    inventory = build(manager, host)
    assert time.monotonic() - started < 5
    assert calls and all(t == slice_info.METADATA_TIMEOUT for t in calls)
    assert inventory.resources["TPU"] == 8
    # One unanswered call per read: the other keys are not asked once the server has failed to answer.
    assert len(calls) <= 4


def test_metadata_without_the_flavor_header_is_refused(manager) -> None:  # type: ignore[no-untyped-def]
    fixture = load_fixture(next(p for p in FIXTURES if p.stem == "v5e-8"))
    host = SimulatedHost(fixture)
    assert host.http_get(slice_info.METADATA_URL + "accelerator-type").status == 403
    assert slice_info.read_slice_info(host).pod_type == "v5litepod-8"


def test_lost_chip_after_inventory_is_reported_unhealthy_and_fatal(manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    fixture = load_fixture(next(p for p in FIXTURES if p.stem == "v5e-8"))
    devices = plugin.rayaccel_discover(SimulatedHost(fixture))
    fault_file = tmp_path / "faults"
    host = SimulatedHost(fixture, fault_file=str(fault_file))
    fault_file.write_text("chip-lost\n")
    reports = {r.device: r for r in plugin.rayaccel_health(host, devices)}
    lost = reports[devices[5].id]
    assert lost.state == "unhealthy" and lost.reasons[0].fatal and lost.reasons[0].code == "tpu-chip-lost"
    fault_file.write_text("")
    assert all(r.state == "healthy" for r in plugin.rayaccel_health(host, devices))


def test_metrics_come_from_the_device_plugin_endpoint(manager) -> None:  # type: ignore[no-untyped-def]
    fixture = load_fixture(next(p for p in FIXTURES if p.stem == "v5p-16-worker0"))
    family = build(manager, SimulatedHost(fixture)).family("tpu")
    assert family is not None
    by_name = {(m.device, m.name): m.value for m in family.metrics}
    first = family.devices[0].id
    assert by_name[(first, "utilization")] == 37.5
    assert by_name[(first, "memory_used")] == 61203283968
    garbled = build(manager, SimulatedHost(fixture, faults=["garbage-metrics"])).family("tpu")
    assert garbled is not None and garbled.metrics == []


def test_no_tpu_hardware_means_no_devices_and_no_problem(manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for host in (RealHost(root=str(tmp_path), env={}), RealHost()):
        inventory = build(manager, host)
        assert inventory.family("tpu") is None
        assert [p for p in inventory.problems if p.plugin == "tpu"] == []


def test_nvidia_accel_directory_is_not_a_tpu(manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "dev" / "accel").mkdir(parents=True)
    (tmp_path / "dev" / "accel" / "accel0").write_text("")
    assert plugin.rayaccel_discover(RealHost(root=str(tmp_path), env={})) == []


def test_fixture_for_sku_rewrites_pci_ids_and_generation() -> None:
    path = next(p for p in FIXTURES if p.stem == "v5p-16-worker0")
    data = load_fixture(path).model_dump(mode="json", by_alias=True)
    sku = SkuRecord(id="tpu-v9z", marketing_name="Cloud TPU v9z", accelerator_type="TPU-V9Z",
                    match=SkuMatch(pci_device_ids=["0x0099"]))
    rewritten = plugin.rayaccel_fixture_for_sku(data, sku)
    assert rewritten["host"]["env"]["TPU_ACCELERATOR_TYPE"] == "v9z-16"
    devices = plugin.rayaccel_discover(SimulatedHost(parse_fixture(rewritten, "rewritten")))
    assert [d.pci_device_id for d in devices] == ["0x0099"] * 4
    # A fixture that recorded no device id (tpu7x-8) gets one; the BlueField group is left alone.
    ironwood = load_fixture(next(p for p in FIXTURES if p.stem == "tpu7x-8")).model_dump(mode="json", by_alias=True)
    rewritten_ironwood = parse_fixture(plugin.rayaccel_fixture_for_sku(ironwood, sku), "rewritten")
    devices = plugin.rayaccel_discover(SimulatedHost(rewritten_ironwood))
    assert [d.pci_device_id for d in devices] == ["0x0099"] * 4
    assert rewritten["host"]["files"]["/sys/kernel/iommu_groups/96/devices/0000:c1:00.1/device"] == "0xc2d5\n"


def test_transports_declare_nothing_ray_cannot_carry(rayaccel_manager) -> None:
    assert not rayaccel_manager.implements("tpu", "rayaccel_transports")  # the default: no transport
    assert rayaccel_manager.answer("tpu", "rayaccel_transports") == []


GKE_POD_ENV = {"TPU_ACCELERATOR_TYPE": "v5p-16", "TPU_NAME": "tpu-v5p-16-slice-a", "TPU_TOPOLOGY": "2x2x2",
               "TPU_WORKER_HOSTNAMES": "tpu-v5p-16-slice-a-0.tpu-svc,tpu-v5p-16-slice-a-1.tpu-svc"}


@pytest.mark.parametrize("worker", [0, 1])
def test_a_gke_node_starts_with_the_pod_env_ray_reads(manager, tmp_path: Path, worker: int) -> None:  # type: ignore[no-untyped-def]
    # The env of the node's `ray start` (rayaccel start and Cluster.add_node build it here): what Ray's own TPU
    # code in a worker of the real GKE node finds in its environment.
    faults = str(tmp_path / "faults")
    env = configure_node(f"tpu/v5p-16-worker{worker}", fault_file=faults, manager=manager).env
    assert {k: env.get(k) for k in [*GKE_POD_ENV, "TPU_WORKER_ID"]} == {**GKE_POD_ENV, "TPU_WORKER_ID": str(worker)}
    assert "TPU_DEVICE_PLUGIN_ADDR" not in env  # simulated through the host only: Ray's agent would scrape it


def test_a_gce_node_gets_no_tpu_env(manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # On a GCE TPU VM the slice facts are metadata, not environment: nothing is made up for the node.
    env = configure_node("tpu/v5e-8", fault_file=str(tmp_path / "faults"), manager=manager).env
    assert not [k for k in env if k.startswith("TPU_") and k != "TPU_VISIBLE_CHIPS"]


def test_process_env_names_variables_of_the_host_env() -> None:
    data = load_fixture(next(p for p in FIXTURES if p.stem == "v5p-16-worker0")).model_dump(mode="json", by_alias=True)
    data["host"]["process_env"] = ["TPU_NAME", "TPU_SLICE_ID"]
    with pytest.raises(FixtureError, match=r"process_env names \['TPU_SLICE_ID'\], which env does not set"):
        parse_fixture(data, "bad")
    data["host"]["process_env"] = ["TPU NAME"]
    with pytest.raises(FixtureError, match="process_env"):
        parse_fixture(data, "bad")
