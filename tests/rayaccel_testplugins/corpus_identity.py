"""Corpus mutants that take the machine they run on for the host they answer for (issue 46, held-out round 4: a
label named after ``socket.gethostname()``), two shapes: RAC109.

The conformance suite, an operator's ``rayaccel inventory`` of a recorded fixture and a node built for another
machine all ask a plugin about a host that is not the process's own; the host's name is ``host.hostname``. The
machine's own name, asked outside the seam, is right on the vendor's test box only where the fixture was recorded.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-label-from-gethostname`` as ``c_label_from_gethostname``).
"""

from __future__ import annotations

import platform
import socket

from rayaccel import Device, Domain, FamilyInventory, Host, Topology, to_label_value
from rayaccel_testplugins.corpus import LABEL_PREFIX, Healthy, add_import_defect


class LabelFromGethostname(Healthy):
    DEFECT = ("the node's fabric-domain label is named after socket.gethostname() (the machine the plugin runs on), "
              "not the host it inventories")
    KILLED_BY = ("RAC109", "hostname outside the Host seam (socket.gethostname)")

    def labels(self, inventory: FamilyInventory) -> dict[str, str]:
        return {**super().labels(inventory), f"{LABEL_PREFIX}/fabric-domain": to_label_value(socket.gethostname())}


class DomainFromPlatformNode(Healthy):
    DEFECT = ("the cards' scale-up domain id is made unique across nodes with platform.node() (this machine's name), "
              "not the host's name")
    KILLED_BY = ("RAC109", "hostname outside the Host seam (platform.node)")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        topology = super().rayaccel_topology(host, devices)
        members = [d.id for d in devices]
        domain = Domain(kind="other", id=f"{platform.node()}-mesh", size=len(members), members=members)
        return topology.model_copy(update={"domains": [domain]}) if len(members) > 1 else topology


for _cls in (LabelFromGethostname, DomainFromPlatformNode):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
