"""Pure pieces of the NVIDIA plugin: NVML value decoding, XID meanings, catalog, cloud hints, transports."""

from __future__ import annotations

import importlib
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, strategies as st

from rayaccel import SkuMatch, SkuRecord
from rayaccel.testing import (
    PluginKit,
    SimulatedHost,
    build_inventory,
    collect_problems,
    load_catalog,
    parse_fixture,
    plugin_manager,
    resolve_sku,
)
from rayaccel_nvidia import discovery, health, naming, plugin, probe, transport

FIXTURE_DIR = Path(plugin.__file__).parent / "fixtures"


@given(st.sets(st.integers(min_value=0, max_value=255)))
def test_cpu_affinity_words_decode_to_the_cpu_list(cpus: set[int]) -> None:
    words = [0] * 4
    for cpu in cpus:
        words[cpu // 64] |= 1 << (cpu % 64)
    text = naming.cpu_list(words)
    decoded: set[int] = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        decoded |= set(range(int(lo), int(hi or lo) + 1))
    assert decoded == cpus
    assert "--" not in text and not text.endswith(",")


def test_nvml_values_decode() -> None:
    assert naming.cpu_list([(1 << 56) - 1, 0xFF << 48]) == "0-55,112-119"
    assert naming.pci_device_id(0x233010DE) == "0x2330"
    assert naming.pci_device_id(0x27B810DE) == "0x27b8"
    assert naming.cuda_version(12040) == "12.4"
    assert naming.cuda_version(12080) == "12.8"
    assert naming.cuda_version(0) is None
    assert naming.mig_profile("NVIDIA A100-SXM4-40GB MIG 1g.5gb") == "1g.5gb"
    assert naming.mig_profile("NVIDIA H100 80GB HBM3") is None
    assert naming.architecture(9, None) == "hopper"
    assert naming.architecture(None, (8, 9)) == "ada"
    assert naming.architecture(None, None) is None


@pytest.mark.parametrize(("xid", "state", "fatal"), [
    (79, "unhealthy", True), (95, "unhealthy", True), (74, "unhealthy", True), (48, "unhealthy", False),
    (64, "unhealthy", False), (63, "degraded", False), (94, "unhealthy", True), (92, "degraded", False),
    (999, "degraded", False),
])
def test_xid_meanings(xid: int, state: str, fatal: bool) -> None:
    reason = health.xid_reason(xid)
    assert reason is not None and reason.code == f"xid-{xid}" and reason.fatal is fatal
    assert health.xid_state(xid) == state


@pytest.mark.parametrize("xid", [13, 31, 43, 45, 68, 109])
def test_application_xids_are_not_device_faults(xid: int) -> None:
    assert health.xid_reason(xid) is None
    assert health.xid_state(xid) == "healthy"


def test_catalog_resolves_by_pci_id_before_name() -> None:
    from rayaccel import Device

    catalog = load_catalog(Path(plugin.__file__).parent / "skus.yaml")
    by_id = Device(index=0, id="GPU-x", product_name="NVIDIA H100 PCIe", pci_device_id="0x2330")
    assert resolve_sku(catalog, by_id).id == "h100-sxm5-80gb"  # type: ignore[union-attr]
    by_name = Device(index=0, id="GPU-x", product_name="NVIDIA GB200")
    assert resolve_sku(catalog, by_name).id == "gb200-nvl"  # type: ignore[union-attr]
    ids = [pid for sku in catalog.skus for pid in sku.match.pci_device_ids]
    assert len(ids) == len(set(ids))
    assert {"0x2330", "0x2331", "0x2321", "0x2335", "0x2901", "0x27b8", "0x20b0", "0x20b2", "0x20f1", "0x20b5",
            "0x2237", "0x26b9"} <= set(ids)


@pytest.mark.parametrize(("instance", "count", "accel"), [
    ("p4d.24xlarge", 8, "A100"), ("p4de.24xlarge", 8, "A100"), ("p5.48xlarge", 8, "H100"),
    ("p5e.48xlarge", 8, "H200"), ("p5en.48xlarge", 8, "H200"), ("p6-b200.48xlarge", 8, "B200"),
    ("g5.xlarge", 1, "A10G"), ("g5.48xlarge", 8, "A10G"), ("g6.12xlarge", 4, "L4"), ("g6e.2xlarge", 1, "L40S"),
])
def test_ec2_hints(rayaccel_kit: PluginKit, instance: str, count: int, accel: str) -> None:
    hint = rayaccel_kit.cloud_hint("aws", instance)
    assert hint is not None and (hint.count, hint.accelerator_type, hint.family) == (count, accel, "nvidia")


def test_no_hint_for_other_clouds_or_cpu_instances(rayaccel_kit: PluginKit) -> None:
    assert rayaccel_kit.cloud_hint("aws", "m7i.8xlarge") is None
    assert rayaccel_kit.cloud_hint("gcp", "a3-highgpu-8g") is None
    # every hinted type is one the catalog (and so a running node) would report
    catalog_types = {s.accelerator_type for s in load_catalog(Path(plugin.__file__).parent / "skus.yaml").skus}
    hinted = {h.accelerator_type for h in rayaccel_kit.cloud_instance_types()}
    assert len(hinted) > 5 and hinted <= catalog_types


def test_transports_name_real_ray_classes_that_subclass_the_transport_manager() -> None:
    from ray.experimental import TensorTransportManager
    from ray.experimental.rdt.util import DEFAULT_TRANSPORTS

    for spec in transport.transports():
        module, _, name = spec.manager_class.partition(":")
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, TensorTransportManager)
        assert spec.builtin_in_ray and spec.name in DEFAULT_TRANSPORTS
        assert cls.is_one_sided() is spec.one_sided
    assert {t.name for t in plugin.rayaccel_transports()} == {"NCCL", "NIXL", "CUDA_IPC"}


def test_fixture_for_sku_rewrites_name_pci_id_and_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    data = yaml.safe_load((FIXTURE_DIR / "dgx-h100.yaml").read_text())
    sku = SkuRecord(id="h300-sxm-288gb", marketing_name="NVIDIA H300", accelerator_type="H300",
                    architecture="hopper", memory_mib=294912,
                    match=SkuMatch(pci_device_ids=["0x2399"], product_names=["NVIDIA H300"]))
    rewritten = plugin.rayaccel_fixture_for_sku(data, sku)
    assert data["host"]["libraries"]["nvml"]["devices"]["0"]["name"] == "NVIDIA H100 80GB HBM3"  # input untouched
    rewritten["expected"] = {"devices": 8}
    rewritten["faults"] = []
    fixture = parse_fixture(rewritten, "rewritten")
    pm = plugin_manager(plugin, "nvidia")
    family = build_inventory(pm, SimulatedHost(fixture)).family("nvidia")
    assert family is not None
    assert {(d.product_name, d.pci_device_id, d.memory_mib) for d in family.devices} == {
        ("NVIDIA H300", "0x2399", 294912)}
    assert family.accelerator_type == "H300"  # not in the catalog: Ray's rule on the new name


def test_fixture_for_sku_renames_mig_devices_too() -> None:
    data = yaml.safe_load((FIXTURE_DIR / "a100-mig.yaml").read_text())
    sku = SkuRecord(id="a100x", marketing_name="NVIDIA A100X", accelerator_type="A100X",
                    match=SkuMatch(product_names=["NVIDIA A100X"]))
    gpu = plugin.rayaccel_fixture_for_sku(data, sku)["host"]["libraries"]["nvml"]["devices"]["0"]
    assert {m["name"] for m in gpu["mig_devices"].values()} == {"NVIDIA A100X MIG 3g.20gb", "NVIDIA A100X MIG 2g.10gb"}


def test_bounded_gives_up_on_a_hung_call_and_passes_errors_through() -> None:
    start = time.monotonic()
    with pytest.raises(probe.NvmlTimeout, match=r"did not answer within 0\.1s"):
        probe.bounded(lambda: time.sleep(5), "testing", timeout=0.1)
    assert time.monotonic() - start < 2
    with pytest.raises(ZeroDivisionError):
        probe.bounded(lambda: 1 / 0, "testing", timeout=1)
    assert probe.bounded(lambda: 42, "testing", timeout=1) == 42


def test_family_declares_rays_gpu_pair_and_support() -> None:
    family = plugin.rayaccel_family()
    assert (family.resource_name, family.visible_devices_env_var, family.quantity_rule.kind) == (
        "GPU", "CUDA_VISIBLE_DEVICES", "fractional")
    assert len(family.support.maintainers) >= 2 and family.support.license == "Apache-2.0"
    assert family.support.tested_ray_versions == ["2.60.0"]


def test_nvlink_throughput_is_the_counter_delta_per_second() -> None:
    from rayaccel_nvidia import metrics

    assert metrics.throughput(None, (1_000_000, 10, 10)) is None
    assert metrics.throughput((0, 1000, 500), (2_000_000, 3000, 500)) == (1024000.0, 0.0)
    assert metrics.throughput((5, 1000, 500), (5, 2000, 600)) is None  # no time passed
    assert metrics.throughput((0, 1000, 500), (1_000_000, 10, 10)) is None  # counters reset: driver reloaded


# Issue 27: every id NVIDIA's open-gpu-kernel-modules README lists for these SKUs resolves by id, not by name.
@pytest.mark.parametrize(("pci_id", "name", "sku"), [
    ("0x2901", "NVIDIA B200", "b200-sxm-180gb"), ("0x2909", "NVIDIA B200", "b200-sxm-180gb"),
    ("0x2941", "NVIDIA GB200", "gb200-nvl"),
    ("0x3182", "NVIDIA B300 SXM6 AC", "b300-sxm6"),
    ("0x31c2", "NVIDIA GB300", "gb300-nvl"), ("0x31c3", "NVIDIA GB300", "gb300-nvl"),
    ("0x2bb5", "NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000-blackwell-server"),
])
def test_blackwell_ids_resolve_by_pci_id(pci_id: str, name: str, sku: str) -> None:
    from rayaccel import Device
    from rayaccel.testing import sku_disagreement
    from rayaccel_nvidia.naming import accelerator_type

    catalog = load_catalog(Path(plugin.__file__).parent / "skus.yaml")  # the catalog validator accepts it
    # A name the catalog does not know: only the PCI id can resolve it.
    by_id = Device(index=0, id="GPU-x", product_name="NVIDIA Graphics Device", pci_device_id=pci_id)
    record = resolve_sku(catalog, by_id)
    assert record is not None and record.id == sku and record.architecture == "blackwell"
    named = Device(index=0, id="GPU-x", product_name=name, pci_device_id=pci_id)
    assert resolve_sku(catalog, named) is record and sku_disagreement(catalog, named) is None
    assert record.accelerator_type == accelerator_type(name)  # what Ray derives from NVML's name


# NVIDIA's CUDA compute capabilities (docs.nvidia.com/cuda, "CUDA GPUs"): V100, Xavier, T4, A100, A10/A40, Orin,
# L4/L40, H100, B200, B300, RTX 50: what a driver without nvmlDeviceGetArchitecture leaves to tell them by.
@pytest.mark.parametrize(("capability", "name"), [
    ((7, 0), "volta"), ((7, 2), "volta"), ((7, 5), "turing"), ((8, 0), "ampere"), ((8, 6), "ampere"),
    ((8, 7), "ampere"), ((8, 9), "ada"), ((9, 0), "hopper"), ((10, 0), "blackwell"), ((10, 3), "blackwell"),
    ((12, 0), "blackwell"), ((6, 0), None)])
def test_an_old_driver_s_gpu_is_named_by_its_compute_capability(capability: tuple[int, int], name: str | None) -> None:
    assert naming.architecture(None, capability) == name


def test_a_gpu_without_a_uuid_is_named_by_its_pci_bus_id_else_its_index() -> None:
    assert discovery.fallback_id(2, " 0000000A:1B:00.0 ") == "nvml-pci-0000000a:1b:00.0"
    assert [discovery.fallback_id(2, bus) for bus in (None, "", "  ")] == ["nvml-gpu-2"] * 3


@pytest.mark.parametrize(("setting", "seconds"), [("10", 10.0), ("0.5", 0.5), (" 2.5 ", 2.5)])
def test_an_nvml_timeout_of_positive_seconds_bounds_the_calls(setting: str, seconds: float,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(probe.TIMEOUT_ENV, setting)
    with collect_problems() as sink:
        assert probe.nvml_timeout() == seconds
    assert sink.drain() == []


@pytest.mark.parametrize(("setting", "shown"), [("five", "five"), ("0", "0"), ("-1", "-1"), ("x" * 32, "x" * 32),
                                                ("x" * 33, "x" * 32 + "..."),
                                                ("fi\x1bve", "fi\\x1bve...")])
def test_a_malformed_nvml_timeout_is_quoted_printable_and_cut_to_32_characters(
        setting: str, shown: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(probe.TIMEOUT_ENV, setting)
    with collect_problems() as sink:
        assert probe.nvml_timeout() == probe.DEFAULT_TIMEOUT
    (report,) = sink.drain()
    assert f"{probe.TIMEOUT_ENV}={shown!r} is not a positive number of seconds" in report.message


@pytest.mark.parametrize(("name", "stated", "capacity"), [
    ("NVIDIA H200", 7, (7, 8)),  # a 7-instance GPU in MIG mode: compute in sevenths, memory in eighths
    ("NVIDIA A100-SXM4-80GB", 0, (7, 8)),  # MIG off: NVML states 0, the guide's row stands
    ("NVIDIA A30", 0, (4, 4)),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", 0, (4, 4)),  # 1g.24gb x4 of 96 GB
    ("NVIDIA RTX PRO 5000 Blackwell", 0, (2, 2)),
    ("NVIDIA RTX PRO 4500 Blackwell", None, (2, 2)),  # a driver that cannot say
    ("NVIDIA B300 SXM6 AC", 7, (7, 8)),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 4, (4, 4)),
])
def test_mig_capacity_is_what_the_gpu_states_else_its_row_of_nvidias_mig_guide(
        name: str, stated: int | None, capacity: tuple[int, int]) -> None:
    """NVIDIA's MIG user guide, 'Supported GPUs' (Max Number of Instances): 7 on the A100, H100, H20, H200, B200 and
    GB200, 4 on the A30 and the RTX PRO 6000 Blackwell, 2 on the RTX PRO 5000 and 4500 Blackwell; a GPU in MIG mode
    states its own (nvmlDeviceGetMaxMigDeviceCount), which wins over the name."""
    assert naming.mig_capacity(name, stated) == capacity


def test_a_gpu_the_guide_does_not_list_yet_takes_the_count_it_states() -> None:
    assert naming.mig_capacity("NVIDIA Next GPU", 4) == (4, 4)
    assert naming.mig_capacity("NVIDIA Next GPU", 2) == (2, 2)
