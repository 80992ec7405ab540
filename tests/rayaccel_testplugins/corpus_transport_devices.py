"""Mutants of families Ray already has a manager for whose transport is declared for a device type the family's
tensors never have (issue 46, held-out round 13's a2: the AMD plugin's RCCL transport declared for ``hip``, "RCCL moves
HIP device memory", where torch calls ROCm devices ``cuda``). Ray matches a tensor to a transport by
``tensor.device.type`` in the devices the transport is registered with (``ray.experimental.rdt.util.
device_match_transport``), so the transport never moves one of the family's tensors. RAC305 ``invariant
devices-as-ray-matches-them``. Two shapes over the ACME machine:

- ``c-collective-declared-for-hip``: a GPU family read through HIP_VISIBLE_DEVICES (Ray's AMD manager) declaring its
  own collective transport (Ray's collective class under its own name, as the AMD plugin's RCCL) for ``hip``;
- ``c-hpu-nixl-as-ray-registers-it``: an HPU family (Ray's HPU manager) declaring Ray's NIXL with the device types
  Ray registers NIXL for (``cuda``, ``cpu``): it moves the family's host tensors, never an ``hpu`` one.

Each claims Ray's resource with its variable, so they are graded alone, each by its own manager, beside the healthy
control (tests/conformance/test_conformance_heldout13_transport_devices.py), as corpus_companions' and
corpus_quantity_choices' are: the corpus's one manager lets one plugin claim a variable (RAC104). Each is bound here
under its name, so a fresh process (RAC112, RAC269) imports it.
"""

from __future__ import annotations

from ray.experimental.rdt.collective_tensor_transport import NCCLTensorTransport

from rayaccel import TransportSpec
from rayaccel_testplugins.corpus_companions import _AmdLikeWriter
from rayaccel_testplugins.corpus_ray_types import HpuLike

KILLED_BY = ("RAC305", "invariant devices-as-ray-matches-them")
NIXL_CLASS = "ray.experimental.rdt.nixl_tensor_transport:NixlTensorTransport"


class AcmeHipCollective(NCCLTensorTransport):
    """Ray's collective transport under the family's name, as the AMD plugin's RCCL is."""

    def tensor_transport_backend(self) -> str:
        return "NCCL"  # the collective backend its groups are created with (RAC305 named-as-declared)


class CollectiveDeclaredForHip(_AmdLikeWriter):
    DEFECT = ("the family's collective transport declared for device type 'hip' (\"it moves HIP device memory\"): "
              "torch calls ROCm devices 'cuda', so Ray matches none of the family's tensors to it")
    KILLED_BY = KILLED_BY

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name="ACME_HIP_CCL", devices=["hip"], link_kinds=["pcie"], one_sided=False,
                              manager_class="rayaccel_testplugins.corpus_transport_devices:AcmeHipCollective")]


class HpuNixlAsRayRegistersIt(HpuLike):
    DEFECT = ("Ray's NIXL declared for an HPU family with the device types Ray registers NIXL for, cuda and cpu: "
              "the family's tensors are hpu, so NIXL moves only its host tensors and the cuda it claims is no device "
              "of the family's")
    KILLED_BY = KILLED_BY

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name="NIXL", devices=["cuda", "cpu"], link_kinds=["roce"], one_sided=True,
                              builtin_in_ray=True, manager_class=NIXL_CLASS)]


#: Graded alone, each by its own manager (one claimant of a Ray variable per manager).
TRANSPORT_DEVICE_MUTANTS = (CollectiveDeclaredForHip, HpuNixlAsRayRegistersIt)
c_collective_declared_for_hip = CollectiveDeclaredForHip("c-collective-declared-for-hip")
c_hpu_nixl_as_ray_registers_it = HpuNixlAsRayRegistersIt("c-hpu-nixl-as-ray-registers-it")
