"""``rayaccel sku add`` on every shipped fixture of every reference plugin: pure data work, no Ray.

Each case is a dry run (every check ``sku add`` makes, including the new fixture's inventory with each of
its faults, and nothing written), so the repository's catalogs and fixtures are never changed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rayaccel.catalog import load_catalog, sku_disagreement
from rayaccel.hosts.fixtures import installed_fixtures, load_fixture, parse_fixture
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.onboarding.catalog_file import build_sku_record
from rayaccel.onboarding.new_sku import add_sku
from rayaccel.plugins.manager import PluginManager

REFERENCE = ("nvidia", "amd", "tpu", "neuron", "gaudi")
MANAGER = PluginManager()
FIXTURES = sorted(ref for ref in installed_fixtures(MANAGER) if ref.split("/", 1)[0] in REFERENCE)


def base_architecture(ref: str) -> str | None:
    fixture = load_fixture(installed_fixtures(MANAGER)[ref])
    return fixture.expected.labels.get("rayaccel.io/architecture")


def new_sku(ref: str, architecture: str | None):  # type: ignore[no-untyped-def]
    plugin = ref.split("/", 1)[0]
    # A TPU chip's type is its generation ("TPU-V8"): the plugin derives it, so the SKU must state one.
    accelerator_type = "TPU-V9Z" if plugin == "tpu" else "NEWCHIP-9"
    return build_sku_record(sku_id="zz-day-zero", marketing_name="Day-zero chip", accelerator_type=accelerator_type,
                            product_names=["Day Zero Chip 9"], pci_device_ids=["0xfe01"], memory_mib=262144,
                            architecture=architecture)


def test_every_reference_plugin_ships_fixtures() -> None:
    assert {ref.split("/", 1)[0] for ref in FIXTURES} == set(REFERENCE)


@pytest.mark.parametrize("ref", FIXTURES)
@pytest.mark.parametrize("architecture", ["same", "new"])
def test_sku_add_succeeds_on_every_shipped_fixture(ref: str, architecture: str) -> None:
    plugin = ref.split("/", 1)[0]
    arch = base_architecture(ref) if architecture == "same" else "zz-next-arch"
    base = load_fixture(installed_fixtures(MANAGER)[ref])
    done = add_sku(MANAGER, plugin, new_sku(ref, arch), from_fixture=ref, dry_run=True)
    assert not done.written and done.base_fixture == ref
    fixture = parse_fixture(done.fixture_data, "new")
    assert [f.name for f in fixture.faults] == [f.name for f in base.faults]
    assert set(fixture.expected.skus.values()) <= {"zz-day-zero"}
    if arch is not None and fixture.expected.labels:
        assert fixture.expected.labels["rayaccel.io/architecture"] == arch
    # The plugin's rewritten fault patches are kept, not rebuilt from the base: a patch that restates
    # the devices in the vendor's format now carries no trace of the base SKU's product name.
    base_names = {d.product_name for f in InventoryBuilder(MANAGER, [plugin]).build(
        SimulatedHost(base), with_metrics=False).families for d in f.devices}
    for fault in fixture.faults:
        patch = json.dumps(fault.patch)
        assert not any(name in patch for name in base_names if len(name) > 3), (fault.name, base_names)


def test_amd_device_list_fault_keeps_the_plugins_rewrite_and_a_new_architecture_is_accepted() -> None:
    sku = build_sku_record(sku_id="mi400x", marketing_name="AMD Instinct MI400X",
                           accelerator_type="AMD-Instinct-MI400X", product_names=["AMD Instinct MI400X"],
                           pci_device_ids=["0x75b0"], memory_mib=442368,
                           architecture="cdna5")
    done = add_sku(MANAGER, "amd", sku, from_fixture="amd/mi300x-8", dry_run=True)
    [lost] = [f for f in done.fixture_data["faults"] if f["name"] == "gpu7-lost"]
    listing = json.loads(lost["patch"]["commands"]["amd-smi static --json"]["stdout"])
    assert {g["asic"]["market_name"] for g in listing["gpu_data"]} == {"AMD Instinct MI400X"}
    assert len(listing["gpu_data"]) == 7
    assert done.fixture_data["expected"]["labels"]["rayaccel.io/architecture"] == "cdna5"


def test_new_nvidia_sku_without_pci_id_or_architecture() -> None:
    """The base fixture's catalogued PCI id must not survive the rewrite and win SKU resolution. (The SKU is one
    the shipped catalog does not list yet; the B300 this test used to add is catalogued since issue 27.)"""
    sku = build_sku_record(sku_id="rtx-pro-4500-blackwell-server", marketing_name="NVIDIA RTX PRO 4500 Blackwell "
                           "Server Edition", accelerator_type="RTX-PRO-4500",
                           product_names=["NVIDIA RTX PRO 4500 Blackwell Server Edition"])
    for base in (None, "nvidia/hgx-b200", "nvidia/dgx-h100"):
        done = add_sku(MANAGER, "nvidia", sku, from_fixture=base, dry_run=True)
        fixture = parse_fixture(done.fixture_data, "rtx-pro-4500")
        assert fixture.expected.accelerator_type == "RTX-PRO-4500"
        assert set(fixture.expected.skus.values()) == {"rtx-pro-4500-blackwell-server"}
        devices = fixture.host.libraries["nvml"]["devices"].values()
        assert {d["pci"]["pciDeviceId"] >> 16 for d in devices} == {0xFFFF}


def test_name_and_pci_id_pointing_at_different_skus_is_a_problem() -> None:
    path = installed_fixtures(MANAGER)["nvidia/dgx-h100"]
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    for device in data["host"]["libraries"]["nvml"]["devices"].values():
        device["name"] = "NVIDIA B200"  # the H100's PCI id stays: the two disagree
    fixture = parse_fixture(data, "mismatch")
    inventory = InventoryBuilder(MANAGER, ["nvidia"]).build(SimulatedHost(fixture), with_metrics=False)
    [problem] = [p for p in inventory.problems if p.code == "sku-mismatch"]
    assert problem.severity == "warning"
    assert "catalogued as SKU" in problem.message and "b200" in problem.message.lower()
    catalog = load_catalog(Path(path).parents[1] / "skus.yaml")
    assert all(sku_disagreement(catalog, d) is None for f in InventoryBuilder(MANAGER, ["nvidia"]).build(
        SimulatedHost(load_fixture(path)), with_metrics=False).families for d in f.devices)


@pytest.mark.parametrize(("env_var", "resource"), [
    ("PATH", "PATHY"), ("LD_PRELOAD", "ACME"), ("PYTHONPATH", "ACME"), ("RAY_ADDRESS", "ACME"),
    ("OMP_NUM_THREADS", "ACME"), ("HOME", "ACME"), ("ROCR_VISIBLE_DEVICES", "ACME"), ("CUDA_VISIBLE_DEVICES", "ACME"),
    ("NEURON_RT_VISIBLE_CORES", "ACME"), ("HABANA_VISIBLE_MODULES", "ACME"), ("TPU_VISIBLE_CHIPS", "ACME"),
])
def test_a_family_cannot_select_devices_through_a_process_or_other_vendors_variable(env_var: str,
                                                                                     resource: str) -> None:
    from pydantic import ValidationError

    from rayaccel.records import FamilyDeclaration

    with pytest.raises(ValidationError, match="well-known process, runtime or other vendor's variable"):
        FamilyDeclaration(name="acme", vendor="ACME", resource_name=resource, visible_devices_env_var=env_var,
                          spec_version="1.0")


@pytest.mark.parametrize(("env_var", "resource"), [
    ("ACME_VISIBLE_DEVICES", "ACME"), ("CUDA_VISIBLE_DEVICES", "GPU"), ("TPU_VISIBLE_CHIPS", "TPU"),
    ("NEURON_RT_VISIBLE_CORES", "neuron_cores"), ("HABANA_VISIBLE_MODULES", "HPU"),
])
def test_a_family_may_use_its_own_variable_or_take_over_a_ray_family_whole(env_var: str, resource: str) -> None:
    from rayaccel.records import FamilyDeclaration

    FamilyDeclaration(name="acme", vendor="ACME", resource_name=resource, visible_devices_env_var=env_var,
                      spec_version="1.0")
