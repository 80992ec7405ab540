"""One Ray node for a test module, started by ``rayaccel.ray.init`` on a simulated machine: the shape most of
tests/ray's module fixtures take (the partitions of AMD and Neuron, placement on qts and a DGX). It lives in
tests/, not tests/ray, because a Ray worker imports a test module with tests/ alone on its path."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import ray

import rayaccel.ray
from rayaccel.ray.registry import uninstall
from rayaccel.support.polling import wait_for


@contextlib.contextmanager
def simulated_node(simulate: str, plugin: str, resource: str, count: float, **options: Any) -> Iterator[str]:
    """The node's id once ``count`` of ``resource`` are free (Ray registers resources after the node starts);
    ``options`` go to ``rayaccel.ray.init``. The node stops and the bridge is uninstalled after, also on a failed
    start."""
    try:
        rayaccel.ray.init(simulate=simulate, plugins=[plugin], include_dashboard=False, log_to_driver=False,
                          **options)
        wait_for(ray.available_resources, lambda r: r.get(resource) == count, timeout=60,
                 what=f"{count:g} {resource} free")
        (node_id,) = rayaccel.ray.node_configs()
        yield node_id
    finally:
        rayaccel.ray.shutdown()
        uninstall()
