"""Held-out grading, round 17 (issue 46, lane J13): one port down is one lane less (``invariant
one-port-down-is-a-lane-less``, RAC203).

The Gaudi wrapper ``g2`` spread a module's internal ports UP over every module of the box, itself included (21 // 8 = 2
lanes a pair, where the box wires 3 to each of 7 peers), and only hls-gaudi2's ``expected.link_lanes`` said 3: with
those set to 2 (``g2e``) it reached ``supported``. The tool states each port UP or DOWN (``hl-smi -n link``), and a
port DOWN is a lane lost: RAC203 now applies each fault that switches several like records off and takes lanes from
the node's links with one of those records switched only, and the links must still lose a lane (g2's 20 // 8 is still
2). Both corpus shapes and g2's edit on the Gaudi plugin are named; the corpus controls counting the ports up over a
card's peers pass, and so does the Gaudi plugin as shipped (test_conformance_heldout16_down_ports).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutant_grading import evidence, failure, mutant, wrapped

import rayaccel
import rayaccel_gaudi.plugin
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_gaudi.topology import topology_of
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_lane_ports import FILES_MACHINE, TOOL_MACHINE, LanesAsWired, LanesOverEveryCard

INVARIANT = "invariant one-port-down-is-a-lane-less"
GAUDI = Path(rayaccel_gaudi.plugin.__file__).parent


class LinesOverPeers(LanesOverEveryCard):
    """The tool's port lines read right: a card's ports up spread over its peers."""

    itself_among_peers = False


class FilesCounted(LanesAsWired):
    """The port files read right: a link's lanes are the ports up."""

    as_wired = False


@pytest.mark.parametrize(("shape", "machine", "fragment"), [
    (LanesOverEveryCard, TOOL_MACHINE, "with only `acme-smi ports` line 19 ('card 2 port 0:\\tUP' -> 'card 2 port "
     "0:\\tDOWN') switched, the links keep every lane (12 in all)"),
    (LanesAsWired, FILES_MACHINE, "with only file /sys/class/acme/acme2/ports/0/state ('up' -> 'down') switched, the "
     "links keep every lane (18 in all)")], ids=["tool-lines-over-every-card", "port-files-as-wired"])
def test_lanes_that_do_not_follow_one_port_down_are_named(shape: type[Healthy], machine: str, fragment: str) -> None:
    plugin = mutant(shape)
    said = failure(plugin, "RAC203", machine)
    assert f"{INVARIANT}, {plugin.name}/{machine} under fault ports-down-2: it switches 9 records off" in said, said
    assert fragment in said, said


@pytest.mark.parametrize(("cls", "machine"), [(LinesOverPeers, TOOL_MACHINE), (FilesCounted, FILES_MACHINE)],
                         ids=["tool-lines", "port-files"])
def test_lanes_counted_from_the_ports_up_pass_on_the_same_machine(cls: type[Healthy], machine: str) -> None:
    name = "c-" + cls.__name__.lower()
    assert "faults as declared" in evidence(cls(name), "RAC203", machine)


def lanes_over_the_box(host: rayaccel.Host, devices: list[rayaccel.Device]) -> rayaccel.Topology:
    """g2's edit: each module's internal ports UP spread over every module of the box, itself included."""
    snapshot = rayaccel_gaudi.plugin.quiet_probe(host, port_types=True, port_states=True)
    topology: rayaccel.Topology = topology_of(snapshot, devices, host.name)
    if snapshot is None:
        return topology
    modules = snapshot.by_uuid()
    up = {d.id: len(modules[d.id].ports("internal", "up")) for d in devices if d.id in modules}
    lanes = {(link.a, link.b): min(up[link.a], up[link.b]) // len(up) for link in topology.links}
    links = [link.model_copy(update={"lanes": lanes[(link.a, link.b)]}) for link in topology.links
             if lanes[(link.a, link.b)] > 0]
    return rayaccel.Topology(links=links, affinities=topology.affinities, domains=topology.domains)


def test_g2s_edit_on_the_gaudi_plugin_is_named() -> None:
    subject = wrapped(rayaccel_gaudi.plugin, "gaudi", str(GAUDI), rayaccel_topology=lanes_over_the_box)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC203"].function(subject, "gaudi/hls-gaudi2")
    said = str(failed.value)
    assert f"{INVARIANT}, gaudi/hls-gaudi2 under fault scale-up-ports-all-down: it switches 21 records" in said, said
    assert "('port  0:\\tUP' -> 'port  0:\\tDOWN') switched, the links keep every lane (56 in all)" in said, said
