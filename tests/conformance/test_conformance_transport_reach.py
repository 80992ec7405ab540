"""RAC272 (held-out round 8's survivor c2, lane X): a declared tensor transport moves tensors as far as its reach
says, run without Ray between processes of one node and of two (the receiver's /dev/shm, /tmp, /var/tmp and
process ids its own).

Three corpus shapes of a node-only transport declared for the cluster are named by the invariant (the SDK's shared
memory under the family's name, as the template ships it; a Unix socket in the sender's temporary directory; a
memfd opened through the sender's /proc entry);
``acme_wired``'s ``ACME_FILE`` (a file on a shared directory, its sender known by the file's lock) reaches the
other node and passes; the shared-memory transport declared ``reach="node"`` passes within its node.
"""

from __future__ import annotations

import pytest
from mutant_grading import graded

from rayaccel import TransportSpec
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.registry import CHECKS, CheckFailed, Evidence
from rayaccel_testplugins import corpus, corpus_transport_reach
from rayaccel_testplugins.acme_wired import rayaccel_transports as acme_file_transports
from rayaccel_testplugins.corpus_transport_reach import (
    MemfdByPidClusterWide,
    ShmTransportClusterWide,
    SocketInTmpClusterWide,
)

OTHER_NODE = "to a receiver on another node (/dev/shm, /tmp, /var/tmp and process ids of its own) the receive raised"


def rac272(plugin: corpus.Healthy) -> Evidence:
    all_checks()
    return CHECKS["RAC272"].function(graded(plugin))


@pytest.mark.parametrize(("cls", "name", "raised"), [
    (ShmTransportClusterWide, corpus_transport_reach.SHM_NAME,
     "TransportError: ACME_SHM transfer failed at step 'recv: open segment'"),
    (SocketInTmpClusterWide, corpus_transport_reach.SOCKET_NAME, "FileNotFoundError"),
    (MemfdByPidClusterWide, corpus_transport_reach.MEMFD_NAME, "FileNotFoundError: [Errno 2] No such file or "
     "directory: '/proc/")],
    ids=["shared-memory-as-the-template-ships-it", "unix-socket-in-tmp", "memfd-by-sender-pid"])
def test_a_node_only_transport_declared_for_the_cluster_fails_rac272_naming_the_invariant(
        cls: type[corpus.Healthy], name: str, raised: str) -> None:
    plugin = next(p for p in corpus.PLUGINS.values() if type(p) is cls)
    with pytest.raises(CheckFailed) as failed:
        rac272(plugin)
    said = str(failed.value)
    assert said.startswith(f"invariant declared-reach-is-reached: {name} is declared reach='cluster' (TransportSpec's "
                           "default) but moves tensors within one node only: to a receiver on the sender's node the 4 "
                           "tensors arrive identical; "), said
    assert f"{OTHER_NODE} {raised}" in said, said
    assert said.endswith("declare reach='node', or reach the sender by a path another node has"), said


class _Declares(corpus.Healthy):
    SPECS: list[TransportSpec] = []

    def rayaccel_transports(self) -> list[TransportSpec]:
        return self.SPECS


def test_a_transport_that_reaches_another_node_passes_rac272() -> None:
    class AcmeFile(_Declares):
        SPECS = acme_file_transports()

    assert rac272(AcmeFile("c-acme-file")) == [
        "ACME_FILE (reach 'cluster'): 4 tensors arrive identical on the sender's node and on another node "
        "(/dev/shm, /tmp, /var/tmp and process ids of its own)"]


def test_the_shared_memory_transport_declared_node_only_passes_rac272_within_its_node() -> None:
    class NodeOnly(_Declares):
        SPECS = [spec.model_copy(update={"reach": "node"}) for spec in
                 corpus.PLUGINS["c-shm-transport-cluster-wide"].rayaccel_transports()]  # type: ignore[attr-defined]

    assert rac272(NodeOnly("c-shm-node-only")) == [
        "ACME_SHM (reach 'node'): 4 tensors arrive identical between two processes of one node; never offered "
        "between nodes"]
