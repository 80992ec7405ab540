"""Write the AMD partition fixtures: an 8x MI300X node in CPX/NPS4 (64 logical GPUs), read through amdsmi.

Run from the repository root: ``.venv/bin/python reference_plugins/amd/tools/build_partition_fixtures.py``.

In CPX mode each MI300X (8 XCDs) is 8 logical GPUs, each with its own amdsmi processor handle, that Ray
counts one by one (``amdsmi_get_processor_handles``). Two ROCm behaviours:

* ``mi300x-cpx-nps4-shared-uuid``: older ROCm (6.1): the 8 partitions of a GPU report the whole GPU's uuid,
  and ``amdsmi_get_gpu_kfd_info`` (partition id) is not available. The plugin must still offer 64 GPUs.
* ``mi300x-cpx-nps4``: ROCm 6.4: the partition id is part of each partition's uuid, and
  ``amdsmi_get_gpu_kfd_info`` answers ``current_partition_id``.

In both, only partition 0 of a GPU answers the partition queries (``CPX``/``NPS4``); the other 7 answer
``N/A``. Expected values are worked out from these facts by hand, not from the plugin's output.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).resolve().parents[1] / "src" / "rayaccel_amd" / "fixtures"
PHYSICAL, PARTITIONS = 8, 8
BUSES = ["0000:05:00.0", "0000:26:00.0", "0000:46:00.0", "0000:65:00.0",
         "0000:85:00.0", "0000:a6:00.0", "0000:c6:00.0", "0000:e5:00.0"]
VRAM_MB = 196592 // PARTITIONS  # NPS4 + CPX: each logical GPU holds an eighth of the HBM
HIVE = 0x8C3C7E2A1D5B4F61


class Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def physical_uuid(gpu: int) -> str:
    return f"{gpu:x}{gpu:x}ff74a1-0000-1000-80{gpu:02x}-3f7b2c1d4e5a"


def partition_uuid(gpu: int, partition: int) -> str:
    # ROCm 6.4: the partition id is part of the uuid (written here into its last byte; the byte AMD uses is
    # not asserted by the plugin, only that the partitions differ).
    return f"{gpu:x}{gpu:x}ff74a1-0000-1000-80{gpu:02x}-3f7b2c1d4e{partition:02x}"


def logical_gpu(gpu: int, partition: int, shared_uuid: bool) -> dict[str, Any]:
    first = partition == 0
    data: dict[str, Any] = {
        "gpu_id": 0x74A1,
        "asic_info": {"market_name": "AMD Instinct MI300X", "vendor_id": "0x1002", "device_id": "0x74a1",
                      "rev_id": "0x00", "asic_serial": f"0x3F7B2C1D4E5A60{gpu:02X}", "oam_id": gpu,
                      "num_compute_units": 304 // PARTITIONS, "target_graphics_version": "gfx942"},
        "uuid": physical_uuid(gpu) if shared_uuid else partition_uuid(gpu, partition),
        "bdf": BUSES[gpu],
        "vram_info": {"vram_size": VRAM_MB, "vram_bit_width": 8192 // PARTITIONS},
        "memory_total": {"vram": VRAM_MB * 2**20},
        "memory_usage": {"vram": 12 * 2**20},
        "numa_node": gpu // 4,
        "driver_info": {"driver_name": "amdgpu", "driver_version": "6.7.0" if shared_uuid else "6.10.5"},
        # Only the first partition of a GPU answers the partition queries; the others answer N/A.
        "compute_partition": "CPX" if first else "N/A",
        "memory_partition": "NPS4" if first else "N/A",
        "xgmi_info": {"xgmi_lanes": 16, "xgmi_hive_id": HIVE, "xgmi_node_id": gpu, "index": gpu},
        "ras_block_features": [{"block": "UMC", "status": "ENABLED"}],
        "total_ecc_count": {"correctable_count": 0, "uncorrectable_count": 0, "deferred_count": 0},
        "activity": {"gfx_activity": 0, "umc_activity": 0, "mm_activity": "N/A"},
        "temperature": {"edge": "N/A", "hotspot": 40 + gpu, "vram": 35},
    }
    if first:
        data["power_info"] = {"current_socket_power": 130 + gpu, "average_socket_power": "N/A"}
    if not shared_uuid:
        data["kfd_info"] = {"kfd_id": 40000 + gpu * PARTITIONS + partition, "node_id": 2 + gpu * PARTITIONS + partition,
                            "current_partition_id": partition}
    return data


def fixture(shared_uuid: bool) -> dict[str, Any]:
    gpus = {str(g * PARTITIONS + p): logical_gpu(g, p, shared_uuid) for g in range(PHYSICAL) for p in range(PARTITIONS)}
    if shared_uuid:
        ids = [f"{physical_uuid(g)}-{p}" for g in range(PHYSICAL) for p in range(PARTITIONS)]
    else:
        ids = [partition_uuid(g, p) for g in range(PHYSICAL) for p in range(PARTITIONS)]
    name = "mi300x-cpx-nps4-shared-uuid" if shared_uuid else "mi300x-cpx-nps4"
    rocm = "6.1.2" if shared_uuid else "6.4.1"
    expected = {
        "devices": 64, "device_ids": ids, "accelerator_type": "AMD-Instinct-MI300X-OAM",
        # Ray counts every amdsmi processor handle: 64.
        "resources": {"GPU": 64.0, "accelerator_type:AMD-Instinct-MI300X-OAM": 1.0},
        "links": 0, "skus": {i: "mi300x" for i in ids},
    }
    faults: list[dict[str, Any]] = []
    if not shared_uuid:
        faults.append({
            "name": "gpu9-pci-id-only", "kind": "other",
            "description": "logical GPU 9 answers only its PCI device id: amdsmi_get_gpu_device_uuid and "
                           "amdsmi_get_gpu_device_bdf fail (AMDSMI_STATUS_NOT_SUPPORTED); Ray still counts it",
            "patch": {"libraries": {"amdsmi": {"gpus": {"9": {"errors": {"amdsmi_get_gpu_device_uuid": 2,
                                                                          "amdsmi_get_gpu_device_bdf": 2}}}}}},
            # The fallback id is a warning (fallback-device-id), not an error.
            "expected": {"devices": 64, "health": {}, "resources": expected["resources"], "fatal": False,
                         "problem_codes": []}})
    description = (f"8x AMD Instinct MI300X in CPX compute / NPS4 memory partitioning: 64 logical GPUs through the "
                   f"amdsmi Python API (ROCm {rocm}); "
                   + ("every partition reports its GPU's uuid (older ROCm)" if shared_uuid
                      else "each partition's uuid carries its partition id (ROCm 6.4)"))
    source = ("amdsmi Python API function names and return shapes (amdsmi_get_processor_handles: one handle per "
              "logical GPU; compute/memory partition queries answer N/A on partitions other than 0; "
              "amdsmi_get_gpu_kfd_info current_partition_id on ROCm 6.4); AMD's MI300X GPU partitioning docs "
              "(CPX = 8 partitions of 38 CUs, NPS4 = HBM in 4, 8 logical GPUs per MI300X); the shared uuid of older "
              "ROCm as reported against amd-smi, later fixed by adding the partition id; Ray 2.60's "
              "AMDGPUAcceleratorManager counts the handles (the parity oracle)")
    return {"schema": "rayaccel-fixture/1", "plugin": "amd", "name": name, "description": description,
            "source": source,
            "host": {"hostname": "mi300x-cpx-node", "libraries": {"amdsmi": {
                "rocm_version": rocm, "gpus": gpus}}},
            "expected": expected, "faults": faults}


def main() -> int:
    for shared in (True, False):
        data = fixture(shared)
        path = OUT / f"{data['name']}.yaml"
        tmp = path.with_suffix(".yaml.tmp")
        tmp.write_text(yaml.dump(data, Dumper=Dumper, sort_keys=False, width=120), encoding="utf-8")
        tmp.replace(path)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
