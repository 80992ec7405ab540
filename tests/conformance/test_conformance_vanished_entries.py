"""Mutation round 10 (issue 46, lane J18): a device entry listed by one call and gone when the next reads it is no crash
and takes no other device with it (``invariant an-entry-gone-when-read-is-no-crash``, RAC211).

The round's ``tpu.probe:110`` survivor dropped FileNotFoundError from the TPU plugin's listing of an IOMMU group's
``devices``: a chip unbound between ``/dev/vfio``'s listing and its group's read raised out of discovery, on a race
any machine has and no fixture (one instant each) shows. RAC211 now keeps one device's own entries in the listings of
their parents and answers every read under them as gone. Both corpus shapes (a raise, every card dropped) and the
round's edit on the TPU plugin are named; the healthy control and the TPU plugin as shipped pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutant_grading import evidence, failure, mutant, wrapped

import rayaccel_tpu.plugin
import rayaccel_tpu.probe
from rayaccel import Device, Host
from rayaccel.hosts.fixtures import Fixture
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.vanished_entries import (
    VanishedEntryHost,
    entry_files_removed,
    vanished_entries,
)
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import corpus
from rayaccel_testplugins.corpus_vanished_entries import EntryGoneAsNoDriver, EntryListedUnguarded

INVARIANT = "invariant an-entry-gone-when-read-is-no-crash"
TPU = str(Path(rayaccel_tpu.plugin.__file__).parent)
#: The TPU fixtures whose chips are VFIO groups (the round's line) and one whose chips are /dev/accel nodes.
VFIO_FIXTURES = ["tpu7x-8", "v5e-8", "v6e-256-worker"]


def test_an_entry_listed_and_read_unguarded_is_named() -> None:
    said = failure(mutant(EntryListedUnguarded), "RAC211", "acme-4")
    assert f"{INVARIANT}, c-entry-listed-unguarded/acme-4 with /sys/class/acme/acme1 listed, then gone when read" \
        in said, said
    assert "rayaccel_discover raised instead of reporting it: raised FileNotFoundError: /sys/class/acme/acme1" in said


def test_one_entry_gone_dropping_every_card_is_named() -> None:
    said = failure(mutant(EntryGoneAsNoDriver), "RAC211", "acme-4")
    assert f"{INVARIANT}, c-entry-gone-as-no-driver/acme-4 with /sys/class/acme/acme1 listed" in said, said
    assert "3 other devices went with it (ACME-0000-" in said and "only ACME-0001-" in said, said


def test_the_healthy_control_keeps_the_other_cards() -> None:
    said = evidence(corpus.PLUGINS["c-healthy"], "RAC211", "acme-4")
    assert "ACME-0001-5e1f-4c2a-9d3b-000000000001's entries /sys/class/acme/acme1 gone when read" in said, said


def _functions_without_enoent(host: Host, group: str) -> list[tuple[str, str | None]]:
    """The round's ``tpu.probe:110`` edit: the group's listing guarded against NotADirectoryError alone."""
    root = f"/sys/kernel/iommu_groups/{group}/devices"
    try:
        functions = host.list_dir(root)
    except NotADirectoryError:
        return []
    found = []
    for bdf in functions:
        vendor = rayaccel_tpu.probe._read(host, f"{root}/{bdf}/vendor")
        if vendor and vendor.lower() == rayaccel_tpu.probe.GOOGLE_PCI_VENDOR:
            found.append((bdf, rayaccel_tpu.probe._hex_id(
                rayaccel_tpu.probe._read(host, f"{root}/{bdf}/device"), f"chip function {bdf}")))
    return found


def test_the_rounds_tpu_edit_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rayaccel_tpu.probe, "_vfio_tpu_functions", _functions_without_enoent)
    subject = wrapped(rayaccel_tpu.plugin, "tpu", TPU)
    for fixture in VFIO_FIXTURES:
        with pytest.raises(CheckFailed) as failed:
            CHECKS["RAC211"].function(subject, f"tpu/{fixture}")
        said = str(failed.value)
        assert f"{INVARIANT}, tpu/{fixture} with /sys/kernel/iommu_groups/" in said, said
        assert "rayaccel_discover raised instead of reporting it: raised FileNotFoundError: /sys/kernel/iommu_groups/" \
            in said, said


@pytest.mark.parametrize("fixture", [*VFIO_FIXTURES, "v3-8"])
def test_the_tpu_plugin_as_shipped_keeps_its_other_chips(fixture: str) -> None:
    subject = wrapped(rayaccel_tpu.plugin, "tpu", TPU)
    said = str(CHECKS["RAC211"].function(subject, f"tpu/{fixture}"))
    assert "tpu-0000:00:05.0's entries /sys/" in said and "gone when read" in said, said


def _machine(files: dict[str, str]) -> Fixture:
    return Fixture.model_validate({"schema": "rayaccel-fixture/1", "plugin": "p", "name": "m", "description": "d",
                                   "host": {"files": files}, "expected": {"devices": 0}})


def test_the_entries_are_the_directories_holding_the_device_alone() -> None:
    files = {"/sys/class/acme/acme0/uuid": "a\n", "/sys/class/acme/acme1/uuid": "b\n",
             "/sys/class/acme/acme1/ports/0": "up\n", "/sys/bus/pci/devices/0000:05:00.0/vendor": "0x1\n",
             "/sys/bus/pci/devices/0000:04:00.0/vendor": "0x1\n", "/sys/module/acme/version": "1\n"}
    device = Device(index=1, id="b", pci_bus_id="0000:05:00.0")
    assert vanished_entries(files, device) == ["/sys/bus/pci/devices/0000:05:00.0", "/sys/class/acme/acme1"]
    assert vanished_entries({"/sys/class/acme/shared/card1": "x"}, device) == []  # among others': no entry of its own


def test_a_vanished_entry_stays_listed_and_reads_as_gone() -> None:
    files = {"/sys/class/acme/acme0/uuid": "a\n", "/sys/class/acme/acme1/uuid": "b\n",
             "/sys/class/acme/acme1/ports/0": "up\n"}
    gone = ["/sys/class/acme/acme1"]
    before = simulated_host(_machine(files))
    after = simulated_host(_machine({k: v for k, v in files.items() if k not in entry_files_removed(files, gone)}))
    host = VanishedEntryHost(before, after, gone)
    assert host.list_dir("/sys/class/acme") == ["acme0", "acme1"]
    assert host.glob("/sys/class/acme/acme*") == ["/sys/class/acme/acme0", "/sys/class/acme/acme1"]
    assert not host.is_dir("/sys/class/acme/acme1") and not host.exists("/sys/class/acme/acme1/uuid")
    for read in (lambda: host.read_text("/sys/class/acme/acme1/uuid"), lambda: host.list_dir("/sys/class/acme/acme1"),
                 lambda: host.list_dir("/sys/class/acme/acme1/ports")):
        with pytest.raises(FileNotFoundError):
            read()
    assert host.read_text("/sys/class/acme/acme0/uuid") == "a\n"

