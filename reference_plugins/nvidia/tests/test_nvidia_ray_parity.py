"""Differential test: Ray 2.60's NvidiaGPUAcceleratorManager and the plugin, on the same simulated NVML.

Ray's manager calls its vendored pynvml (``ray._private.thirdparty.pynvml``); those functions are
replaced by the simulated adapter's, built from the same fixture through the SimulatedHost, so both sides
read the same NVML answers. Ray's manager itself is not patched.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
import ray._private.thirdparty.pynvml as ray_pynvml
from hypothesis import given, strategies as st
from ray._private.accelerators.nvidia_gpu import NvidiaGPUAcceleratorManager

from rayaccel.testing import (
    PluginManager,
    SimulatedHost,
    build_inventory,
    check_quantity,
    load_catalog,
    load_fixture as read_fixture,
    parse_fixture,
    plugin_manager,
)
from rayaccel_nvidia import naming, plugin, visibility
from rayaccel_nvidia.nvml import NVML

# Parsing a fixture is the slow part of these tests; fixtures are immutable, so share them.
load_fixture = cache(read_fixture)

FIXTURES = sorted((Path(plugin.__file__).parent / "fixtures").glob("*.yaml"))
CASES = [(p, None) for p in FIXTURES] + [(p, f.name) for p in FIXTURES for f in load_fixture(p).faults
                                         if f.kind != "tool-hang"]


@pytest.fixture
def manager() -> PluginManager:
    return plugin_manager(plugin, "nvidia")


def feed_ray(monkeypatch: pytest.MonkeyPatch, host: SimulatedHost) -> None:
    """Point the pynvml functions Ray's manager calls at the simulated NVML of this host."""
    nvml = host.library(NVML)
    monkeypatch.setattr(ray_pynvml, "nvmlInit", nvml.nvmlInit)
    monkeypatch.setattr(ray_pynvml, "nvmlShutdown", nvml.nvmlShutdown)
    monkeypatch.setattr(ray_pynvml, "nvmlDeviceGetCount", nvml.nvmlDeviceGetCount)
    monkeypatch.setattr(ray_pynvml, "nvmlDeviceGetHandleByIndex", nvml.nvmlDeviceGetHandleByIndex)
    monkeypatch.setattr(ray_pynvml, "nvmlDeviceGetName", nvml.nvmlDeviceGetName)


@pytest.mark.parametrize(("path", "fault"), CASES,
                         ids=lambda v: (v.stem if isinstance(v, Path) else (v or "healthy")))
def test_plugin_agrees_with_rays_manager(monkeypatch: pytest.MonkeyPatch, manager: PluginManager, path: Path,
                                         fault: str | None) -> None:
    fixture = load_fixture(path)
    host = SimulatedHost(fixture, faults=(fault,) if fault else ())
    feed_ray(monkeypatch, host)
    family = build_inventory(manager, host).family("nvidia")
    assert family is not None
    declaration = manager.family("nvidia")

    assert declaration.resource_name == NvidiaGPUAcceleratorManager.get_resource_name()
    assert declaration.visible_devices_env_var == NvidiaGPUAcceleratorManager.get_visible_accelerator_ids_env_var()
    # Ray counts what NVML enumerates; the plugin lists the same devices ...
    ray_count = NvidiaGPUAcceleratorManager.get_current_node_num_accelerators()
    assert len(family.devices) == ray_count
    # ... but schedules only the healthy ones. Deliberate differences: Ray offers a dead GPU to tasks, and a
    # GPU in MIG mode whole (the plugin offers its MIG instances instead, each profile its own resource).
    bad = {h.device for h in family.health if h.state == "unhealthy"}
    unhealthy = sum(d.id in bad for d in family.devices)
    partitioned = sum(d.partitioned and d.id not in bad for d in family.devices)
    assert family.resources.get("GPU", 0.0) == ray_count - unhealthy - partitioned
    if fault is None:
        assert unhealthy == 0 and family.resources.get("GPU", 0.0) == ray_count - partitioned
    # Ray names the type from GPU 0 (readable in every case here); the plugin from its catalog or Ray's rule.
    ray_type = NvidiaGPUAcceleratorManager.get_current_node_accelerator_type()
    assert family.accelerator_type == ray_type
    assert family.resources[f"accelerator_type:{ray_type}"] == 1.0
    assert family.labels["ray.io/accelerator-type"] == ray_type


def test_ray_type_rule_matches_on_every_name_in_catalog_and_fixtures() -> None:
    catalog = load_catalog(Path(plugin.__file__).parent / "skus.yaml")
    names = {n for sku in catalog.skus for n in sku.match.product_names}
    names |= {str(d["name"]) for p in FIXTURES
              for d in load_fixture(p).host.libraries["nvml"]["devices"].values()}
    names |= {"NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB", "NVIDIA RTX PRO 6000 Blackwell Server Edition",
              "NVIDIA GeForce RTX 5090", "NVIDIA A100-SXM4-40GB"}
    for name in names:
        assert naming.accelerator_type(name) == NvidiaGPUAcceleratorManager._gpu_name_to_accelerator_type(name), name
    for sku in catalog.skus:
        for name in sku.match.product_names:
            assert sku.accelerator_type == NvidiaGPUAcceleratorManager._gpu_name_to_accelerator_type(name), name


def test_known_names_give_the_types_ray_documents() -> None:
    assert naming.accelerator_type("NVIDIA H100 80GB HBM3") == "H100"
    assert naming.accelerator_type("Tesla V100-SXM2-16GB") == "V100"
    assert naming.accelerator_type("NVIDIA RTX PRO 6000 Blackwell Server Edition") == "RTX-PRO-6000"
    assert naming.accelerator_type("NVIDIA GeForce RTX 5090") == "GeForce-RTX-5090"


@given(st.text(alphabet="NVIDAGeForcTsla RTXPO0123456789-_abcHBM", min_size=1, max_size=40))
def test_type_rule_equals_rays_on_arbitrary_names(name: str) -> None:
    assert naming.accelerator_type(name) == NvidiaGPUAcceleratorManager._gpu_name_to_accelerator_type(name)


def test_quantity_rule_matches_ray_except_where_ray_rejects_late() -> None:
    rule = plugin.rayaccel_family().quantity_rule
    for quantity in (0.5, 1, 2):
        assert check_quantity(rule, "GPU", quantity)[0] is True
        assert NvidiaGPUAcceleratorManager.validate_resource_request_quantity(quantity)[0] is True
    # Deliberate difference: Ray's manager accepts 1.5 GPUs and the request then fails in the scheduler
    # (GPU is a unit-instance resource: fractions only up to 1); the plugin's rule says so up front.
    assert NvidiaGPUAcceleratorManager.validate_resource_request_quantity(1.5) == (True, None)
    ok, message = check_quantity(rule, "GPU", 1.5)
    assert ok is False and message and "1.5" in message


@pytest.mark.parametrize("value", ["0,1,2", "", "NoDevFiles", "3", "GPU-8f47ace1-99a7-58d0-9b68-36d06bed0644",
                                   "MIG-f43ffc05-ebc9-56b4-a25e-3aaa3aeb48d8,1"])
def test_visible_ids_parse_as_ray_parses_them(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    assert visibility.parse_visible(value) == NvidiaGPUAcceleratorManager.get_current_process_visible_accelerator_ids()


@given(st.lists(st.from_regex(r"[0-9]{1,2}|GPU-[0-9a-f]{8}", fullmatch=True), max_size=8))
def test_visible_ids_round_trip_like_ray(ids: list[str]) -> None:
    value = ",".join(ids)
    assert visibility.parse_visible(value) == ([] if value == "" else value.split(","))


def test_deliberate_difference_stray_spaces_and_commas_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0, 1,")
    assert NvidiaGPUAcceleratorManager.get_current_process_visible_accelerator_ids() == ["0", " 1", ""]
    assert visibility.parse_visible("0, 1,") == ["0", "1"]


def test_ray_defect_fixed_a_lost_gpu_0_crashes_rays_type_probe_not_the_plugin(monkeypatch: pytest.MonkeyPatch,
                                                                            manager: PluginManager) -> None:
    fixture = load_fixture(next(p for p in FIXTURES if p.stem == "dgx-h100"))
    data = fixture.model_dump(mode="json", by_alias=True)
    data["host"]["libraries"]["nvml"]["devices"]["0"]["lost"] = True
    host = SimulatedHost(parse_fixture(data, "dgx-h100 with GPU 0 lost"))
    feed_ray(monkeypatch, host)
    with pytest.raises(Exception, match="GPU is lost"):
        NvidiaGPUAcceleratorManager.get_current_node_accelerator_type()  # uncaught NVMLError in Ray 2.60
    family = build_inventory(manager, host).family("nvidia")
    assert family is not None
    assert (len(family.devices), family.resources["GPU"], family.accelerator_type) == (8, 7.0, "H100")
