"""The process that holds a conformance run's Ray cluster (rayaccel_conformance.harness.cluster_host), spoken to
as the suite does: every answer is waited for with a bound, a failure says what failed, and the process never
outlives the suite's (its stdin closing ends it). The cluster itself is graded by every conformance run
(tests/conformance/test_conformance_broken.py, test_conformance_partitions.py, test_conformance_corpus.py)."""

from __future__ import annotations

import psutil
import pytest

from rayaccel.support.polling import wait_for
from rayaccel_conformance.harness.cluster_host import RAY_GAVE_UP, SYSTEM_CONFIG
from rayaccel_conformance.harness.raycluster import (
    HEAD_START_TIMEOUT_S,
    NODE_START_TIMEOUT_S,
    ClusterProcess,
    ClusterProcessError,
)

WAIT_S = 30.0
#: A fixture of a reference plugin with one device: the cheapest node to start.
FIXTURE = "nvidia/l4-single"


def test_a_request_it_cannot_answer_fails_naming_why_and_the_next_is_still_answered() -> None:
    cluster = ClusterProcess()
    try:
        bad, removed = cluster.send(op="reboot"), cluster.send(op="remove", fixtures=["acme/acme-4"])
        # Answers come in order: the second is read (and kept) while waiting for the first, or after it.
        with pytest.raises(ClusterProcessError, match="cluster process failed: unknown request 'reboot'"):
            cluster.answer(bad, WAIT_S)
        assert cluster.answer(removed, WAIT_S) == {"removed": []}  # no node of that fixture: nothing removed
    finally:
        cluster.close()
    assert cluster.process.returncode == 0


def test_it_ends_when_the_suites_process_stops_talking_to_it() -> None:
    cluster = ClusterProcess()
    try:
        assert cluster.process.stdin is not None
        cluster.process.stdin.close()  # as when the suite's process dies
        code = wait_for(cluster.process.poll, lambda code: code is not None, timeout=WAIT_S, interval=0.05,
                        what="the cluster process to end")
        assert code == 0  # it shut down what it held (nothing yet) and ended normally
    finally:
        cluster.close()


def test_a_process_that_died_is_reported_with_the_end_of_its_log() -> None:
    cluster = ClusterProcess()
    try:
        cluster.process.kill()
        cluster.process.wait(WAIT_S)
        with pytest.raises(ClusterProcessError, match="ended"):
            cluster.answer(cluster.send(op="head"), WAIT_S)
    finally:
        cluster.close()


def test_closed_while_it_starts_ray_it_stops_at_once_leaving_no_ray_process() -> None:
    # A run interrupted while the head starts: the process is told to stop now, shuts down what it started, and
    # whatever it had half started (Ray's processes fate-share with it) ends too.
    cluster = ClusterProcess()
    try:
        cluster.send(op="head")
        under = wait_for(lambda: psutil.Process(cluster.pid).children(recursive=True), bool, timeout=WAIT_S,
                         interval=0.05, what="Ray's first process under the cluster process")
    finally:
        cluster.close()
    assert cluster.process.returncode is not None
    wait_for(lambda: [p for p in under if p.is_running() and p.status() != psutil.STATUS_ZOMBIE], lambda left: not left,
             timeout=WAIT_S, interval=0.1, what="every Ray process it started to end")


def _raylets(host: psutil.Process) -> list[psutil.Process]:
    return [p for p in host.children() if p.name() == "raylet"]


def _system_config(address: str) -> dict[str, object]:
    """The cluster's system config as its GCS holds it: what Ray hands every node and worker of the cluster."""
    from ray._private.internal_api import get_state_from_address

    state = get_state_from_address(address)  # type: ignore[no-untyped-call,unused-ignore]
    try:
        return dict(state.get_system_config())
    finally:
        state.disconnect()


def test_a_node_ray_gave_up_on_is_stopped_by_pid_and_started_once_more_saying_so() -> None:
    # Under load a raylet can miss the 30 s Ray's Node() waits for it to register, and Ray gives up on the node.
    # Here the first raylet is really stopped (SIGSTOP) as soon as it appears, so Ray gives up on it for real.
    cluster = ClusterProcess()
    try:
        address = cluster.answer(cluster.send(op="head"), HEAD_START_TIMEOUT_S)["address"]
        # The cluster runs with the harness's switches (no metrics export, idle workers kept), which every node
        # started after the head, the retried one included, is given by Ray.
        assert SYSTEM_CONFIG.items() <= _system_config(address).items()
        host = psutil.Process(cluster.pid)
        head = {p.pid for p in _raylets(host)}
        ticket = cluster.send(op="nodes", plugin="nvidia", fixtures=[FIXTURE])
        frozen = wait_for(lambda: [p for p in _raylets(host) if p.pid not in head], bool, timeout=NODE_START_TIMEOUT_S,
                          interval=0.01, what="the node's raylet")[0]
        frozen.suspend()
        reply = cluster.answer(ticket, 2 * NODE_START_TIMEOUT_S)
        assert list(reply["nodes"]) == [FIXTURE] and reply["errors"] == {}
        assert RAY_GAVE_UP in reply["retried"][FIXTURE]  # the retry is said, with Ray's own words
        # The half-started node's raylet was stopped by its pid; the one left is the second start's, registered.
        assert not frozen.is_running() or frozen.status() == psutil.STATUS_ZOMBIE
        second = [p for p in _raylets(host) if p.pid not in head]
        assert len(second) == 1 and second[0].pid != frozen.pid and second[0].status() != psutil.STATUS_STOPPED
    finally:
        cluster.close()
    assert cluster.process.returncode == 0
