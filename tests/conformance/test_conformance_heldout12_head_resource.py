"""Held-out grading, round 12 (issue 46, lane FG2): a resource Ray's own manager adds on one host of a group alone
is offered there alone (``invariant resources-as-ray-adds-them``, RAC270).

The TPU wrapper ``p2`` offered the slice's head resource, ``TPU-<pod type>-head``, on every host of the slice, where
Ray's TPU manager adds it on worker 0 only; RAC270 compared only the resources Ray adds on the same host, and on
worker 1 Ray adds the slice's name alone, so only the fixture's expected resources (RAC105) said so. Ray's manager is
now also asked what it adds with the worker's index moved to another host's, and a name it adds there alone that
the plugin offers here is named: on a GKE worker (TPU_WORKER_ID) and a TPU VM (the metadata server's
agent-worker-number), for p2's edit and for a head taken as the slice's last host; the reference passes everywhere.
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
from rayaccel_tpu import podtype, slice_info

TPU = Path(rayaccel_tpu.plugin.__file__).parent
FIXTURES = sorted(path.stem for path in (TPU / "fixtures").glob("*.yaml"))


def head_where(offered: Callable[[Any, int], bool]) -> Callable[..., ResourceContribution]:
    """The reference's rayaccel_resources with the slice's head resource offered on each host ``offered`` takes."""
    def resources(host: Any, devices: list[Any], topology: Any) -> ResourceContribution:
        answer: ResourceContribution = rayaccel_tpu.plugin.rayaccel_resources(host, devices, topology)
        info = slice_info.read_slice_info(host)
        if not (info.complete and info.pod_type and offered(info, len(devices))):
            return answer
        changed: ResourceContribution = answer.model_copy(
            update={"extra": {**answer.extra, podtype.head_resource(info.pod_type): 1.0}})
        return changed
    return resources


def last_host(info: Any, chips: int) -> bool:
    """The slice's last host by its worker index (a coordinator taken from the other end)."""
    return bool(info.worker_id == podtype.hosts_in_slice(info.pod_type, chips) - 1)


@pytest.mark.parametrize(("offered", "fixture", "head"), [
    (lambda info, chips: True, "v5p-16-worker1", "TPU-v5p-16-head"),  # p2's edit, on GKE (TPU_WORKER_ID)
    (lambda info, chips: True, "v6e-256-worker", "TPU-v6e-256-head"),  # p2's edit, on a TPU VM (agent-worker-number)
    (last_host, "v5p-16-worker1", "TPU-v5p-16-head")])  # the slice's last host as its head
def test_a_resource_ray_adds_on_another_host_alone_offered_here_is_named(offered: Callable[[Any, int], bool],
                                                                           fixture: str, head: str) -> None:
    subject = wrapped(rayaccel_tpu.plugin, "tpu", str(TPU), rayaccel_resources=head_where(offered))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC270"].function(subject, f"tpu/{fixture}")
    said = str(failed.value)
    assert (f"{INVARIANT}, tpu/{fixture}: the plugin offers {head} 1 on this host, where Ray's TPUAcceleratorManager "
            "adds ") in said, said
    assert f"Ray adds {head} only on another host of the group, as with TPU_WORKER_ID=0" in said, said


@pytest.mark.parametrize("fixture", FIXTURES)
def test_the_reference_tpu_plugin_offers_the_head_where_ray_adds_it(fixture: str) -> None:
    subject = wrapped(rayaccel_tpu.plugin, "tpu", str(TPU))
    CHECKS["RAC270"].function(subject, f"tpu/{fixture}")
