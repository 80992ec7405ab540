"""Held-out grading, round 14 (issue 46, lane K4): a resource Ray's own manager adds to a node is offered there by the
plugin too (``invariant resources-as-ray-adds-them``, RAC270).

The TPU wrapper ``p2`` offered the slice's name resource on worker 0 alone; Ray's TPU manager, which stays the node's
manager for TPU, adds it on every host of the slice. RAC270 compared the quantity of a name both offered and the names
Ray adds on another host alone, so a name Ray adds here and the plugin leaves out went unseen, and ``p2e`` (the
fixture's expected resources edited to the code's answer) graded ``supported``. Ray's manager's names are now held to
the plugin's on each host: p2's edit on a GKE worker (TPU_WORKER_ID) and on a TPU VM (the metadata server's
agent-worker-number), and the name offered under another spelling, are named; the reference passes everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mutant_grading import wrapped

import rayaccel_tpu.plugin
from rayaccel import ResourceContribution
from rayaccel_conformance.checks.ray_resources import INVARIANT
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_tpu import slice_info

TPU = Path(rayaccel_tpu.plugin.__file__).parent
FIXTURES = sorted(path.stem for path in (TPU / "fixtures").glob("*.yaml"))


def slice_name_as(rename: Callable[[Any], str | None]) -> Callable[..., ResourceContribution]:
    """The reference's rayaccel_resources with the slice's name resource offered under ``rename(info)`` (None: left
    out)."""
    def resources(host: Any, devices: list[Any], topology: Any) -> ResourceContribution:
        answer: ResourceContribution = rayaccel_tpu.plugin.rayaccel_resources(host, devices, topology)
        info = slice_info.read_slice_info(host)
        if not info.name or info.name not in answer.extra:
            return answer
        extra = {key: value for key, value in answer.extra.items() if key != info.name}
        if (name := rename(info)) is not None:
            extra[name] = answer.extra[info.name]
        changed: ResourceContribution = answer.model_copy(update={"extra": extra})
        return changed
    return resources


def on_worker_zero(info: Any) -> str | None:
    """p2's edit: the slice's name on its first host alone ("the driver's host names the slice")."""
    return str(info.name) if info.worker_id == 0 else None


def prefixed(info: Any) -> str | None:
    """The name under a prefix of the plugin's own, on every host."""
    return f"tpu-slice-{info.name}"


@pytest.mark.parametrize(("rename", "fixture", "name"), [
    (on_worker_zero, "v5p-16-worker1", "tpu-v5p-16-slice-a"),  # GKE (TPU_WORKER_ID)
    (on_worker_zero, "v6e-256-worker", "trillium-pod-256"),  # a TPU VM (the metadata server)
    (prefixed, "v5p-16-worker1", "tpu-v5p-16-slice-a")])
def test_a_resource_ray_adds_here_that_the_plugin_leaves_out_is_named(rename: Callable[[Any], str | None],
                                                                      fixture: str, name: str) -> None:
    subject = wrapped(rayaccel_tpu.plugin, "tpu", str(TPU), rayaccel_resources=slice_name_as(rename))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC270"].function(subject, f"tpu/{fixture}")
    said = str(failed.value)
    assert (f"{INVARIANT}, tpu/{fixture}: the plugin offers no {name}; Ray's TPUAcceleratorManager adds {name} 1 to "
            "this node itself") in said, said
    assert "expected" not in said, said


@pytest.mark.parametrize("fixture", FIXTURES)
def test_the_reference_tpu_plugin_offers_what_ray_adds(fixture: str) -> None:
    subject = wrapped(rayaccel_tpu.plugin, "tpu", str(TPU))
    CHECKS["RAC270"].function(subject, f"tpu/{fixture}")
