"""RAC211's ``one-link-down-keeps-the-others`` (issue 46, held-out round 6: an NVLink down ahead of active ones): the
middle device's first link record switched off at the host seam, on the pure helpers, NVIDIA's NVML data and the two
corpus mutants that walk a card's link records right only while none is down ahead of an active one (graded by the
corpus too)."""

from __future__ import annotations

import json

import pytest
from mutant_grading import failure, mutant as mutant_of

from rayaccel.plugins.manager import PluginManager
from rayaccel.records import Device
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.link_states import first_link_down, with_link_down
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS
from rayaccel_testplugins import corpus, corpus_link_states

GPU = Device(index=1, id="GPU-1", product_name="X1")


def _nvml(states: list[object]) -> dict[str, object]:
    links = {str(n): {"state": s, "version": 4} for n, s in enumerate(states)}
    return {"libraries": {"nvml": {"devices": {"0": {"nvlink": {"0": {"state": 1}, "1": {"state": 1}}},
                                               "1": {"nvlink": links}}}}}


def test_the_first_link_up_of_the_device_is_switched_off_in_the_vendor_s_own_off_value() -> None:
    host = _nvml([0, 1, 1])  # link 0 down already: the first up is link 1
    link = first_link_down(host, GPU)
    assert link is not None and link.path == ("devices", "1", "nvlink", "1") and link.others_up == 1
    assert link.describe() == "library nvml devices.1.nvlink.1 (state 1 -> 0)"
    after = with_link_down(host, link)
    assert after["libraries"]["nvml"]["devices"]["1"]["nvlink"] == {  # type: ignore[index]
        "0": {"state": 0, "version": 4}, "1": {"state": 0, "version": 4}, "2": {"state": 1, "version": 4}}
    assert host["libraries"]["nvml"]["devices"]["1"]["nvlink"]["1"]["state"] == 1  # type: ignore[index]
    # A word state keeps its spelling; one link up, or the device's collection missing, is nothing to switch.
    words = {"commands": {"t --json": {"stdout": json.dumps({"1": {"links": {"0": {"status": "Up"},
                                                                              "1": {"status": "Up"}}}})}}}
    said = first_link_down(words, GPU)
    assert said is not None and said.describe() == "`t --json` output 1.links.0 (status 'Up' -> 'Down')"
    assert first_link_down(_nvml([1, 0]), GPU) is None
    assert first_link_down(_nvml([1, 1]), Device(index=5, id="GPU-5", product_name="X1")) is None


def test_nvidia_keeps_every_peer_when_one_nvlink_of_a_gpu_is_down() -> None:
    all_checks()
    said = str(CHECKS["RAC211"].function(Subject("nvidia", PluginManager()), "nvidia/dgx-h100"))
    assert "GPU-a62c2f11-60a6-56b5-96cc-2b7ce4439f2e's first link switched off" in said, said


@pytest.mark.parametrize("mutant", [corpus_link_states.LinksUntilFirstDown, corpus_link_states.LinksFirstNUp],
                         ids=lambda cls: cls.__name__)
def test_links_walked_only_until_one_is_down_fail_rac211_naming_the_invariant(mutant: type[corpus.Healthy]) -> None:
    plugin = mutant_of(mutant)
    name, said = plugin.name, failure(plugin, "RAC211", "acme-4-links")
    assert f"invariant one-link-down-keeps-the-others, {name}/acme-4-links with `acme-smi links --json` output " \
           "cards.2.links.0 (state 'up' -> 'down')" in said, said
    assert "is no longer linked to ACME-0002-5e1f-4c2a-9d3b-000000000002, though 2 other links" in said, said
