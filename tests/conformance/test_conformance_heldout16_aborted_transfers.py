"""Held-out grading, round 16 (issue 46, lane J7): a transport that says it can abort fails a transfer aborted at
its receiver (``invariant an-aborted-transfer-fails``, RAC301).

The command-json bake ``j1`` overrode its shared-memory transport's ``abort_transport`` as a no-op ("copies take
ms") while ``can_abort_transport()`` still answered True; RAC301 called ``abort_transport`` on an id no transfer
had and passed ("aborted"), so it survived ``supported``. Ray aborts a failed or overdue transfer by calling
``abort_transport`` on its receiver (``RDTManager._abort_transport``), and a receive that runs after it must fail,
as NIXL's does. RAC301 now aborts a real transfer at its receiver before the receive runs: both corpus shapes are
named; the SDK's transport (tests/conformance/test_conformance_transports.py) and ``acme_wired``'s file transport,
which the second shape breaks, pass.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mutant_grading import graded

from rayaccel import TransportSpec
from rayaccel_conformance.harness.raycluster import shutdown_shared_cluster
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import corpus
from rayaccel_testplugins.acme_wired import AcmeFileTransport
from rayaccel_testplugins.corpus_aborted_transfers import FILE_NAME, SHM_NAME, forgotten, ignored

pytest.importorskip("torch", reason="the transports need torch: pip install 'rayaccel[rdt]'")
pytestmark = [pytest.mark.ray]

INVARIANT = "invariant an-aborted-transfer-fails"


@pytest.fixture(scope="module", autouse=True)
def _cluster() -> Iterator[None]:
    yield
    shutdown_shared_cluster()


@pytest.mark.parametrize(("plugin", "name"), [(ignored, SHM_NAME), (forgotten, FILE_NAME)],
                         ids=["abort-ignored", "abort-forgotten-at-receive"])
def test_a_transport_that_can_abort_but_lets_an_aborted_transfer_arrive_is_named(plugin: corpus.Healthy,
                                                                                  name: str) -> None:
    subject = graded(plugin)  # first: it registers the checks that CHECKS holds
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC301"].run(subject, None)
    message = str(failed.value)
    assert message.startswith(f"{name}: RuntimeError: {name} says it can abort"), message
    assert "arrived whole after abort_transport(" in message and INVARIANT in message, message


class _FileTransportPlugin(corpus.Healthy):
    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name="ACME_FILE", devices=["cpu"], one_sided=True, link_kinds=["other"],
                                     reach="node", manager_class="rayaccel_testplugins.acme_wired:AcmeFileTransport")]


def test_the_file_transport_the_second_shape_breaks_fails_the_aborted_receive_and_passes() -> None:
    assert AcmeFileTransport.can_abort_transport()
    subject = graded(_FileTransportPlugin("c-file-transport"))  # first: it registers the checks
    evidence = CHECKS["RAC301"].run(subject, None)
    assert "ACME_FILE: transfer 1: " in evidence[0], evidence
    assert "aborted transfer: the receive failed, the receiver holds no more descriptors" in evidence[0], evidence
