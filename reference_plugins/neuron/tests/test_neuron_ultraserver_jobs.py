"""A job of several UltraServer groups, as AWS's init script sets its workers up.

aws-neuron/aws-neuron-sdk ``src/k8/k8s-ultraserver-init-script.sh`` (3afa0fd) asks every worker of a job for the
driver's ``server_id_<nodes>`` and ``node_id_<nodes>`` (their defaults, ``0000000000000000`` and -1, where the
driver has none: X1), sorts the ``server:node:fqdn`` lines, numbers them from 0 (``NEURON_GLOBAL_TOPOID``), takes
the first line's host for ``NEURON_GLOBAL_TOPOID0_HOST`` and writes those two with the mode, the server id and the
node id on each worker. :func:`set_up_job` does the same, so each test builds every worker of one job.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rayaccel import Domain
from rayaccel.testing import PluginManager, SimulatedHost, build_inventory, load_fixture, parse_fixture
from rayaccel_neuron import instance, plugin

ULTRA = Path(plugin.__file__).parent / "fixtures" / "trn2u.48xlarge-ultraserver-x2.yaml"
MODES = {"X4": 1, "X2H": 2, "X2V": 3, "X1": 4}
#: The job's workers: (the driver's server_id_<nodes>, node_id_<nodes>, hostname --fqdn), in no order.
Worker = tuple[str, int, str]


@pytest.fixture(scope="module")
def manager(rayaccel_manager: PluginManager) -> PluginManager:
    return rayaccel_manager  # the testing kit's: just this plugin, under its entry-point name


def job(mode: str, groups: list[str], hosts: int) -> list[Worker]:
    """``groups`` of ``hosts`` nodes each (X1: servers and nodes unnamed), host names given out of the script's
    order so the numbering is the script's sort, not the list's."""
    if mode == "X1":
        return [(instance.NO_SERVER_ID, instance.NO_NODE_ID, f"ip-10-1-9-{9 - i}.ec2.internal")
                for i in range(len(groups))]
    return [(server, node, f"ip-10-1-{g}-{9 - node}.ec2.internal")
            for g, server in enumerate(groups) for node in reversed(range(hosts))]


def set_up_job(mode: str, workers: list[Worker], ids: bool = True) -> dict[str, dict[str, str]]:
    """Each worker's environment by host name, as the init script writes it (``ids=False``: a set-up written by
    hand with the mode and the numbering only)."""
    ordered = sorted(workers, key=lambda w: (w[0], str(w[1]), w[2]))  # sort -t: -k1,1 -k2,2 -k3,3
    leader = ordered[0][2]
    envs = {}
    for topoid, (server, node, fqdn) in enumerate(ordered):
        env = {instance.ENV_TOPOID: str(topoid), instance.ENV_LEADER: leader, instance.ENV_MODE: str(MODES[mode])}
        if ids:
            env |= {instance.ENV_SERVER_ID: server, instance.ENV_NODE_ID: str(node)}
        envs[fqdn] = env
    return envs


def worker_domain(manager: PluginManager, env: dict[str, str]) -> tuple[Domain | None, list[str]]:
    """The UltraServer domain of the fixture's node set up with ``env`` alone, and the problems it reports."""
    data = load_fixture(ULTRA).model_dump(mode="json", by_alias=True)
    data["host"]["env"] = env
    result = build_inventory(manager, SimulatedHost(parse_fixture(data, f"worker with {env}")))
    family = result.family("neuron")
    assert family is not None and len(family.devices) == 16
    domains = family.topology.domains
    assert len(domains) <= 1
    return (domains[0] if domains else None), [f"{p.code}: {p.message}" for p in result.problems]


@pytest.mark.parametrize("ids", [True, False], ids=["script", "mode-and-numbering-only"])
@pytest.mark.parametrize(("mode", "groups", "hosts"), [
    ("X2H", ["u5wy80u0o2saugxy", "ygml2651y0lwdd46"], 2),   # deploy/eks/ultraserver.rst's server-id-2 labels
    ("X2V", ["c41d0b7e9a2f6e83", "7f3a9c0e12b4d5e6"], 2),
    ("X4", ["bog79p1y8tetj5uu", "9b5e2d7c03a1f4e8"], 4),    # its server-id-4 label, and a second UltraServer
    ("X1", ["-", "-", "-"], 1),
])
def test_each_group_of_a_job_is_its_own_domain_with_each_node_in_its_place(
        manager: PluginManager, mode: str, groups: list[str], hosts: int, ids: bool) -> None:
    """A 4-worker X2H or X2V job is two pairs, an 8-worker X4 job two UltraServers, a 3-worker X1 job three single
    nodes: NEURON_GLOBAL_TOPOID runs over the whole job and worker 0's host names all of it, so the group is the
    server id where the script writes one, else the job's topoid // nodes-th group, the place the node id, else
    topoid mod nodes. No set-up the script (or a hand writing its mode and numbering) makes is malformed."""
    workers = job(mode, groups, hosts)
    envs = set_up_job(mode, workers, ids)
    members: dict[str, list[int | None]] = {}
    for fqdn, env in envs.items():
        domain, problems = worker_domain(manager, env)
        assert problems == [], (fqdn, env, problems)
        assert domain is not None and domain.kind == "ultraserver", (fqdn, env)
        assert (domain.hosts, domain.size) == (hosts, 16 * hosts), (fqdn, env, domain)
        members.setdefault(domain.id, []).append(domain.host_index)
    assert len(members) == len(groups), members
    assert all(sorted(places, key=str) == list(range(hosts)) for places in members.values()), members
    if ids and mode != "X1":
        assert set(members) == set(groups)
        # The driver's node id is the place: the script lists a group's nodes in node-id order.
        for server, node, fqdn in workers:
            domain, _ = worker_domain(manager, envs[fqdn])
            assert domain is not None and (domain.id, domain.host_index) == (server, node)


def test_a_one_group_job_keeps_worker_0_s_host_as_its_name_without_server_ids(manager: PluginManager) -> None:
    """The job's first group is named after the host that leads it, as every one-group job was; the next ones
    after it and their number, a name no host has (a DNS name never ends in a number label)."""
    envs = set_up_job("X2H", job("X2H", ["a", "b"], 2), ids=False)
    named = {worker_domain(manager, env)[0].id for env in envs.values()}  # type: ignore[union-attr]
    leader = next(iter(envs.values()))[instance.ENV_LEADER]
    assert named == {leader, f"{leader}.1"}


X2H_WORKER_1 = {instance.ENV_MODE: "2", instance.ENV_TOPOID: "1", instance.ENV_LEADER: "ip-10-1-0-4.ec2.internal",
                instance.ENV_SERVER_ID: "u5wy80u0o2saugxy", instance.ENV_NODE_ID: "1"}


@pytest.mark.parametrize(("edit", "variable", "place"), [
    # X1 reads no server id or node id ("only valid for node configs > 1"): the node is a group of itself.
    ({instance.ENV_MODE: "4", instance.ENV_NODE_ID: "-1"}, instance.ENV_SERVER_ID,
     ("ip-10-1-0-4.ec2.internal.1", 1, 0)),
    ({instance.ENV_MODE: "4", instance.ENV_SERVER_ID: "0000000000000000"}, instance.ENV_NODE_ID,
     ("ip-10-1-0-4.ec2.internal.1", 1, 0)),
    # Not the driver's 16 of [0-9a-z]: the job's numbering names the group instead.
    ({instance.ENV_SERVER_ID: "u5wy80u0o2saugxy\x1b[2J"}, instance.ENV_SERVER_ID, ("ip-10-1-0-4.ec2.internal", 2, 1)),
    ({instance.ENV_SERVER_ID: "U5WY80U0O2SAUGXY-extra"}, instance.ENV_SERVER_ID, ("ip-10-1-0-4.ec2.internal", 2, 1)),
    # node_id_2 is 0 or 1; a node id that is no number: the place is the numbering's.
    ({instance.ENV_NODE_ID: "3"}, instance.ENV_NODE_ID, ("u5wy80u0o2saugxy", 2, 1)),
    ({instance.ENV_NODE_ID: "one"}, instance.ENV_NODE_ID, ("u5wy80u0o2saugxy", 2, 1)),
    ({instance.ENV_TOPOID: "1.5"}, instance.ENV_TOPOID, ("u5wy80u0o2saugxy", 2, 1)),
    ({instance.ENV_TOPOID: "-1", instance.ENV_NODE_ID: "-1"}, instance.ENV_TOPOID, ("u5wy80u0o2saugxy", 2, None)),
    ({instance.ENV_MODE: "0"}, instance.ENV_MODE, ("u5wy80u0o2saugxy", 4, 1)),  # UNSET: the script's default, 4
    ({instance.ENV_LEADER: "ip 10 1 0 4", instance.ENV_SERVER_ID: "0000000000000000"}, instance.ENV_LEADER, None),
])
def test_a_value_the_script_never_writes_is_malformed_and_the_rest_still_place_the_node(
        manager: PluginManager, edit: dict[str, str], variable: str,
        place: tuple[str, int, int | None] | None) -> None:
    domain, problems = worker_domain(manager, X2H_WORKER_1 | edit)
    assert len(problems) == 1 and problems[0].startswith(f"malformed-value: {variable} is "), problems
    assert (None if domain is None else (domain.id, domain.hosts, domain.host_index)) == place


def test_worker_0_s_host_without_the_worker_s_number_is_no_group(manager: PluginManager) -> None:
    """Without a server id, the job's first host and no topoid cannot say which of the job's groups this is."""
    env = {instance.ENV_MODE: "2", instance.ENV_LEADER: "ip-10-1-0-4.ec2.internal"}
    domain, problems = worker_domain(manager, env)
    assert domain is None
    assert len(problems) == 1 and problems[0].startswith(f"malformed-value: {instance.ENV_TOPOID} is ''"), problems
    # With the server id the group is known, and the place from the node id.
    domain, problems = worker_domain(manager, env | {instance.ENV_SERVER_ID: "u5wy80u0o2saugxy",
                                                     instance.ENV_NODE_ID: "0"})
    assert problems == [] and domain is not None and (domain.id, domain.host_index) == ("u5wy80u0o2saugxy", 0)
