"""Every string a plugin, a fixture or the user gives is checked against the rules of the format it is written
in, or the export is refused in one line naming the plugin, the device and the field (issue 39: a vendor
string never becomes configuration). Each format is fed the same hostile value set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from rayaccel.cli import main
from rayaccel.inventory.builder import collect_inventory
from rayaccel.inventory.cloud import CloudCatalog, CloudNodeType
from rayaccel.outputs.exporters import ExportError, ExportOptions, checked_text, export
from rayaccel.outputs.exporters.autoscaler import available_node_types
from rayaccel.outputs.exporters.slurm import slurm_node
from rayaccel.plugins.manager import default_manager
from rayaccel.records import DEVICE_FILE, Device, NodeInventory, Partition, ResourceName
from rayaccel.simulation.host_factory import make_host

#: What a plugin or a user may try to slip into a file another program parses with authority.
HOSTILE_PATHS = [
    "/dev/x\nNodeName=evil Name=gpu File=/dev/sda",  # a second gres.conf line
    "/dev/nvidia0 Cores=0-999",  # a second field
    "/dev/../etc/shadow",  # outside the device root
    "/dev/nvidia0\x00",  # NUL
    "/dev/nvidia0\u2028NodeName=evil",  # a unicode line separator
    "/dev/nvidia0\x1b[2J",  # a terminal escape
    "/dev/" + "a" * 5000,  # longer than any path
    "/dev/nvidia0,/dev/sda",  # a list separator in one device's file
    "/etc/shadow",  # not a device file
]
HOSTILE_ROOTS = ["/tmp/x\nNodeName=evil Name=gpu File=/dev/sda", "/tmp/a b", "/tmp/../etc", "relative/dev",
                 "/tmp/x\x00", "/tmp/x\u2029"]


def inventory(ref: str) -> NodeInventory:
    manager = default_manager()
    return collect_inventory(manager, make_host(ref, [], manager=manager))


@pytest.fixture(scope="module")
def dgx() -> NodeInventory:
    return inventory("nvidia/dgx-h100")


@pytest.fixture(scope="module")
def mig() -> NodeInventory:
    return inventory("nvidia/a100-mig")


def with_device_file(inv: NodeInventory, value: str, partition: bool = False) -> NodeInventory:
    """``inv`` with its first device's (or first partition's) device_file set to ``value``, unvalidated: a
    plugin's record checks refuse some of these, an exporter must not depend on that."""
    family = inv.families[0]
    device = family.devices[0] if not partition else next(d for d in family.devices if d.partitions)
    if partition:
        first = device.partitions[0]
        changed_partition = first.model_copy(update={"attributes": {**first.attributes, DEVICE_FILE: value}})
        changed = device.model_copy(update={"partitions": [changed_partition, *device.partitions[1:]]})
    else:
        changed = device.model_copy(update={"attributes": {**device.attributes, DEVICE_FILE: value}})
    devices = [changed if d.id == device.id else d for d in family.devices]
    return inv.model_copy(update={"families": [family.model_copy(update={"devices": devices}), *inv.families[1:]]})


def assert_one_clean_line(message: str, *named: str) -> None:
    assert "\n" not in message and "\x00" not in message and "\x1b" not in message, message
    assert "\u2028" not in message and "\u2029" not in message, message
    assert len(message) < 600, message
    for part in named:
        assert part in message, (part, message)


@pytest.mark.parametrize("value", HOSTILE_PATHS)
def test_slurm_refuses_a_hostile_device_file_naming_plugin_device_and_field(dgx: NodeInventory, value: str) -> None:
    hostile = with_device_file(dgx, value)
    with pytest.raises(ExportError) as refused:
        export("slurm", hostile)
    device = dgx.families[0].devices[0].id
    assert_one_clean_line(str(refused.value), "plugin nvidia", device, "attributes.device_file")


@pytest.mark.parametrize("value", HOSTILE_PATHS)
def test_slurm_refuses_a_hostile_partition_file(mig: NodeInventory, value: str) -> None:
    if "," in value:
        pytest.skip("a partition's files are a comma-separated list (MultipleFiles)")
    hostile = with_device_file(mig, value, partition=True)
    partition = next(d for d in hostile.families[0].devices if d.partitions).partitions[0]
    with pytest.raises(ExportError) as refused:
        export("slurm", hostile)
    assert_one_clean_line(str(refused.value), "plugin nvidia", partition.id, "attributes.device_file")


@pytest.mark.parametrize("root", HOSTILE_ROOTS)
def test_slurm_refuses_a_hostile_device_root(dgx: NodeInventory, root: str) -> None:
    with pytest.raises(ExportError) as refused:
        slurm_node(dgx, device_root=root)
    assert_one_clean_line(str(refused.value), "--device-root")


def test_a_plain_device_root_still_roots_every_file(dgx: NodeInventory, tmp_path: Path) -> None:
    text = export("slurm", dgx, ExportOptions(device_root=str(tmp_path / "dev") + "/")).text
    files = [field for line in text.splitlines() if not line.startswith("#")
             for field in line.split() if field.startswith("File=")]
    assert files and all(f.startswith(f"File={tmp_path}/dev/nvidia") for f in files), files


def test_the_cli_refuses_a_device_root_with_a_newline_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "gres.conf"
    code = main(["export", "--format", "slurm", "--simulate", "nvidia/l4-single",
                 "--device-root", "/tmp/x\nNodeName=evil Name=gpu File=/dev/sda", "-o", str(target)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--device-root" in err and "\nNodeName" not in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", HOSTILE_PATHS)
def test_dra_refuses_a_hostile_device_file(dgx: NodeInventory, value: str) -> None:
    hostile = with_device_file(dgx, value)
    if "," in value:
        pytest.skip("a comma-separated list is Slurm's and DRA leaves it out")
    with pytest.raises(ExportError) as refused:
        export("dra", hostile)
    assert_one_clean_line(str(refused.value), "plugin nvidia", "attributes.device_file")


@pytest.mark.parametrize("value", ["H100\nnodeName: evil", "H100\x00", "H100\u2028x", "H100\x1b[2J"])
def test_dra_refuses_control_characters_in_a_vendor_string(dgx: NodeInventory, value: str) -> None:
    family = dgx.families[0]
    devices = [family.devices[0].model_copy(update={"product_name": value}), *family.devices[1:]]
    hostile = dgx.model_copy(update={"families": [family.model_copy(update={"devices": devices})]})
    with pytest.raises(ExportError) as refused:
        export("dra", hostile)
    assert_one_clean_line(str(refused.value), "plugin nvidia", "productName")


@pytest.mark.parametrize("image", ["", " ", "ray\n", "rayproject/ray:2.60.0\nkind: Pod", "ray:1 --privileged",
                                   "\x1b[31mray", "Ray:UPPER", "a" * 600])
def test_kuberay_refuses_an_image_that_is_not_a_reference(dgx: NodeInventory, image: str) -> None:
    with pytest.raises(ExportError) as refused:
        export("kuberay", dgx, ExportOptions(image=image))
    assert_one_clean_line(str(refused.value), "--image")


def test_kuberay_through_the_cli_refuses_an_empty_image(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["export", "--format", "kuberay", "--simulate", "nvidia/l4-single", "--image", ""])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "--image '' is empty" in err, err


@pytest.mark.parametrize("image", ["rayproject/ray:2.60.0", "registry.example.com:5000/team/ray-gpu:2.60.0-py311",
                                   "ghcr.io/acme/ray@sha256:" + "a" * 64])
def test_kuberay_takes_real_image_references(dgx: NodeInventory, image: str) -> None:
    assert f"image: {image}" in export("kuberay", dgx, ExportOptions(image=image)).text


@pytest.mark.parametrize("label", [{"vendor.com/x": "a,b=c"}, {"vendor.com/x\n": "a"}, {"vendor.com/x": "a\nb"},
                                   {"vendor.com/x y": "a"}])
@pytest.mark.parametrize("format_name", ["ray-start", "kuberay"])
def test_a_label_that_is_not_a_label_is_refused(dgx: NodeInventory, label: dict[str, str], format_name: str) -> None:
    hostile = dgx.model_copy(update={"labels": {**dgx.labels, **label}})
    with pytest.raises(ExportError) as refused:
        export(format_name, hostile)
    assert_one_clean_line(str(refused.value), f"--format {format_name}", "label")


@pytest.mark.parametrize("name", ["X; rm -rf /", "A B", "1ABC", "X\nY", ""])
def test_ray_start_refuses_an_env_name_the_shell_would_run(dgx: NodeInventory, name: str) -> None:
    with pytest.raises(ExportError) as refused:
        export("ray-start", dgx, ExportOptions(node_env={name: "1"}))
    assert_one_clean_line(str(refused.value), "--format ray-start", "not a shell variable name")


def test_ray_start_with_ten_thousand_partitions_refuses_an_env_value_over_the_kernels_limit(
        dgx: NodeInventory) -> None:
    resources = {f"mig_1g_10gb_partition_{i:05d}": 1 for i in range(10_000)}
    env = {"RAY_OVERRIDE_RESOURCES": json.dumps(resources)}
    assert len(env["RAY_OVERRIDE_RESOURCES"]) > 128 * 1024
    with pytest.raises(ExportError) as refused:
        export("ray-start", dgx, ExportOptions(node_env=env))
    assert_one_clean_line(str(refused.value), "RAY_OVERRIDE_RESOURCES", "MAX_ARG_STRLEN")


def test_ray_start_refuses_a_nul_in_an_env_value(dgx: NodeInventory) -> None:
    with pytest.raises(ExportError) as refused:
        export("ray-start", dgx, ExportOptions(node_env={"ACME_VISIBLE_DEVICES": "0\x001"}))
    assert_one_clean_line(str(refused.value), "ACME_VISIBLE_DEVICES", "NUL")


@pytest.mark.parametrize("resource", ["GPU\nhead_node_type: evil", "GPU ", "accelerator_type:H100\x00", "",
                                      "x" * 200, "GPU\u2028"])
def test_autoscaler_refuses_a_resource_name_that_is_not_rays(resource: str) -> None:
    catalog = CloudCatalog(node_types=[CloudNodeType(provider="aws", instance_type="p5.48xlarge", plugin="nvidia",
                                                     family="nvidia", resources={resource: 8.0}, labels={})])
    with pytest.raises(ExportError) as refused:
        available_node_types(catalog)
    assert_one_clean_line(str(refused.value), "plugin nvidia", "p5.48xlarge", "resource name")


def test_nfd_writes_a_host_name_with_escapes_only_escaped(dgx: NodeInventory) -> None:
    text = export("nfd", dgx.model_copy(update={"host": "dgx\x1b[2J\u2028evil=1"}), ExportOptions(
        node_name="dgx")).text
    assert "\x1b" not in text and "\u2028" not in text
    assert not any(line.startswith("evil") for line in text.splitlines())


@pytest.mark.parametrize("text", ["NodeName=a\x1b[2J\n", "a\x00b\n", "a\u2028b\n", "a\rb\n", "a\tb\n"])
def test_any_format_refuses_text_with_control_characters_it_did_not_check_itself(text: str) -> None:
    with pytest.raises(ExportError) as refused:
        checked_text("slurm", text)
    assert_one_clean_line(str(refused.value), "--format slurm", "control characters")


@pytest.mark.parametrize("value", ["/dev/x\nNodeName=evil Name=gpu File=/dev/sda", "/dev/../etc/shadow",
                                   "/dev/nvidia0\x00", "/dev/nvidia0\u2028x", "/dev/nvidia0,/dev/../sda"])
def test_a_device_file_that_can_never_be_valid_is_refused_in_the_record(value: str) -> None:
    with pytest.raises(ValidationError, match="device_file"):
        Device(index=0, id="GPU-0", product_name="X", attributes={DEVICE_FILE: value})
    with pytest.raises(ValidationError, match="device_file"):
        Partition(id="MIG-0", kind="mig", profile="1g.10gb", attributes={DEVICE_FILE: value})


@pytest.mark.parametrize("name", ["GPU\n", "GPU\nx"])
def test_a_record_name_with_a_trailing_newline_is_refused(name: str) -> None:
    with pytest.raises(ValidationError):
        TypeAdapter(ResourceName).validate_python(name)


def test_a_node_env_string_over_the_kernels_limit_is_refused_before_anything_starts(
        dgx: NodeInventory, monkeypatch: pytest.MonkeyPatch) -> None:
    from rayaccel.errors import RayaccelError
    from rayaccel.plugins.configuration import PLUGINS_ENV
    from rayaccel.ray.node import node_config

    # Any env value the node would carry (here the plugins' list; with 10,000 partitions the resources' JSON).
    monkeypatch.setenv(PLUGINS_ENV, ",".join(f"plugin{i:06d}=vendor_module_{i:06d}" for i in range(5000)))
    with pytest.raises(RayaccelError) as refused:
        node_config(dgx, check_installed_ray=False)
    assert_one_clean_line(str(refused.value), PLUGINS_ENV, "MAX_ARG_STRLEN")
