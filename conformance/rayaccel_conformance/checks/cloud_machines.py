"""The cloud instance type a fixture's host says it is (RAC209).

EC2 writes the instance type into DMI: on a Nitro instance ``/sys/devices/virtual/dmi/id/product_name`` (which
``/sys/class/dmi/id/product_name`` links to) reads e.g. ``trn2u.48xlarge``, the file the Neuron driver reads to
recognise UltraServer instance types. A fixture recorded there is that instance type whatever the fixture is
called, so a cloud hint for the type promises what the fixture's machine offers.
"""

from __future__ import annotations

import re

from rayaccel.hosts.fixtures import Fixture

#: Where EC2 states the instance type on the machine (the DMI product name, and the link sysfs keeps to it).
EC2_PRODUCT_NAME_FILES = ("/sys/devices/virtual/dmi/id/product_name", "/sys/class/dmi/id/product_name")
#: An EC2 instance type: family, '.', size (``trn2u.48xlarge``, ``u-6tb1.56xlarge``); off EC2 the same file names
#: a board (``Standard PC (Q35 + ICH9, 2009)``, Azure's ``Virtual Machine``), which is no instance type.
_EC2_INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")


def stated_instance_types(fixture: Fixture) -> list[tuple[str, str, str]]:
    """(provider, instance type, the file stating it) for each instance type the fixture's host states."""
    stated: list[tuple[str, str, str]] = []
    for path in EC2_PRODUCT_NAME_FILES:
        value = fixture.host.files.get(path, "").strip().lower()
        if _EC2_INSTANCE_TYPE.match(value) and not any(value == t for _, t, _ in stated):
            stated.append(("aws", value, path))
    return stated

