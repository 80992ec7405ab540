"""Links and scale-up domains from NVML: NVLink state and remote ends, PCIe ancestry, fabric cliques.

* A link whose remote end is a GPU gives a direct ``nvlink`` link (lanes = links between the two).
* Links whose remote end is an NVSwitch put the GPU on the switch fabric; every two GPUs on it reach
  each other at the bandwidth of the smaller side, so each pair gets an ``nvlink`` link.
* GPUs with no NVLink between them get a ``pcie`` link where NVML knows their common PCIe ancestor.
* On NVL72-class systems (GB200) each GPU reports fabric info: a cluster UUID and clique id shared by
  every GPU of the NVLink domain, across trays. That is the ``nvlink-clique`` domain.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import uuid as uuid_module
from collections import Counter
from collections.abc import Sequence
from typing import Any

from rayaccel import Affinity, Device, Domain, Link, Topology, plain_int, report_problem, shown
from rayaccel_nvidia.discovery import UNREADABLE, optional, unusable_answer

#: Unidirectional GB/s of one NVLink, by the ``nvmlNvlinkVersion_t`` name ``nvmlDeviceGetNvLinkVersion``
#: answers. That is an enum, not the NVLink generation: NVLink 3.0 (A100) is ``NVML_NVLINK_VERSION_3_0`` = 4,
#: NVLink 4 (H100/H200) is ``_4_0`` = 6, NVLink 5 (B200/GB200) is ``_5_0`` = 7. Per link and direction:
#: P100 20 GB/s; V100 and A100 25 GB/s (A100: 12 links, 600 GB/s both ways); H100 25 GB/s (18 links,
#: 900 GB/s both ways); B200 50 GB/s (18 links, 1.8 TB/s both ways). The values are looked up by name in
#: the bindings (:func:`nvlink_gbps`), never re-typed. Used only where the GPU's architecture is unknown
#: (:data:`NVLINK_BY_ARCHITECTURE` decides otherwise).
NVLINK_GBPS: dict[str, float] = {
    "NVML_NVLINK_VERSION_1_0": 20.0,
    "NVML_NVLINK_VERSION_2_0": 25.0,
    "NVML_NVLINK_VERSION_2_2": 25.0,
    "NVML_NVLINK_VERSION_3_0": 25.0,
    "NVML_NVLINK_VERSION_3_1": 25.0,
    "NVML_NVLINK_VERSION_4_0": 25.0,
    "NVML_NVLINK_VERSION_5_0": 50.0,
}


def nvlink_gbps(nvml: Any) -> dict[int, float]:
    """The bandwidth table keyed by the enum values of this NVML binding (pynvml or the simulation)."""
    return {int(getattr(nvml, name)): gbps for name, gbps in NVLINK_GBPS.items() if hasattr(nvml, name)}


#: The NVLink a GPU architecture has (the ``rayaccel.io/architecture`` name, from nvmlDeviceGetArchitecture or
#: the compute capability): the version names NVML should answer and the per-link, per-direction GB/s.
#: The version alone is not trusted: an A100 has been seen answering NVML_NVLINK_VERSION_3_1 (5) where
#: NVLink 3.0 is NVML_NVLINK_VERSION_3_0 (4) (open-mpi/hwloc#658), and some H100 drivers answer
#: NVML_NVLINK_VERSION_5_0 (7) for NVLink 4, which the version table would make 50 GB/s instead of 25.
NVLINK_BY_ARCHITECTURE: dict[str, tuple[tuple[str, ...], float]] = {
    "volta": (("NVML_NVLINK_VERSION_2_0", "NVML_NVLINK_VERSION_2_2"), 25.0),
    "ampere": (("NVML_NVLINK_VERSION_3_0",), 25.0),
    "hopper": (("NVML_NVLINK_VERSION_4_0",), 25.0),
    "blackwell": (("NVML_NVLINK_VERSION_5_0",), 50.0),
}


def _version_name(nvml: Any, version: int) -> str:
    names = [n for n in NVLINK_GBPS if getattr(nvml, n, None) == version]
    return f"{names[0]} ({version})" if names else f"{version} (not an nvmlNvlinkVersion_t this plugin knows)"


def per_link_gbps(nvml: Any, device: Device, versions: Sequence[int | None]) -> float | None:
    """One NVLink's GB/s for this GPU: its architecture's, else what the version enum says.

    A version that is not the architecture's is reported (naming GPU, version, architecture and the value
    used); the architecture wins because NVML's version answers are known to be off (see above)."""
    by_version = _gbps(nvlink_gbps(nvml), versions)
    known = NVLINK_BY_ARCHITECTURE.get(device.architecture or "")
    if known is None:
        return by_version
    names, gbps = known
    expected = {int(getattr(nvml, n)) for n in names if hasattr(nvml, n)}
    odd = sorted({v for v in versions if v is not None and v not in expected})
    if odd and expected:
        answered = ", ".join(_version_name(nvml, v) for v in odd)
        differs = by_version is not None and by_version != gbps
        report_problem(
            "nvlink-version-mismatch",
            f"GPU {device.index} ({device.product_name}, {device.id}) answers NVLink version {answered} but its "
            f"architecture {device.architecture} has {' or '.join(names)}; the architecture's {gbps:g} GB/s per "
            f"link and direction is used" + (f" (the version alone would give {by_version:g} GB/s)" if differs
                                              else " (the same as the version gives)"),
            severity="warning" if differs else "info",
            fix="none needed for scheduling; update the NVIDIA driver if tools that trust the NVLink version "
                "report the wrong bandwidth")
    return gbps


#: NVML does not say how many GPUs a clique spans (an NVL72 rack: 72, but partitions can be smaller);
#: an operator who knows sets it, otherwise the domain size is what this host sees.
CLIQUE_SIZE_ENV = "RAYACCEL_NVIDIA_CLIQUE_SIZE"


def configured_clique_size() -> int:
    """The operator's :data:`CLIQUE_SIZE_ENV`, or 0 (the GPUs this host sees in the clique); a value that is not
    a positive whole number is reported (a warning), not taken silently."""
    raw = os.environ.get(CLIQUE_SIZE_ENV, "").strip()
    if not raw:
        return 0
    value = plain_int(raw)
    if value is not None and value > 0:
        return value
    report_problem("malformed-setting", f"{CLIQUE_SIZE_ENV}={shown(raw)} is not a positive whole number of "
                   "GPUs; each NVLink clique's size is the GPUs this host sees in it instead",
                   fix=f"set {CLIQUE_SIZE_ENV} to the GPUs one NVLink clique spans (e.g. 72) or unset it")
    return 0


def _bus(bus_id: str) -> str:
    # NVML writes "00000000:18:00.0"; the legacy form is "0000:18:00.0". Compare on the last 12 chars.
    return bus_id.strip().upper()[-12:]


def nvlink_ends(nvml: Any, handle: Any) -> list[tuple[int, str, str | None, int | None]]:
    """(link, remote type, remote bus id, version) for each active NVLink of one GPU."""
    ends = []
    for link in range(int(nvml.NVML_NVLINK_MAX_LINKS)):
        try:
            state = nvml.nvmlDeviceGetNvLinkState(handle, link)
        except nvml.NVMLError as e:
            if e.value in (nvml.NVML_ERROR_NOT_SUPPORTED, nvml.NVML_ERROR_INVALID_ARGUMENT):
                break  # no NVLink on this GPU, or past its last link
            if e.value == nvml.NVML_ERROR_GPU_IS_LOST:
                raise
            continue
        except Exception as e:  # a malformed answer: this link's state is unknown, the GPU's other links still count
            report_problem("nvml-malformed-answer", f"nvmlDeviceGetNvLinkState (link {link}): NVML "
                           f"{unusable_answer(e)}; the link is left out")
            continue
        if int(state) != nvml.NVML_FEATURE_ENABLED:
            continue
        version = optional(nvml, "nvmlDeviceGetNvLinkVersion", handle, link)
        remote_type = optional(nvml, "nvmlDeviceGetNvLinkRemoteDeviceType", handle, link)
        pci = optional(nvml, "nvmlDeviceGetNvLinkRemotePciInfo", handle, link)
        kind = {nvml.NVML_NVLINK_DEVICE_TYPE_GPU: "gpu", nvml.NVML_NVLINK_DEVICE_TYPE_SWITCH: "switch"}.get(
            remote_type, "unknown") if remote_type is not None else "unknown"
        ends.append((link, kind, _bus(str(pci.busId)) if pci is not None else None,
                     int(version) if version is not None else None))
    return ends


def _gbps(table: dict[int, float], versions: Sequence[int | None]) -> float | None:
    known = [table[v] for v in versions if v is not None and v in table]
    return min(known) if known else None


def _smaller(a: float | None, b: float | None) -> float | None:
    # Two GPUs reach each other at the bandwidth of the slower end.
    known = [v for v in (a, b) if v is not None]
    return min(known) if known else None


def topology(nvml: Any, devices: Sequence[Device], host_name: str) -> Topology:
    readable = [d for d in devices if UNREADABLE not in d.attributes]
    handles = {d.id: nvml.nvmlDeviceGetHandleByIndex(d.index) for d in readable}
    by_bus = {_bus(d.pci_bus_id): d.id for d in readable if d.pci_bus_id}
    direct: Counter[tuple[str, str]] = Counter()
    switch_links: dict[str, list[int | None]] = {}
    device_ends: dict[str, list[tuple[int, str, str | None, int | None]]] = {}
    for device in readable:
        device_ends[device.id] = nvlink_ends(nvml, handles[device.id])
        for _, kind, remote_bus, version in device_ends[device.id]:
            peer = by_bus.get(remote_bus) if remote_bus else None
            if kind == "switch" or (kind == "unknown" and remote_bus and peer is None):
                switch_links.setdefault(device.id, []).append(version)
            elif peer is not None and peer != device.id:
                key = (min(device.id, peer), max(device.id, peer))
                direct[key] += 1  # each end reports the link once
    links: dict[tuple[str, str], Link] = {}
    # Per GPU, from every NVLink it reported (so a mismatch is one report per GPU, not per link or pair).
    link_gbps = {d.id: per_link_gbps(nvml, d, [version for *_, version in device_ends[d.id]])
                 for d in readable if device_ends[d.id]}
    for key, ends in direct.items():
        lanes = max(1, ends // 2)
        per_link = _smaller(link_gbps.get(key[0]), link_gbps.get(key[1]))
        links[key] = Link(a=key[0], b=key[1], kind="nvlink", lanes=lanes,
                          bandwidth_gbps=per_link * lanes if per_link else None)
    on_switch = [d.id for d in readable if d.id in switch_links]
    for a, b in itertools.combinations(on_switch, 2):
        lanes = min(len(switch_links[a]), len(switch_links[b]))
        per_link = _smaller(link_gbps.get(a), link_gbps.get(b))
        key = (min(a, b), max(a, b))
        through_switch = per_link * lanes if per_link else None
        existing = links.get(key)
        if existing is None or (existing.bandwidth_gbps or 0) < (through_switch or 0):
            links[key] = Link(a=key[0], b=key[1], kind="nvlink", lanes=lanes, bandwidth_gbps=through_switch)
    for first, second in itertools.combinations(readable, 2):
        key = (min(first.id, second.id), max(first.id, second.id))
        if key in links:
            continue
        level = optional(nvml, "nvmlDeviceGetTopologyCommonAncestor", handles[first.id], handles[second.id])
        if level is not None:
            links[key] = Link(a=key[0], b=key[1], kind="pcie")
    affinities = [Affinity(device=d.id, numa_node=d.numa_node, cpus=str(d.attributes["cpu_affinity"])
                           if "cpu_affinity" in d.attributes else None)
                  for d in readable if d.numa_node is not None or "cpu_affinity" in d.attributes]
    domains = clique_domains(nvml, readable, handles)
    if not domains and len(on_switch) >= 2:
        domains = [Domain(kind="nvswitch", id=f"{host_name}-nvswitch", size=len(on_switch), members=on_switch)]
    return Topology(links=sorted(links.values(), key=lambda ln: (ln.a, ln.b)), affinities=affinities,
                    domains=domains)


def fabric_clique(nvml: Any, handle: Any) -> str | None:
    """'<cluster uuid>.<clique id>' once the fabric manager has registered the GPU, else None."""
    try:
        info = nvml.c_nvmlGpuFabricInfoV_t()
        nvml.nvmlDeviceGetGpuFabricInfoV(handle, ctypes.byref(info))
    except AttributeError:
        return None  # nvidia-ml-py older than the fabric API (pre-Hopper drivers never report one)
    except nvml.NVMLError as e:
        if e.value == nvml.NVML_ERROR_GPU_IS_LOST:
            raise
        return None
    except Exception as e:  # a malformed answer: this GPU's clique is unknown, the others still count
        report_problem("nvml-malformed-answer", f"nvmlDeviceGetGpuFabricInfoV failed with {type(e).__name__}: "
                       f"{shown(str(e))}; the GPU's NVLink clique is unknown")
        return None
    try:
        if int(info.state) != nvml.NVML_GPU_FABRIC_STATE_COMPLETED or int(info.status) != nvml.NVML_SUCCESS:
            return None
        raw = bytes(info.clusterUuid)
        if not any(raw):
            return None  # the GPU is not part of a multi-node NVLink domain
        return f"{uuid_module.UUID(bytes=raw)}.{int(info.cliqueId)}"
    except (TypeError, ValueError) as e:
        report_problem("nvml-malformed-answer", f"the GPU fabric info is malformed ({shown(str(e))}); the GPU's "
                       "NVLink clique is unknown")
        return None


def clique_domains(nvml: Any, devices: Sequence[Device], handles: dict[str, Any]) -> list[Domain]:
    members: dict[str, list[str]] = {}
    for device in devices:
        clique = fabric_clique(nvml, handles[device.id])
        if clique is not None:
            members.setdefault(clique, []).append(device.id)
    configured = configured_clique_size()
    domains = []
    for clique, ids in members.items():
        size = max(configured, len(ids))
        domains.append(Domain(kind="nvlink-clique", id=clique, size=size, members=ids))
    return domains
