"""Corpus mutants that fail when a card's sysfs entry, listed by one call, is gone when the next reads it (issue 46,
mutation round 10's ``tpu.probe:110``: the TPU plugin listing an IOMMU group's ``devices`` with FileNotFoundError
no longer caught, so a chip unbound between ``/dev/vfio``'s listing and its group's raised out of discovery). The
kernel removes a device's directory when it is unbound or removed, and a read that follows answers ENOENT; every
recorded machine is one instant, so both shapes pass every fixture and every single file made missing. RAC211
keeps one card's entry in the class listing and answers every read under it as gone
(``invariant an-entry-gone-when-read-is-no-crash``). Two shapes: each card's entry listed to learn which attribute
files its driver writes, outside the guard of its reads (the hook raises); and every entry's directory tested
before any is read, one gone taken for the driver reloading (every card dropped, nothing said).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-entry-listed-unguarded`` as ``c_entry_listed_unguarded``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

from rayaccel import Device, Host, report_problem
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect


class EntryListedUnguarded(Healthy):
    DEFECT = ("each card's sysfs entry listed to learn which attribute files its driver writes, outside the guard "
              "of its reads: an entry gone between the class listing and its own raises out of discovery")
    KILLED_BY = ("RAC211", "invariant an-entry-gone-when-read-is-no-crash")

    def readable_device(self, host: Host, path: str, driver: str | None) -> Device | None:
        written = set(host.list_dir(path))  # the defect: ENOENT here is not caught
        if "uuid" not in written:
            report_problem("unreadable-device", f"{path} has no uuid file; it is left out")
            return None
        return super().readable_device(host, path, driver)


class EntryGoneAsNoDriver(Healthy):
    DEFECT = ("every card's sysfs entry tested before any is read, one entry gone taken for the driver reloading: "
              "every card dropped for the poll, nothing said")
    KILLED_BY = ("RAC211", "invariant an-entry-gone-when-read-is-no-crash")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        if not all(host.is_dir(path) for path in host.glob(f"{SYSFS}/acme*")):
            return []  # the defect: one card unbound is not the driver going away
        return super().rayaccel_discover(host)


for _cls in (EntryListedUnguarded, EntryGoneAsNoDriver):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
