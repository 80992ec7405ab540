"""Held-out grading, round 14 (issue 46, lane K1): the hosts of one multi-host domain name it alike (RAC202's
``invariant one-domain-one-id-on-its-hosts``).

``e1`` (a Neuron wrapper) named its UltraServer domain ``<group>-node<N>``, "two nodes' domains must not be confused",
so the two hosts of one X2H group each reported another id and no scheduler could place a job on both. It was killed
only through the fixture's expected domains, and ``e1e``, those edited to the code's answer, graded ``supported``. The
fixture records one host of the group; the others are that host with the numbers AWS's set-up gives each worker
moved (``NEURON_RT_ULTRASERVER_NODE_ID``, ``NEURON_GLOBAL_TOPOID``), so the check moves each and gathers the places
each id is reported at: a group is one id at several places.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from mutant_grading import graded, wrapped

import rayaccel_neuron.plugin as neuron_plugin
from rayaccel import Device, Host, Topology
from rayaccel.hosts.fixtures import merge_patch
from rayaccel_conformance.checks.shared_domains import unshared_domain_errors
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import corpus_shared_domains
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_shared_domains import SHARED_DOMAIN_MUTANTS, fabric, group_id, joined

NEURON_PACKAGE = Path(neuron_plugin.__file__).parent
SHIPPED = "trn2u.48xlarge-ultraserver-x2"
INVARIANT = "invariant one-domain-one-id-on-its-hosts"
#: The shipped fixture's recorded workers of other groups and set-ups (lane H4's), each tried as the node itself.
WORKERS = ("x2h-second-pair", "x4-second-ultraserver", "x2h-set-up-without-ids")


def e1_topology(host: Host, devices: list[Device]) -> Topology:
    """e1's edit: the Neuron plugin's UltraServer domain named after the node's place in its group."""
    topology = neuron_plugin.rayaccel_topology(host, devices)
    domains = [d.model_copy(update={"id": f"{d.id}-node{d.host_index}"}) if d.kind == "ultraserver" else d
               for d in topology.domains]
    return topology.model_copy(update={"domains": domains})


def neuron_with(tmp_path: Path | None = None, **hooks: Any) -> Any:
    extra = {"rayaccel_fixture_dirs": (lambda: [str(tmp_path)])} if tmp_path else {}
    return wrapped(neuron_plugin, "neuron", str(NEURON_PACKAGE), **extra, **hooks)


def worker_fixture(tmp_path: Path, fault: str, unset: tuple[str, ...] = ()) -> str:
    """The shipped fixture with its fault ``fault``'s state as the node (no faults), ``unset`` variables left out."""
    data = yaml.safe_load((NEURON_PACKAGE / "fixtures" / f"{SHIPPED}.yaml").read_text(encoding="utf-8"))
    recorded = next(f for f in data["faults"] if f["name"] == fault)
    name = f"{SHIPPED}-{fault}{'-unset' if unset else ''}"
    host = merge_patch(data["host"], recorded["patch"])
    host["env"] = {k: v for k, v in host["env"].items() if k not in unset}
    data |= {"name": name, "host": host, "faults": []}
    (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return f"neuron/{name}"


def test_e1s_domain_named_per_node_fails_rac202_and_the_neuron_plugin_passes() -> None:
    ref = f"neuron/{SHIPPED}"
    edited = neuron_with(rayaccel_topology=e1_topology)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC202"].function(edited, ref)
    said = str(failed.value)
    assert f"{INVARIANT}: {ref}: ultraserver domain '7f3a9c0e12b4d5e6-node1' spans 2 hosts" in said, said
    assert "'7f3a9c0e12b4d5e6-node0' at place 0, '7f3a9c0e12b4d5e6-node1' at place 1" in said, said
    assert said.count(INVARIANT) == 1 and "NEURON_RT_ULTRASERVER_NODE_ID" in said, said
    assert "consistent" in str(CHECKS["RAC202"].function(neuron_with(), ref))


@pytest.mark.parametrize("unset", [(), ("NEURON_RT_ULTRASERVER_SERVER_ID", "NEURON_RT_ULTRASERVER_NODE_ID")],
                         ids=["with-ids", "without-ids"])
@pytest.mark.parametrize("fault", WORKERS)
def test_every_recorded_worker_shares_its_groups_id_and_e1s_edit_does_not(tmp_path: Path, fault: str,
                                                                          unset: tuple[str, ...]) -> None:
    # Without the ids the group is '<worker 0's host>.<k>' and the place the worker number modulo the group's hosts:
    # moving NEURON_GLOBAL_TOPOID moves both, each group still one id at every place.
    ref = worker_fixture(tmp_path, fault, unset)
    right = neuron_with(tmp_path)
    assert unshared_domain_errors(right, right.fixture(ref)) == []
    edited = neuron_with(tmp_path, rayaccel_topology=e1_topology)
    said = unshared_domain_errors(edited, edited.fixture(ref))
    assert len(said) == 1 and said[0].startswith(f"{INVARIANT}: {ref}: ultraserver domain"), said


def _plugin(mutant: type[Healthy]) -> Healthy:
    return next(p for p in vars(corpus_shared_domains).values() if type(p) is mutant)


@pytest.mark.parametrize("mutant", SHARED_DOMAIN_MUTANTS, ids=lambda cls: cls.__name__)
def test_a_domain_named_after_the_node_fails_rac202_naming_it(mutant: type[Healthy]) -> None:
    plugin = _plugin(mutant)
    subject = graded(plugin)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC202"].function(subject, f"{plugin.name}/acme-4")
    said = str(failed.value)
    assert mutant.KILLED_BY == ("RAC202", INVARIANT)
    assert said.count(INVARIANT) == 1 and "ACME_FABRIC_WORKER (stated 1)" in said, said


@pytest.mark.parametrize("mutant", SHARED_DOMAIN_MUTANTS, ids=lambda cls: cls.__name__)
def test_the_same_fabric_named_by_its_group_passes(mutant: type[Healthy]) -> None:
    class Right(mutant):  # type: ignore[misc]
        def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
            setup = joined(host)
            return fabric(host, devices, group_id(*setup) if setup else None)

    plugin = Right(f"c-right-{mutant.__name__.lower()[-12:]}")
    subject = graded(plugin)
    assert unshared_domain_errors(subject, subject.fixture(f"{plugin.name}/acme-4")) == []
