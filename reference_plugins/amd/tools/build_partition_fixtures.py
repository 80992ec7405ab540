"""Write the AMD partition fixtures: 8x MI300X split into compute partitions, each partition a logical GPU.

Run from the repository root: ``.venv/bin/python reference_plugins/amd/tools/build_partition_fixtures.py``.

In CPX mode each MI300X (8 XCDs) is 8 logical GPUs, in DPX mode 2, each with its own amdsmi processor handle
that Ray counts one by one (``amdsmi_get_processor_handles``). What the fixtures record, and where it is from:

* **uuid**: amdsmi builds it with ``amdsmi_uuid_gen(serial, device_id, idx)`` (``amd_smi_uuid.cc``): the
  first 32 bits print ``serial[7] | idx | device_id``, so ``idx`` is the uuid's *second* byte, then
  ``0000-1000-80<serial[6]>-<serial[5..0]>``. Up to ROCm 7.11 ``idx`` is always ``0xff``, so every partition
  of a GPU reports the GPU's uuid; from ROCm 7.12 (ROCm/rocm-systems#3977, "Add partition ID into UUID")
  ``idx`` is ``amdsmi_get_gpu_kfd_info()["current_partition_id"]``, so partition 3 of a GPU whose 7.11 uuid
  is ``1aff74a1-...`` reports ``1a0374a1-...`` and nothing else in the uuid changes.
* **PCI address**: each partition is its own PCI function of the GPU's device: ``0000:05:00.0`` ...
  ``0000:05:00.7`` in CPX (``amd-smi`` on MI300X DPX prints ``0000:05:00.0`` and ``0000:05:00.1``,
  ROCm/amdsmi#132).
* **partition queries**: only a GPU's primary partition (partition 0) answers the compute/memory partition
  queries; the others answer N/A (ROCm/amdsmi#100, ROCm/rocm-systems#8491).
* **amd-smi layouts**: up to amd-smi 25 (ROCm 6.4) ``static --json`` has a ``partition`` section; amd-smi 26
  (ROCm 7.0) moved it to ``amd-smi partition`` (ROCm/rocm-systems#223), whose ``--current --json`` prints
  ``{"current_partition": [{gpu_id, memory, accelerator_type, accelerator_profile_index, partition_id}]}``
  (``subcommands/partition.py``, ``combine_arrays_to_json`` in ``amdsmi_logger.py``). On a non-primary
  partition the profile query fails and amd-smi 26 prints the *previous* row's ``partition_id`` there (it
  reuses the last answer), so that column is only trusted with a known ``accelerator_type``; ``list --json``
  prints each logical GPU's own ``partition_id`` (``amdsmi_get_gpu_kfd_info``).

* **memory** (ROCm 6.4.1+, every fixture here but ``-rocm-6.4.0``): amdsmi's VRAM size and use come from sysfs
  ``mem_info_vram_total`` / ``_used``, which only the PCI device, the primary partition, has; a secondary falls back
  to KFD's share of the memory partition (rocm_smi.cc ``rsmi_dev_memory_total_get`` / ``_usage_get``). So
  partition 0 states the whole GPU (196592 MiB, and the whole device's VRAM in use: 283 MiB, the ``0.3/192.0 GB``
  of the amdsmi CHANGELOG for ROCm 6.4.1, Resolved issues), every other partition its share (24574 MiB in CPX,
  ``0.5/ 24.0 GB`` there; ROCm/k8s-device-plugin#108). The VRAM bus width is the device's on every partition
  (``vram_bit_width`` is AMDGPU_INFO_DEV_INFO's, ``adev->gmc.vram_width`` in amdgpu_kms.c; KFD prints ``width
  8192`` on a CPX partition's memory bank, ROCm/ROCm#4750).
* **activity**: every machine is recorded busy (a training job on every partition), each partition at its own
  ``gfx_activity`` and ``umc_activity`` (amdsmi_get_gpu_activity and ``amd-smi metric``'s ``usage`` answer per
  logical GPU, in percent): a GPU's utilization is its partitions' mean, never their sum, and no partition reads
  the mean (so a reading scaled or damaged at the host seam is never taken for the GPU's own). Not on amd-smi 25
  (ROCm 6.4.x): a secondary partition has no gpu_metrics or hwmon of its own and prints N/A for its activity and
  temperatures (amdsmi CHANGELOG, ROCm 6.4.1 resolved issues: ``amd-smi monitor`` GPU_T, MEM_T, GFX%, MEM% N/A on
  partitions 1-7), so there the GPU's utilization is what its primary prints.

Fixtures written (expected values are worked out from these facts, not from the plugin's output):

* ``mi300x-cpx-nps4`` (amdsmi, ROCm 7.12.0): one uuid per partition.
* ``mi300x-cpx-nps4-shared-uuid`` (amdsmi, ROCm 7.0.2): the same machine before the upgrade: partitions
  share their GPU's uuid; the plugin derives the ids ROCm 7.12 reports, so the two fixtures' ids agree.
* ``mi300x-cpx-nps4-rocm-6.4.0`` (amdsmi, ROCm 6.4.0): the same machine on the last release whose partitions
  mirror their GPU: every partition prints the whole GPU's memory, power, temperature, activity and ECC counts.
* ``mi300x-dpx-amd-smi-25`` (amd-smi 25.5.1, ROCm 6.4.2) and ``mi300x-dpx-amd-smi-26`` (amd-smi 26.0.2,
  ROCm 7.0.2): 8x MI300X in DPX/NPS1 (16 logical GPUs) read through the CLI, one per JSON layout.
* ``mi350x-qpx-nps2-pod`` and ``mi350x-dpx-nps2-pod``: one MI350X in QPX or DPX, NPS2, given to a pod. An
  MI350X's DPX partition (147,456 MiB) and an MI300X's (98,296 MiB) share a mode and differ in size: the fleet
  RAC244 checks for one name, one size.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rayaccel.files.atomic import write_atomically

OUT = Path(__file__).resolve().parents[1] / "src" / "rayaccel_amd" / "fixtures"
PHYSICAL = 8
DEVICE_ID = 0x74A1
BUSES = ["0000:05:00", "0000:26:00", "0000:46:00", "0000:65:00", "0000:85:00", "0000:a6:00", "0000:c6:00",
         "0000:e5:00"]
VRAM_MB = 196592  # the whole MI300X
#: The VRAM bus width of an MI300X (and an MI350X), in bits: every partition prints the device's.
VRAM_BIT_WIDTH = 8192
#: VRAM in use, MiB: the whole device's on the primary partition (sysfs mem_info_vram_used: the CHANGELOG's 0.3 GB),
#: KFD's on each secondary (its share less what KFD has available).
DEVICE_VRAM_USED_MIB, PARTITION_VRAM_USED_MIB = 283, 12
XCDS = 8  # accelerator complex dies of an MI300X, the compute slices its partitions divide
HIVE = 0x8C3C7E2A1D5B4F61
#: amdsmi_uuid_gen's idx on ROCm before 7.12: "no partition"
NO_PARTITION = 0xFF

AMDSMI_PY_API = "https://rocm.docs.amd.com/projects/amdsmi/en/docs-7.0.2/reference/amdsmi-py-api.html"
AMDSMI_PY_API_712 = "https://rocm.docs.amd.com/projects/amdsmi/en/docs-7.12.0/reference/amdsmi-py-api.html"
AMDSMI_PY_API_640 = "https://rocm.docs.amd.com/projects/amdsmi/en/docs-6.4.0/reference/amdsmi-py-api.html"
CLI_DOC_25 = "https://rocm.docs.amd.com/projects/amdsmi/en/docs-6.4.2/how-to/amdsmi-cli-tool.html"
CLI_DOC_26 = "https://rocm.docs.amd.com/projects/amdsmi/en/docs-7.0.2/how-to/amdsmi-cli-tool.html"
PARTITION_DOC = "https://rocm.docs.amd.com/projects/amdsmi/en/develop/conceptual/partition.html"
UUID_SOURCE = ("uuids as amdsmi_uuid_gen prints them (projects/amdsmi/src/amd_smi/amd_smi_uuid.cc in "
               "https://github.com/ROCm/rocm-systems): partition index in the second byte, 0xff before ROCm 7.12 "
               "(https://github.com/ROCm/rocm-systems/pull/3977); one PCI function per partition "
               "(https://github.com/ROCm/amdsmi/issues/132); partition queries N/A off the primary partition "
               "(https://github.com/ROCm/rocm-systems/pull/8491); Ray 2.60's AMDGPUAcceleratorManager counts the "
               "handles (the parity oracle)")

#: Why partition 0 states the whole GPU's memory on ROCm 6.4.1+ (the module docstring's "memory").
PRIMARY_MEMORY_SOURCE = (
    "VRAM size and use as rocm_smi reads them (rsmi_dev_memory_total_get / rsmi_dev_memory_usage_get in "
    "projects/rocm-smi-lib/src/rocm_smi.cc of https://github.com/ROCm/rocm-systems: sysfs mem_info_vram_total/_used, "
    "KFD's share only where that is 0): the primary partition, the PCI device, states the whole GPU and the whole "
    "device's use, each other partition its share (amdsmi CHANGELOG, 'amd_smi_lib for ROCm 6.4.1', Resolved issues: "
    "`amd-smi monitor` 0.3/192.0 GB on partition 0, 0.5/ 24.0 GB on the others, "
    "https://github.com/ROCm/amdsmi/blob/amd-mainline/CHANGELOG.md; "
    "https://github.com/ROCm/k8s-device-plugin/pull/108); "
    "vram_bit_width the device's on every partition (AMDGPU_INFO_DEV_INFO: adev->gmc.vram_width)")


@dataclass(frozen=True)
class Product:
    """What one Instinct model reports and the labels it gets (AMD's specifications; the SKU catalog's ids)."""

    market_name: str
    device_id: int
    compute_units: int
    gfx_target: str
    architecture: str
    xcds: int
    accelerator_type: str
    sku: str


MI300X = Product("AMD Instinct MI300X", DEVICE_ID, 304, "gfx942", "cdna3", XCDS, "AMD-Instinct-MI300X-OAM", "mi300x")
#: MI350X: 8 XCDs of 32 CUs (256), gfx950 (CDNA 4), 288 GB HBM3E; partition modes SPX/DPX/QPX/CPX with NPS1 or
#: NPS2 (AMD Instinct MI350 series partitioning; ROCm 7.0 is the first to support it).
MI350X = Product("AMD Instinct MI350X", 0x75A0, 256, "gfx950", "cdna4", 8, "AMD-Instinct-MI350X-OAM", "mi350x")


class Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    # What amd-smi printed is kept as a block, line for line, as in the hand-written fixtures.
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if "\n" in data else None)


Dumper.add_representer(str, _text)


def serial(gpu: int) -> int:
    """The GPU's 64-bit unique id (amdsmi's asic_serial); the same on each of its partitions."""
    return ((0x1A + 0x11 * gpu) & 0xFF) << 56 | 0x4F6A2F95E3D5C0 | gpu


def amdsmi_uuid(unique_id: int, idx: int, device_id: int = DEVICE_ID) -> str:
    """What amdsmi_uuid_gen(unique_id, device_id, idx) prints."""
    return (f"{unique_id >> 56 & 0xFF:02x}{idx:02x}{device_id:04x}-0000-1000-80{unique_id >> 48 & 0xFF:02x}-"
            f"{unique_id >> 32 & 0xFFFF:04x}{unique_id & 0xFFFFFFFF:08x}")


def uuid_of(gpu: int, partition: int, per_partition: bool) -> str:
    return amdsmi_uuid(serial(gpu), partition if per_partition else NO_PARTITION)


def bdf(gpu: int, partition: int) -> str:
    return f"{BUSES[gpu]}.{partition}"


# amdsmi (library) fixtures -----------------------------------------------------------------------


def gfx_activity(gpu: int, partition: int) -> int:
    """The busy machine's GFX activity of a partition, in percent (69-99, each GPU's partitions apart)."""
    return 69 + (7 * gpu + 11 * partition) % 31


def umc_activity(gpu: int, partition: int) -> int:
    return 21 + (5 * gpu + 3 * partition) % 13


def expected_metric_values(partitions: int, reporting: int | None = None) -> dict[str, dict[str, float]]:
    """``expected.metric_values``: each GPU's utilization and memory-controller activity, its partitions' mean
    GFX and UMC activity (neither a sum nor a whole-number quotient: the means are fractions here), and its
    memory as its primary partition states it (the whole GPU's and the whole device's VRAM in use: a partition
    0 counted as one more partition, or the secondaries' use added to the device's, would be off). ``reporting``:
    how many partitions, the first, state their activity (all by default)."""
    reporting = reporting or partitions
    return {device: {"utilization": sum(gfx_activity(g, p) for p in range(reporting)) / reporting,
                     "vendor.umc_activity": sum(umc_activity(g, p) for p in range(reporting)) / reporting,
                     "memory_total": VRAM_MB * 2**20, "memory_used": DEVICE_VRAM_USED_MIB * 2**20}
            for g, device in enumerate(expected_ids())}


def stated_vram_mib(whole_mib: int, partition: int, partitions: int) -> int:
    """The VRAM size amdsmi states for a partition on ROCm 6.4.1+: the whole GPU's on the primary (partition 0,
    the PCI device, the only one with sysfs mem_info_vram_total), KFD's even share on every other."""
    return whole_mib if partition == 0 else whole_mib // partitions


def stated_vram_used_mib(partition: int) -> int:
    return DEVICE_VRAM_USED_MIB if partition == 0 else PARTITION_VRAM_USED_MIB


def library_gpu(gpu: int, partition: int, partitions: int, per_partition: bool) -> dict[str, Any]:
    primary = partition == 0
    logical = gpu * partitions + partition
    vram = stated_vram_mib(VRAM_MB, partition, partitions)
    data: dict[str, Any] = {
        "gpu_id": DEVICE_ID,
        "asic_info": {"market_name": "AMD Instinct MI300X", "vendor_id": "0x1002", "device_id": "0x74a1",
                      "rev_id": "0x00", "asic_serial": f"0x{serial(gpu):016X}", "oam_id": gpu,
                      "num_compute_units": 304 // partitions, "target_graphics_version": "gfx942"},
        "uuid": uuid_of(gpu, partition, per_partition),
        "bdf": bdf(gpu, partition),
        "enumeration_info": {"drm_card": logical + 1, "drm_render": 128 + logical, "hsa_id": 2 + logical,
                             "hip_id": logical, "hip_uuid": f"GPU-{serial(gpu):016x}"},
        "vram_info": {"vram_size": vram, "vram_bit_width": VRAM_BIT_WIDTH},
        "memory_total": {"vram": vram * 2**20},
        "memory_usage": {"vram": stated_vram_used_mib(partition) * 2**20},
        "numa_node": gpu // 4,
        "driver_info": {"driver_name": "amdgpu", "driver_version": "6.16.13" if per_partition else "6.14.14"},
        # Only the primary partition of a GPU answers the partition queries; the others answer N/A.
        "compute_partition": "CPX" if primary else "N/A",
        "memory_partition": "NPS4" if primary else "N/A",
        "xgmi_info": {"xgmi_lanes": 16, "xgmi_hive_id": HIVE, "xgmi_node_id": gpu, "index": gpu},
        "kfd_info": {"kfd_id": 40000 + logical, "node_id": 2 + logical, "current_partition_id": partition},
        "ras_block_features": [{"block": "UMC", "status": "ENABLED"}],
        "total_ecc_count": {"correctable_count": 0, "uncorrectable_count": 0, "deferred_count": 0},
        "activity": {"gfx_activity": gfx_activity(gpu, partition), "umc_activity": umc_activity(gpu, partition),
                     "mm_activity": "N/A"},
        "temperature": {"edge": "N/A", "hotspot": 40 + gpu, "vram": 35},
    }
    if primary:
        data["power_info"] = {"socket_power": 130 + gpu, "current_socket_power": 130 + gpu,
                              "average_socket_power": "N/A"}
    return data


def profile(mode: str, partitions: int, memory_mib: int, product: Product = MI300X) -> str:
    """A partition's profile, from AMD's facts: the mode, the XCDs it gets (the product's, shared evenly) and its
    memory in GiB, rounded (docs/partitions.md: the name carries what sizes the partition, as MIG's 1g.10gb)."""
    return f"{mode.lower()}.{product.xcds // partitions}xcd.{round(memory_mib / partitions / 1024)}gb"


def expected_labels(count: int, memory_mib: int, driver: str, rocm: str, mode: str, memory_mode: str,
                    hive: str | None, partitions: int, product: Product | None = None) -> dict[str, str]:
    """The node labels, worked out from the fixture's facts (the hive: joined by xGMI links, when recorded):
    ``count`` physical GPUs of ``memory_mib`` each, ``partitions`` compute partitions in all."""
    product = product or MI300X
    name = profile(mode, partitions // count, memory_mib, product)
    labels = {"rayaccel.io/family": "amd", "rayaccel.io/vendor": "AMD", "rayaccel.io/sku-known": "true",
              "rayaccel.io/count": str(count), "rayaccel.io/interconnect": "xgmi" if hive else "none",
              "rayaccel.io/health": "healthy", "ray.io/accelerator-type": product.accelerator_type,
              "rayaccel.io/sku": product.sku, "rayaccel.io/memory-mib": str(memory_mib),
              "rayaccel.io/architecture": product.architecture, "rayaccel.io/driver-version": driver,
              "rayaccel.io/runtime-version": rocm}
    if hive:
        # Ray's own domain label carries the same host-qualified hive id (docs/labels.md).
        labels.update({"rayaccel.io/scale-up-domain": hive, "ray.io/gpu-domain": hive,
                       "rayaccel.io/scale-up-domain-kind": "xgmi-hive", "rayaccel.io/scale-up-domain-size": str(count)})
    labels.update({"rayaccel.io/partition-kind": "compute-partition",
                   f"rayaccel.io/partition-compute-partition-{name}": str(partitions)})
    labels.update({"amd.com/gpu.compute-partition": mode, "amd.com/gpu.memory-partition": memory_mode,
                   "amd.com/gpu.gfx-target": product.gfx_target})
    return labels


def expected_ids() -> list[str]:
    """Each physical GPU is one device, its partitions inside it (the plugin's README, "Partitions"): its id is
    amdsmi's uuid with the "no partition" second byte, what every ROCm before 7.12 reports for each partition."""
    return [uuid_of(g, 0, per_partition=False) for g in range(PHYSICAL)]


def expected_slices(partitions: int, memory_mode: str) -> dict[str, dict[str, Any]]:
    """``expected.device_fields``: each GPU's slice counts, from AMD's partitioning guide (an MI300X is 8 XCDs,
    CPX gives each XCD a partition, DPX two each ...; NPS<n> splits its memory in n), and one partition's share
    (its last, the fourth at most, so a partition numbered from 1 or by its place among all GPUs is told apart)."""
    last = min(3, partitions - 1)
    return {device: {"partition_capacity.compute_slices": XCDS, "partition_capacity.memory_slices":
                     int(memory_mode.removeprefix("NPS")),
                     f"partition.{g * partitions + last}.compute_slices": XCDS // partitions}
            for g, device in enumerate(expected_ids())}


def expected_resources(mode: str, per_gpu: int, partitions: int, product: Product = MI300X,
                       memory_mib: int = VRAM_MB) -> dict[str, float]:
    """Not Ray's GPU count: every compute partition is a GPU_COMPUTE_PARTITION_<profile> (docs/partitions.md),
    ``partitions`` of them that take work, ``per_gpu`` to each GPU."""
    return {f"GPU_COMPUTE_PARTITION_{profile(mode, per_gpu, memory_mib, product)}": float(partitions),
            f"accelerator_type:{product.accelerator_type}": 1.0}


def library_fixture(per_partition: bool) -> dict[str, Any]:
    partitions = 8
    rocm = "7.12.0" if per_partition else "7.0.2"
    gpus = {str(g * partitions + p): library_gpu(g, p, partitions, per_partition)
            for g in range(PHYSICAL) for p in range(partitions)}
    ids = expected_ids()
    expected = {
        # Before ROCm 7.12 the partitions share their card's uuid, so the plugin derives ids (a warning).
        **({} if per_partition else {"problems": ["fallback-device-id"]}),
        "devices": 8, "device_ids": ids, "accelerator_type": "AMD-Instinct-MI300X-OAM",
        # Ray counts every amdsmi processor handle as a GPU (64); here they are 64 partitions of 8 GPUs.
        "resources": expected_resources("CPX", 8, 64),
        # amdsmi_topo_get_link_type is not recorded here: no links, so no hive domain.
        "links": 0, "skus": {i: "mi300x" for i in ids},
        "labels": expected_labels(8, VRAM_MB, "6.16.13" if per_partition else "6.14.14", rocm, "CPX",
                                  "NPS4", hive=None, partitions=64),
        "metric_values": expected_metric_values(partitions),
        "device_fields": expected_slices(partitions, "NPS4"),
    }
    faults: list[dict[str, Any]] = []
    if per_partition:
        faults.append({
            "name": "gpu9-pci-id-only", "kind": "other",
            "description": "logical GPU 9 answers only its PCI device id: amdsmi_get_gpu_device_uuid and "
                           "amdsmi_get_gpu_device_bdf fail (AMDSMI_STATUS_NOT_SUPPORTED); Ray still counts it, and "
                           "its HIP uuid still places it in GPU 1",
            "patch": {"libraries": {"amdsmi": {"gpus": {"9": {"errors": {"amdsmi_get_gpu_device_uuid": 2,
                                                                          "amdsmi_get_gpu_device_bdf": 2}}}}}},
            # GPU 9's id is derived (the warning fallback-device-id); its device stays healthy.
            "expected": {"devices": 8, "health": {}, "resources": expected["resources"], "fatal": False,
                         "problem_codes": ["fallback-device-id"]}})
        # ECC is the package's: amdsmi answers it on the primary partition (logical GPU 16 is GPU 2's). Deferred
        # errors beside uncorrectable ones leave the GPU unhealthy: the worse state wins, both are reported.
        faults.append({
            "name": "gpu2-ecc-uncorrectable-and-deferred", "kind": "ecc",
            "description": "GPU 2 counts one uncorrectable and three deferred ECC errors "
                           "(amdsmi_get_gpu_total_ecc_count on its primary partition): unhealthy, every partition "
                           "drained, both counts reported",
            "patch": {"libraries": {"amdsmi": {"gpus": {"16": {"total_ecc_count": {
                "uncorrectable_count": 1, "deferred_count": 3}}}}}},
            "expected": {"health": {ids[2]: "unhealthy"}, "reasons": {ids[2]: ["ecc-uncorrectable", "ecc-deferred"]},
                         "fatal": True, "resources": expected_resources("CPX", 8, 56)}})
        # A compute partition is its own logical GPU: one that stops answering (logical GPU 13, GPU 1's partition 5,
        # whose hip_id is 13) is drained alone; its GPU and the GPU's other seven partitions stay in service.
        faults.append({
            "name": "gpu1-partition5-io-error", "kind": "fatal-error",
            "description": "GPU 1's partition 5 (logical GPU 13) stops answering: amdsmi_get_gpu_activity fails with "
                           "AMDSMI_STATUS_IO on it alone; that partition is unhealthy, GPU 1 itself is not",
            "patch": {"libraries": {"amdsmi": {"gpus": {"13": {"errors": {"amdsmi_get_gpu_activity": 12}}}}}},
            "expected": {"health": {ids[1]: "healthy", "13": "unhealthy"}, "reasons": {"13": ["amdsmi-io"]},
                         "fatal": True, "resources": expected_resources("CPX", 8, 63)}})
    else:
        faults.append({
            "name": "rocm-6-2-no-kfd-info", "kind": "other",
            "description": "the same node on ROCm 6.2, whose amdsmi has no kfd_info (amdsmi_get_gpu_kfd_info came in "
                           "ROCm 6.3): each partition's id is its PCI function on its GPU's device instead, and the "
                           "partitions keep their ids",
            "patch": {"libraries": {"amdsmi": {"gpus": {logical: {"kfd_info": None} for logical in gpus}}}},
            # Partition 3 of GPU 0 (PCI function 0000:05:00.3) keeps the uuid ROCm 7.12 gives it, as with kfd_info.
            "expected": {"devices": 8, "health": {}, "fatal": False, "problem_codes": ["fallback-device-id"],
                         "device_fields": {ids[0]: {"partition.3.uuid": uuid_of(0, 3, per_partition=True)}}}})
    name = "mi300x-cpx-nps4" if per_partition else "mi300x-cpx-nps4-shared-uuid"
    description = ("8x AMD Instinct MI300X in CPX compute / NPS4 memory partitioning: 64 logical GPUs (one PCI "
                   f"function each) through the amdsmi Python API (ROCm {rocm}); "
                   + ("each partition's uuid carries its partition id in its second byte (ROCm 7.12+)"
                      if per_partition else "every partition reports its GPU's uuid (ROCm 6.1 to 7.11)")
                   + "; busy, each partition at its own GFX activity")
    source = (f"amdsmi Python API of ROCm {rocm} (amdsmi_interface.py: function names, return shapes; "
              f"documented at {AMDSMI_PY_API_712 if per_partition else AMDSMI_PY_API}); partitioning as in "
              f"{PARTITION_DOC} (CPX = 8 partitions of 38 CUs, NPS4); {UUID_SOURCE}; {PRIMARY_MEMORY_SOURCE}")
    return {"schema": "rayaccel-fixture/1", "plugin": "amd", "name": name, "description": description,
            "source": source,
            "host": {"hostname": "mi300x-cpx-node", "libraries": {"amdsmi": {"rocm_version": rocm, "gpus": gpus}}},
            "expected": expected, "faults": faults}


# ROCm 6.4.0: every partition answers with its whole GPU ------------------------------------------------

MIRROR_SOURCE = ("amdsmi CHANGELOG, 'amd_smi_lib for ROCm 6.4.1' (https://github.com/ROCm/amdsmi/blob/amd-mainline/"
                 "CHANGELOG.md): Resolved issues, partition nodes 'mirrored renderD128's information' (Previous "
                 "Outputs in CPX: `amd-smi monitor` prints 201 W, 46 C and VRAM 0.3/192.0 GB on all 8 partitions of "
                 "one MI300X; `amd-smi list -e` prints each partition's own BDF, KFD_ID, NODE_ID, PARTITION_ID, "
                 "HSA_ID and HIP_ID but RENDER N/A and CARD N/A off the primary), Changed: `amd-smi partition "
                 "--current` printed the mode on every partition; ROCm/amdsmi rocm_smi/src/rocm_smi_main.cc adds a "
                 "secondary partition with its primary's card path ('maps the primary node card to secondary'), so "
                 "amdsmi_get_gpu_memory_total/_usage, vram_info, power_info (gpu_metrics), temperatures, activity "
                 "and total_ecc_count (rsmi_dev_ecc_count_get over the enabled RAS blocks) read the primary's sysfs; "
                 "ROCm 6.4.0 = AMDSMI Tool 25.3.0+ede62f2, AMDSMI Library 25.3.0 (amd-smi version)")
#: GPU 3's correctable ECC count: the package's, printed by each of its partitions alike on ROCm 6.4.0.
MIRRORED_CORRECTABLE = 5


def mirrored_gpu(gpu: int, partition: int, partitions: int) -> dict[str, Any]:
    """A logical GPU as amdsmi of ROCm 6.4.0 answers it: its own identity (PCI function, KFD node, partition id,
    HIP id), every device reading its primary partition's, the whole GPU's."""
    own = library_gpu(gpu, partition, partitions, per_partition=False)
    primary = library_gpu(gpu, 0, partitions, per_partition=False)
    mirrored = {key: primary[key] for key in ("activity", "temperature", "compute_partition", "memory_partition",
                                              "ras_block_features")}
    # amdsmi_get_power_info's keys before ROCm 7 ("socket_power" came later; amdsmi_interface.py at ROCm/amdsmi
    # 0ceca28); 0xFFFF prints N/A (MI300X's metrics table has no average power or voltages). power_limit (hwmon's
    # power1_cap) is left out, as in the other fixtures: the plugin does not read it.
    mirrored["power_info"] = {"current_socket_power": 130 + gpu, "average_socket_power": "N/A", "gfx_voltage": "N/A",
                              "soc_voltage": "N/A", "mem_voltage": "N/A"}
    mirrored.update({"vram_info": {"vram_size": VRAM_MB, "vram_bit_width": VRAM_BIT_WIDTH},
                     "memory_total": {"vram": VRAM_MB * 2**20},
                     "memory_usage": {"vram": DEVICE_VRAM_USED_MIB * 2**20},
                     "total_ecc_count": {"correctable_count": MIRRORED_CORRECTABLE if gpu == 3 else 0,
                                         "uncorrectable_count": 0, "deferred_count": 0}})
    own.update(mirrored)
    if partition:
        own["enumeration_info"] = {**own["enumeration_info"], "drm_card": "N/A", "drm_render": "N/A"}
    own["driver_info"]["driver_version"] = "6.10.5"
    return own


def mirrored_fixture() -> dict[str, Any]:
    partitions, rocm = 8, "6.4.0"
    gpus = {str(g * partitions + p): mirrored_gpu(g, p, partitions) for g in range(PHYSICAL) for p in range(partitions)}
    ids = expected_ids()
    # Each GPU's metrics once: its memory (not 8 times 192 GB), its socket power, its ECC counts, its activity.
    metric_values = {device: {"utilization": gfx_activity(g, 0), "vendor.umc_activity": umc_activity(g, 0),
                              "memory_total": VRAM_MB * 2**20, "memory_used": DEVICE_VRAM_USED_MIB * 2**20,
                              "power": 130 + g,
                              "temperature": 40 + g,
                              "ecc_errors_corrected": MIRRORED_CORRECTABLE if g == 3 else 0,
                              "ecc_errors_uncorrected": 0}
                     for g, device in enumerate(ids)}
    expected = {
        "problems": ["fallback-device-id"],
        "devices": 8, "device_ids": ids, "accelerator_type": "AMD-Instinct-MI300X-OAM",
        "resources": expected_resources("CPX", 8, 64),
        "links": 0, "skus": {i: "mi300x" for i in ids},
        "labels": expected_labels(8, VRAM_MB, "6.10.5", rocm, "CPX", "NPS4", hive=None, partitions=64),
        "metric_values": metric_values,
        "device_fields": expected_slices(partitions, "NPS4"),
    }
    faults = [{
        "name": "gpu2-ecc-uncorrectable-mirrored", "kind": "ecc",
        "description": "GPU 2 counts one uncorrectable ECC error: amdsmi_get_gpu_total_ecc_count prints it on each "
                       "of its 8 partitions (ROCm 6.4.0 reads the primary's RAS counters for all); one error, the "
                       "GPU unhealthy, every partition drained",
        "patch": {"libraries": {"amdsmi": {"gpus": {str(16 + p): {"total_ecc_count": {"uncorrectable_count": 1}}
                                                    for p in range(partitions)}}}},
        "expected": {"health": {ids[2]: "unhealthy"}, "reasons": {ids[2]: ["ecc-uncorrectable"]},
                     "fatal": True, "resources": expected_resources("CPX", 8, 56),
                     "problem_codes": ["fallback-device-id"]}}]
    description = ("8x AMD Instinct MI300X in CPX compute / NPS4 memory partitioning: 64 logical GPUs (8 per GPU) read "
                   f"through the amdsmi Python API of ROCm {rocm}, which answers every partition's device queries "
                   "with its whole GPU's values (VRAM 192 GB, socket power, temperature, activity, ECC: GPU 3 counts "
                   f"{MIRRORED_CORRECTABLE} correctable errors on each partition); partitions share their GPU's uuid")
    return {"schema": "rayaccel-fixture/1", "plugin": "amd", "name": "mi300x-cpx-nps4-rocm-6.4.0",
            "description": description,
            "source": f"amdsmi Python API of ROCm {rocm} (documented at {AMDSMI_PY_API_640}); {MIRROR_SOURCE}; "
                      f"{UUID_SOURCE}",
            "host": {"hostname": "mi300x-cpx-node", "libraries": {"amdsmi": {"rocm_version": rocm, "gpus": gpus}}},
            "expected": expected, "faults": faults}


# amd-smi (CLI) fixtures --------------------------------------------------------------------------


def value(number: Any, unit: str) -> dict[str, Any]:
    return {"value": number, "unit": unit}


def static_entry(gpu: int, partition: int, partitions: int, logical: int, layout: int) -> dict[str, Any]:
    primary = partition == 0
    entry: dict[str, Any] = {
        "gpu": logical,
        "asic": {"market_name": "AMD Instinct MI300X", "vendor_id": "0x1002",
                 "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]", "subvendor_id": "0x1002",
                 "device_id": "0x74a1", "subsystem_id": "0x74a1", "rev_id": "0x00",
                 "asic_serial": f"0x{serial(gpu):016X}", "oam_id": gpu, "num_compute_units": 304 // partitions,
                 "target_graphics_version": "gfx942"},
        "bus": {"bdf": bdf(gpu, partition), "max_pcie_width": 16, "max_pcie_speed": value(32, "GT/s"),
                "pcie_interface_version": "Gen 5", "slot_type": "OAM"},
        "driver": {"name": "amdgpu", "version": "6.12.12" if layout == 25 else "6.14.14"},
        "vram": {"type": "HBM3", "vendor": "N/A", "size": value(stated_vram_mib(VRAM_MB, partition, partitions), "MB"),
                 "bit_width": VRAM_BIT_WIDTH, "max_bandwidth": value(5300 // partitions, "GB/s")},
    }
    if layout == 25:
        # amd-smi 25 (ROCm 6.4) prints the partition section in static, compute mode as accelerator_partition.
        entry["partition"] = {"accelerator_partition": "DPX" if primary else "N/A",
                              "memory_partition": "NPS1" if primary else "N/A", "partition_id": partition}
    entry["numa"] = {"node": gpu // 4, "affinity": gpu // 4}
    return entry


def metric_entry(gpu: int, partition: int, partitions: int, logical: int, layout: int) -> dict[str, Any]:
    primary = partition == 0
    total = stated_vram_mib(VRAM_MB, partition, partitions)
    # amd-smi 25 (ROCm 6.4.x): a secondary partition has no gpu_metrics or hwmon of its own, so its activity and
    # temperatures print N/A (amdsmi CHANGELOG, ROCm 6.4.1 resolved issues: `amd-smi monitor` GPU_T, MEM_T, GFX%,
    # MEM% N/A on partitions 1-7); the primary's are the whole GPU's.
    own = primary or layout != 25
    return {
        "gpu": logical,
        "usage": {"gfx_activity": value(gfx_activity(gpu, partition) if own else "N/A", "%"),
                  "umc_activity": value(umc_activity(gpu, partition) if own else "N/A", "%"),
                  "mm_activity": value("N/A", "%")},
        # Socket power is the whole GPU's: only the primary partition reports it.
        "power": {"socket_power": value(130 + gpu if primary else "N/A", "W"),
                  "gfx_voltage": value("N/A", "mV"), "soc_voltage": value("N/A", "mV"),
                  "mem_voltage": value("N/A", "mV"), "throttle_status": "N/A", "power_management": "ENABLED"},
        "temperature": {"edge": value("N/A", "C"), "hotspot": value(40 + gpu if own else "N/A", "C"),
                        "mem": value(33 if own else "N/A", "C")},
        "ecc": {"total_correctable_count": 0, "total_uncorrectable_count": 0, "total_deferred_count": 0,
                "cache_correctable_count": 0, "cache_uncorrectable_count": 0},
        "mem_usage": {"total_vram": value(total, "MB"), "used_vram": value(DEVICE_VRAM_USED_MIB, "MB"),
                      "free_vram": value(total - DEVICE_VRAM_USED_MIB, "MB")},
    }


def topology_entry(gpu: int, partition: int, partitions: int, logical: int) -> dict[str, Any]:
    links = []
    for other_gpu in range(PHYSICAL):
        for other_partition in range(partitions):
            other = other_gpu * partitions + other_partition
            if other == logical:
                kind, weight, hops = "SELF", 0, 0
            else:
                # KFD links a GPU's partitions to each other over the die's fabric (CRAT intra-socket
                # weight 13) and to the other GPUs' partitions over xGMI (weight 15).
                kind, weight, hops = "XGMI", 13 if other_gpu == gpu else 15, 1
            links.append({"gpu": other, "bdf": bdf(other_gpu, other_partition), "weight": weight,
                          "link_status": "ENABLED", "link_type": kind, "num_hops": hops, "bandwidth": "N/A"})
    return {"gpu": logical, "bdf": bdf(gpu, partition), "links": links}


def partition_rows(partitions: int) -> list[dict[str, Any]]:
    """``amd-smi partition --current --json``'s rows, as amd-smi 26 prints them (see the module docstring)."""
    rows = []
    for gpu in range(PHYSICAL):
        for partition in range(partitions):
            primary = partition == 0
            rows.append({"gpu_id": gpu * partitions + partition, "memory": "NPS1" if primary else "N/A",
                         "accelerator_type": "DPX" if primary else "N/A",
                         "accelerator_profile_index": 1 if primary else "N/A",
                         # The failed query on a secondary partition leaves the primary's partition id here.
                         "partition_id": "0"})
    return rows


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2) + "\n"


def cli_fixture(layout: int) -> dict[str, Any]:
    partitions = 2
    rocm, tool = ("6.4.2", "25.5.1") if layout == 25 else ("7.0.2", "26.0.2")
    logical = [(g, p, g * partitions + p) for g in range(PHYSICAL) for p in range(partitions)]
    listing = [{"gpu": n, "bdf": bdf(g, p), "uuid": uuid_of(g, p, per_partition=False), "kfd_id": 41000 + n,
                "node_id": 2 + n, "partition_id": p} for g, p, n in logical]
    commands: dict[str, Any] = {
        "amd-smi list --json": {"stdout": dumps(listing)},
        "amd-smi static --json": {"stdout": dumps(
            {"gpu_data": [static_entry(g, p, partitions, n, layout) for g, p, n in logical]})},
        "amd-smi metric --json": {"stdout": dumps(
            {"gpu_data": [metric_entry(g, p, partitions, n, layout) for g, p, n in logical]})},
        "amd-smi topology --json": {"stdout": dumps([topology_entry(g, p, partitions, n) for g, p, n in logical])},
        "amd-smi version --json": {"stdout": dumps([{"tool": "AMDSMI Tool", "version": tool,
                                                     "amdsmi_library_version": tool, "rocm_version": rocm}])},
    }
    if layout == 26:
        commands["amd-smi partition --current --json"] = {"stdout": dumps({"current_partition":
                                                                           partition_rows(partitions)})}
    ids = expected_ids()
    resources = expected_resources("DPX", 2, 16)
    # The partitions share their card's uuid (amd-smi before ROCm 7.12): the plugin derives ids (a warning).
    expected = {"problems": ["fallback-device-id"],
                "devices": 8, "device_ids": ids, "accelerator_type": "AMD-Instinct-MI300X-OAM",
                # 8 GPUs, every pair joined by xGMI: 28 links, one hive (amd-smi does not name it).
                "resources": resources, "links": 28, "skus": {i: "mi300x" for i in ids},
                "labels": expected_labels(8, VRAM_MB, "6.12.12" if layout == 25 else "6.14.14", rocm,
                                          "DPX", "NPS1", hive="mi300x-dpx-node-xgmi-0", partitions=16),
                # amd-smi 25: the primary's activity alone, the whole GPU's (the secondaries print N/A).
                "metric_values": expected_metric_values(partitions, reporting=1 if layout == 25 else None),
                "device_fields": expected_slices(partitions, "NPS1")}
    faults: list[dict[str, Any]] = []
    if layout == 26:
        faults.append({
            "name": "amd-smi-partition-fails", "kind": "other",
            "description": "`amd-smi partition --current --json` exits with status 1: the partition mode is "
                           "unknown, the GPUs (and their ids, from `list`'s partition_id) are not",
            "patch": {"commands": {"amd-smi partition --current --json": {
                "stdout": "", "stderr": "AMD-SMI: partition: failed to read accelerator partition profile\n",
                "returncode": 1}}},
            # The failed command is a warning (amd-smi-failed); the shared uuids still force derived ids.
            "expected": {"devices": 8, "health": {}, "resources": resources, "fatal": False,
                         "problem_codes": ["amd-smi-failed", "fallback-device-id"]}})
    name = f"mi300x-dpx-amd-smi-{layout}"
    where = ("`static --json` has the partition section (accelerator_partition, memory_partition, partition_id)"
             if layout == 25 else "partition data is only in `amd-smi partition --current --json`, not `static`")
    description = (f"8x AMD Instinct MI300X in DPX compute / NPS1 memory partitioning: 16 logical GPUs (one PCI "
                   f"function each) read through amd-smi {tool} --json (ROCm {rocm}; no amdsmi Python package); "
                   f"{where}; partitions share their GPU's uuid; busy, "
                   + ("the primary partition printing the GPU's activity and temperatures, the others N/A"
                      if layout == 25 else "each partition at its own GFX activity"))
    source = (f"amd-smi {tool} (ROCm {rocm}) JSON layout of list/static/metric/topology/version"
              + (" and partition --current" if layout == 26 else "")
              + f" --json, documented at {CLI_DOC_25 if layout == 25 else CLI_DOC_26}"
              + ("; partition moved out of static in amd-smi 26 (https://github.com/ROCm/rocm-systems/pull/223), "
                 "rows as subcommands/partition.py prints them" if layout == 26 else "")
              + f"; {UUID_SOURCE}; {PRIMARY_MEMORY_SOURCE}")
    return {"schema": "rayaccel-fixture/1", "plugin": "amd", "name": name, "description": description,
            "source": source,
            "host": {"hostname": "mi300x-dpx-node", "env": {"PATH": "/opt/rocm/bin:/usr/bin"}, "commands": commands},
            "expected": expected, "faults": faults}


# One MI350X in QPX or DPX / NPS2, as a pod given one GPU sees it -----------------------------------------

#: AMD's compatibility matrix of compute and memory partition modes (DPX + NPS2 among them) and a cloud's MI355X
#: page (DPX: 2 logical GPUs per GPU, each with half its memory and compute).
MATRIX_DOC = "https://instinct.docs.amd.com/projects/amdgpu-docs/en/latest/gpu-partitioning/index.html"
MI355X_MODES_DOC = "https://aac.amd.com/help/bare-metal/gpu-partitioning/"


def mi350x_pod_fixture(mode: str, partitions: int) -> dict[str, Any]:
    """One MI350X split in ``partitions`` compute partitions (QPX: 4, DPX: 2) with NPS2 memory, all given to one
    pod (AMD's Kubernetes device plugin hands out partitions as GPUs): the XCDs are MI350X's, not MI300X's, so
    each partition's share of them is its product's (2 of 8 in QPX), and so is its memory (144 GiB in DPX,
    where an MI300X's DPX partition has 96 GiB: one mode, two sizes, so two profiles)."""
    vram_mb, rocm = 294912, "7.0.2"
    gpus = {}
    for p in range(partitions):
        gpu = library_gpu(0, p, partitions, per_partition=False)
        gpu["gpu_id"] = MI350X.device_id
        gpu["asic_info"].update({"market_name": MI350X.market_name, "device_id": f"0x{MI350X.device_id:04x}",
                                 "num_compute_units": MI350X.compute_units // partitions,
                                 "target_graphics_version": MI350X.gfx_target})
        gpu["uuid"] = amdsmi_uuid(serial(0), NO_PARTITION, MI350X.device_id)
        gpu["vram_info"] = {"vram_size": stated_vram_mib(vram_mb, p, partitions), "vram_bit_width": VRAM_BIT_WIDTH}
        gpu["memory_total"] = {"vram": stated_vram_mib(vram_mb, p, partitions) * 2**20}
        gpu["driver_info"]["driver_version"] = "6.14.14"
        # KFD's gpu_id is a hash of the GPU's properties (kfd_topology.c), no count: 40000 would read as 40 C in mC.
        gpu["kfd_info"]["kfd_id"] = 45881 + 7 * p
        gpu["temperature"]["hotspot"] = 47
        if p == 0:
            gpu.update({"compute_partition": mode, "memory_partition": "NPS2"})
        gpus[str(p)] = gpu
    device = f"{serial(0) >> 56 & 0xFF:02x}ff{MI350X.device_id:04x}" + amdsmi_uuid(serial(0), 0)[8:]
    resources = expected_resources(mode, partitions, partitions, MI350X, vram_mb)
    expected = {
        # Before ROCm 7.12 the partitions share their card's uuid, so the plugin derives ids (a warning).
        "problems": ["fallback-device-id"],
        "devices": 1, "device_ids": [device], "accelerator_type": MI350X.accelerator_type,
        "resources": resources, "links": 0, "skus": {device: MI350X.sku},
        "labels": expected_labels(1, vram_mb, "6.14.14", rocm, mode, "NPS2", hive=None, partitions=partitions,
                                  product=MI350X),
        "device_fields": {device: {"partition_capacity.compute_slices": MI350X.xcds,
                                   "partition_capacity.memory_slices": 2,
                                   f"partition.{partitions - 1}.compute_slices": MI350X.xcds // partitions,
                                   # Each partition's own render node (amdsmi's enumeration_info.drm_render).
                                   **{f"partition.{p}.device_file": f"/dev/dri/renderD{128 + p}"
                                      for p in range(partitions)}}},
    }
    words = {2: "two", 4: "four"}[partitions]
    return {"schema": "rayaccel-fixture/1", "plugin": "amd", "name": f"mi350x-{mode.lower()}-nps2-pod",
            "description": f"One AMD Instinct MI350X OAM in {mode} compute / NPS2 memory partitioning, its {words} "
                           f"logical GPUs given to one pod, read through the amdsmi Python API (ROCm {rocm}); the "
                           "partitions share their GPU's uuid",
            "source": f"amdsmi Python API of ROCm {rocm} (documented at {AMDSMI_PY_API}); MI350X: 8 XCDs, 256 CUs, "
                      f"gfx950, 288 GB HBM3E, {mode} = {partitions} partitions of {MI350X.xcds // partitions} XCDs "
                      f"and {vram_mb // partitions} MiB each, NPS2 (AMD Instinct MI350 series partitioning, "
                      f"{PARTITION_DOC}; modes and memory share: {MATRIX_DOC}, {MI355X_MODES_DOC}); {UUID_SOURCE}; "
                      f"{PRIMARY_MEMORY_SOURCE}",
            "host": {"hostname": "mi350x-pod-0", "libraries": {"amdsmi": {"rocm_version": rocm, "gpus": gpus}}},
            "expected": expected, "faults": []}


def main(out: Path = OUT) -> int:
    for data in (library_fixture(per_partition=False), library_fixture(per_partition=True), mirrored_fixture(),
                 cli_fixture(25),
                 cli_fixture(26), mi350x_pod_fixture("QPX", 4),
                 mi350x_pod_fixture("DPX", 2)):
        path = out / f"{data['name']}.yaml"
        write_atomically(path, yaml.dump(data, Dumper=Dumper, sort_keys=False, width=120))
        print(path)
    return 0


if __name__ == "__main__":
    # An optional directory to write into (tests/hosts/test_fixture_builders.py compares it with the committed files).
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
