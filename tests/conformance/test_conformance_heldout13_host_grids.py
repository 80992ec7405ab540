"""Held-out grading, round 13 (issue 46, lane J3): a TPU host's ICI links join neighbours of the chip grid the node
states (``invariant links-join-grid-neighbours``, RAC267).

``p1`` (a TPU wrapper) laid an 8-chip host out 4 wide and 2 rows (``HOST_GRIDS[8] = (4, 2)``) where the v5litepod-8's
tpu-env says ``CHIPS_PER_HOST_BOUNDS: '2,4,1'``: the same 10 links, 6 of them between chips that have none. Link checks
counted links and ends; no fixture pins the pairs, and the bounds the node states were compared with nothing. The
invariant reads the node's own statement (``TPU_CHIPS_PER_HOST_BOUNDS``, else the tpu-env's entry) and no
expectation. No corpus plugin, for round 12's reason (an ACME machine on a TPU host gets Ray's TPU type, which the
corpus catalog contradicts): two shapes over the TPU plugin instead, p1's table and a ring in index order (on a
2x2 host as many links as the grid, two of them diagonals), each named; the TPU plugin as shipped passes on every
fixture stating a grid.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import wrapped

import rayaccel
from rayaccel.hosts.fixtures import HostState
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.host_grids import stated_bounds
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_tpu import plugin as tpu, slice_info, topology as tpu_topology

INVARIANT = "invariant links-join-grid-neighbours"
TPU_PACKAGE = Path(tpu.__file__).parent
#: The TPU plugin's fixtures whose node states its chip grid (the GKE workers of v5p-16 state none).
STATING = ("v5e-8", "v3-8", "tpu7x-8", "tpu7x-8-accel", "v6e-256-worker")


def tpu_with(**hooks: Any) -> Subject:
    return wrapped(tpu, "tpu", str(TPU_PACKAGE), **hooks)


def _rac267(subject: Subject, machine: str) -> str:
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC267"].function(subject, f"tpu/{machine}")
    return str(failed.value)


def test_p1s_transposed_host_grid_fails_rac267_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(tpu_topology.HOST_GRIDS, 8, (4, 2))  # p1's edit
    said = _rac267(tpu_with(), "v5e-8")
    assert (f"{INVARIANT}, tpu/v5e-8: the node states its chip grid 2,4,1 (CHIPS_PER_HOST_BOUNDS in the metadata "
            "server's tpu-env" in said), said
    assert "6 of its 10 ICI links join chips that are not neighbours in it" in said, said


def _ring(host: rayaccel.Host, devices: list[rayaccel.Device]) -> rayaccel.Topology:
    """ICI drawn as a ring in index order ("each chip has two ICI neighbours"), the slice domain as shipped."""
    chips = sorted(devices, key=lambda d: d.index)
    links = [rayaccel.Link(a=a.id, b=b.id, kind="ici") for a, b in zip(chips, chips[1:] + chips[:1], strict=True)
             if len(chips) > 2 or a.index < b.index]
    domain = tpu_topology.slice_domain(slice_info.read_slice_info(host), devices)
    return rayaccel.Topology(links=links, domains=[domain] if domain else [])


@pytest.mark.parametrize("machine", ["v3-8", "tpu7x-8", "v5e-8"])
def test_a_ring_in_index_order_fails_rac267_naming_it(machine: str) -> None:
    said = _rac267(tpu_with(rayaccel_topology=_ring), machine)
    assert f"{INVARIANT}, tpu/{machine}" in said and "join chips that are not neighbours" in said, said
    if machine != "v5e-8":  # a 2x2 host: 4 links, as the grid has, so a count of links cannot tell
        assert "2 of its 4 ICI links" in said, said


@pytest.mark.parametrize("machine", STATING)
def test_the_tpu_plugin_as_shipped_joins_grid_neighbours(machine: str) -> None:
    said = str(CHECKS["RAC267"].function(tpu_with(), f"tpu/{machine}"))
    assert "ICI links join neighbours of the chip grid" in said, said


def test_the_nodes_variable_is_read_before_the_tpu_env() -> None:
    fixture = Subject("tpu", rayaccel.plugins.manager.PluginManager()).fixture("tpu/v5e-8")
    host = fixture.host.model_dump(mode="json")
    assert stated_bounds(simulated_host(fixture)) == ((2, 4, 1), "CHIPS_PER_HOST_BOUNDS in the metadata server's "
                                                                 "tpu-env")
    host["env"] = {"TPU_CHIPS_PER_HOST_BOUNDS": "4,2,1"}
    moved = fixture.model_copy(update={"host": HostState.model_validate(host)})
    assert stated_bounds(simulated_host(moved)) == ((4, 2, 1), "TPU_CHIPS_PER_HOST_BOUNDS in the node's environment")
    host["env"], host["http"] = {}, {}
    assert stated_bounds(simulated_host(fixture.model_copy(update={"host": HostState.model_validate(host)}))) is None
