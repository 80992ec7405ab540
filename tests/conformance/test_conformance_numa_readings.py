"""RAC245's finding of where a host states a device's NUMA node, and its rewrite, over the shapes vendors write
(a sysfs file, NVML-style library data, amd-smi-style JSON, a CSV column); the check itself is graded by the
corpus (c-numa-by-index-half, c-numa-from-first-card)."""

from __future__ import annotations

import json

from rayaccel.records import Device
from rayaccel_conformance.checks.numa_readings import moved_host, numa_readings

DEVICE = Device(index=2, id="GPU-2", product_name="X", pci_bus_id="0000:12:00.0", numa_node=1)
HOST = {
    "files": {"/sys/bus/pci/devices/0000:12:00.0/numa_node": "1\n",
              "/sys/bus/pci/devices/0000:11:00.0/numa_node": "0\n", "/sys/class/x/x2/temp": "1\n"},
    "libraries": {"nvml": {"devices": {"2": {"numa_node": 1, "power_usage": 1}, "1": {"numa_node": 0}}}},
    "commands": {"smi --json": {"stdout": json.dumps([{"gpu": 0, "numa": {"node": "0"}},
                                                      {"gpu": 1, "numa": {"node": "0"}},
                                                      {"gpu": 2, "numa": {"node": "1", "affinity": 1}}])},
                 "smi --csv": {"stdout": "id,numa_node,power\nGPU-1,0,5\nGPU-2,1,5\n"}},
}


def test_every_place_the_host_states_the_devices_node_is_found_and_none_of_another_devices() -> None:
    found = {r.describe(): r.node for r in numa_readings(HOST, DEVICE)}
    assert found == {"file /sys/bus/pci/devices/0000:12:00.0/numa_node": 1, "library nvml devices.2.numa_node": 1,
                     "`smi --json` output 2.numa.node": 1, "`smi --json` output 2.numa.affinity": 1,
                     "`smi --csv` output line 2 field 1": 1}


def test_the_node_is_rewritten_where_it_was_written_as_it_was_written() -> None:
    moved = moved_host(HOST, numa_readings(HOST, DEVICE), 3)
    assert moved["files"]["/sys/bus/pci/devices/0000:12:00.0/numa_node"] == "3\n"
    assert moved["files"]["/sys/bus/pci/devices/0000:11:00.0/numa_node"] == "0\n"
    assert moved["libraries"]["nvml"]["devices"]["2"] == {"numa_node": 3, "power_usage": 1}
    assert json.loads(moved["commands"]["smi --json"]["stdout"])[2]["numa"] == {"node": "3", "affinity": 3}
    assert moved["commands"]["smi --csv"]["stdout"] == "id,numa_node,power\nGPU-1,0,5\nGPU-2,3,5\n"
    assert {r.node for r in numa_readings(moved, DEVICE)} == {3}


def test_a_file_or_key_holding_the_letters_numa_inside_another_word_is_no_numa_reading() -> None:
    # Held-out round 4: a family named acmenuma, whose link files are named for their peers (ACMENUMA-...): the
    # peers' link rates were taken for NUMA nodes, so Linux's -1 was never tried on the real numa_node file.
    device = Device(index=2, id="ACMENUMA-2", product_name="X", numa_node=1)
    host = {"files": {"/sys/class/acmenuma/acmenuma2/numa_node": "1\n",
                      "/sys/class/acmenuma/acmenuma2/links/ACMENUMA-1": "200\n"},
            "libraries": {"lib": {"devices": {"2": {"numaNode": 1, "ACMENUMA-1": 200, "pneumatic": 2}}}}}
    found = {r.describe(): r.node for r in numa_readings(host, device)}
    assert found == {"file /sys/class/acmenuma/acmenuma2/numa_node": 1, "library lib devices.2.numaNode": 1}
