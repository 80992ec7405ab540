"""Tensor transport path selection: a pure function of two nodes' inventories and the declared transports.

For a pair of devices (same node or across nodes) the path is the fastest the topology gives, in the order
scale-up link > PCIe peer > RDMA > host memory, and the transport is one that both ends' families declare
(``rayaccel_transports``) for that path's link kind. Between two nodes only transports that reach across
nodes are offered (:func:`reaches_other_nodes`: a declaration's ``reach``, and Ray's CUDA_IPC and the
reference transport, which only move tensors within one node). A transport that moves CPU tensors alone (declared so,
or its manager class says so: ``TransportSpec.moved_device_types``, asked where the plugin runs) is never the scale-up
choice, whatever it declares (:func:`moves_host_memory_only`). Host paths fall back to the SDK's reference
shared-memory transport (same node) or Ray's GLOO (across nodes), which every node has. Each choice carries the
reason, in words. Nothing here imports a plugin's code. Registration with Ray lives in :mod:`rayaccel.ray.transports`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rayaccel.records import FamilyInventory, NodeInventory, TransportSpec
from rayaccel.support.raycompat import torch_device_type

#: Ray's own transports: declared by plugins for path selection, never registered again.
RAY_TRANSPORTS = ("NCCL", "GLOO", "CUDA_IPC", "NIXL")
#: The SDK's reference transport (:mod:`rayaccel.transports.shared_memory`).
REFERENCE = TransportSpec(name="RAYACCEL_SHM", devices=["cpu"], link_kinds=[], one_sided=True, reach="node",
                          manager_class="rayaccel.transports.shared_memory:SharedMemoryTransport")
GLOO = TransportSpec(name="GLOO", devices=["cpu"], link_kinds=["ethernet", "roce", "infiniband", "efa"],
                     builtin_in_ray=True,
                     manager_class="ray.experimental.rdt.collective_tensor_transport:GLOOTensorTransport")

#: Transports that move tensors within one node whatever a plugin declares: Ray's CUDA_IPC (its receive refuses a
#: sender on another node, ray/experimental/rdt/cuda_ipc_transport.py) and the SDK's reference transport.
NODE_ONLY = ("CUDA_IPC", REFERENCE.name)

SCALE_UP = ("nvlink", "nvswitch", "xgmi", "ici", "neuronlink")
RDMA = ("infiniband", "roce", "efa", "gaudi-roce")
#: Path classes, fastest first.
PATHS = ("scale-up", "pcie-peer", "rdma", "host")


@dataclass(frozen=True)
class Endpoint:
    """One device: the node's inventory, the family and the device id (``None``: the host's CPU memory)."""

    inventory: NodeInventory
    family: str | None
    device: str | None


@dataclass(frozen=True)
class Choice:
    transport: str
    path: str
    link: str
    reason: str


def reaches_other_nodes(spec: TransportSpec) -> bool:
    """Whether the transport may be offered between two nodes: declared ``reach="cluster"`` and not one of
    :data:`NODE_ONLY`."""
    return spec.reach == "cluster" and spec.name not in NODE_ONLY


def moves_host_memory_only(spec: TransportSpec) -> bool:
    """Whether the transport moves CPU tensors alone: it is declared for them alone, or its manager class says it
    moves nothing else (:func:`class_device_types`), whatever else it is declared for. Ray moves a tensor only on the
    device types a transport is registered for (rdt_store: "does not support tensor transfer on device"), so such a
    transport moves copies staged through host memory, and a scale-up link (NVLink, NVSwitch, xGMI, ICI, NeuronLink, a
    scale-up domain) joins two devices' memories with no host memory on the way: it never carries one, whatever its
    ``link_kinds`` say."""
    if all(device == "cpu" for device in spec.devices):
        return True
    moved = class_device_types(spec)
    return moved is not None and all(device == "cpu" for device in moved)


def class_device_types(spec: TransportSpec) -> tuple[str, ...] | None:
    """The torch device types ``spec``'s manager class says it moves (its ``moved_device_types()``: the SDK's
    :class:`~rayaccel.transports.shared_memory.SharedMemoryTransport` answers ``("cpu",)`` while its own steps move
    the memory), as the record carries it: asked where the plugin runs (:mod:`rayaccel.plugins.transport_classes`),
    never here. None (a class of Ray's, one not asked or with no answer) leaves the declaration's ``devices`` as the
    word on what it moves."""
    if spec.builtin_in_ray or not spec.moved_device_types:
        return None
    return tuple(spec.moved_device_types)


def misses_device_type(spec: TransportSpec, families: Sequence[FamilyInventory | None]) -> str | None:
    """The torch device type of a family's tensors that ``spec``, a transport of device memory, is not declared for
    (Ray's answer for the family's manager: ``RAY_TORCH_DEVICE_TYPES``), or None. Ray matches a tensor to a
    transport by ``tensor.device.type`` in its declared devices (``device_match_transport``), so such a transport
    never moves one of those devices' tensors (RAC305 fails the declaration itself)."""
    if moves_host_memory_only(spec):
        return None
    for fam in families:
        known = torch_device_type(fam.family.resource_name, fam.family.visible_devices_env_var) if fam else None
        if known is not None and known[1] not in spec.devices:
            return known[1]
    return None


def _family(end: Endpoint) -> FamilyInventory | None:
    return end.inventory.family(end.family) if end.family else None


def _rdma_kinds(fam: FamilyInventory | None) -> set[str]:
    if fam is None:
        return set()
    kinds: set[str] = {link.kind for link in fam.topology.links if link.kind in RDMA}
    if any(a.nics for a in fam.topology.affinities) and not kinds:
        kinds.add("roce")  # NICs beside the devices, kind unstated
    return kinds


def _paths(a: Endpoint, b: Endpoint, same_node: bool) -> list[tuple[str, str, str]]:
    """(path, link kind, why) the hardware offers between a and b, fastest first."""
    fa, fb = _family(a), _family(b)
    found: list[tuple[str, str, str]] = []
    if fa is not None and fb is not None and fa.family.name == fb.family.name:
        if same_node:
            direct = [link for link in fa.topology.links if {link.a, link.b} == {a.device, b.device}]
            for kind_set, path in ((SCALE_UP, "scale-up"), (("pcie",), "pcie-peer")):
                for link in direct:
                    if link.kind in kind_set:
                        found.append((path, link.kind, f"joined by {link.kind} x{link.lanes}"))
            for dom in fa.topology.domains:
                if a.device in dom.members and b.device in dom.members and not any(p == "scale-up" for p, *_ in found):
                    found.insert(0, ("scale-up", _domain_link(dom.kind), f"both in {dom.kind} domain {dom.id}"))
        else:
            ids_a = {d.id for d in fa.topology.domains if a.device in d.members and (d.hosts or 1) > 1}
            ids_b = {d.id for d in fb.topology.domains if b.device in d.members and (d.hosts or 1) > 1}
            for dom_id in sorted(ids_a & ids_b):
                dom = next(d for d in fa.topology.domains if d.id == dom_id)
                found.append(("scale-up", _domain_link(dom.kind), f"both nodes are in {dom.kind} domain {dom_id}"))
    ka, kb = _rdma_kinds(fa), _rdma_kinds(fb)
    for kind in sorted(ka & kb):
        found.append(("rdma", kind, f"both nodes reach the fabric over {kind}"))
    found.append(("host", "host", "staged through host memory" + ("" if same_node else " and the network")))
    return found


def _domain_link(kind: str) -> str:
    return {"nvlink-clique": "nvlink", "nvswitch": "nvswitch", "xgmi-hive": "xgmi", "tpu-slice": "ici",
            "neuronlink": "neuronlink", "ultraserver": "neuronlink", "gaudi-scaleup": "gaudi-roce"}.get(kind, "other")


def choose_transport(a: Endpoint, b: Endpoint, declared: Mapping[str, Sequence[TransportSpec]],
                     same_node: bool | None = None) -> Choice:
    """The fastest transport both ends support for the pair, and why.

    ``declared``: plugin name -> its ``rayaccel_transports`` records. ``same_node`` defaults to whether
    the two inventories name the same host.
    """
    if same_node is None:
        same_node = a.inventory.host == b.inventory.host
    fa, fb = _family(a), _family(b)
    specs_a = list(declared.get(fa.plugin, [])) if fa else []
    specs_b = list(declared.get(fb.plugin, [])) if fb else []
    names_b = {s.name for s in specs_b}
    both = [s for s in specs_a if s.name in names_b]
    usable = both if same_node else [s for s in both if reaches_other_nodes(s)]
    skipped: list[str] = []
    for path, link, why in _paths(a, b, same_node):
        if path == "host":
            fallback = REFERENCE if same_node else GLOO
            cpu = [s for s in usable if "cpu" in s.devices]
            spec = cpu[0] if cpu else fallback
            local = [s.name for s in both if "cpu" in s.devices and s not in usable]
            note = f"; faster paths unsupported: {'; '.join(skipped)}" if skipped else ""
            note += f"; not {', '.join(local)}: it moves tensors within one node only" if local else ""
            return Choice(spec.name, path, link, f"{why}; {spec.name} moves CPU tensors "
                          + ("on one node" if same_node else "between nodes") + note)
        declaring = [s for s in both if link in s.link_kinds]
        # A declaration is the plugin's word; a CPU-only transport labelled "scale-up" would move a job onto a host
        # copy, so it is passed over here and named in the reason (RAC305 fails the declaration itself).
        host_only = [s for s in declaring if path == "scale-up" and moves_host_memory_only(s)]
        # Nor is a device transport declared for a device type the ends' tensors never have: Ray never matches one.
        unmatched = {s.name: own for s in declaring if (own := misses_device_type(s, (fa, fb))) is not None}
        carriers = [s for s in usable if s in declaring and s not in host_only and s.name not in unmatched]
        if carriers:
            spec = carriers[0]
            owner = fa.plugin if fa else "?"
            return Choice(spec.name, path, link, f"{why}; {spec.name} (declared by {owner}"
                          + ("" if fb is None or fb.plugin == owner else f" and {fb.plugin}")
                          + f") carries {link}")
        local = [s.name for s in declaring if s not in usable and s not in host_only and s.name not in unmatched]
        why_not = [f"{', '.join(local)} moves tensors within one node only"] if local else []
        why_not += [f"{name} is not declared for {own}, the torch device type of these devices' tensors (Ray "
                    f"matches a tensor to a transport by its device type, so {name} never moves them)"
                    for name, own in unmatched.items()]
        if host_only:
            why_not.append(f"{', '.join(s.name for s in host_only)} moves CPU tensors only, copies staged through "
                           f"host memory, which a scale-up link between two devices' memories never carries (its "
                           f"declaration of {link} is not used)")
        skipped.append(f"{path} over {link}: " + ("; ".join(why_not) or "no transport both ends declare carries it"))
    raise AssertionError("unreachable: the host path always exists")


def device_endpoints(inventory: NodeInventory) -> list[Endpoint]:
    return [Endpoint(inventory, f.family.name, d.id) for f in inventory.families for d in f.devices]


def transport_matrix(inventory: NodeInventory, declared: Mapping[str, Sequence[TransportSpec]],
                     peer: NodeInventory | None = None) -> list[tuple[Endpoint, Endpoint, Choice]]:
    """Every device pair on the node (and, with ``peer``, each device to the peer node's same device)."""
    ends = device_endpoints(inventory)
    rows = [(x, y, choose_transport(x, y, declared, same_node=True))
            for i, x in enumerate(ends) for y in ends[i + 1:]]
    if peer is not None:
        others = {(e.family, e.device): e for e in device_endpoints(peer)}
        for x in ends:
            y = others.get((x.family, x.device))
            if y is not None:
                rows.append((x, y, choose_transport(x, y, declared, same_node=False)))
    return rows
