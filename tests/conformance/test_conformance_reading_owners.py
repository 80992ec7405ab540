"""Which device a reading on the host belongs to, by the path of its file (readings.owned_by): every check that
ties a metric, a link or a fault to the reading it came from starts there, so a correct plugin must not be
blamed because of how its vendor's class directory is spelled."""

from __future__ import annotations

import pytest

from rayaccel import Device
from rayaccel_conformance.checks.readings import Reading, owned_by


def _file(path: str) -> Reading:
    return Reading("file", path, (), 1.0)


def _owners(path: str, count: int = 40) -> list[int]:
    return [i for i in range(count) if owned_by(_file(path), Device(id=f"dev-{i}", index=i, product_name="X1"))]


@pytest.mark.parametrize(("path", "owner"), [
    # the template's sysfs layout for a vendor named "F3 Devices": class f3, entries f30..f33
    ("/sys/class/f3/f31/links/f32/bandwidth_mbps", 1),
    ("/sys/class/acme/acme1/links/acme2/bandwidth_mbps", 1),
    ("/sys/class/x2/x23/temp", 3),
    ("/dev/accel/accel2/status", 2),
    # a numbered entry below the device's own (hwmon) is not the device
    ("/sys/class/drm/card0/device/hwmon/hwmon3/temp1_input", 0),
])
def test_a_file_belongs_to_the_device_its_class_entry_numbers(path: str, owner: int) -> None:
    assert _owners(path) == [owner]


def test_a_file_naming_no_numbered_entry_belongs_to_no_device() -> None:
    assert _owners("/opt/vendor/state") == []
