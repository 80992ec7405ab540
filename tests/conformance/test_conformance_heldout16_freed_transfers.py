"""Held-out grading, round 16 (issue 46, lane J10): a transport's own lifecycle, run without Ray (RAC273).

The lib bake ``l1`` overrode its shared-memory transport's ``garbage_collect`` as a no-op (each freed transfer's
segment left named in /dev/shm and open in the sender), and the json bake ``j1`` its ``abort_transport`` (an aborted
receive arrives whole while ``can_abort_transport()`` says True). Only RAC301 (certified, Ray, two maintainers)
ran those steps, so both reached ``supported`` as baked. RAC273 runs them as Ray calls them between two processes
of one node, in one fresh interpreter: freed transfers must leave neither side holding a descriptor, thread or
node-local name per transfer (``invariant a-transfer-holds-nothing-after-it``), and a receive aborted before it
ran must fail (``invariant an-aborted-transfer-fails``). Two shapes of each are named; the SDK's transport and
``acme_wired``'s file transport pass; Ray's own transports are not the plugin's and are not run.

Round 18's json bake ``j2`` (lane J19) gave back every staged transfer's segment on each ``garbage_collect``:
Ray frees each ref alone, so a transfer staged beside a freed one must still arrive whole (``invariant
a-freed-ref-frees-only-its-transfer``); its two shapes are named here too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from mutant_grading import graded

from rayaccel import TransportSpec
from rayaccel_conformance.registry import CHECKS, CheckFailed, NotApplicable
from rayaccel_testplugins import corpus, corpus_aborted_transfers, corpus_freed_transfers

pytest.importorskip("torch", reason="the transports need torch: pip install 'rayaccel[rdt]'")

HELD = "invariant a-transfer-holds-nothing-after-it"
ABORTED = "invariant an-aborted-transfer-fails"
FREED_ALONE = "invariant a-freed-ref-frees-only-its-transfer"
FREED = "after 5 more transfers, each received and its ref freed (garbage_collect on the sender, as Ray calls it)"


@pytest.fixture(autouse=True)
def _no_files_left() -> Iterator[None]:
    """Where this machine gives no node of its own, the second shape's files land in the real /dev/shm."""
    yield
    for path in corpus_freed_transfers.files():
        os.unlink(path)


def test_a_transport_whose_garbage_collect_keeps_the_segment_is_named() -> None:
    subject = graded(corpus_freed_transfers.keeps_segment)  # first: it registers the checks that CHECKS holds
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC273"].run(subject, None)
    said = str(failed.value)
    name = corpus_freed_transfers.SEGMENT_NAME
    assert said.startswith(f"{HELD}: {name}: {FREED}, the sender holds "), said
    assert "more names in /dev/shm, /tmp, /var/tmp (/dev/shm/rayaccel-rdt-" in said, said
    assert said.count(HELD) == 2 and "the receiver holds " in said, said  # its kept mappings too
    assert ABORTED not in said, said  # the abort is the SDK's own, and works


def test_a_transport_whose_garbage_collect_leaves_the_file_is_named_though_it_keeps_no_descriptor() -> None:
    subject = graded(corpus_freed_transfers.leaves_file)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC273"].run(subject, None)
    said = str(failed.value)
    name = corpus_freed_transfers.FILE_NAME
    assert said.startswith(f"{HELD}: {name}: {FREED}, the sender holds 5 more names in /dev/shm, /tmp, /var/tmp "
                           f"(/dev/shm/{corpus_freed_transfers.FILE_PREFIX}"), said
    assert said.endswith(" and 2 more) than after the first, 10 s later: a freed transfer keeps what it took, one per "
                         "transfer, until the node runs out"), said
    assert said.count(HELD) == 1, said  # no descriptor kept, by either side


@pytest.mark.parametrize(("plugin", "name"), [(corpus_aborted_transfers.ignored, corpus_aborted_transfers.SHM_NAME),
                                              (corpus_aborted_transfers.forgotten, corpus_aborted_transfers.FILE_NAME)],
                         ids=["abort-ignored", "abort-forgotten-at-receive"])
def test_a_transport_that_can_abort_but_lets_an_aborted_receive_arrive_is_named_without_ray(
        plugin: corpus.Healthy, name: str) -> None:
    subject = graded(plugin)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC273"].run(subject, None)
    said = str(failed.value)
    assert said.startswith(f"{ABORTED}: {name} says it can abort (can_abort_transport() is True), yet the transfer "
                           ), said
    assert "arrived whole after abort_transport(" in said and HELD not in said, said


@pytest.mark.parametrize(("plugin", "name", "gone"),
                         [(corpus_freed_transfers.frees_every_segment, corpus_freed_transfers.EVERY_SEGMENT_NAME,
                           "the segment is gone (the ref was freed)"),
                          (corpus_freed_transfers.sweeps_every_file, corpus_freed_transfers.EVERY_FILE_NAME,
                           "RuntimeError: the file is gone (the ref was freed")],
                         ids=["gc-frees-every-segment", "gc-sweeps-every-file"])
def test_a_transport_whose_garbage_collect_frees_another_staged_transfer_is_named(
        plugin: corpus.Healthy, name: str, gone: str) -> None:
    subject = graded(plugin)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC273"].run(subject, None)
    said = str(failed.value)
    assert said.startswith(f"{FREED_ALONE}: {name}: two transfers staged, "), said
    assert "on the sender (Ray frees that ref alone, as its count ends), " in said, said
    assert ", still in flight, failed: its receive raised " in said and gone in said, said
    assert said.count(FREED_ALONE) == 1 and HELD not in said and ABORTED not in said, said  # nothing else is wrong


class _Declares(corpus.Healthy):
    SPECS: list[TransportSpec] = []

    def rayaccel_transports(self) -> list[TransportSpec]:
        return self.SPECS


class _SdkAndFile(_Declares):
    SPECS = [TransportSpec(name="ACME_SHM", devices=["cpu"], one_sided=True, link_kinds=["other"], reach="node",
                           manager_class="rayaccel.transports.shared_memory:SharedMemoryTransport"),
             TransportSpec(name="ACME_FILE", devices=["cpu"], one_sided=True, link_kinds=["other"], reach="node",
                           manager_class="rayaccel_testplugins.acme_wired:AcmeFileTransport")]


def test_the_sdk_transport_and_the_file_transport_the_shapes_break_pass() -> None:
    subject = graded(_SdkAndFile("c-lifecycle-controls"))
    evidence = CHECKS["RAC273"].run(subject, None)
    assert len(evidence) == 2, evidence
    for name, line in zip(("ACME_SHM", "ACME_FILE"), evidence, strict=True):
        assert line.startswith(f"{name}: 6 transfers freed, neither side holds a descriptor or thread per transfer"
                               ), line
        assert line.endswith("; one freed while another was staged left the other whole; a transfer aborted at its "
                             "receiver failed its receive"), line


class _RaysOwn(_Declares):
    SPECS = [TransportSpec(name="NIXL", devices=["cpu", "cuda"], one_sided=True, builtin_in_ray=True,
                           link_kinds=["other"], manager_class="ray.experimental.rdt.nixl_tensor_transport:"
                           "NixlTensorTransport")]


def test_rays_own_transports_are_not_the_plugins_and_are_not_run() -> None:
    subject = graded(_RaysOwn("c-lifecycle-rays-own"))
    with pytest.raises(NotApplicable, match="declares no tensor transport of its own"):
        CHECKS["RAC273"].run(subject, None)
