"""Write the NVIDIA fixtures: NVML answers laid out as pynvml returns them, from each system's facts.

Run from the repository root: ``.venv/bin/python reference_plugins/nvidia/tools/build_fixtures.py``.
Each system below states its hardware facts (GPU model and NVML name, PCI ids, memory NVML reports,
NVLink count/version and what each link reaches, NUMA layout, driver); ``expected`` is worked out from
those facts by hand, not from the plugin's output. Faults are merge patches over the NVML data.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pynvml
import yaml

from rayaccel.files.atomic import write_atomically

OUT = Path(__file__).resolve().parents[1] / "src" / "rayaccel_nvidia" / "fixtures"
NS = uuid.UUID("6f1d3c1e-5b0a-4c47-9a7e-2f4c8d0b1a22")
MIB = 2**20
SWITCH, GPU = 2, 0
# nvmlDeviceGetNvLinkVersion answers an nvmlNvlinkVersion_t, not the NVLink generation: taken from the bindings.
NVLINK3, NVLINK3_1, NVLINK4, NVLINK5 = (pynvml.NVML_NVLINK_VERSION_3_0, pynvml.NVML_NVLINK_VERSION_3_1,
                                       pynvml.NVML_NVLINK_VERSION_4_0, pynvml.NVML_NVLINK_VERSION_5_0)
TX, RX = pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX
#: When a busy node's counters were first read (NVML's CPU timestamp, microseconds since the epoch).
RECORDED_AT_US = 1_733_400_000_000_000


class Flow(dict):  # type: ignore[type-arg]
    """A mapping written on one line (one NVLink, one MIG device): keeps big fixtures readable."""


class Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # no &id001 anchors: every answer is written out where it belongs


class Hex(int):
    """An int written as 0x... (PCI ids, as nvidia-smi and lspci show them); YAML reads it back as an int."""


Dumper.add_representer(Hex, lambda d, v: d.represent_scalar("tag:yaml.org,2002:int", f"0x{int(v):08X}"))
Dumper.add_representer(Flow, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v, flow_style=True))


class Block(str):
    """A file's text, written as a YAML literal block (one line of the file a line of the fixture)."""


Dumper.add_representer(Block, lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", v, style="|"))

#: Where the driver lists the minors of the MIG capability device files (/dev/nvidia-caps/nvidia-cap<M>).
MIG_MINORS = "/proc/driver/nvidia-caps/mig-minors"


def mig_minors(gpu_minors: list[int]) -> Block:
    """/proc/driver/nvidia-caps/mig-minors as the driver writes it (NVIDIA's MIG user guide, 'Device Nodes and
    Capabilities'): ``config 1``, ``monitor 2``, then for each GPU minor 0-31 its 15 GPU instances' access
    files, each followed by its 8 compute instances' (``gpu0/gi0/access 3`` ... ``gpu31/gi14/ci7/access
    4322``), every minor fixed in advance. Only the lines of the node's GPUs are kept (the fixture stays
    small); their minors are the driver's."""
    lines = ["config 1", "monitor 2"]
    for gpu in gpu_minors:
        for gi in range(15):
            first = 3 + gpu * 135 + gi * 9
            lines.append(f"gpu{gpu}/gi{gi}/access {first}")
            lines += [f"gpu{gpu}/gi{gi}/ci{ci}/access {first + 1 + ci}" for ci in range(8)]
    return Block("\n".join(lines) + "\n")


def mig_memory(gpu: dict[str, Any]) -> dict[str, int]:
    """Each MIG device's memory as NVML answers it (its memory.total, in MiB): the fixture states it, so a
    partition read as 0 MiB or in the wrong unit differs from the recording."""
    return {f"partition.{mig['uuid']}.memory_mib": mig["memory"]["total"] // MIB
            for mig in gpu["mig_devices"].values()}


def mig_device_file(gpu: int, gi: int, ci: int = 0) -> str:
    """What a job on one MIG device is given (the GPU's device node, then its GPU and compute instance's
    capability files): the minors of :func:`mig_minors`' table."""
    first = 3 + gpu * 135 + gi * 9
    return f"/dev/nvidia{gpu},/dev/nvidia-caps/nvidia-cap{first},/dev/nvidia-caps/nvidia-cap{first + 1 + ci}"


def compute_slices(mig_name: str) -> int:
    """A MIG device's compute slices from its name (NVIDIA's MIG user guide, MIG Device Names): a compute
    instance's '<c>c', else its GPU instance's '<g>g' ('... MIG 1c.3g.40gb' -> 1, '... MIG 2g.20gb' -> 2)."""
    profile = mig_name.rsplit(" ", 1)[-1]
    first = profile.split(".")[0]
    return int(first[:-1])


def gpu_uuid(system: str, index: int, prefix: str = "GPU") -> str:
    return f"{prefix}-{uuid.uuid5(NS, f'{system}/{index}')}"


def cpu_words(*ranges: tuple[int, int]) -> list[int]:
    words = [0] * 4
    for lo, hi in ranges:
        for cpu in range(lo, hi + 1):
            words[cpu // 64] |= 1 << (cpu % 64)
    while words and words[-1] == 0:
        words.pop()
    return words


def device(system: str, index: int, *, name: str, pci_id: int, subsys: int, bus: str, memory_mib: int, numa: int,
           cpus: list[int], cc: tuple[int, int], arch: int, mig: list[int] | None, nvlink: dict[str, Any] | None,
           fabric: dict[str, Any] | None = None, power_mw: int = 70000, temp: int = 33,
           traffic_kib_s: tuple[int, int] | None = None) -> dict[str, Any]:
    domain, bus_no, dev_fn = bus.split(":")[0], bus.split(":")[1], bus.split(":")[2]
    used = 512 * MIB
    data: dict[str, Any] = {
        "name": name, "uuid": gpu_uuid(system, index), "serial": f"16523{index:08d}",
        "pci": {"busId": bus, "domain": int(domain, 16), "bus": int(bus_no, 16),
                "device": int(dev_fn.split(".")[0], 16),
                "pciDeviceId": Hex(pci_id << 16 | 0x10DE), "pciSubSystemId": Hex(subsys << 16 | 0x10DE)},
        "memory": {"total": memory_mib * MIB, "used": used, "free": memory_mib * MIB - used},
        "numa_node": numa, "cpu_affinity": cpus, "compute_capability": list(cc), "architecture": arch,
        "ecc": {"volatile": {"corrected": 0, "uncorrected": 0}, "aggregate": {"corrected": 0, "uncorrected": 0}},
        "remapped_rows": [0, 0, 0, 0],
        "utilization": {"gpu": 0, "memory": 0}, "power_usage": power_mw, "temperature": temp,
    }
    if mig is not None:
        data["mig_mode"] = mig
    if nvlink is not None:
        data["nvlink"] = nvlink
        active = [link for link, entry in nvlink.items() if entry.get("state")]
        if active:
            # NVLink data counters (KiB since the driver loaded) of a node that has run a job: per link, the
            # link being the field value's scopeId (NVML_FI_DEV_NVLINK_THROUGHPUT_* are per-link fields).
            tx = {link: 4194304 + index * 4096 + int(link) * 256 for link in active}
            rx = {link: 4194304 + index * 2048 + int(link) * 128 for link in active}
            if traffic_kib_s is None:
                data["field_values"] = {str(TX): Flow(tx), str(RX): Flow(rx)}
            else:
                # A busy node: each counter as NVML read it twice, one second apart (nvmlFieldValue_t's timestamp,
                # microseconds, and value), every link carrying ``traffic_kib_s`` (tx, rx) KiB per second.
                def recorded(start: int, rate: int) -> list[Flow]:
                    return [Flow(timestamp=RECORDED_AT_US, value=start),
                            Flow(timestamp=RECORDED_AT_US + 1_000_000, value=start + rate)]

                data["field_values"] = {
                    str(TX): {link: recorded(tx[link], traffic_kib_s[0]) for link in active},
                    str(RX): {link: recorded(rx[link], traffic_kib_s[1]) for link in active}}
    if fabric is not None:
        data["fabric"] = fabric
    return data


def switch_links(count: int, version: int, switches: Sequence[str | None], per_switch: Sequence[int]) -> dict[str, Any]:
    links: dict[str, Any] = {}
    link = 0
    for bus, n in zip(switches, per_switch, strict=True):
        for _ in range(n):
            entry: dict[str, Any] = Flow(state=1, version=version, remote_type=SWITCH)
            if bus is not None:
                entry["remote_pci"] = {"busId": bus, "pciDeviceId": Hex(0x22A310DE)}  # the NVSwitch
            links[str(link)] = entry
            link += 1
    assert link == count
    return links


#: Which tool and version every fixture's answers follow, and where that format is documented.
NVML_DOCS = ("https://docs.nvidia.com/deploy/nvml-api/index.html (NVML API Reference; bindings "
             "https://pypi.org/project/nvidia-ml-py/)")


def fixture(name: str, description: str, source: str, hostname: str, nvml: dict[str, Any],
            expected: dict[str, Any], faults: list[dict[str, Any]] | None = None,
            files: dict[str, str] | None = None) -> dict[str, Any]:
    source = (f"NVML of NVIDIA driver {nvml['driver_version']} (libnvidia-ml.so) as nvidia-ml-py 13.x (pynvml) returns "
              f"it, documented at {NVML_DOCS}; {source}")
    host: dict[str, Any] = {"hostname": hostname}
    if files:
        host["files"] = files
    host["libraries"] = {"nvml": nvml}
    return {"schema": "rayaccel-fixture/1", "plugin": "nvidia", "name": name, "description": description,
            "source": source, "host": host, "expected": expected, "faults": faults or []}


def labels(*, sku: str, count: int, interconnect: str, accel: str, memory: int, arch: str, driver: str, cuda: str,
           product: str, cc: tuple[int, int], mig_capable: bool, domain: tuple[str, str, int] | None = None,
           clique: str | None = None, mig: dict[str, int] | None = None) -> dict[str, str]:
    out = {
        "rayaccel.io/family": "nvidia", "rayaccel.io/vendor": "NVIDIA", "rayaccel.io/sku-known": "true",
        "rayaccel.io/sku": sku, "rayaccel.io/count": str(count), "rayaccel.io/interconnect": interconnect,
        "rayaccel.io/health": "healthy", "ray.io/accelerator-type": accel, "rayaccel.io/memory-mib": str(memory),
        "rayaccel.io/architecture": arch, "rayaccel.io/driver-version": driver, "rayaccel.io/runtime-version": cuda,
        "nvidia.com/gpu.product": product, "nvidia.com/gpu.memory": str(memory),
        "nvidia.com/gpu.compute.major": str(cc[0]), "nvidia.com/gpu.compute.minor": str(cc[1]),
    }
    if mig:  # the MIG instances the node offers: how many of each profile
        out["rayaccel.io/partition-kind"] = "mig"
        out.update({f"rayaccel.io/partition-mig-{profile}": str(n) for profile, n in mig.items()})
    if mig_capable:
        out["nvidia.com/mig.capable"] = "true"
    if domain is not None:
        out["rayaccel.io/scale-up-domain"] = out["ray.io/gpu-domain"] = domain[0]  # Ray's own label, same id
        out["rayaccel.io/scale-up-domain-kind"] = domain[1]
        out["rayaccel.io/scale-up-domain-size"] = str(domain[2])
    if clique is not None:
        out["nvidia.com/gpu.clique"] = clique
    return out


# --------------------------------------------------------------------------------------------------
# DGX H100: 8x H100 SXM5 80GB, each with 18 NVLink4 links to the 4 NVSwitch chips (5+4+4+5), 2 sockets.

def dgx_h100() -> dict[str, Any]:
    system = "dgx-h100"
    buses = ["00000000:1B:00.0", "00000000:43:00.0", "00000000:52:00.0", "00000000:61:00.0",
             "00000000:9D:00.0", "00000000:C3:00.0", "00000000:D1:00.0", "00000000:DF:00.0"]
    switches = ["00000000:05:00.0", "00000000:06:00.0", "00000000:07:00.0", "00000000:08:00.0"]
    # 2x Xeon Platinum 8480C (56 cores, SMT): 224 CPUs, so each socket's mask spans four 64-bit words.
    node_ranges = [((0, 55), (112, 167)), ((56, 111), (168, 223))]
    node_cpus = [cpu_words(*ranges) for ranges in node_ranges]
    # An all-reduce running: every link sends 16-17.75 GB (in KiB) a second and receives 15-15.9 (GPUs apart), so
    # each GPU sends 295-327 GB/s of the 450 its 18 links carry one way (sent and received together would exceed it).
    traffic = [(16_000_000 + 250_000 * i, 15_000_000 + 125_000 * i) for i in range(8)]
    devices = {str(i): device(system, i, name="NVIDIA H100 80GB HBM3", pci_id=0x2330, subsys=0x16C1, bus=buses[i],
                              memory_mib=81559, numa=i // 4, cpus=node_cpus[i // 4], cc=(9, 0), arch=9, mig=[0, 0],
                              nvlink=switch_links(18, NVLINK4, switches, [5, 4, 4, 5]), traffic_kib_s=traffic[i])
               for i in range(8)}
    # GPU 4 runs a compute-bound kernel, as nvidia-smi printed an H100 running CUDA's nbody (source below): its
    # SMs busy and its memory controller idle, so NVML's two utilization rates differ and both are stated.
    devices["4"]["utilization"] = {"gpu": 100, "memory": 0}
    devices["4"]["power_usage"] = 592740
    ids = [devices[str(i)]["uuid"] for i in range(8)]
    nvml = {"driver_version": "550.54.15", "cuda_driver_version": 12040, "devices": devices}
    full = {"GPU": 8.0, "accelerator_type:H100": 1.0}
    seven = {"GPU": 7.0, "accelerator_type:H100": 1.0}
    expected = {
        "devices": 8, "device_ids": ids, "accelerator_type": "H100", "resources": full,
        # 8 GPUs on one NVSwitch fabric: every pair, 18 links x 25 GB/s = 450 GB/s each way.
        "links": 28, "skus": {i: "h100-sxm5-80gb" for i in ids},
        # Each GPU's socket's CPUs, from the ranges its mask was built from (CPUs 64 and up: a mask read as 32-bit
        # words puts them elsewhere).
        "affinities": {ids[i]: ",".join(f"{lo}-{hi}" for lo, hi in node_ranges[i // 4]) for i in range(8)},
        "labels": labels(sku="h100-sxm5-80gb", count=8, interconnect="nvlink", accel="H100", memory=81559,
                         arch="hopper", driver="550.54.15", cuda="12.4", product="NVIDIA-H100-80GB-HBM3", cc=(9, 0),
                         mig_capable=True, domain=("dgx-h100-01-nvswitch", "nvswitch", 8)),
        # NVLink throughput: the counters' KiB per second over the 18 links, in bytes per second (KiB x 1024).
        "metric_values": {ids[i]: {**({"utilization": 100.0, "power": 592.74} if i == 4 else {}),
                                   "interconnect_tx": float(18 * tx * 1024), "interconnect_rx": float(18 * rx * 1024)}
                          for i, (tx, rx) in enumerate(traffic)},
    }
    faults = [
        {"name": "xid-79", "kind": "fatal-error",
         "description": "GPU 3 falls off the bus: the driver posts XID 79 (the event set delivers it)",
         "patch": {"libraries": {"nvml": {"events": {"0": {"device": 3, "xid": 79}}}}},
         "expected": {"reasons": {ids[3]: ["xid-79"]}, "health": {ids[3]: "unhealthy"}, "resources": seven,
                      "fatal": True}},
        {"name": "gpu-lost", "kind": "device-lost",
         "description": "GPU 5 is lost: NVML answers NVML_ERROR_GPU_IS_LOST for its handle and every query",
         "patch": {"libraries": {"nvml": {"devices": {"5": {"lost": True}}}}},
         # The lost GPU keeps its NVML-index id; its uuid (known at start) is reported lost too.
         "expected": {"reasons": {"nvml-index-5": ["gpu-lost"], ids[5]: ["gpu-lost"]}, "devices": 8,
                      "health": {"nvml-index-5": "unhealthy"}, "resources": seven, "fatal": True}},
        # NVML's two counters of one GPU (nvmlEccCounterType_t): volatile since the driver loaded, aggregate for the
        # device's lifetime (kept in its InfoROM across reboots), so an error counted since boot is in both.
        {"name": "ecc-uncorrectable", "kind": "ecc",
         "description": "GPU 2 counts 2 uncorrectable ECC errors since the driver loaded (volatile 2; the lifetime "
                        "aggregate counter holds them too)",
         "patch": {"libraries": {"nvml": {"devices": {"2": {"ecc": {"volatile": {"uncorrected": 2},
                                                                    "aggregate": {"uncorrected": 2}}}}}}},
         "expected": {"reasons": {ids[2]: ["ecc-uncorrectable"]}, "health": {ids[2]: "unhealthy"}, "resources": seven,
                      "fatal": False}},
        {"name": "row-remap-failure", "kind": "ecc",
         "description": "GPU 6 ran out of spare rows: nvmlDeviceGetRemappedRows reports a remapping failure (3 "
                        "rows remapped for uncorrectable errors, which its lifetime counter holds; none since boot)",
         "patch": {"libraries": {"nvml": {"devices": {"6": {"remapped_rows": [0, 3, 0, 1],
                                                            "ecc": {"aggregate": {"uncorrected": 3}}}}}}},
         "expected": {"reasons": {ids[6]: ["row-remap-failure"]}, "health": {ids[6]: "unhealthy"}, "resources": seven,
                      "fatal": False}},
        {"name": "row-remap-pending", "kind": "degraded",
         "description": "GPU 1 has a row remapping pending (applied at the next GPU reset): degraded, still used; the "
                        "uncorrectable error behind it is in the lifetime counter, the volatile one started again when "
                        "the driver last loaded (without persistence mode it loads with each application)",
         "patch": {"libraries": {"nvml": {"devices": {"1": {"remapped_rows": [0, 1, 1, 0],
                                                            "ecc": {"aggregate": {"uncorrected": 1}}}}}}},
         "expected": {"reasons": {ids[1]: ["row-remap-pending"]}, "health": {ids[1]: "degraded"}, "resources": full,
                      "fatal": False}},
        # The state that tells NVML's two counters apart: an error before the last reboot, its row remapped at the
        # reset. NVIDIA's device plugin takes health from events (XIDs), DCGM's memory watch from the volatile count
        # (DCGM's test_health.py: DCGM_FR_VOLATILE_DBE_DETECTED while DCGM_FI_DEV_ECC_DBE_VOL_TOTAL > 0, a pass
        # once it is 0): a GPU whose lifetime count alone is raised is healthy.
        {"name": "ecc-uncorrectable-before-reboot", "kind": "ecc",
         "description": "GPU 7 had an uncorrectable ECC error before the node last rebooted: NVML's aggregate "
                        "(lifetime) counter keeps it (1), the volatile counter (since the driver loaded) is 0, and "
                        "the row it hit was remapped at the reset (nvmlDeviceGetRemappedRows: 1 uncorrectable row, "
                        "none pending, no failure): healthy, as NVIDIA's device plugin and DCGM's memory health "
                        "watch judge it; health from the lifetime counter would drain it for good",
         "patch": {"libraries": {"nvml": {"devices": {"7": {"ecc": {"aggregate": {"uncorrected": 1}},
                                                            "remapped_rows": [0, 1, 0, 0]}}}}},
         "expected": {"health": {ids[7]: "healthy"}, "devices": 8, "resources": full, "fatal": False,
                      "problems_exactly": True}},
        {"name": "xid-13", "kind": "other",
         "description": "an application faults on GPU 1 (XID 13, graphics engine exception): not a device fault",
         "patch": {"libraries": {"nvml": {"events": {"0": {"device": 1, "xid": 13}}}}},
         "expected": {"health": {}, "resources": full, "fatal": False}},
        {"name": "xid-94", "kind": "ecc",
         "description": "GPU 4 reports a contained ECC error (XID 94: the affected application was stopped): "
                        "NVIDIA's device plugin marks the GPU unhealthy, so it is drained unless a health policy "
                        "ignores or degrades xid-94",
         "patch": {"libraries": {"nvml": {"events": {"0": {"device": 4, "xid": 94}}}}},
         "expected": {"reasons": {ids[4]: ["xid-94"]}, "health": {ids[4]: "unhealthy"}, "resources": seven,
                      "fatal": True}},
        {"name": "nvml-hang", "kind": "tool-hang",
         "description": "the driver is wedged: nvmlInit and every NVML call block (the plugin gives up after "
                        "RAYACCEL_NVIDIA_NVML_TIMEOUT seconds)",
         "patch": {"libraries": {"nvml": {"hang": True}}},
         "expected": {"devices": 0, "resources": {}, "problem_codes": ["hook-raised"]}},
        {"name": "nvml-garbage", "kind": "tool-garbage",
         "description": "NVML returns garbage for GPU 4: a name and UUID full of replacement characters",
         "patch": {"libraries": {"nvml": {"devices": {"4": {"name": "\ufffd\ufffd\ufffd\x07",
                                                            "uuid": "GPU-\ufffd\ufffd\ufffd\ufffd"}}}}},
         "expected": {"reasons": {"nvml-index-4": ["nvml-garbage"]}, "devices": 8,
                      "health": {"nvml-index-4": "unhealthy"}, "resources": seven, "fatal": False}},
        {"name": "nvlink-version-5-0-on-hopper", "kind": "other",
         "description": "the driver answers NVML_NVLINK_VERSION_5_0 (7) for every NVLink of these Hopper GPUs (seen "
                        "on some H100 drivers): per-link bandwidth stays Hopper's 25 GB/s, not NVLink 5's 50, and the "
                        "mismatch is reported",
         "patch": {"libraries": {"nvml": {"devices": {str(i): {"nvlink": {str(link): {"version": NVLINK5}
                                                                          for link in range(18)}}
                                                      for i in range(8)}}}},
         "expected": {"devices": 8, "health": {}, "resources": full,
                      "problem_codes": ["nvlink-version-mismatch"],
                      # A warning: trusting the version would give Blackwell's 50 GB/s (README, NVLink row).
                      "problem_severities": {"nvlink-version-mismatch": "warning"}}},
    ]
    return fixture("dgx-h100", "NVIDIA DGX H100: 8x H100 SXM5 80GB on four NVSwitch chips, 2 sockets",
                   "NVLink version NVML_NVLINK_VERSION_4_0, throughput "
                   "counters per link by scopeId, in KiB (nvidia-smi nvlink -gt d), read twice one second apart "
                   "during an all-reduce; DGX H100 topology (18 NVLink4 links per GPU to "
                   "4 NVSwitches) from NVIDIA's DGX H100 user guide; GPU 4 busy as nvidia-smi printed an H100 80GB "
                   "HBM3 (AWS p5) running CUDA's nbody benchmark (utilization.gpu 100 %, utilization.memory 0 %, "
                   "power.draw 592.74 W; github.com/njhensley/aicr docs/conformance/cncf/evidence/pod-autoscaling.md), "
                   "its kernel's SMs busy and its memory controller idle, so the two NVML utilization rates differ",
                   "dgx-h100-01", nvml, expected, faults)


# --------------------------------------------------------------------------------------------------
# HGX B200: 8x B200, 18 NVLink5 links each to the 2 NVLink switch chips (9+9); single-node fabric.

def hgx_b200() -> dict[str, Any]:
    system = "hgx-b200"
    buses = ["00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
             "00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0"]
    switches = ["00000000:04:00.0", "00000000:05:00.0"]
    node_cpus = [cpu_words((0, 63), (128, 191)), cpu_words((64, 127), (192, 255))]
    # A single HGX board registers with the fabric manager, but belongs to no multi-node cluster: the
    # cluster UUID is all zeros.
    fabric = {"clusterUuid": "00000000-0000-0000-0000-000000000000", "cliqueId": 0, "state": 3, "status": 0}
    devices = {str(i): device(system, i, name="NVIDIA B200", pci_id=0x2901, subsys=0x1999, bus=buses[i],
                              memory_mib=183359, numa=i // 4, cpus=node_cpus[i // 4], cc=(10, 0), arch=10, mig=[0, 0],
                              nvlink=switch_links(18, NVLINK5, switches, [9, 9]), fabric=fabric, power_mw=140000)
               for i in range(8)}
    ids = [devices[str(i)]["uuid"] for i in range(8)]
    nvml = {"driver_version": "570.124.06", "cuda_driver_version": 12080, "devices": devices}
    expected = {
        "devices": 8, "device_ids": ids, "accelerator_type": "B200",
        "resources": {"GPU": 8.0, "accelerator_type:B200": 1.0},
        "links": 28, "skus": {i: "b200-sxm-180gb" for i in ids},  # each pair: 18 x 50 GB/s = 900 GB/s
        "labels": labels(sku="b200-sxm-180gb", count=8, interconnect="nvlink", accel="B200", memory=183359,
                         arch="blackwell", driver="570.124.06", cuda="12.8", product="NVIDIA-B200", cc=(10, 0),
                         mig_capable=True, domain=("hgx-b200-01-nvswitch", "nvswitch", 8)),
    }
    return fixture("hgx-b200", "NVIDIA HGX B200: 8x B200 on two NVLink 5 switch chips", "NVLink version "
                   "NVML_NVLINK_VERSION_5_0; HGX B200 topology (18 NVLink5 "
                   "links per GPU)", "hgx-b200-01", nvml, expected)


# --------------------------------------------------------------------------------------------------
# GB200 NVL72 compute tray: 2 Grace CPUs + 4 B200-class GPUs; all 18 NVLink5 links go to the rack's
# NVLink switch trays (not on this host's PCIe, so no remote PCI info); fabric info names the clique.

NVL72_CLUSTER = "5f2c1a9e-7d3b-4e8a-9c61-0b7d2e4f8a13"


def gb200_tray(tray: int = 7, name: str = "gb200-nvl72-tray") -> dict[str, Any]:
    system = "gb200-nvl72-tray" if tray == 7 else f"gb200-nvl72-tray-{tray:02d}"
    buses = ["00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"]
    cluster = NVL72_CLUSTER
    fabric = {"clusterUuid": cluster, "cliqueId": 32766, "state": 3, "status": 0}
    node_cpus = [cpu_words((0, 71)), cpu_words((72, 143))]
    devices = {str(i): device(system, i, name="NVIDIA GB200", pci_id=0x2941, subsys=0x2046, bus=buses[i],
                              memory_mib=189471, numa=i // 2, cpus=node_cpus[i // 2], cc=(10, 0), arch=10, mig=[0, 0],
                              nvlink=switch_links(18, NVLINK5, [None], [18]), fabric=fabric, power_mw=160000)
               for i in range(4)}
    ids = [devices[str(i)]["uuid"] for i in range(4)]
    nvml = {"driver_version": "570.133.20", "cuda_driver_version": 12080, "devices": devices}
    clique = f"{cluster}.32766"
    expected = {
        "devices": 4, "device_ids": ids, "accelerator_type": "GB200",
        "resources": {"GPU": 4.0, "accelerator_type:GB200": 1.0},
        "links": 6, "skus": {i: "gb200-nvl" for i in ids},
        # NVML does not report the clique's size: without RAYACCEL_NVIDIA_CLIQUE_SIZE it is this tray's 4. The
        # Ray bridge adds up the trays that publish the same clique (rayaccel.ray.placement.scale_up_domains).
        "labels": labels(sku="gb200-nvl", count=4, interconnect="nvlink", accel="GB200", memory=189471,
                         arch="blackwell", driver="570.133.20", cuda="12.8", product="NVIDIA-GB200", cc=(10, 0),
                         mig_capable=True, domain=(clique, "nvlink-clique", 4), clique=clique),
    }
    pair = ("; one of a pair with gb200-nvl72-tray-08: the same cluster UUID and clique id, so the two trays are one "
            "NVLink domain")
    return fixture(name, f"Compute tray {tray:02d} of a GB200 NVL72 rack: 4 GPUs in NVLink clique 32766",
                   "nvmlDeviceGetGpuFabricInfoV: clusterUuid, cliqueId, "
                   "state COMPLETED; NVLink version NVML_NVLINK_VERSION_5_0; NVL72 layout (18 compute trays of "
                   "4 GPUs, one NVLink domain of 72) from NVIDIA's GB200 NVL72 documentation; PCI device id "
                   "0x2941 as in the open-gpu-kernel-modules README table" + pair, f"gb200-tray-{tray:02d}", nvml,
                   expected)


def gb200_tray_08() -> dict[str, Any]:
    return gb200_tray(8, "gb200-nvl72-tray-08")


# --------------------------------------------------------------------------------------------------
# A Kubernetes pod given one MIG-enabled H100 SXM5 80GB: four MIG devices, and slot 2 empty. Some drivers
# answer NVML_ERROR_INVALID_ARGUMENT (not NOT_FOUND) for an empty slot; go-nvlib and NVIDIA's DRA driver
# skip both. One instance is 1g.10gb+me (GPU instance profile 20, media extensions: 1 NVDEC, 1 JPEG, 1 OFA) beside
# a plain 1g.10gb (profile 19): the same slices and memory (NVIDIA's MIG user guide, Supported MIG Profiles: both
# 1/8 of the memory, 1/7 of the SMs), two profiles; NVML names the MIG device by its profile, '+me' included (as
# nvidia-smi -L and go-nvlib's MigProfile print it: '1g.10gb+me', '1c.1g.5gb+me'). The 3g.40gb GPU instance is split
# into two compute instances, 2c.3g.40gb and 1c.3g.40gb (`nvidia-smi mig -cci` on GPU instance 2; NVIDIA's MIG user
# guide, MIG Device Names: a 3g.20gb device subdivided into 2c.3g.20gb and 1c.3g.20gb): NVML enumerates each compute
# instance as a MIG device named by its profile '<c>c.<g>g.<memory>gb', each with its GPU instance's memory (the
# compute instances share it) and its own compute instance id.

def h100_mig() -> dict[str, Any]:
    system = "h100-mig"
    gpu = device(system, 0, name="NVIDIA H100 80GB HBM3", pci_id=0x2330, subsys=0x16C1, bus="00000000:1B:00.0",
                 memory_mib=81559, numa=0, cpus=cpu_words((0, 55), (112, 167)), cc=(9, 0), arch=9, mig=[1, 1],
                 nvlink=None)
    # GPU instances 3g.40gb + 2g.20gb + 1g.10gb + 1g.10gb+me = 7 of 7 compute slices, 8 of 8 memory slices; the
    # 3g.40gb's 3 slices go to its compute instances 2c + 1c. Slots 0, 1, 3, 4 and 5 hold MIG devices.
    profiles = {0: ("2c.3g.40gb", 40320, 2, 0), 1: ("2g.20gb", 20096, 3, 0), 3: ("1g.10gb", 9984, 9, 0),
                4: ("1g.10gb+me", 9984, 13, 0), 5: ("1c.3g.40gb", 40320, 2, 1)}
    gpu["minor_number"] = 0
    gpu["max_mig_devices"] = 7
    gpu["mig_empty_slot_error"] = "NVML_ERROR_INVALID_ARGUMENT"
    gpu["mig_devices"] = {str(slot): {"uuid": gpu_uuid(system, 100 + slot, "MIG"),
                                      "name": f"NVIDIA H100 80GB HBM3 MIG {profile}",
                                      "memory": {"total": mib * MIB, "used": 13 * MIB, "free": (mib - 13) * MIB},
                                      "gpu_instance_id": gi, "compute_instance_id": ci}
                          for slot, (profile, mib, gi, ci) in profiles.items()}
    nvml = {"driver_version": "550.54.15", "cuda_driver_version": 12040, "devices": {"0": gpu}}
    expected = {
        "devices": 1, "device_ids": [gpu["uuid"]], "accelerator_type": "H100",
        # In MIG mode the GPU is offered only as its instances, each profile its own resource.
        "resources": {"accelerator_type:H100": 1.0, "GPU_MIG_2c.3g.40gb": 1.0, "GPU_MIG_1c.3g.40gb": 1.0,
                      "GPU_MIG_2g.20gb": 1.0, "GPU_MIG_1g.10gb": 1.0, "GPU_MIG_1g.10gb.me": 1.0}, "links": 0,
        "skus": {gpu["uuid"]: "h100-sxm5-80gb"},
        "labels": labels(sku="h100-sxm5-80gb", count=1, interconnect="none", accel="H100", memory=81559,
                         arch="hopper", driver="550.54.15", cuda="12.4", product="NVIDIA-H100-80GB-HBM3", cc=(9, 0),
                         mig_capable=True, mig={"2c.3g.40gb": 1, "1c.3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1,
                                                "1g.10gb.me": 1}),
        # Each MIG device's compute slices: a compute instance its own <c>c, not its GPU instance's; the compute
        # instances share their GPU instance's memory.
        "device_fields": {gpu["uuid"]: {**mig_memory(gpu), **{
            f"partition.{mig['uuid']}.compute_slices": compute_slices(mig["name"])
            for mig in gpu["mig_devices"].values()}, **{
            f"partition.{mig['uuid']}.shared_memory": f"gpu-instance-{mig['gpu_instance_id']}"
            for mig in gpu["mig_devices"].values() if ".3g." in mig["name"]}}},
    }
    return fixture("h100-mig", "One MIG-enabled H100 SXM5 80GB (3g.40gb split into compute instances 2c.3g.40gb + "
                   "1c.3g.40gb, 2g.20gb + 1g.10gb + 1g.10gb+me, slot 2 empty) as a pod sees it", "H100 MIG profile "
                   "names from NVIDIA's MIG user guide, Supported MIG Profiles and MIG Device Names (a GPU instance "
                   "split into compute instances '<c>c.<g>g.<memory>gb', each a MIG device with its GPU instance's "
                   "memory); 1g.10gb+me (Supported MIG Profiles: 1 NVDEC /1 JPEG /1 OFA, one instance per GPU; "
                   "the same memory as 1g.10gb; memory sizes approximate); an empty slot answers "
                   "NVML_ERROR_INVALID_ARGUMENT as NVIDIA's go-nvlib and k8s-dra-driver-gpu handle it (they skip it "
                   "like NOT_FOUND); "
                   f"{MIG_MINORS} as the driver writes it (its GPU's lines)",
                   "h100-pod-5", nvml, expected, files={MIG_MINORS: mig_minors([0])})


# --------------------------------------------------------------------------------------------------
# EC2 g6.xlarge: one L4, no NVLink, no MIG.

def l4_single() -> dict[str, Any]:
    system = "l4-single"
    devices = {"0": device(system, 0, name="NVIDIA L4", pci_id=0x27B8, subsys=0x16CA, bus="00000000:31:00.0",
                           memory_mib=23034, numa=0, cpus=cpu_words((0, 3)), cc=(8, 9), arch=8, mig=None, nvlink=None,
                           power_mw=16000, temp=28)}
    ids = [devices["0"]["uuid"]]
    nvml = {"driver_version": "550.90.07", "cuda_driver_version": 12040, "devices": devices}
    expected = {
        "devices": 1, "device_ids": ids, "accelerator_type": "L4",
        "resources": {"GPU": 1.0, "accelerator_type:L4": 1.0},
        "links": 0, "skus": {ids[0]: "l4-24gb"},
        "labels": labels(sku="l4-24gb", count=1, interconnect="none", accel="L4", memory=23034, arch="ada",
                         driver="550.90.07", cuda="12.4", product="NVIDIA-L4", cc=(8, 9), mig_capable=False),
    }
    unnamed = {"name": "NVIDIA Graphics Device",
               "pci": Flow(devices["0"]["pci"], pciDeviceId=Hex(0x2C38 << 16 | 0x10DE),
                           pciSubSystemId=Hex(0x204B << 16 | 0x10DE))}
    faults = [
        {"name": "driver-names-no-product", "kind": "other",
         "description": "a board newer than the driver and the SKU catalog (PCI id 0x2C38, which skus.yaml does not "
                        "list): NVML names it \"NVIDIA Graphics Device\", which Ray's pattern does not take; the "
                        "GPU is still offered, its type from the name as given",
         "patch": {"libraries": {"nvml": {"devices": {"0": unnamed}}}},
         "expected": {"devices": 1, "health": {}, "resources": {"GPU": 1.0, "accelerator_type:Graphics-Device": 1.0},
                      "problem_codes": ["unknown-sku"], "fatal": False}},
    ]
    return fixture("l4-single", "EC2 g6.xlarge: one NVIDIA L4 (PCIe, no NVLink, no MIG)",
                   "one L4 (PCI id 0x27B8; no NVLink; MIG not supported)", "ip-10-0-3-17", nvml, expected, faults)


# --------------------------------------------------------------------------------------------------
# Two A100 PCIe 40GB without an NVLink bridge: 12 NVLink ports each, none active; PCIe only.

def a100_pcie_pair() -> dict[str, Any]:
    system = "a100-pcie-pair"
    inactive = {str(link): Flow(state=0, version=NVLINK3) for link in range(12)}
    buses = ["00000000:3B:00.0", "00000000:D8:00.0"]
    devices = {str(i): device(system, i, name="NVIDIA A100-PCIE-40GB", pci_id=0x20F1, subsys=0x145F, bus=buses[i],
                              memory_mib=40960, numa=i,
                              cpus=cpu_words((i * 20, i * 20 + 19), (40 + i * 20, 59 + i * 20)),
                              cc=(8, 0), arch=7, mig=[0, 0], nvlink=inactive, power_mw=36000)
               for i in range(2)}
    # One GPU per socket: their common PCIe ancestor is the system (across the CPU interconnect).
    devices["0"]["topology"] = {"1": 50}
    devices["1"]["topology"] = {"0": 50}
    ids = [devices[str(i)]["uuid"] for i in range(2)]
    nvml = {"driver_version": "535.183.01", "cuda_driver_version": 12020, "devices": devices}
    expected = {
        "devices": 2, "device_ids": ids, "accelerator_type": "A100",
        "resources": {"GPU": 2.0, "accelerator_type:A100": 1.0}, "links": 1,
        "skus": {i: "a100-pcie-40gb" for i in ids},
        "labels": labels(sku="a100-pcie-40gb", count=2, interconnect="pcie", accel="A100", memory=40960,
                         arch="ampere", driver="535.183.01", cuda="12.2", product="NVIDIA-A100-PCIE-40GB", cc=(8, 0),
                         mig_capable=True),
    }
    no_uuid = {"errors": {"nvmlDeviceGetUUID": "NVML_ERROR_NOT_SUPPORTED"}}
    faults = [
        {"name": "uuid-not-supported", "kind": "other",
         "description": "NVML cannot give UUIDs (nvmlDeviceGetUUID answers NVML_ERROR_NOT_SUPPORTED, as on some "
                        "virtualised GPUs): Ray still counts both GPUs, so they are offered under their PCI bus ids "
                        "with a warning",
         "patch": {"libraries": {"nvml": {"devices": {"0": no_uuid, "1": no_uuid}}}},
         "expected": {"devices": 2, "health": {}, "resources": {"GPU": 2.0, "accelerator_type:A100": 1.0},
                      "fatal": False, "problem_codes": ["fallback-device-id"]}},
        {"name": "handle-unknown-error", "kind": "other",
         "description": "GPU 1 answers NVML_ERROR_UNKNOWN (\"Unknown Error\", as nvidia-smi prints for a GPU in a bad "
                        "state that is still on the bus) to nvmlDeviceGetName: it is offered under its NVML index as "
                        "unreadable (nvml-error), not lost, and not drained",
         "patch": {"libraries": {"nvml": {"devices": {"1": {"errors": {"nvmlDeviceGetName": "NVML_ERROR_UNKNOWN"}}}}}},
         "expected": {"reasons": {"nvml-index-1": ["nvml-error"]}, "devices": 2,
                      "health": {"nvml-index-1": "unhealthy"},
                      "resources": {"GPU": 1.0, "accelerator_type:A100": 1.0}, "fatal": False}},
        # A return code below NVML_ERROR_GPU_IS_LOST's (15) that is not it: the GPU is there, only unusable.
        {"name": "gpu1-insufficient-power", "kind": "other",
         "description": "GPU 1's external power cable is not attached: nvmlDeviceGetHandleByIndex answers "
                        "NVML_ERROR_INSUFFICIENT_POWER (8) for it, as NVML documents; it is offered under its NVML "
                        "index as unreadable (nvml-error), not lost, and not drained",
         "patch": {"libraries": {"nvml": {"devices": {"1": {"errors": {
             "nvmlDeviceGetHandleByIndex": "NVML_ERROR_INSUFFICIENT_POWER"}}}}}},
         "expected": {"reasons": {"nvml-index-1": ["nvml-error"]}, "devices": 2,
                      "health": {"nvml-index-1": "unhealthy"},
                      "resources": {"GPU": 1.0, "accelerator_type:A100": 1.0}, "fatal": False}},
    ]
    return fixture("a100-pcie-pair", "Two A100 PCIe 40GB, one per socket, no NVLink bridge: PCIe only",
                   "NVLink version NVML_NVLINK_VERSION_3_0; the "
                   "uuid-not-supported fault follows Ray's NvidiaGPUAcceleratorManager, which counts GPUs with "
                   "nvmlDeviceGetCount alone", "a100-pcie-02", nvml, expected, faults)


# --------------------------------------------------------------------------------------------------
# Two A100 PCIe 40GB in adjacent slots of one socket, joined by three NVLink bridges (NVIDIA's "NVLink Bridge
# for 2 GPUs": 600 GB/s both ways): each GPU's 12 NVLink 3 links end at the other GPU, no NVSwitch.


def a100_pcie_nvlink_bridge() -> dict[str, Any]:
    system = "a100-pcie-nvlink-bridge"
    buses = ["00000000:17:00.0", "00000000:18:00.0"]

    def bridged_to(peer: int) -> dict[str, Any]:
        # nvmlDeviceGetNvLinkRemoteDeviceType answers NVML_NVLINK_DEVICE_TYPE_GPU; the remote PCI info is the peer's.
        return {str(link): Flow(state=1, version=NVLINK3, remote_type=GPU,
                                remote_pci={"busId": buses[peer], "pciDeviceId": Hex(0x20F110DE)})
                for link in range(12)}

    devices = {str(i): device(system, i, name="NVIDIA A100-PCIE-40GB", pci_id=0x20F1, subsys=0x145F, bus=buses[i],
                              memory_mib=40960, numa=0, cpus=cpu_words((0, 19), (40, 59)), cc=(8, 0), arch=7,
                              mig=[0, 0], nvlink=bridged_to(1 - i), power_mw=36000)
               for i in range(2)}
    # Both behind one PCIe switch of socket 0 (NVML_TOPOLOGY_SINGLE): the NVLink bridge, not PCIe, joins them.
    devices["0"]["topology"] = {"1": 10}
    devices["1"]["topology"] = {"0": 10}
    ids = [devices[str(i)]["uuid"] for i in range(2)]
    nvml = {"driver_version": "535.183.01", "cuda_driver_version": 12020, "devices": devices}
    expected = {
        "devices": 2, "device_ids": ids, "accelerator_type": "A100",
        "resources": {"GPU": 2.0, "accelerator_type:A100": 1.0}, "links": 1,
        "skus": {i: "a100-pcie-40gb" for i in ids},
        "affinities": {i: "0-19,40-59" for i in ids},
        "labels": labels(sku="a100-pcie-40gb", count=2, interconnect="nvlink", accel="A100", memory=40960,
                         arch="ampere", driver="535.183.01", cuda="12.2", product="NVIDIA-A100-PCIE-40GB", cc=(8, 0),
                         mig_capable=True),
    }
    return fixture("a100-pcie-nvlink-bridge", "Two A100 PCIe 40GB on one socket joined by three NVLink bridges: "
                   "12 NVLink 3 links point to point, no NVSwitch",
                   "NVLink version NVML_NVLINK_VERSION_3_0, each link's remote end the other GPU "
                   "(nvmlDeviceGetNvLinkRemoteDeviceType NVML_NVLINK_DEVICE_TYPE_GPU, its PCI info the peer's); "
                   "NVIDIA A100 PCIe product brief: NVLink Bridge for 2 GPUs, 600 GB/s bidirectional",
                   "a100-nvlink-01", nvml, expected)


# --------------------------------------------------------------------------------------------------
# A Kubernetes pod given one MIG-enabled A100 SXM4 40GB of a DGX A100: NVML sees that GPU only.

def a100_mig() -> dict[str, Any]:
    system = "a100-mig"
    gpu = device(system, 0, name="NVIDIA A100-SXM4-40GB", pci_id=0x20B0, subsys=0x134F, bus="00000000:07:00.0",
                 memory_mib=40960, numa=3, cpus=cpu_words((48, 63), (176, 191)), cc=(8, 0), arch=7, mig=[1, 1],
                 nvlink=switch_links(12, NVLINK3, ["00000000:C4:00.0", "00000000:C5:00.0", "00000000:C6:00.0",
                                             "00000000:C7:00.0", "00000000:C8:00.0", "00000000:C9:00.0"],
                                     [2, 2, 2, 2, 2, 2]))
    # 3g.20gb + 2g.10gb + 2g.10gb = 7 of 7 compute slices; one compute instance per GPU instance.
    profiles = [("3g.20gb", 19968, 2), ("2g.10gb", 9856, 3), ("2g.10gb", 9856, 4)]
    gpu["minor_number"] = 0  # the DGX A100's first GPU (bus 07): /dev/nvidia0
    gpu["max_mig_devices"] = 7
    gpu["mig_devices"] = {str(slot): {"uuid": gpu_uuid(system, 100 + slot, "MIG"),
                                      "name": f"NVIDIA A100-SXM4-40GB MIG {profile}",
                                      "memory": {"total": mib * MIB, "used": 13 * MIB, "free": (mib - 13) * MIB},
                                      "gpu_instance_id": gi, "compute_instance_id": 0}
                          for slot, (profile, mib, gi) in enumerate(profiles)}
    nvml = {"driver_version": "550.54.15", "cuda_driver_version": 12040, "devices": {"0": gpu}}
    expected = {
        "devices": 1, "device_ids": [gpu["uuid"]], "accelerator_type": "A100",
        "resources": {"accelerator_type:A100": 1.0, "GPU_MIG_3g.20gb": 1.0, "GPU_MIG_2g.10gb": 2.0}, "links": 0,
        "skus": {gpu["uuid"]: "a100-sxm4-40gb"},
        "labels": labels(sku="a100-sxm4-40gb", count=1, interconnect="none", accel="A100", memory=40960,
                         arch="ampere", driver="550.54.15", cuda="12.4", product="NVIDIA-A100-SXM4-40GB", cc=(8, 0),
                         mig_capable=True, mig={"3g.20gb": 1, "2g.10gb": 2}),
        # Its NVLinks carry no traffic (no peer on this board): the throughput counters stand still, 0 B/s each way.
        "metric_values": {gpu["uuid"]: Flow(interconnect_tx=0.0, interconnect_rx=0.0)},
        # The GPU is /dev/nvidia0 (minor 0, as any first GPU): each MIG device's files are its instances'. Its
        # CPUs as the kernel writes a CPU list (cpulist_parse's canonical form: ranges, ascending).
        "device_fields": {gpu["uuid"]: {"cpu_affinity": "48-63,176-191", **mig_memory(gpu), **{
            f"partition.{mig['uuid']}.device_file": mig_device_file(0, mig["gpu_instance_id"],
                                                                    mig["compute_instance_id"])
            for mig in gpu["mig_devices"].values()}}},
    }
    faults = [
        {"name": "nvlink-version-3-1-on-ampere", "kind": "other",
         "description": "the A100 answers NVML_NVLINK_VERSION_3_1 (5) for its NVLinks, not _3_0 (4), as seen in "
                        "open-mpi/hwloc#658: reported (info: the bandwidth is Ampere's 25 GB/s either way)",
         "patch": {"libraries": {"nvml": {"devices": {"0": {"nvlink": {str(link): {"version": NVLINK3_1}
                                                                     for link in range(12)}}}}}},
         "expected": {"devices": 1, "health": {}, "resources": expected["resources"],
                      "problem_codes": ["nvlink-version-mismatch"],
                      # Info: the version's bandwidth is the architecture's (README, NVLink row).
                      "problem_severities": {"nvlink-version-mismatch": "info"}}},
        {"name": "mig-minors-unreadable", "kind": "other",
         "description": "the driver's /proc/driver/nvidia-caps is not there (a container started without it): the MIG "
                        "instances are found and offered as before, without device files",
         "patch": {"files": {MIG_MINORS: None}},
         "expected": {"devices": 1, "health": {}, "resources": expected["resources"], "fatal": False}},
    ]
    return fixture("a100-mig", "One MIG-enabled A100 SXM4 40GB (3g.20gb + 2x 2g.10gb) as a pod sees it",
                   "MIG device handles, profiles in the MIG device name; "
                   f"NVLink version NVML_NVLINK_VERSION_3_0; {MIG_MINORS} as the driver writes it (its GPU's lines)",
                   "dgxa100-pod-3", nvml, expected, faults, files={MIG_MINORS: mig_minors([0])})


# --------------------------------------------------------------------------------------------------
# Two A100 80GB PCIe, one per socket: GPU 0 in MIG mode (3g.40gb + 2x 2g.20gb), GPU 1 whole. A mixed node.

def a100_80gb_mig_mixed() -> dict[str, Any]:
    system = "a100-80gb-mig-mixed"
    inactive = {str(link): Flow(state=0, version=NVLINK3) for link in range(12)}
    buses = ["00000000:17:00.0", "00000000:CA:00.0"]
    devices = {str(i): device(system, i, name="NVIDIA A100 80GB PCIe", pci_id=0x20B5, subsys=0x1533, bus=buses[i],
                              memory_mib=81920, numa=i,
                              cpus=cpu_words((i * 32, i * 32 + 31), (64 + i * 32, 95 + i * 32)),
                              cc=(8, 0), arch=7, mig=[1, 1] if i == 0 else [0, 0], nvlink=inactive, power_mw=45000)
               for i in range(2)}
    devices["0"]["topology"] = {"1": 50}
    devices["1"]["topology"] = {"0": 50}
    # `nvidia-smi mig -cgi 9,14,14 -C`: 3g.40gb (profile 9) and two 2g.20gb (profile 14) = 7 of 7 compute
    # slices, 8 of 8 memory slices; NVML's MIG device slots 0-2, GPU instances 2, 3 and 4, one compute
    # instance (0) each; memory as nvidia-smi lists the profiles (39.25 and 19.50 GiB).
    profiles = [("3g.40gb", 40192, 2), ("2g.20gb", 19968, 3), ("2g.20gb", 19968, 4)]
    for i in range(2):
        devices[str(i)]["minor_number"] = i  # /dev/nvidia0 and /dev/nvidia1, in PCI order
    gpu = devices["0"]
    gpu["max_mig_devices"] = 7
    gpu["mig_devices"] = {str(slot): {"uuid": gpu_uuid(system, 100 + slot, "MIG"),
                                      "name": f"NVIDIA A100 80GB PCIe MIG {profile}",
                                      "memory": {"total": mib * MIB, "used": 13 * MIB, "free": (mib - 13) * MIB},
                                      "gpu_instance_id": gi, "compute_instance_id": 0}
                          for slot, (profile, mib, gi) in enumerate(profiles)}
    ids = [devices[str(i)]["uuid"] for i in range(2)]
    mig_ids = [m["uuid"] for m in gpu["mig_devices"].values()]
    nvml = {"driver_version": "550.54.15", "cuda_driver_version": 12040, "devices": devices}
    full = {"GPU": 1.0, "accelerator_type:A100": 1.0, "GPU_MIG_3g.40gb": 1.0, "GPU_MIG_2g.20gb": 2.0}
    expected = {
        "devices": 2, "device_ids": ids, "accelerator_type": "A100", "resources": full, "links": 1,
        "skus": {i: "a100-pcie-80gb" for i in ids},
        "labels": labels(sku="a100-pcie-80gb", count=2, interconnect="pcie", accel="A100", memory=81920,
                         arch="ampere", driver="550.54.15", cuda="12.4", product="NVIDIA-A100-80GB-PCIe", cc=(8, 0),
                         mig_capable=True, mig={"3g.40gb": 1, "2g.20gb": 2}),
        "device_fields": {gpu["uuid"]: mig_memory(gpu)},
    }
    faults = [
        {"name": "mig-instance-xid-95", "kind": "fatal-error",
         "description": "an uncontained ECC error in the second 2g.20gb instance: the driver posts XID 95 with that "
                        "instance's GPU instance id (3; nvmlEventData_t.gpuInstanceId): that instance is unhealthy "
                        "and no longer offered, the other instances and GPU 1 still are",
         "patch": {"libraries": {"nvml": {"events": {"0": {"device": 0, "xid": 95, "gpu_instance_id": 3,
                                                           "compute_instance_id": 0}}}}},
         "expected": {"reasons": {mig_ids[1]: ["xid-95"]}, "devices": 2, "health": {mig_ids[1]: "unhealthy"},
                      "fatal": True, "resources": {**full, "GPU_MIG_2g.20gb": 1.0}}},
        {"name": "mig-parent-xid-79", "kind": "fatal-error",
         "description": "the MIG-mode GPU 0 falls off the bus: XID 79 for the whole GPU (gpuInstanceId "
                        "0xFFFFFFFF): all three of its instances leave, GPU 1 is still offered",
         "patch": {"libraries": {"nvml": {"events": {"0": {"device": 0, "xid": 79}}}}},
         "expected": {"reasons": {ids[0]: ["xid-79"]}, "devices": 2, "health": {ids[0]: "unhealthy"}, "fatal": True,
                      "resources": {"GPU": 1.0, "accelerator_type:A100": 1.0}}},
    ]
    return fixture(system, "Two A100 80GB PCIe, one per socket: GPU 0 in MIG mode (3g.40gb + 2x 2g.20gb), GPU 1 "
                   "whole", "MIG device handles, profiles in the MIG device name, XID events carry the GPU "
                   "instance id; A100 80GB MIG profiles (3g.40gb, 2g.20gb) from NVIDIA's MIG user guide; "
                   f"{MIG_MINORS} as the driver writes it (its GPUs' lines)",
                   "a100-mig-mixed-01", nvml, expected, faults, files={MIG_MINORS: mig_minors([0, 1])})


def main(out: Path = OUT) -> int:
    out.mkdir(parents=True, exist_ok=True)
    for build in (dgx_h100, hgx_b200, gb200_tray, gb200_tray_08, h100_mig, l4_single, a100_pcie_pair,
                  a100_pcie_nvlink_bridge, a100_mig, a100_80gb_mig_mixed):
        data = build()
        path = out / f"{data['name']}.yaml"
        write_atomically(path, yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=False, width=120,
                                         default_flow_style=None))
        print(path)
    return 0


if __name__ == "__main__":
    # An optional directory to write into (tests/hosts/test_fixture_builders.py compares it with the committed files).
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
