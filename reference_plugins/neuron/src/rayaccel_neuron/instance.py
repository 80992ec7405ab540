"""The EC2 instance this host is, and whether it is part of a Trn2 UltraServer.

The instance type comes from DMI: on Nitro instances ``/sys/class/dmi/id/product_name`` (a link into
``/sys/devices/virtual/dmi/id/``) holds it, e.g. ``trn1.32xlarge``; the Neuron driver reads the same
file to recognise UltraServer instance types. IMDS would need IMDSv2's PUT for a token, which the
host seam does not offer (and a metadata round trip is not needed for a file the kernel already has).

UltraServer membership: instance types ``trn2u.48xlarge`` (and the driver's ``trn2p``/``trn2eu``
variants) are UltraServer nodes. An UltraServer of four hosts can run as one 4-node group, two 2-node groups
or four 1-node ones: the Neuron UltraServer set-up (AWS's k8s-ultraserver-init-script) writes
``NEURON_RT_ULTRASERVER_MODE`` (1 = 4 nodes, 2 and 3 = 2 nodes, horizontal and vertical, 4 = 1 node),
``NEURON_GLOBAL_TOPOID`` (this node's place in the group) and ``NEURON_GLOBAL_TOPOID0_HOST`` (the leader's
host name, the group's id) into the environment. Without a mode the set-up's default, 4 nodes, is assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

from rayaccel import Host, malformed, plain_int, vendor_int

DMI_PRODUCT_NAME = "/sys/devices/virtual/dmi/id/product_name"
DMI_PRODUCT_NAME_LINK = "/sys/class/dmi/id/product_name"
ULTRASERVER_INSTANCE_TYPES = frozenset({"trn2u.48xlarge", "trn2p.48xlarge", "trn2eu.48xlarge"})
ULTRASERVER_HOSTS = 4
ENV_TOPOID = "NEURON_GLOBAL_TOPOID"
ENV_LEADER = "NEURON_GLOBAL_TOPOID0_HOST"
ENV_MODE = "NEURON_RT_ULTRASERVER_MODE"
#: NEURON_RT_ULTRASERVER_MODE -> hosts in the group (X4, X2H, X2V, X1 in AWS's init script).
HOSTS_BY_MODE = {1: 4, 2: 2, 3: 2, 4: 1}


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


def ultraserver_place(host: Host, instance: str | None) -> UltraServerPlace | None:
    if instance not in ULTRASERVER_INSTANCE_TYPES:
        return None
    leader = host.getenv(ENV_LEADER)
    if not leader:
        return None
    mode = (host.getenv(ENV_MODE) or "").strip()
    number = plain_int(mode)
    hosts = HOSTS_BY_MODE.get(number, ULTRASERVER_HOSTS) if number is not None else ULTRASERVER_HOSTS
    if mode and number not in HOSTS_BY_MODE:
        malformed(ENV_MODE, mode, f"one of {sorted(HOSTS_BY_MODE)}; {ULTRASERVER_HOSTS} hosts are assumed")
    raw = host.getenv(ENV_TOPOID)
    node = vendor_int(raw, ENV_TOPOID, maximum=hosts - 1) if raw else None
    return UltraServerPlace(group=leader, node=node, hosts=hosts)
