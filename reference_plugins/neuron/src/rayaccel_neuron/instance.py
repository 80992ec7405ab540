"""The EC2 instance this host is, and whether it is part of a Trn2 UltraServer.

The instance type comes from DMI: on Nitro instances ``/sys/class/dmi/id/product_name`` (a link into
``/sys/devices/virtual/dmi/id/``) holds it, e.g. ``trn1.32xlarge``; the Neuron driver reads the same
file to recognise UltraServer instance types. IMDS would need IMDSv2's PUT for a token, which the
host seam does not offer (and a metadata round trip is not needed for a file the kernel already has).

UltraServer membership: instance types ``trn2u.48xlarge`` (and the driver's ``trn2p``/``trn2eu``
variants) are UltraServer nodes; four such hosts share NeuronLink. Which four is not on the host: the
Neuron UltraServer set-up writes ``NEURON_GLOBAL_TOPOID`` (this node's place, 0-3) and
``NEURON_GLOBAL_TOPOID0_HOST`` (the leader's host name, the group's id) into the environment.
"""

from __future__ import annotations

from dataclasses import dataclass

from rayaccel import Host

DMI_PRODUCT_NAME = "/sys/devices/virtual/dmi/id/product_name"
DMI_PRODUCT_NAME_LINK = "/sys/class/dmi/id/product_name"
ULTRASERVER_INSTANCE_TYPES = frozenset({"trn2u.48xlarge", "trn2p.48xlarge", "trn2eu.48xlarge"})
ULTRASERVER_HOSTS = 4
ENV_TOPOID = "NEURON_GLOBAL_TOPOID"
ENV_LEADER = "NEURON_GLOBAL_TOPOID0_HOST"


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


def ultraserver_place(host: Host, instance: str | None) -> UltraServerPlace | None:
    if instance not in ULTRASERVER_INSTANCE_TYPES:
        return None
    leader = host.getenv(ENV_LEADER)
    if not leader:
        return None
    raw = host.getenv(ENV_TOPOID)
    node = int(raw) if raw and raw.isdigit() and int(raw) < ULTRASERVER_HOSTS else None
    return UltraServerPlace(group=leader, node=node)
