"""Held-out grading, round 11 (issue 46, lane Yc): a resource Ray's own manager adds to the node is offered at Ray's
quantity (``invariant resources-as-ray-adds-them``, RAC270).

The TPU wrapper ``p1`` offered the slice's name as the host's chip count where Ray's TPU manager adds it as 1 on every
host of the slice; only RAC108, on a real Ray node, said so, and the tier gate skipped it behind RAC105's diff of the
fixture's expected resources. Ray's manager, wired to the simulated machine, answers without Ray: the slice's name
as the host's chips and the pod's head resource as the host's chips are each named; the reference passes.
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

TPU = Path(rayaccel_tpu.plugin.__file__).parent


def chips_for(pick: Callable[[str], bool]) -> Callable[..., ResourceContribution]:
    """The reference's rayaccel_resources with each extra resource ``pick`` takes offered as the host's chips."""
    def resources(host: Any, devices: list[Any], topology: Any) -> ResourceContribution:
        answer = rayaccel_tpu.plugin.rayaccel_resources(host, devices, topology)
        extra = {k: float(len(devices)) if pick(k) else v for k, v in answer.extra.items()}
        changed: ResourceContribution = answer.model_copy(update={"extra": extra})
        return changed
    return resources


@pytest.mark.parametrize(("pick", "named"), [
    (lambda name: not name.endswith("-head"), "tpu-v5p-16-slice-a 4"),  # p1's edit: the slice's name
    (lambda name: name.endswith("-head"), "TPU-v5p-16-head 4")])  # the pod's head resource
def test_a_resource_ray_adds_offered_at_another_quantity_is_named(pick: Callable[[str], bool], named: str) -> None:
    subject = wrapped(rayaccel_tpu.plugin, "tpu", str(TPU), rayaccel_resources=chips_for(pick))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC270"].function(subject, "tpu/v5p-16-worker0")
    said = str(failed.value)
    assert (f"{INVARIANT}, tpu/v5p-16-worker0: the plugin offers {named}; Ray's TPUAcceleratorManager adds "
            f"{named.split()[0]} 1 to this node itself") in said, said


def test_the_reference_tpu_plugin_offers_what_ray_adds() -> None:
    subject = wrapped(rayaccel_tpu.plugin, "tpu", str(TPU))
    CHECKS["RAC270"].function(subject, "tpu/v5p-16-worker0")
