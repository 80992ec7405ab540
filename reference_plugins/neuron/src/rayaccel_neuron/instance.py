"""The EC2 instance this host is, and whether it is part of a Trn2 UltraServer.

The instance type comes from DMI: on Nitro instances ``/sys/class/dmi/id/product_name`` (a link into
``/sys/devices/virtual/dmi/id/``) holds it, e.g. ``trn1.32xlarge``; the Neuron driver reads the same
file to recognise UltraServer instance types. IMDS would need IMDSv2's PUT for a token, which the
host seam does not offer (and a metadata round trip is not needed for a file the kernel already has).

UltraServer membership: instance types ``trn2u.48xlarge`` (and the driver's ``trn2p``/``trn2eu``
variants) are UltraServer nodes. An UltraServer of four hosts can run as one 4-node group, two 2-node groups
or four 1-node ones. AWS's UltraServer set-up (aws-neuron/aws-neuron-sdk ``src/k8/k8s-ultraserver-init-script.sh``)
runs once for a job and writes five variables on each of its workers:

* ``NEURON_RT_ULTRASERVER_MODE``: 1 = X4 (4 nodes), 2 = X2H and 3 = X2V (2 nodes), 4 = X1 (1 node); without one
  the set-up's default, 4 nodes, is assumed;
* ``NEURON_RT_ULTRASERVER_SERVER_ID``: the group's id, the driver's ``server_id_<nodes>`` (16 of ``[0-9a-z]``;
  ``0000000000000000``, the script's default, where the driver gives none: always in X1, since "server id and
  node id are only valid for node configs > 1");
* ``NEURON_RT_ULTRASERVER_NODE_ID``: the node's place in its group, ``node_id_<nodes>`` (-1, the default, in X1);
* ``NEURON_GLOBAL_TOPOID``: the worker's number in the whole job, 0 to workers - 1; the workers are numbered
  sorted by server id, node id and host name, so each group's nodes are consecutive, in node-id order;
* ``NEURON_GLOBAL_TOPOID0_HOST``: the host name of worker 0, the same on every worker of the job.

A job may span several groups (eight workers in X4 are two UltraServers), so the group is the server id where
set, else the job's k-th group, k = topoid // nodes, named after worker 0's host (k = 0, the group that host
leads) or that host and k; the place is the node id where set, else topoid mod nodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rayaccel import Host, malformed, plain_int, vendor_int

DMI_PRODUCT_NAME = "/sys/devices/virtual/dmi/id/product_name"
DMI_PRODUCT_NAME_LINK = "/sys/class/dmi/id/product_name"
ULTRASERVER_INSTANCE_TYPES = frozenset({"trn2u.48xlarge", "trn2p.48xlarge", "trn2eu.48xlarge"})
ULTRASERVER_HOSTS = 4
ENV_TOPOID = "NEURON_GLOBAL_TOPOID"
ENV_LEADER = "NEURON_GLOBAL_TOPOID0_HOST"
ENV_MODE = "NEURON_RT_ULTRASERVER_MODE"
ENV_SERVER_ID = "NEURON_RT_ULTRASERVER_SERVER_ID"
ENV_NODE_ID = "NEURON_RT_ULTRASERVER_NODE_ID"
#: NEURON_RT_ULTRASERVER_MODE -> hosts in the group (X4, X2H, X2V, X1 in AWS's init script).
HOSTS_BY_MODE = {1: 4, 2: 2, 3: 2, 4: 1}
#: The init script's values where the driver gives no server id / node id (X1, or a driver without the files).
NO_SERVER_ID, NO_NODE_ID = "0000000000000000", -1
#: The driver's server_id_<nodes>, as AWS's device plugin labels it (ultraserver-server-id-2: u5wy80u0o2saugxy).
SERVER_ID_RE = re.compile(r"[0-9a-z]{16}")
#: ``hostname --fqdn``: DNS labels joined by dots.
HOST_NAME_RE = re.compile(r"(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
                          r"(\.[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?)*")


def _read(host: Host, path: str) -> str | None:
    try:
        return str(host.read_text(path)).strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def instance_type(host: Host) -> str | None:
    value = _read(host, DMI_PRODUCT_NAME) or _read(host, DMI_PRODUCT_NAME_LINK)
    # Off EC2 the field names the board ("Standard PC (Q35 + ICH9, 2009)"): only an EC2 type shape counts.
    if value and "." in value and " " not in value:
        return value.lower()
    return None


@dataclass(frozen=True)
class UltraServerPlace:
    group: str
    node: int | None
    hosts: int = ULTRASERVER_HOSTS


@dataclass(frozen=True)
class SetupVariables:
    """The five variables AWS's init script writes on a worker, as the environment holds them (None: unset)."""

    mode: str | None = None
    topoid: str | None = None
    leader: str | None = None
    server_id: str | None = None
    node_id: str | None = None

    @classmethod
    def of(cls, host: Host) -> SetupVariables:
        return cls(mode=host.getenv(ENV_MODE), topoid=host.getenv(ENV_TOPOID), leader=host.getenv(ENV_LEADER),
                   server_id=host.getenv(ENV_SERVER_ID), node_id=host.getenv(ENV_NODE_ID))


def ultraserver_place(host: Host, instance: str | None) -> UltraServerPlace | None:
    if instance not in ULTRASERVER_INSTANCE_TYPES:
        return None
    return place_in_job(SetupVariables.of(host))


def place_in_job(env: SetupVariables) -> UltraServerPlace | None:
    """This worker's group and place in it, as the init script numbers a job of one or more groups; None where
    the set-up named no group (or a malformed value leaves it unknown: reported)."""
    hosts = _group_hosts(env.mode)
    server = _server_id(env.server_id, hosts)
    leader = _leader(env.leader)
    if server is None and leader is None:
        return None
    raw_topoid, raw_node = (env.topoid or "").strip(), (env.node_id or "").strip()
    topoid = vendor_int(raw_topoid, ENV_TOPOID) if raw_topoid else None
    node = vendor_int(raw_node, ENV_NODE_ID, minimum=NO_NODE_ID, maximum=hosts - 1) if raw_node else None
    if node is None or node == NO_NODE_ID:
        node = topoid % hosts if topoid is not None else None
    if server is not None:
        return UltraServerPlace(group=server, node=node, hosts=hosts)
    if topoid is None or leader is None:
        # Worker 0's host names the job, not which of its groups this is: one group's nodes would join another's.
        if not raw_topoid:
            malformed(ENV_TOPOID, "", f"this worker's number in the job beside {ENV_LEADER} (AWS's init script "
                                      "writes both); the UltraServer group is unknown")
        return None
    k = topoid // hosts
    return UltraServerPlace(group=leader if k == 0 else f"{leader}.{k}", node=node, hosts=hosts)


def _group_hosts(mode: str | None) -> int:
    text = (mode or "").strip()
    number = plain_int(text)
    if text and number not in HOSTS_BY_MODE:
        malformed(ENV_MODE, text, f"one of {sorted(HOSTS_BY_MODE)}; {ULTRASERVER_HOSTS} hosts are assumed")
    return HOSTS_BY_MODE.get(number, ULTRASERVER_HOSTS) if number is not None else ULTRASERVER_HOSTS


def _server_id(raw: str | None, hosts: int) -> str | None:
    text = (raw or "").strip()
    if not text or text == NO_SERVER_ID:
        return None
    if not SERVER_ID_RE.fullmatch(text):
        malformed(ENV_SERVER_ID, text, f"16 of [0-9a-z], the driver's server_id_<nodes> (or {NO_SERVER_ID}: none)")
        return None
    if hosts == 1:
        # The script reads server_id_<nodes> for 2- and 4-node groups only: in X1 the node is a group of itself.
        malformed(ENV_SERVER_ID, text, f"{NO_SERVER_ID} in X1 ({ENV_MODE}=4), where AWS's init script writes no "
                                       "server id")
        return None
    return text


def _leader(raw: str | None) -> str | None:
    text = (raw or "").strip()
    if not text:
        return None
    if not HOST_NAME_RE.fullmatch(text):
        malformed(ENV_LEADER, text, "a host name (hostname --fqdn of the job's worker 0)")
        return None
    return text
