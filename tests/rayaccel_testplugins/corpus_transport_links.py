"""Corpus mutants whose transport moves CPU tensors only yet declares a scale-up link (held-out round 11's survivor
e1: Ray's NIXL, registered for the Neuron family with devices ``cpu``, declared to carry ``neuronlink`` beside EFA, so
path selection offered it between two NeuronLinked devices, where it moves only copies staged through host memory).
A scale-up link joins two devices' memories with no host memory on the way, and Ray moves a tensor only on the device
types a transport is registered for; RAC305 names ``invariant host-memory-crosses-no-scale-up-link``.

- ``c-gloo-over-scale-up``: Ray's GLOO (CPU tensors over the network) declared to carry xGMI too;
- ``c-host-copy-over-scale-up``: the family's own shared-memory transport declared to carry NeuronLink beside PCIe.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it.
"""

from __future__ import annotations

from rayaccel import SharedMemoryTransport, TransportSpec
from rayaccel_testplugins.corpus import Healthy, add_import_defect

KILLED_BY = ("RAC305", "invariant host-memory-crosses-no-scale-up-link")
GLOO_CLASS = "ray.experimental.rdt.collective_tensor_transport:GLOOTensorTransport"


class AcmeHostCopyTransport(SharedMemoryTransport):
    def tensor_transport_backend(self) -> str:
        return "ACME_HOST_COPY"


class GlooOverScaleUp(Healthy):
    DEFECT = ("Ray's GLOO, which moves CPU tensors, is declared to carry xgmi beside ethernet: path selection offers "
              "it between two devices joined by xGMI, where it moves only copies through host memory")
    KILLED_BY = KILLED_BY

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name="GLOO", devices=["cpu"], link_kinds=["ethernet", "xgmi"], builtin_in_ray=True,
                              manager_class=GLOO_CLASS)]


class HostCopyOverScaleUp(Healthy):
    DEFECT = ("the family's shared-memory transport, which moves CPU tensors, is declared to carry neuronlink beside "
              "pcie: path selection offers it between two NeuronLinked devices")
    KILLED_BY = KILLED_BY

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name="ACME_HOST_COPY", devices=["cpu"], one_sided=True, reach="node",
                              link_kinds=["pcie", "neuronlink"],
                              manager_class="rayaccel_testplugins.corpus_transport_links:AcmeHostCopyTransport")]


c_gloo_over_scale_up = add_import_defect(GlooOverScaleUp)
c_host_copy_over_scale_up = add_import_defect(HostCopyOverScaleUp)
