"""The Ray bridge without a running cluster: the node config an inventory gives, the version guard, the
registry patch as Ray's own option validation sees it, placement selectors and unit selection."""

from __future__ import annotations

import json
import os

import pytest
import ray
import ray._private.accelerators as ray_accelerators
from ray._common.ray_option_utils import _validate_resource_quantity

from rayaccel.hosts.fixtures import resolve_fixture
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.inventory.builder import collect_inventory
from rayaccel.inventory.health_findings import HealthFinding, by_family, fatal_findings, vanished_findings
from rayaccel.inventory.visible_units import restrict_to_visible
from rayaccel.plugins.manager import PluginManager
from rayaccel.ray import (
    ALLOW_UNTESTED_ENV,
    UnsupportedRayError,
    best_connected_units,
    check_ray,
    domain_bundle_selectors,
    find_scale_up_domain,
    node_config,
)
from rayaccel.ray.internals import REQUIRED_ATTRIBUTES
from rayaccel.ray.registry import FAMILIES_ENV, family_specs, install, load_specs, uninstall
from rayaccel.records import (
    Device,
    FamilyDeclaration,
    FamilyInventory,
    HealthReason,
    HealthReport,
    Link,
    NodeInventory,
    Topology,
)
from rayaccel.support.raycompat import RAY_DEFAULT_UNIT_INSTANCE_RESOURCES

ACME_PLUGINS = "acme=rayaccel_testplugins.acme"


@pytest.fixture
def manager(monkeypatch: pytest.MonkeyPatch) -> PluginManager:
    monkeypatch.setenv("RAYACCEL_PLUGINS", ACME_PLUGINS)
    for name in ("RAY_preload_python_modules", "RAY_custom_unit_instance_resources", "RAY_OVERRIDE_RESOURCES",
                 "RAY_OVERRIDE_LABELS", "RAYACCEL_SIMULATE", "RAYACCEL_SIMULATE_FAULT_FILE"):
        monkeypatch.delenv(name, raising=False)
    return PluginManager()


def acme_inventory(manager: PluginManager, *faults: str) -> NodeInventory:
    from rayaccel.hosts.fixtures import resolve_fixture

    host = SimulatedHost(resolve_fixture("acme/acme-4", manager), faults=faults)
    return collect_inventory(manager, host, plugins=["acme"])


@pytest.fixture
def registry():
    yield
    uninstall()


def test_node_config_carries_the_inventory_to_ray(manager):
    inventory = acme_inventory(manager)
    config = node_config(inventory, simulate="acme/acme-4", fault_file="/tmp/faults", plugins=["acme"])
    env = config.env
    assert json.loads(env["RAY_OVERRIDE_RESOURCES"]) == {"ACME": 4.0, "accelerator_type:R1": 1.0}
    labels = json.loads(env["RAY_OVERRIDE_LABELS"])
    assert labels["ray.io/accelerator-type"] == "R1"
    assert labels["rayaccel.io/family"] == "acme" and labels["rayaccel.io/count"] == "4"
    # Ray's default list is kept (setting the variable replaces it) and ACME is added.
    units = env["RAY_custom_unit_instance_resources"].split(",")
    assert units[:len(RAY_DEFAULT_UNIT_INSTANCE_RESOURCES)] == list(RAY_DEFAULT_UNIT_INSTANCE_RESOURCES)
    assert "ACME" in units
    assert env["RAY_preload_python_modules"] == "rayaccel.ray.worker_preload"
    assert [s.resource_name for s in load_specs(env[FAMILIES_ENV])] == ["ACME"]
    assert env["RAYACCEL_SIMULATE"] == "acme/acme-4" and env["RAYACCEL_SIMULATE_FAULT_FILE"] == "/tmp/faults"
    assert env["RAYACCEL_PLUGINS"] == ACME_PLUGINS
    assert env["RAYACCEL_NODE_PLUGINS"] == "acme"
    assert "RAYACCEL_NODE_PLUGINS" not in node_config(inventory).env  # all plugins
    # Always set for a day-zero family: workers see exactly the schedulable units.
    assert env["ACME_VISIBLE_DEVICES"] == "0,1,2,3"


def test_node_config_reads_the_inventory_alone_idle_day_zero_families_included(monkeypatch):
    """No plugin hook runs in node_config: a day-zero plugin with no devices on the node (zeta) still reaches
    every worker, from the inventory's idle families, with its own visible-devices syntax flagged."""
    monkeypatch.setenv("RAYACCEL_PLUGINS", f"{ACME_PLUGINS},zeta=rayaccel_testplugins.zeta")
    manager = PluginManager()
    inventory = collect_inventory(manager, SimulatedHost(resolve_fixture("acme/acme-4", manager)))
    assert "zeta" in {f.plugin for f in inventory.idle} and "acme" not in {f.plugin for f in inventory.idle}

    def no_plugin_calls(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"node_config called a plugin: {args}")

    monkeypatch.setattr(PluginManager, "call", no_plugin_calls)
    specs = {s.plugin: s for s in node_config(inventory).families}
    assert set(specs) == {"acme", "zeta"}
    assert specs["zeta"].resource_name == "ZETA" and specs["zeta"].custom_parse and specs["zeta"].custom_env
    assert [s.plugin for s in node_config(inventory, plugins=["acme"]).families] == ["acme"]


def test_unhealthy_device_is_left_out_and_ids_are_mapped(manager):
    config = node_config(acme_inventory(manager, "fatal-2"))
    assert json.loads(config.env["RAY_OVERRIDE_RESOURCES"])["ACME"] == 3.0
    # Ray instance i -> the i-th schedulable unit: a 3-device node whose third unit is device 3.
    assert config.env["ACME_VISIBLE_DEVICES"] == "0,1,3"


def test_a_lost_device_disappears_from_resources_and_ids(manager):
    config = node_config(acme_inventory(manager, "lost-3"))
    assert json.loads(config.env["RAY_OVERRIDE_RESOURCES"])["ACME"] == 3.0
    assert config.env["ACME_VISIBLE_DEVICES"] == "0,1,2"


def test_ray_known_family_env_var_is_left_to_ray_unless_ids_need_a_map(monkeypatch):
    monkeypatch.delenv("TPU_VISIBLE_CHIPS", raising=False)
    manager = PluginManager()
    if "tpu" not in manager.plugin_names():
        pytest.skip("the TPU reference plugin is not installed")
    from rayaccel.hosts.fixtures import resolve_fixture

    def env(*faults):
        host = SimulatedHost(resolve_fixture("tpu/v5p-16-worker0", manager), faults=faults)
        inventory = restrict_to_visible(collect_inventory(manager, host, plugins=["tpu"]), manager)
        return node_config(inventory, plugins=["tpu"]).env

    assert "TPU_VISIBLE_CHIPS" not in env()
    assert json.loads(env()["RAY_OVERRIDE_LABELS"])["ray.io/tpu-worker-id"] == "0"
    assert load_specs(env()[FAMILIES_ENV]) == []  # Ray's TPU manager stays in charge
    monkeypatch.setenv("TPU_VISIBLE_CHIPS", "0")  # the operator's restriction is honoured: one chip offered
    assert env()["TPU_VISIBLE_CHIPS"] == "0"


def test_existing_ray_settings_are_extended_not_replaced(manager, monkeypatch):
    monkeypatch.setenv("RAY_preload_python_modules", "mycompany.tracing")
    monkeypatch.setenv("RAY_custom_unit_instance_resources", "neuron_cores,FOO")
    monkeypatch.setenv("RAY_OVERRIDE_RESOURCES", json.dumps({"spot": 1}))
    env = node_config(acme_inventory(manager)).env
    assert env["RAY_preload_python_modules"] == "mycompany.tracing,rayaccel.ray.worker_preload"
    assert env["RAY_custom_unit_instance_resources"] == "neuron_cores,FOO,ACME"
    assert json.loads(env["RAY_OVERRIDE_RESOURCES"])["spot"] == 1


def test_families_ray_knows_keep_rays_manager(manager):
    specs = family_specs(manager)
    assert "ACME" in {s.resource_name for s in specs}
    assert not {"GPU", "TPU", "neuron_cores", "HPU"} & {s.resource_name for s in specs}


def test_untested_ray_version_fails_loudly(manager, monkeypatch):
    monkeypatch.setattr(ray, "__version__", "2.99.0")
    monkeypatch.delenv(ALLOW_UNTESTED_ENV, raising=False)
    with pytest.raises(UnsupportedRayError, match=r"Ray 2\.99\.0 is installed.*RAYACCEL_ALLOW_UNTESTED_RAY=1"):
        check_ray()
    with pytest.raises(UnsupportedRayError):
        node_config(acme_inventory(manager))
    with pytest.raises(UnsupportedRayError):
        install(family_specs(manager))
    monkeypatch.setenv(ALLOW_UNTESTED_ENV, "1")
    check_ray()


def test_missing_ray_internal_fails_loudly(monkeypatch):
    monkeypatch.delattr(ray_accelerators, "get_accelerator_manager_for_resource")
    with pytest.raises(UnsupportedRayError, match="get_accelerator_manager_for_resource"):
        check_ray()


def test_registry_patch_validates_quantities_with_the_plugins_message(manager, registry):
    assert _validate_resource_quantity("ACME", 1.5) is None  # Ray alone knows nothing of ACME
    install(family_specs(manager))
    assert "ACME" in ray_accelerators.get_all_accelerator_resource_names()
    assert "GPU" in ray_accelerators.get_all_accelerator_resource_names()
    message = _validate_resource_quantity("ACME", 1.5)
    assert message is not None and "ACME resource quantity must be a whole number" in message
    assert _validate_resource_quantity("ACME", 2) is None
    with pytest.raises(ValueError, match=r"must be a whole number; 1\.5 was requested"):
        ray.remote(resources={"ACME": 1.5})(lambda: None)
    uninstall()
    assert "ACME" not in ray_accelerators.get_all_accelerator_resource_names()


def test_generated_manager_sets_and_reads_the_plugins_env_var(manager, registry, monkeypatch):
    managers = install(family_specs(manager))
    acme = managers["ACME"]
    monkeypatch.setenv("ACME_VISIBLE_DEVICES", "")  # recorded, so the test leaves the env as it was
    monkeypatch.delenv("ACME_VISIBLE_DEVICES")
    assert acme.get_current_process_visible_accelerator_ids() is None
    acme.set_current_process_visible_accelerator_ids(["1", "3"])
    assert os.environ["ACME_VISIBLE_DEVICES"] == "1,3"
    assert acme.get_current_process_visible_accelerator_ids() == ["1", "3"]
    monkeypatch.setenv("RAY_EXPERIMENTAL_NOSET_ACME_VISIBLE_DEVICES", "1")
    acme.set_current_process_visible_accelerator_ids(["0"])
    assert os.environ["ACME_VISIBLE_DEVICES"] == "1,3"
    assert acme.get_current_node_num_accelerators() == 0  # nodes get their count from the inventory


def test_tpu_slice_bundles_put_the_head_on_worker_zero():
    selectors = domain_bundle_selectors(3, tpu_slice="slice-a")
    assert selectors[0] == {"ray.io/tpu-slice-name": "slice-a", "ray.io/tpu-worker-id": "0"}
    assert selectors[1:] == [{"ray.io/tpu-slice-name": "slice-a"}] * 2
    assert domain_bundle_selectors(2, domain="clique-1") == [{"rayaccel.io/scale-up-domain": "clique-1"}] * 2


def _node(domain, kind, resources, slice_name=None):
    labels = {"rayaccel.io/scale-up-domain": domain, "rayaccel.io/scale-up-domain-kind": kind}
    if slice_name:
        labels["ray.io/tpu-slice-name"] = slice_name
    return {"Labels": labels, "Resources": resources}


def test_find_scale_up_domain_picks_one_with_room():
    nodes = [_node("clique-a", "nvswitch", {"GPU": 4}),
             _node("slice-1", "tpu-slice", {"TPU": 4}, "slice-1"), _node("slice-1", "tpu-slice", {"TPU": 4}, "slice-1")]
    assert find_scale_up_domain([{"TPU": 4}, {"TPU": 4}], nodes=nodes) == ("slice-1", "slice-1")
    assert find_scale_up_domain([{"GPU": 2}, {"GPU": 2}], nodes=nodes) == ("clique-a", None)
    with pytest.raises(Exception, match="no scale-up domain has room"):
        find_scale_up_domain([{"GPU": 8}], nodes=nodes)


def test_a_node_of_two_domains_counts_each_on_its_own_and_bundles_ask_for_one():
    from rayaccel.ray.placement import domain_bundles, scale_up_domains

    labels = {"rayaccel.io/scale-up-domain": "isl-0", "rayaccel.io/scale-up-domain-size": "3",
              "rayaccel.io/scale-up-domain-kind": "other", "rayaccel.io/scale-up-domain-count": "2",
              "rayaccel.io/scale-up-domain-1": "isl-1", "rayaccel.io/scale-up-domain-1-size": "3",
              "rayaccel.io/count": "6"}
    node = {"NodeID": "n1", "Labels": labels,
            "Resources": {"QTS": 6.0, "QTS_domain_isl-0": 3.0, "QTS_domain_isl-1": 3.0, "CPU": 8.0}}
    domains = scale_up_domains([node])
    assert {d: (v.size, v.capacity["QTS"], v.nodes) for d, v in domains.items()} == {
        "isl-0": (3, 3.0, ("n1",)), "isl-1": (3, 3.0, ("n1",))}
    with pytest.raises(Exception, match="no scale-up domain has room"):
        find_scale_up_domain([{"QTS": 1}] * 4, nodes=[node])
    assert find_scale_up_domain([{"QTS": 1}] * 3, nodes=[node]) == ("isl-0", None)
    assert domain_bundles([{"QTS": 1, "CPU": 1}], "isl-1", [node]) == [{"QTS": 1, "CPU": 1, "QTS_domain_isl-1": 1}]
    # A cluster started without per-domain resources keeps its bundles as they were.
    assert domain_bundles([{"QTS": 1}], "isl-1", [{"Resources": {"QTS": 6.0}}]) == [{"QTS": 1}]


def _islands_inventory(unhealthy=()):
    devices = [Device(index=i, id=f"d{i}", product_name="X") for i in range(4)]
    links = [Link(a="d0", b="d1", kind="nvlink", bandwidth_gbps=400), Link(a="d2", b="d3", kind="nvlink",
             bandwidth_gbps=400), Link(a="d1", b="d2", kind="pcie", bandwidth_gbps=32)]
    units = [str(d.index) for d in devices if d.id not in unhealthy]
    family = FamilyInventory(
        family=FamilyDeclaration(name="x", vendor="X", resource_name="XPU", visible_devices_env_var="XPU_VISIBLE",
                                 spec_version="1.0"),
        plugin="x", devices=devices, topology=Topology(links=links), health=[], accelerator_type="X",
        sku_known=False, resources={}, schedulable_units=units, labels={})
    return NodeInventory(host="h", simulated=True, families=[family], resources={}, labels={}, problems=[])


def test_best_connected_units_keep_a_request_on_one_island():
    assert best_connected_units(_islands_inventory(), "x", 2) == ["0", "1"]
    assert best_connected_units(_islands_inventory(unhealthy={"d0"}), "x", 2) == ["2", "3"]
    with pytest.raises(Exception, match="cannot choose 5 units"):
        best_connected_units(_islands_inventory(), "x", 5)


def test_fatal_findings_name_the_device_and_code():
    inventory = _islands_inventory()
    family = inventory.families[0].model_copy(update={"health": [
        HealthReport(device="d1", state="unhealthy", reasons=[HealthReason(code="xid-79", message="fell off the bus",
                                                                           fatal=True)]),
        HealthReport(device="d2", state="unhealthy", reasons=[HealthReason(code="ecc", message="x", fatal=True)]),
        HealthReport(device="d3", state="degraded", reasons=[HealthReason(code="hot", message="warm")]),
    ]})
    findings = fatal_findings(inventory.model_copy(update={"families": [family]}), baseline={"d2"})
    assert findings == [HealthFinding("x", "d1", "xid-79", "fell off the bus")]
    assert [f.phrase for f in findings] == ["x device d1 is unhealthy (xid-79: fell off the bus)"]
    # Grouped by the record's family, never by parsing the phrase (a family or device name may hold " device ").
    odd = HealthFinding("a device b", "d 1", "ecc", "x")
    assert by_family([odd, *findings]) == {"a device b": [odd], "x": findings}


def test_every_ray_internal_the_bridge_relies_on_is_documented():
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "ray-bridge.md").read_text()
    for module, attr, _ in REQUIRED_ATTRIBUTES:
        assert f"`{module}.{attr}`" in text, f"{module}.{attr} missing from docs/ray-bridge.md"


def test_workers_import_the_preload_module_without_the_inventory_stack():
    import subprocess
    import sys

    code = ("import sys, rayaccel.ray.worker_preload; "
            "print(sorted(m for m in ('networkx', 'rayaccel.inventory.builder', 'rayaccel.plugins.manager') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if k != FAMILIES_ENV})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_plugins_own_env_syntax_is_used_to_set_and_read_ids(monkeypatch, registry):
    monkeypatch.setenv("RAYACCEL_PLUGINS", "zeta=rayaccel_testplugins.zeta")
    (spec,) = [s for s in family_specs(PluginManager()) if s.resource_name == "ZETA"]
    assert spec.custom_parse and spec.custom_env
    zeta = install([spec])["ZETA"]
    for name in ("ZETA_VISIBLE_DEVICES", "ZETA_DEVICE_COUNT"):
        monkeypatch.setenv(name, "")  # recorded, so the test leaves the env as it was
    zeta.set_current_process_visible_accelerator_ids(["0", "2"])
    assert os.environ["ZETA_VISIBLE_DEVICES"] == "zeta0+zeta2" and os.environ["ZETA_DEVICE_COUNT"] == "2"
    assert zeta.get_current_process_visible_accelerator_ids() == ["0", "2"]


def test_init_and_add_node_refuse_what_they_cannot_do():
    from ray.cluster_utils import Cluster

    import rayaccel.ray
    from rayaccel.errors import RayaccelError

    with pytest.raises(RayaccelError, match=r"use rayaccel\.ray\.connect"):
        rayaccel.ray.init(address="10.0.0.1:6379")
    with pytest.raises(RayaccelError, match="add the head node first"):
        rayaccel.ray.add_node(Cluster(initialize_head=False), head=False)


def test_a_device_that_vanishes_is_a_fatal_finding_unless_it_was_gone_at_start():
    seen = {"d0": "acme", "d1": "acme", "d2": "acme"}
    assert vanished_findings(seen, present={"d0", "d1", "d2"}, baseline=set()) == []
    assert [f.phrase for f in vanished_findings(seen, present={"d0", "d2"}, baseline=set())] == [
        "acme device d1 is no longer enumerated (device-lost)"]
    assert vanished_findings(seen, present={"d0", "d2"}, baseline={"d1"}) == []
