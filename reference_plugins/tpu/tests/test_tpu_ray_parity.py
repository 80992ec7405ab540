"""Differential tests: Ray 2.60's TPUAcceleratorManager and the plugin read the same simulated machine.

Ray's manager is fed the fixture at its own vendor interface: the process environment, ``glob`` of
/dev, ``os.listdir`` / ``os.path.isdir`` / ``open`` of /dev and /sys, and ``requests.get`` of the GCE
metadata server, all answered by the same SimulatedHost the plugin reads. Ray's methods are not patched.
Every deliberate difference is asserted as such (and listed in the README).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rayaccel import HttpUnavailable
from rayaccel.testing import PluginManager, SimulatedHost, build_inventory, check_quantity, load_fixture
from rayaccel_tpu import plugin, probe, slice_info

ray_tpu = pytest.importorskip("ray._private.accelerators.tpu")
requests = pytest.importorskip("requests")
Ray = ray_tpu.TPUAcceleratorManager

FIXTURES = sorted((Path(plugin.__file__).parent / "fixtures").glob("*.yaml"))
CASES = [(path, None) for path in FIXTURES] + [
    (path, fault.name) for path in FIXTURES for fault in load_fixture(path).faults]
TPU_ENV = ("TPU_ACCELERATOR_TYPE", "TPU_NAME", "TPU_WORKER_ID", "TPU_TOPOLOGY", "TPU_VISIBLE_CHIPS",
           "TPU_CHIPS_PER_HOST_BOUNDS", "TPU_HOST_BOUNDS", "RAY_TPU_RESOURCE_PER_CHIP",
           "RAY_EXPERIMENTAL_NOSET_TPU_VISIBLE_CHIPS")
SIMULATED_ROOTS = ("/dev", "/sys")


class RayView:
    """Ray's TPU manager wired to a simulated host; records the metadata calls Ray makes."""

    def __init__(self, host: SimulatedHost, monkeypatch: pytest.MonkeyPatch) -> None:
        self.host = host
        self.metadata_calls: list[dict[str, Any]] = []
        for key in TPU_ENV:
            # Set first, so the undo also removes what Ray's manager writes into os.environ itself (its
            # set_current_process_visible_accelerator_ids): no TPU_VISIBLE_CHIPS leaks into later tests.
            monkeypatch.setenv(key, "")
            monkeypatch.delenv(key)
        for key, value in host.environ().items():
            monkeypatch.setenv(key, value)
        real_isdir, real_listdir = os.path.isdir, os.listdir
        monkeypatch.setattr(os.path, "isdir", lambda p: host.is_dir(p) if self._sim(p) else real_isdir(p))
        monkeypatch.setattr(os, "listdir", lambda p=".": host.list_dir(p) if self._sim(p) else real_listdir(p))
        monkeypatch.setattr(ray_tpu, "glob", SimpleNamespace(glob=host.glob))
        monkeypatch.setattr(ray_tpu, "open", self._open, raising=False)
        monkeypatch.setattr(ray_tpu, "requests", SimpleNamespace(get=self._get,
                                                                 RequestException=requests.RequestException))
        Ray.get_current_node_num_accelerators.cache_clear()

    @staticmethod
    def _sim(path: Any) -> bool:
        return isinstance(path, str) and path.startswith(SIMULATED_ROOTS)

    def _open(self, path: str, *args: Any, **kwargs: Any) -> io.StringIO:
        return io.StringIO(self.host.read_text(path))  # FileNotFoundError is an OSError, as on a real host

    def _get(self, url: str, **kwargs: Any) -> SimpleNamespace:
        self.metadata_calls.append(kwargs)
        try:
            response = self.host.http_get(url, headers=kwargs.get("headers"), timeout=kwargs.get("timeout") or 0.01)
        except HttpUnavailable as e:
            raise requests.ConnectionError(str(e)) from None
        return SimpleNamespace(status_code=response.status, text=response.body)


@pytest.fixture(scope="module")
def manager(rayaccel_manager: PluginManager) -> PluginManager:
    return rayaccel_manager  # the testing kit's: just this plugin, under its entry-point name


@pytest.fixture
def clear_ray_cache() -> Iterator[None]:
    Ray.get_current_node_num_accelerators.cache_clear()
    yield
    Ray.get_current_node_num_accelerators.cache_clear()


@pytest.mark.usefixtures("clear_ray_cache")
@pytest.mark.parametrize(("path", "fault"), CASES, ids=lambda v: getattr(v, "stem", v) or "healthy")
def test_plugin_and_ray_agree_on_the_same_machine(manager: PluginManager, monkeypatch: pytest.MonkeyPatch,
                                                  path: Path, fault: str | None) -> None:
    fixture = load_fixture(path)
    host = SimulatedHost(fixture, faults=[fault] if fault else [])
    inventory = build_inventory(manager, host, plugins=["tpu"])
    family = inventory.family("tpu")
    assert family is not None
    ray = RayView(host, monkeypatch)

    assert Ray.get_resource_name() == family.family.resource_name
    assert Ray.get_visible_accelerator_ids_env_var() == family.family.visible_devices_env_var
    found = probe.find_chips(host)
    functions = sum(len(c.nodes) for c in found)
    healthy = [h for h in family.health if h.state != "unhealthy"]
    # Deliberate difference: Ray counts TPU-backed VFIO groups, i.e. PCI functions (two per TPU7x chip, one
    # per chiplet); the plugin counts chips, as tpu-info does, one TPU unit each.
    assert Ray.get_current_node_num_accelerators() == functions
    assert inventory.resources.get("TPU", 0) == len(healthy)
    if all(len(c.nodes) == 1 for c in found):
        assert Ray.get_current_node_num_accelerators() == inventory.resources["TPU"] == len(family.devices)

    ray_type = Ray.get_current_node_accelerator_type()
    if slice_info.read_slice_info(host).pod_type:
        assert ray_type == family.accelerator_type
    elif any(probe.chip_generation(c) for c in probe.find_chips(host)):
        # Deliberate difference: Ray has no type without a pod type; the chip's PCI id still names it.
        assert ray_type is None and family.accelerator_type == fixture.expected.accelerator_type
    else:
        # Neither a pod type nor a PCI id: no type at all, as Ray (no invented resource or label).
        assert ray_type is None is family.accelerator_type
        assert not [k for k in inventory.resources if k.startswith("accelerator_type:")]
        assert "ray.io/accelerator-type" not in inventory.labels

    extra = {k: v for k, v in inventory.resources.items() if k != "TPU" and not k.startswith("accelerator_type:")}
    assert (Ray.get_current_node_additional_resources() or {}) == extra

    tpu_labels = {k: v for k, v in inventory.labels.items() if k.startswith("ray.io/tpu-")}
    assert Ray.get_current_node_accelerator_labels() == tpu_labels

    if ray.metadata_calls:
        # The defect the plugin fixes: Ray asks the metadata server without a timeout.
        assert all("timeout" not in call for call in ray.metadata_calls)


@pytest.mark.parametrize("quantity", [0, 0.5, 1, 1.5, 2, 3, 4, 5, 8, 16])
def test_quantity_rule_is_ray_s(manager: PluginManager, quantity: float) -> None:
    ours, _ = check_quantity(manager.family("tpu").quantity_rule, "TPU", quantity)
    theirs, _ = Ray.validate_resource_request_quantity(quantity)
    assert ours == theirs


@pytest.mark.parametrize("value", ["0", "0,1", "4,5,6,7", "", "0,1,2,3,4,5,6,7"])
def test_visible_chip_parsing_matches_ray(manager: PluginManager, monkeypatch: pytest.MonkeyPatch,
                                          value: str) -> None:
    monkeypatch.delenv("RAY_TPU_RESOURCE_PER_CHIP", raising=False)
    monkeypatch.setenv("TPU_VISIBLE_CHIPS", value)
    assert Ray.get_current_process_visible_accelerator_ids() == manager.parse_visible("tpu", value)


def test_blank_entries_are_dropped_where_ray_keeps_them(manager: PluginManager,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TPU_VISIBLE_CHIPS", "0,,1")
    assert Ray.get_current_process_visible_accelerator_ids() == ["0", "", "1"]
    assert manager.parse_visible("tpu", "0,,1") == ["0", "1"]


@pytest.mark.usefixtures("clear_ray_cache")
@pytest.mark.parametrize("chips", [["0"], ["2", "3"], ["0", "1", "2", "3"]])
def test_visible_env_matches_what_ray_sets(manager: PluginManager, monkeypatch: pytest.MonkeyPatch,
                                           chips: list[str]) -> None:
    fixture = load_fixture(next(p for p in FIXTURES if p.stem == "v5e-8"))
    RayView(SimulatedHost(fixture), monkeypatch)
    Ray.set_current_process_visible_accelerator_ids(chips)
    ray_env = {k: os.environ[k] for k in ("TPU_VISIBLE_CHIPS", "TPU_CHIPS_PER_HOST_BOUNDS", "TPU_HOST_BOUNDS")
               if k in os.environ}
    assert manager.visible_env("tpu", chips) == ray_env


@pytest.mark.usefixtures("clear_ray_cache")
def test_whole_node_allocation_names_every_chip_where_ray_unsets_the_variable(
        manager: PluginManager, monkeypatch: pytest.MonkeyPatch) -> None:
    fixture = load_fixture(next(p for p in FIXTURES if p.stem == "v5e-8"))
    RayView(SimulatedHost(fixture), monkeypatch)
    monkeypatch.setenv("TPU_VISIBLE_CHIPS", "0")
    every = [str(i) for i in range(8)]
    Ray.set_current_process_visible_accelerator_ids(every)
    assert "TPU_VISIBLE_CHIPS" not in os.environ
    # The hook sees only the ids, not the node: naming all 8 chips selects the same chips.
    assert manager.visible_env("tpu", every) == {"TPU_VISIBLE_CHIPS": ",".join(every)}


@pytest.mark.usefixtures("clear_ray_cache")
def test_tpu7x_chiplets_are_one_chip_each_where_ray_counts_every_vfio_group(manager: PluginManager,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_TPU_RESOURCE_PER_CHIP", raising=False)
    host = SimulatedHost(load_fixture(next(p for p in FIXTURES if p.stem == "tpu7x-8")))
    inventory = build_inventory(manager, host, plugins=["tpu"])
    RayView(host, monkeypatch)
    assert Ray.get_current_node_num_accelerators() == 8  # Ray: one unit per VFIO group, i.e. per chiplet
    assert inventory.resources["TPU"] == 4  # the plugin: one per chip, Ray's RAY_TPU_RESOURCE_PER_CHIP default
    # Unit 1 is chip 1 (both of its chiplets), which is what TPU_VISIBLE_CHIPS=1 names to the TPU runtime.
    assert manager.visible_env("tpu", ["1"]) == {"TPU_VISIBLE_CHIPS": "1", "TPU_CHIPS_PER_HOST_BOUNDS": "1,1,1",
                                                 "TPU_HOST_BOUNDS": "1,1,1"}


@pytest.mark.usefixtures("clear_ray_cache")
@pytest.mark.parametrize("units", [["0"], ["0", "1"], ["2", "3"], ["2", "5"], ["0", "1", "2", "3"],
                                   ["4", "5", "6", "7"]])
def test_resource_per_chip_gives_ray_s_units_and_visible_chips(manager: PluginManager,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               units: list[str]) -> None:
    host = SimulatedHost(load_fixture(next(p for p in FIXTURES if p.stem == "tpu7x-8")))
    RayView(host, monkeypatch)
    monkeypatch.setenv("RAY_TPU_RESOURCE_PER_CHIP", "2")  # the operator's opt-in, in the node's environment
    inventory = build_inventory(manager, host, plugins=["tpu"])
    family = inventory.family("tpu")
    assert family is not None and len(family.devices) == 4
    # Two units per chip, chip c holding 2c and 2c+1: as many as Ray's count of VFIO groups here.
    assert [d.unit_ids for d in family.devices] == [["0", "1"], ["2", "3"], ["4", "5"], ["6", "7"]]
    assert inventory.resources["TPU"] == Ray.get_current_node_num_accelerators() == 8
    # The TPU runtime's mask names the physical chips of the units, as Ray collapses them.
    Ray.set_current_process_visible_accelerator_ids(units)
    ray_env = {k: os.environ[k] for k in ("TPU_VISIBLE_CHIPS", "TPU_CHIPS_PER_HOST_BOUNDS", "TPU_HOST_BOUNDS")
               if k in os.environ}
    assert manager.visible_env("tpu", units) == ray_env
    # ... and reading that mask back gives every unit of those chips, as Ray expands it.
    chips_value = ray_env["TPU_VISIBLE_CHIPS"]
    assert manager.parse_visible("tpu", chips_value) == Ray.get_current_process_visible_accelerator_ids()


@pytest.mark.parametrize("value", ["0", "-1", "two", " 2"])
def test_an_invalid_resource_per_chip_is_reported_and_counts_one_where_ray_raises(
        manager: PluginManager, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("RAY_TPU_RESOURCE_PER_CHIP", value)
    with pytest.raises(ValueError, match="RAY_TPU_RESOURCE_PER_CHIP"):
        ray_tpu.get_tpu_resource_per_chip()
    inventory = build_inventory(manager, plugins=["tpu"], host=SimulatedHost(load_fixture(
        next(p for p in FIXTURES if p.stem == "tpu7x-8"))))
    assert inventory.resources["TPU"] == 4
    (problem,) = [p for p in inventory.problems if p.code == "malformed-value"]
    assert "RAY_TPU_RESOURCE_PER_CHIP" in problem.message
