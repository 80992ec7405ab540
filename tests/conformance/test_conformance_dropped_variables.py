"""RAC202's ``a-group-without-its-variable-is-no-group`` on a worker of a job's later UltraServer group (lane H5, s58).

AWS's init script (aws-neuron/aws-neuron-sdk ``src/k8/k8s-ultraserver-init-script.sh``) numbers a job's workers
over all its groups; without the server id the Neuron plugin names the k-th group ``<worker 0's host>.<k>``. The
check accepted only an id the host states whole, so the correct plugin failed on such a worker once
``NEURON_RT_ULTRASERVER_SERVER_ID`` was unset. A fixture whose node is that worker (the shipped fixture's recorded
fault states as its host) must pass RAC202 whole; a group made up there (a constant suffix, the node's own host
name) must still fail it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from mutant_grading import wrapped

import rayaccel_neuron.plugin as neuron_plugin
from rayaccel.hosts.fixtures import merge_patch
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.dropped_variables import renamed, stated_names
from rayaccel_conformance.registry import CHECKS, CheckFailed

NEURON_PACKAGE = Path(neuron_plugin.__file__).parent
SHIPPED = "trn2u.48xlarge-ultraserver-x2"
LEADER = "ip-10-1-40-11.us-east-2.compute.internal"
INVARIANT = "invariant a-group-without-its-variable-is-no-group"


def worker_fixture(tmp_path: Path, fault: str) -> str:
    """The shipped fixture with its fault ``fault``'s state as the node itself (no faults), expecting what the fault
    expects; written under ``tmp_path``, its ref returned."""
    data = yaml.safe_load((NEURON_PACKAGE / "fixtures" / f"{SHIPPED}.yaml").read_text(encoding="utf-8"))
    recorded = next(f for f in data["faults"] if f["name"] == fault)
    name = f"{SHIPPED}-{fault}"
    (group, domain), = recorded["expected"]["domains"].items()
    data |= {"name": name, "host": merge_patch(data["host"], recorded["patch"]), "faults": []}
    data["expected"]["domains"] = {group: domain}
    data["expected"]["labels"] |= {"rayaccel.io/scale-up-domain": group,
                                   "rayaccel.io/scale-up-domain-size": str(domain["size"])}
    (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return f"neuron/{name}"


def neuron_with(tmp_path: Path, **hooks: Any) -> Any:
    return wrapped(neuron_plugin, "neuron", str(NEURON_PACKAGE), rayaccel_fixture_dirs=lambda: [str(tmp_path)],
                   **hooks)


@pytest.mark.parametrize(("fault", "group"), [("x2h-second-pair", f"{LEADER}.1"),
                                               ("x4-second-ultraserver", f"{LEADER}.1")])
def test_a_later_group_s_worker_named_from_worker_0_s_host_passes_rac202(tmp_path: Path, fault: str,
                                                                         group: str) -> None:
    ref = worker_fixture(tmp_path, fault)
    subject = neuron_with(tmp_path)
    # The group the check meets with the server id unset: built from the leader's host and the worker's number.
    state = subject.fixture(ref).host
    unset = state.model_copy(update={"env": {k: v for k, v in state.env.items()
                                             if k != "NEURON_RT_ULTRASERVER_SERVER_ID"}})
    built = subject.build(simulated_host(subject.fixture(ref).model_copy(update={"host": unset}))).family("neuron")
    assert [d.id for d in built.topology.domains] == [group]
    said = str(CHECKS["RAC202"].function(subject, ref))
    assert "1 domains, consistent" in said, said


def made_up(how: str) -> Any:
    """The Neuron plugin's place with one edit: a later group's name made up where the server id is unset (a
    constant, the node's own name or its place in the group in it, or worker 0's host read once, from the first
    host it met)."""
    from rayaccel_neuron import instance

    shipped = instance.ultraserver_place
    first: dict[str, str] = {}

    def place(host: Any, instance_type: str | None) -> Any:
        found = shipped(host, instance_type)
        if found is None or host.getenv(instance.ENV_SERVER_ID) or found.group == host.getenv(instance.ENV_LEADER):
            return found
        leader = host.getenv(instance.ENV_LEADER)
        group = {"constant-suffix": f"{leader}.group", "own-host-suffix": f"{leader}.{host.name}",
                 "own-host": host.name, "fixed-number": f"{leader}.1", "node-number": f"{leader}.{found.node}",
                 "leader-read-once": found.group.replace(leader, first.setdefault("leader", leader))}[how]
        return instance.UltraServerPlace(group=group, node=found.node, hosts=found.hosts)
    return place


@pytest.mark.parametrize("fault", ["x2h-second-pair", "x4-second-ultraserver"])
@pytest.mark.parametrize(("how", "why"), [
    ("constant-suffix", f"under an id built from ['{LEADER}'] and '.group', which changes with no number"),
    ("fixed-number", f"under an id built from ['{LEADER}'] and '.1', which changes with no number"),
    ("own-host-suffix", f"under an id built from ['{LEADER}'] and '.ip-10-1-40-12', which changes with no number"),
    ("node-number", f"under an id built from ['{LEADER}'] and '.{{node}}', which changes with no number the host's "
                    "variables state while the node keeps its place {node}"),
    ("own-host", "under an id the host states nowhere, whole or in part"),
    ("leader-read-once", f"under an id holding ['{LEADER}'] that does not follow them: with each renamed where the "
                         f"host states it ('{LEADER}' -> 'jq-21-2-51-22.vt-fbtu-3.dpnqvuf.joufsobm') the group is "
                         f"['{LEADER}.1'], not 'jq-21-2-51-22.vt-fbtu-3.dpnqvuf.joufsobm.1'"),
])
def test_a_later_group_s_name_made_up_fails_rac202_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             fault: str, how: str, why: str) -> None:
    from rayaccel_neuron import instance

    ref = worker_fixture(tmp_path, fault)
    subject = neuron_with(tmp_path)
    monkeypatch.setattr(instance, "ultraserver_place", made_up(how))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC202"].function(subject, ref)
    said = str(failed.value)
    assert f"{INVARIANT}: {ref} with NEURON_RT_ULTRASERVER_SERVER_ID unset: ultraserver domain" in said, said
    assert why.format(node=subject.fixture(ref).host.env[instance.ENV_NODE_ID]) in said, said


def test_a_built_id_follows_its_stated_names_renamed_in_their_own_shape() -> None:
    assert renamed(LEADER) == "jq-21-2-51-22.vt-fbtu-3.dpnqvuf.joufsobm"
    assert renamed("7f3a9c0e12b4d5e6") == "8g4b0d1f23c5e6f7"
    # Whole values with a letter, no letter or digit either side; numbers are left to the id's rest.
    assert stated_names(f"{LEADER}.1", {LEADER, "1", "internal", "us-east"}) == [LEADER]
    assert stated_names("ip-10-1-40-110.group", {"ip-10-1-40-11", "group"}) == ["group"]
