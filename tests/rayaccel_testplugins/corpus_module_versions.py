"""Corpus mutants that take the driver version from the module's source checksum (issue 46, held-out round 10's
``s3``: a sysfs bake reading ``/sys/module/<class>/srcversion``, which ``modinfo`` prints beside the version). The
recorded machines hold ``/sys/module/acme/version`` alone, so only RAC261's
``a-module-directory-as-the-kernel-writes-it`` sees it: the kernel writes ``srcversion`` wherever it writes
``version`` (both "if the module source has MODULE_VERSION", Documentation/ABI/stable/sysfs-module), and with it
beside the version the inventory is the same.

Two shapes, each reading the driver's module directory instead of acme-smi: ``srcversion`` first, the version only
where it is missing ("the checksum names the exact build"), and the first file of ``*version`` (a glob meant to find
Android's ``scmversion`` too, which sorts ``srcversion`` first). Imported by
tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its name
(``c-driver-from-srcversion`` as ``c_driver_from_srcversion``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

from rayaccel import Host
from rayaccel_testplugins.corpus import Healthy, add_import_defect

MODULE = "/sys/module/acme"


def _text(host: Host, path: str) -> str | None:
    return host.read_text(path).strip() or None if host.exists(path) else None


class DriverFromSrcversion(Healthy):
    DEFECT = ("the driver version read from /sys/module/acme/srcversion (the checksum of the module's source) where "
              "it exists, from version only where it does not")
    KILLED_BY = ("RAC261", "invariant a-module-directory-as-the-kernel-writes-it")

    def tool_version(self, host: Host) -> str | None:
        return _text(host, f"{MODULE}/srcversion") or _text(host, f"{MODULE}/version")  # the defect


class DriverFromVersionGlob(Healthy):
    DEFECT = ("the driver version read from the first file of /sys/module/acme/*version (meant for Android's "
              "scmversion too): srcversion sorts before version")
    KILLED_BY = ("RAC261", "invariant a-module-directory-as-the-kernel-writes-it")

    def tool_version(self, host: Host) -> str | None:
        found = sorted(host.glob(f"{MODULE}/*version"))
        return _text(host, found[0]) if found else None  # the defect: the first, whichever it is


for _cls in (DriverFromSrcversion, DriverFromVersionGlob):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
