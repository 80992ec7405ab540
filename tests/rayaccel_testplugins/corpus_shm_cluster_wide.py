"""A corpus mutant that declares a node-only transport for the whole cluster: its ``ACME_SHM`` is the SDK's
reference shared-memory transport under the family's name (the template's ``transport.py`` as shipped), declared
without ``reach="node"``. Path selection would offer it between two nodes, where every receive fails ("recv: same
node"). RAC311 kills it; RAC301 does not (on one node it works).

In a module of its own, outside ``corpus.PLUGINS`` (only a Ray check kills it, which the corpus test does not pay
for every mutant): ``RAYACCEL_PLUGINS=c-shm-declared-cluster-wide=rayaccel_testplugins.corpus_shm_cluster_wide:
plugin`` loads it; tests/conformance/test_conformance_recovery.py grades it.
"""

from __future__ import annotations

from rayaccel import SharedMemoryTransport, TransportSpec
from rayaccel_testplugins import corpus

NAME = "ACME_SHM"


class AcmeSharedMemoryTransport(SharedMemoryTransport):
    def tensor_transport_backend(self) -> str:
        return NAME


class NodeOnlyTransportDeclaredClusterWide(corpus.Healthy):
    DEFECT = ("its shared-memory transport is declared without reach='node': offered between nodes, where a "
              "receive cannot map the sender's memory")
    KILLED_BY = ("RAC311", "recv: same node")

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name=NAME, devices=["cpu"], one_sided=True, link_kinds=["other"],
                              manager_class="rayaccel_testplugins.corpus_shm_cluster_wide:AcmeSharedMemoryTransport")]


plugin = NodeOnlyTransportDeclaredClusterWide("c-shm-declared-cluster-wide")
