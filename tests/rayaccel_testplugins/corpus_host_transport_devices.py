"""Corpus mutants whose transport's class moves host memory alone yet is declared for a device type too (issue 46,
held-out round 14's l1: a lib bake's shared-memory transport, the SDK's ``SharedMemoryTransport`` under the family's
name, declared with devices ``['cpu', 'ericht']``). Ray registers a transport for its declared devices and matches a
tensor by ``tensor.device.type`` in them (``ray.experimental.rdt.util.device_match_transport``), so the family's device
tensors are handed to a class whose steps refuse every tensor not on the CPU. The class's own answer
(``moved_device_types()``) is the oracle; RAC305 names ``invariant host-memory-declares-no-device``. Two shapes:

- ``c-host-copy-for-devices``: the family's shared-memory class declared for ``cpu`` and ``acme``;
- ``c-host-copy-for-device-alone``: a subclass replacing only its bookkeeping (who may send) declared for
  ``acme`` alone, no host type: Ray offers it for the family's device tensors and never for its CPU ones.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it.
"""

from __future__ import annotations

from typing import Any

from rayaccel import SharedMemoryTransport, TransportSpec
from rayaccel_testplugins.corpus import Healthy, add_import_defect

KILLED_BY = ("RAC305", "invariant host-memory-declares-no-device")
HERE = "rayaccel_testplugins.corpus_host_transport_devices"


class AcmeShm(SharedMemoryTransport):
    """The SDK's shared-memory transport under the family's name, as the template ships it."""

    def tensor_transport_backend(self) -> str:
        return "ACME_SHM"


class AcmeGuardedShm(SharedMemoryTransport):
    """The same memory steps, only the question of which actors may send replaced."""

    def tensor_transport_backend(self) -> str:
        return "ACME_GUARDED_SHM"

    def actor_has_tensor_transport(self, actor: Any) -> bool:
        return actor is not None


class AcmeDeviceShm(SharedMemoryTransport):
    """Not a mutant: the shape a vendor's transport takes once it moves its device's memory (the template's advice:
    its own extract and receive steps), so the class no longer answers for the memory it moves and its declaration's
    devices stand. Here the steps hand over to the host copy, as a runtime's staging fallback would."""

    def tensor_transport_backend(self) -> str:
        return "ACME_DEVICE_SHM"

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: list[Any]) -> Any:
        return super().extract_tensor_transport_metadata(obj_id, rdt_object)

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Any = None) -> Any:
        return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata,
                                             target_buffers)


class HostCopyForDevices(Healthy):
    DEFECT = ("the family's shared-memory transport (CPU tensors) declared for devices ['cpu', 'acme']: Ray would hand "
              "it the family's device tensors, which its steps refuse")
    KILLED_BY = KILLED_BY

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name="ACME_SHM", devices=["cpu", "acme"], link_kinds=["pcie"], one_sided=True,
                              reach="node", manager_class=f"{HERE}:AcmeShm")]


class HostCopyForDeviceAlone(Healthy):
    DEFECT = ("a shared-memory subclass replacing only who may send, declared for devices ['acme'] alone: Ray offers "
              "it for the family's device tensors, which its steps refuse, and never for the CPU tensors it moves")
    KILLED_BY = KILLED_BY

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name="ACME_GUARDED_SHM", devices=["acme"], link_kinds=["pcie"], one_sided=True,
                              reach="node", manager_class=f"{HERE}:AcmeGuardedShm")]


HOST_TRANSPORT_DEVICE_MUTANTS = (HostCopyForDevices, HostCopyForDeviceAlone)
c_host_copy_for_devices = add_import_defect(HostCopyForDevices)
c_host_copy_for_device_alone = add_import_defect(HostCopyForDeviceAlone)
