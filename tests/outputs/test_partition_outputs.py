"""Partitions in the exporters (issue 25), read back by the real tools: DRA partitionable devices checked by
kubernetes-validate, Slurm's ``MultipleFiles`` read by ``slurmd -G``, NFD's profile labels.

The inventories are the shipped MIG fixture's, built as ``rayaccel export`` builds them (the NVIDIA plugin
names each MIG instance's device files from the fixture's /proc/driver/nvidia-caps/mig-minors); a mixed node
(one GPU partitioned, one whole) and a partition's own fault are the same inventory changed where the test
says, so each case names what it adds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_export_k8s import check_k8s_object
from test_export_slurm import needs_slurmd, slurmd_reads

from rayaccel.hosts.fixtures import Fixture, resolve_fixture
from rayaccel.inventory.builder import collect_inventory
from rayaccel.outputs.exporters import ExportOptions, export
from rayaccel.outputs.exporters.dra import TAINT_KEY
from rayaccel.outputs.exporters.nfd import label_problem
from rayaccel.outputs.exporters.slurm import slurm_node
from rayaccel.plugins.manager import default_manager
from rayaccel.records import DEVICE_FILE, Device, HealthReason, HealthReport, NodeInventory
from rayaccel.simulation.host_factory import make_host

MIG = "nvidia/a100-mig"


def inventory(ref: str | Fixture = MIG, *faults: str) -> NodeInventory:
    manager = default_manager()
    return collect_inventory(manager, make_host(ref, list(faults), manager=manager))


def with_devices(inv: NodeInventory, devices: list[Device], health: list[HealthReport] | None = None) -> NodeInventory:
    (family,) = inv.families
    changed = family.model_copy(update={"devices": devices, "health": health if health is not None else family.health})
    return inv.model_copy(update={"families": [changed]})


def mixed(inv: NodeInventory) -> NodeInventory:
    """The MIG node with a second A100, not partitioned (a mixed node)."""
    (family,) = inv.families
    gpu = family.devices[0]
    whole = gpu.model_copy(update={"index": 1, "id": "GPU-0b1e4c6a-2f0d-4e8b-9a51-7c3d2e1f0a99", "partitions": [],
                                   "partition_capacity": None, "attributes": {"mig_mode": "disabled"},
                                   "pci_bus_id": "00000000:0F:00.0"})
    health = [*family.health, HealthReport(device=whole.id, state="healthy")]
    return with_devices(inv, [gpu, whole], health)


def unhealthy(device: str, fatal: bool = True) -> HealthReport:
    return HealthReport(device=device, state="unhealthy",
                        reasons=[HealthReason(code="xid-94", message="contained ECC error", fatal=fatal)])


def dra(inv: NodeInventory) -> list[dict[str, Any]]:
    return export("dra", inv, ExportOptions()).data["items"]  # type: ignore[no-any-return]


# -- DRA: partitionable devices ----------------------------------------------------------------------------

# h100-mig: compute instances 2c.3g.40gb and 1c.3g.40gb share their GPU instance's memory, each stating it.
@pytest.mark.parametrize("ref", [MIG, "nvidia/h100-mig"])
def test_dra_publishes_each_partition_consuming_its_gpus_counters_valid_for_kubernetes(ref: str) -> None:
    inv = inventory(ref)
    gpu = inv.families[0].devices[0]
    assert gpu.partitions, "the MIG fixture reports its instances"
    slices = dra(inv)
    for item in slices:
        check_k8s_object(item)
        # Kubernetes 1.35+: a slice holds devices or counter sets, never both; one pool counts them all.
        assert ("devices" in item["spec"]) != ("sharedCounters" in item["spec"])
        assert item["spec"]["pool"]["resourceSliceCount"] == len(slices)
    devices = [d for s in slices for d in s["spec"].get("devices", [])]
    (counter_set,) = [c for s in slices for c in s["spec"].get("sharedCounters", [])]
    # Only the instances are devices: the MIG-mode GPU itself is not offered whole.
    assert [d["attributes"]["unitId"]["string"] for d in devices] == [p.id for p in gpu.partitions]
    assert {d["attributes"]["parentUuid"]["string"] for d in devices} == {gpu.id}
    assert [d["attributes"]["profile"]["string"] for d in devices] == [p.profile for p in gpu.partitions]
    assert all("uuid" not in d["attributes"] for d in devices)
    # Each consumes from its GPU's set, and together they fit in it.
    assert counter_set["counters"]["memory"] == {"value": f"{gpu.memory_mib}Mi"}
    used: dict[str, int] = {}
    for device in devices:
        (consumed,) = device["consumesCounters"]
        assert consumed["counterSet"] == counter_set["name"]
        assert set(consumed["counters"]) <= set(counter_set["counters"])
        for name, counter in consumed["counters"].items():
            used[name] = used.get(name, 0) + int(counter["value"].removesuffix("Mi"))
    for name, total in used.items():
        assert total <= int(counter_set["counters"][name]["value"].removesuffix("Mi")), name
    if gpu.partition_capacity is not None:
        assert counter_set["counters"]["compute-slices"] == {"value": str(gpu.partition_capacity.compute_slices)}


def test_dra_on_a_mixed_node_offers_the_whole_gpu_and_the_other_gpus_instances() -> None:
    inv = mixed(inventory())
    slices = dra(inv)
    for item in slices:
        check_k8s_object(item)
    devices = {d["attributes"]["unitId"]["string"]: d for s in slices for d in s["spec"].get("devices", [])}
    gpu, whole = inv.families[0].devices
    assert set(devices) == {p.id for p in gpu.partitions} | set(whole.unit_ids)
    assert "consumesCounters" not in devices[whole.unit_ids[0]]
    assert devices[whole.unit_ids[0]]["attributes"]["uuid"] == {"string": whole.id}
    assert len([c for s in slices for c in s["spec"].get("sharedCounters", [])]) == 1


def test_dra_taints_only_the_faulty_instance_and_every_instance_of_a_faulty_gpu() -> None:
    inv = inventory()
    gpu = inv.families[0].devices[0]
    first, second = gpu.partitions[0].id, gpu.partitions[1].id
    one = with_devices(inv, [gpu], [HealthReport(device=gpu.id, state="healthy"), unhealthy(second)])
    tainted = {d["attributes"]["unitId"]["string"] for s in dra(one) for d in s["spec"].get("devices", [])
               if any(t["key"] == TAINT_KEY for t in d.get("taints", []))}
    assert tainted == {second}
    whole = with_devices(inv, [gpu], [unhealthy(gpu.id)])
    devices = [d for s in dra(whole) for d in s["spec"].get("devices", [])]
    assert all(d["taints"][0]["effect"] == "NoSchedule" for d in devices) and len(devices) == len(gpu.partitions)
    assert first in {d["attributes"]["unitId"]["string"] for d in devices}


# -- NVIDIA: each MIG instance's device files, from the driver's mig-minors -------------------------------

MIG_MINORS = "/proc/driver/nvidia-caps/mig-minors"


def cap_files(gpu_minor: int, gpu_instance: int, compute_instance: int) -> str:
    """The files NVIDIA's MIG user guide gives an instance: /dev/nvidia<minor> and the access files of its GPU
    and compute instance, whose minors the driver fixes in advance (config 1, monitor 2, then 135 per GPU: 9
    per GPU instance, its own access file first; gpu0/gi2/access is 21, gpu0/gi2/ci0/access 22)."""
    gi_minor = 3 + gpu_minor * 135 + gpu_instance * 9
    return (f"/dev/nvidia{gpu_minor},/dev/nvidia-caps/nvidia-cap{gi_minor},"
            f"/dev/nvidia-caps/nvidia-cap{gi_minor + 1 + compute_instance}")


def changed_fixture(ref: str, files: dict[str, str] | None = None, **gpu0: Any) -> Fixture:
    """The shipped fixture with its files replaced (when given) and GPU 0's NVML answers updated."""
    fixture = resolve_fixture(ref, default_manager())
    nvml = dict(fixture.host.libraries["nvml"])
    devices = dict(nvml["devices"])
    devices["0"] = {k: v for k, v in {**devices["0"], **gpu0}.items() if v is not None}
    nvml["devices"] = devices
    host = fixture.host.model_copy(update={"libraries": {**fixture.host.libraries, "nvml": nvml},
                                           "files": fixture.host.files if files is None else files})
    return fixture.model_copy(update={"host": host})


@pytest.mark.parametrize("ref", [MIG, "nvidia/h100-mig", "nvidia/a100-80gb-mig-mixed"])
def test_the_nvidia_plugin_names_each_mig_instances_gpu_and_cap_files(ref: str) -> None:
    inv = inventory(ref)
    instances = [(d, p) for d in inv.families[0].devices for p in d.partitions]
    assert instances and not [p for p in inv.problems if p.code == "mig-caps-unlisted"]
    for device, partition in instances:
        gi, ci = partition.attributes["gpu_instance_id"], partition.attributes["compute_instance_id"]
        assert partition.attributes[DEVICE_FILE] == cap_files(device.index, int(gi), int(ci))
    # A whole GPU is not given an instance's files.
    assert all(DEVICE_FILE not in d.attributes for d in inv.families[0].devices)


def test_the_files_follow_the_gpus_device_minor_not_its_nvml_index() -> None:
    # A pod given a DGX A100's fourth GPU: NVML index 0 in the pod, /dev/nvidia3 on the node, and the driver's
    # mig-minors names that GPU gpu3.
    text = resolve_fixture(MIG, default_manager()).host.files[MIG_MINORS]
    gpu3 = "".join(line if not line.startswith("gpu0/") else
                   f"gpu3/{line.split(' ')[0].removeprefix('gpu0/')} {int(line.split(' ')[1]) + 3 * 135}\n"
                   for line in text.splitlines(keepends=True))
    inv = inventory(changed_fixture(MIG, {MIG_MINORS: gpu3}, minor_number=3))
    gpu = inv.families[0].devices[0]
    assert gpu.index == 0
    assert [p.attributes[DEVICE_FILE] for p in gpu.partitions] == [
        cap_files(3, int(p.attributes["gpu_instance_id"]), int(p.attributes["compute_instance_id"]))
        for p in gpu.partitions]
    assert str(gpu.partitions[0].attributes[DEVICE_FILE]).startswith("/dev/nvidia3,/dev/nvidia-caps/nvidia-cap426,")


@pytest.mark.parametrize("case", ["no mig-minors", "no device minor", "instance not listed"])
def test_without_the_files_an_instance_is_counted_in_slurm_and_nothing_breaks(case: str) -> None:
    text = resolve_fixture(MIG, default_manager()).host.files[MIG_MINORS]
    fixture = {"no mig-minors": changed_fixture(MIG, {}),
               "no device minor": changed_fixture(MIG, minor_number=None),
               "instance not listed": changed_fixture(MIG, {MIG_MINORS: "\n".join(
                   line for line in text.splitlines() if not line.startswith("gpu0/gi3/"))})}[case]
    inv = inventory(fixture)
    gpu = inv.families[0].devices[0]
    unlisted = [p for p in gpu.partitions if DEVICE_FILE not in p.attributes]
    warned = [p for p in inv.problems if p.code == "mig-caps-unlisted"]
    if case == "instance not listed":
        # Only the instance of GPU instance 3 lacks its files; a warning names it.
        assert [p.attributes["gpu_instance_id"] for p in unlisted] == [3]
        assert len(warned) == 1 and unlisted[0].id in warned[0].message
    else:
        assert unlisted == gpu.partitions and not warned
    lines = slurm_node(inv).lines
    assert sum(line.count for line in lines) == len(gpu.partitions)  # every instance is still a GRES
    counted = [line for line in lines if not line.files]
    assert sum(line.count for line in counted) == len(unlisted)
    assert all(f" Count={line.count} " in line.render("n") for line in counted)
    assert len([line for line in lines if line.multiple_files]) == len(gpu.partitions) - len(unlisted)


# -- Slurm: MIG instances as GRES with MultipleFiles -------------------------------------------------------


def test_slurm_types_each_instance_by_profile_and_never_offers_the_gpu_whole() -> None:
    inv = inventory()
    gpu = inv.families[0].devices[0]
    node = slurm_node(inv)
    profiles = sorted({p.profile for p in gpu.partitions})
    assert node.gres == ",".join(f"gpu:{gpu.sku}_{profile}:{sum(p.profile == profile for p in gpu.partitions)}"
                                 for profile in sorted(profiles, key=lambda p: [q.profile for q in
                                                                                gpu.partitions].index(p)))
    assert all("_" in line.type and line.links is None for line in node.lines)


@needs_slurmd
def test_slurmd_reads_each_mig_instance_as_one_gres_of_its_files(tmp_path: Path) -> None:
    inv = inventory()
    gpu = inv.families[0].devices[0]
    root = tmp_path / "dev"
    node = slurm_node(inv, device_root=str(root))
    assert "MultipleFiles=" in node.gres_conf() and " File=" not in node.gres_conf()
    understood = slurmd_reads(node, tmp_path)
    assert len(understood) == len(gpu.partitions)
    for row, partition in zip(understood, gpu.partitions, strict=True):
        assert row["type"] == f"{gpu.sku}_{partition.profile}" and row["count"] == "1"
        wanted = [str(root) + f.removeprefix("/dev") for f in str(partition.attributes[DEVICE_FILE]).split(",")]
        assert row["file"].split(",") == wanted


@needs_slurmd
def test_slurmd_on_a_mixed_node_reads_the_whole_gpu_and_the_instances(tmp_path: Path) -> None:
    inv = mixed(inventory())
    gpu, whole = inv.families[0].devices
    root = tmp_path / "dev"
    understood = slurmd_reads(slurm_node(inv, device_root=str(root)), tmp_path)
    assert len(understood) == len(gpu.partitions) + 1
    assert [r for r in understood if r["type"] == whole.sku] == [
        r for r in understood if r["file"] == f"{root}/nvidia1"]


@needs_slurmd
def test_an_unhealthy_instance_is_absent_from_slurm_and_the_others_stay(tmp_path: Path) -> None:
    inv = inventory()
    gpu = inv.families[0].devices[0]
    bad = gpu.partitions[1].id
    inv = with_devices(inv, [gpu], [HealthReport(device=gpu.id, state="healthy"), unhealthy(bad)])
    root = tmp_path / "dev"
    understood = slurmd_reads(slurm_node(inv, device_root=str(root)), tmp_path)
    assert len(understood) == len(gpu.partitions) - 1
    files = {f for row in understood for f in row["file"].split(",")}
    gone = str(gpu.partitions[1].attributes[DEVICE_FILE]).split(",")[1:]  # its own cap files; nvidia0 is shared
    assert not {str(root) + f.removeprefix("/dev") for f in gone} & files


def test_slurm_drops_every_instance_of_an_unhealthy_gpu() -> None:
    inv = inventory()
    gpu = inv.families[0].devices[0]
    assert slurm_node(with_devices(inv, [gpu], [unhealthy(gpu.id)])).lines == ()


# -- NFD: the profiles as node labels ---------------------------------------------------------------------

def test_nfd_labels_count_each_profile_and_nfd_takes_them() -> None:
    inv = inventory()
    gpu = inv.families[0].devices[0]
    labels = export("nfd", inv, ExportOptions()).data["labels"]
    for profile in {p.profile for p in gpu.partitions}:
        key = f"rayaccel.io/partition-mig-{profile}"
        assert labels[key] == str(sum(p.profile == profile for p in gpu.partitions))
    assert all(label_problem(k, v) is None for k, v in labels.items())


@pytest.mark.parametrize("fmt", ["dra", "slurm", "nfd"])
def test_the_cli_exports_the_mig_node(fmt: str) -> None:
    from rayaccel.cli import main

    assert main(["export", "--simulate", MIG, "--format", fmt]) == 0


# -- AMD compute partitions: the same outputs from another vendor ------------------------------------------

CPX = "amd/mi300x-cpx-nps4"


def test_dra_publishes_an_mi300x_cpx_node_as_8_counter_sets_and_64_partitions() -> None:
    inv = inventory(CPX)
    slices = dra(inv)
    for item in slices:
        check_k8s_object(item)
        assert len(item["spec"].get("devices", [])) <= 64  # devices that consume counters: at most 64 a slice
    sets = {c["name"]: c for s in slices for c in s["spec"].get("sharedCounters", [])}
    devices = [d for s in slices for d in s["spec"].get("devices", [])]
    assert len(sets) == 8 and len(devices) == 64
    gpu = inv.families[0].devices[0]
    assert sets["device-0-counters"]["counters"] == {"memory": {"value": f"{gpu.memory_mib}Mi"},
                                                     "compute-slices": {"value": "8"},
                                                     "memory-slices": {"value": "4"}}
    first = [d for d in devices if d["consumesCounters"][0]["counterSet"] == "device-0-counters"]
    assert [d["attributes"]["unitId"]["string"] for d in first] == [str(i) for i in range(8)]  # HIP ids
    assert {d["attributes"]["profile"]["string"] for d in devices} == {"cpx.1xcd.24gb"}


@needs_slurmd
def test_slurmd_reads_each_cpx_partition_as_a_gres_of_its_render_node(tmp_path: Path) -> None:
    inv = inventory(CPX)
    root = tmp_path / "dev"
    node = slurm_node(inv, device_root=str(root))
    assert node.gres == "gpu:mi300x_cpx.1xcd.24gb:64"
    # One render node per partition: plain File= lines (slurmd refuses MultipleFiles of one file), one range.
    assert [(row["type"], row["file"], row["count"]) for row in slurmd_reads(node, tmp_path)] == [
        ("mi300x_cpx.1xcd.24gb", f"{root}/dri/renderD[128-191]", "64")]
