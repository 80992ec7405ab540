"""Held-out grading, round 16 (issue 46, lane J9): one port or link down is a fault of its own (``invariant
one-port-down-is-enough``, RAC203).

The Gaudi wrapper ``g2`` degraded a module only once three of its internal ports were DOWN ("one peer's worth"), and
every port fault of the fixtures took down three ports or all of them, so it survived ``supported``. A port DOWN is
a lane the device lost (DCGM's ``NVLINK_DOWN`` and Azure's NHC2016 fire on one link): RAC203 now applies each fault
that switches several like records off with one of them switched only, and the device must stay not healthy. Both
corpus shapes and g2's edit on the Gaudi plugin are named; the plugins as shipped pass, and so do the corpus
controls reading any port or link down as the fault.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant, wrapped

import rayaccel
import rayaccel_gaudi.plugin
from rayaccel_conformance.checks.down_records import like_groups, with_only
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_gaudi.health import health_of
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_down_ports import LINKS_MACHINE, PORTS_MACHINE, LinksDownByShare, PortsDownFromThree

INVARIANT = "invariant one-port-down-is-enough"
GAUDI = Path(rayaccel_gaudi.plugin.__file__).parent


class PortsRead(PortsDownFromThree):
    """The tool's port lines read right: a port DOWN degrades the card."""

    tolerance = 1


class LinksRead(LinksDownByShare):
    """The link library read right: an inactive link degrades the card."""

    def degrades(self, states: list[int]) -> bool:
        return 0 in states


@pytest.mark.parametrize(("shape", "machine", "fragment"), [
    (PortsDownFromThree, PORTS_MACHINE, "with only `acme-smi ports` line 17 ('card 2 port  0:\\tUP' -> 'card 2 port  "
     "0:\\tDOWN') switched, ACME-0002-5e1f-4c2a-9d3b-000000000002 is healthy"),
    (LinksDownByShare, LINKS_MACHINE, "with only library acmelink cards.2.links.0.state (1 -> 0) switched, "
     "ACME-0002-5e1f-4c2a-9d3b-000000000002 is healthy")], ids=["tool-lines-from-three", "library-links-by-share"])
def test_a_tolerance_of_ports_or_links_down_is_named(shape: type[Healthy], machine: str, fragment: str) -> None:
    plugin = mutant(shape)
    said = failure(plugin, "RAC203", machine)
    assert f"{INVARIANT}, {plugin.name}/{machine} under fault " in said, said
    assert fragment in said, said


@pytest.mark.parametrize(("cls", "machine"), [(PortsRead, PORTS_MACHINE), (LinksRead, LINKS_MACHINE)],
                         ids=["tool-lines", "library-links"])
def test_a_plugin_taking_any_port_down_as_the_fault_passes_on_the_same_machine(cls: type[Healthy],
                                                                               machine: str) -> None:
    name = "c-" + cls.__name__.lower()
    assert "faults as declared" in evidence(cls(name), "RAC203", machine)


def ports_from_three(host: rayaccel.Host, devices: list[rayaccel.Device]) -> list[rayaccel.HealthReport]:
    """g2's edit: internal ports DOWN degrade a module only once three (one peer's worth) are down."""
    snapshot = rayaccel_gaudi.plugin.quiet_probe(host, port_types=True, port_states=True)
    modules = snapshot.by_uuid() if snapshot else {}
    out = []
    for report in health_of(snapshot, devices):
        module = modules.get(report.device)
        if module is not None and 0 < len(module.ports("internal", "down")) < 3:
            reasons = [r for r in report.reasons if r.code != "scale-up-port-down"]
            degraded = any(r.code == "driver-not-operational" for r in reasons)
            state = report.state if report.state == "unhealthy" or degraded else "healthy"
            report = rayaccel.HealthReport(device=report.device, state=state, reasons=reasons)
        out.append(report)
    return out


@pytest.mark.parametrize("fixture", ["hls-gaudi2", "hls-gaudi3"])
def test_g2s_edit_on_the_gaudi_plugin_is_named(fixture: str) -> None:
    subject = wrapped(rayaccel_gaudi.plugin, "gaudi", str(GAUDI), rayaccel_health=ports_from_three)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC203"].function(subject, f"gaudi/{fixture}")
    said = str(failed.value)
    assert f"{INVARIANT}, gaudi/{fixture} under fault " in said, said
    assert "('port  0:\\tUP' -> 'port  0:\\tDOWN') switched, 01P0-" in said and " is healthy: " in said, said


@pytest.mark.parametrize("fixture", ["hls-gaudi2", "hls-gaudi3"])
def test_the_gaudi_plugin_as_shipped_degrades_on_one_internal_port_down(fixture: str) -> None:
    subject = wrapped(rayaccel_gaudi.plugin, "gaudi", str(GAUDI))
    assert "faults as declared" in str(CHECKS["RAC203"].function(subject, f"gaudi/{fixture}"))


def _listing(states: list[str]) -> dict[str, Any]:
    return {"commands": {"tool -n link": {"stdout": "".join(f"port {i}:\t{s}\n" for i, s in enumerate(states))}}}


def test_like_records_are_those_one_listing_switches_the_same_way() -> None:
    base = _listing(["UP", "UP", "UP", "UP"])
    under = _listing(["DOWN", "DOWN", "UP", "DOWN"])
    [group] = like_groups(base, under)
    assert [r.at for r in group] == [(0,), (1,), (3,)]
    kept = with_only(base, under, group, group[-1])
    assert kept == _listing(["UP", "UP", "UP", "DOWN"])
    # One record switched, a count moved, or a line changed in two places: no like records.
    assert like_groups(base, _listing(["DOWN", "UP", "UP", "UP"])) == []
    counts = {"files": {"/sys/x/0/errors": "0\n", "/sys/x/1/errors": "0\n"}}
    assert like_groups(counts, {"files": {"/sys/x/0/errors": "3\n", "/sys/x/1/errors": "3\n"}}) == []
    assert like_groups({"commands": {"t": {"stdout": "a UP UP\nb UP UP\n"}}},
                       {"commands": {"t": {"stdout": "a DOWN DOWN\nb DOWN DOWN\n"}}}) == []


def test_files_and_library_states_switched_off_are_like_records() -> None:
    files = {"files": {f"/sys/class/infiniband/hca0/ports/{n}/state": "ACTIVE\n" for n in (1, 2)}}
    down = {"files": {f"/sys/class/infiniband/hca0/ports/{n}/state": "INACTIVE\n" for n in (1, 2)}}
    [group] = like_groups(files, down)
    assert len(group) == 2
    library = {"libraries": {"nvml": {"devices": {"0": {"nvlink": {str(n): {"state": 1, "tx": 1} for n in range(3)}}}}}}
    off = {"libraries": {"nvml": {"devices": {"0": {"nvlink": {str(n): {"state": 0, "tx": 0} for n in range(3)}}}}}}
    [group] = like_groups(library, off)
    assert [r.at[-1] for r in group] == ["state", "state", "state"]  # a counter's 1 -> 0 is no state
