"""Corpus mutants whose visible-devices parser places a device's own id by something other than the device that has
it (issue 46, held-out round 16's ``l2``: a python-library bake reading a UUID entry's last group as hex, so
``WESTER-...-0002`` named unit 2 whatever device had that UUID). Its fixture's ids end in their index, so the answer
was right there; a UUID is assigned to the device, not its place. RAC114's ``an-id-names-its-device`` moves the
devices' ids among them at the host seam and asks each device's own id again.

Two shapes: the id's last group read as a number (``ACME-0000-...-000000000002`` -> ``'2'``); the ids mapped to
units by the first inventory the process discovered, kept for the process (a node whose devices are others is
answered from the first one's map).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-visible-unit-from-id-digits`` as
``c_visible_unit_from_id_digits``).
"""

from __future__ import annotations

from rayaccel import Device, Host
from rayaccel_testplugins.corpus import Healthy, add_import_defect


class VisibleUnitFromIdDigits(Healthy):
    DEFECT = ("rayaccel_parse_visible reads a device's own id (a UUID) as the unit its last group spells: the device "
              "with another number's id is named instead")
    KILLED_BY = ("RAC114", "invariant an-id-names-its-device")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        entries = [e.strip() for e in value.split(",") if e.strip()]
        return [str(int(e.rsplit("-", 1)[1])) if e.upper().startswith("ACME-") else e for e in entries]


class VisibleIdsFromFirstNode(Healthy):
    DEFECT = ("rayaccel_parse_visible places a device's own id by the ids the process's first discovery saw, kept "
              "for the process: on a node whose devices have other ids' places, another device is named")
    KILLED_BY = ("RAC114", "invariant an-id-names-its-device")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.unit_of: dict[str, str] = {}

    def rayaccel_discover(self, host: Host) -> list[Device]:
        devices = super().rayaccel_discover(host)
        if not self.unit_of:  # "the devices of a node do not change while it runs"
            self.unit_of = {d.id: str(d.index) for d in devices}
        return devices

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        return [self.unit_of.get(e.strip(), e.strip()) for e in value.split(",") if e.strip()]


MUTANTS = (VisibleUnitFromIdDigits, VisibleIdsFromFirstNode)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
