"""RAC210's ``a-loss-anywhere-is-the-same-loss`` (issue 46, held-out round 6: a device lost other than the last): a
fixture's recorded loss of one device moved to the first device and a middle one, on the pure helpers and on the two
corpus mutants that get a loss right only when nothing is listed after the lost card (graded by the corpus too)."""

from __future__ import annotations

import pytest
from mutant_grading import evidence, failure, mutant as mutant_of

from rayaccel.records import Device, FamilyInventory, HealthReport, Topology
from rayaccel_conformance.checks.moved_losses import move_targets, moved_loss_differences, moved_patch
from rayaccel_testplugins import corpus, corpus_losses

CARDS = [Device(index=i, id=f"GPU-{i}abc", product_name="X1", pci_bus_id=f"0000:{0x1a + i:02x}:00.0") for i in range(4)]
STATE = {"files": {f"/sys/class/acme/acme{i}/state": "ok\n" for i in range(4)},
         "libraries": {"nvml": {"devices": {str(i): {"uuid": f"GPU-{i}abc"} for i in range(4)}}}}


def test_a_loss_named_by_its_device_s_number_path_or_key_is_written_for_another_device() -> None:
    sysfs = {"files": {"/sys/class/acme/acme3/state": "lost\n"}}
    assert moved_patch(sysfs, STATE, CARDS[3], CARDS[0], CARDS) == (
        {"files": {"/sys/class/acme/acme0/state": "lost\n"}}, "")
    library = {"libraries": {"nvml": {"devices": {"3": {"lost": True}}}}}
    assert moved_patch(library, STATE, CARDS[3], CARDS[1], CARDS)[0] == {
        "libraries": {"nvml": {"devices": {"1": {"lost": True}}}}}
    # A PCI address in the case the path spells it, the 4-digit domain sysfs uses.
    state = {"files": {f"/sys/bus/pci/devices/0000:{0x1a + i:02X}:00.0/state": "ok\n" for i in range(4)}}
    by_bus = {"files": {"/sys/bus/pci/devices/0000:1D:00.0/state": None}}
    assert moved_patch(by_bus, state, CARDS[3], CARDS[0], CARDS)[0] == {
        "files": {"/sys/bus/pci/devices/0000:1A:00.0/state": None}}


def test_a_peer_s_link_entry_to_the_lost_device_moves_to_the_target_and_the_target_s_to_the_lost_one() -> None:
    links = {"files": {f"/sys/class/x/x{i}/links/GPU-{j}abc": "100\n" for i in range(4) for j in range(4) if i != j}}
    lost = {"files": {"/sys/class/x/x3/links/GPU-0abc": None, "/sys/class/x/x0/links/GPU-3abc": None,
                      "/sys/class/x/x1/links/GPU-3abc": None}}
    assert moved_patch(lost, links, CARDS[3], CARDS[0], CARDS)[0] == {"files": {
        "/sys/class/x/x0/links/GPU-3abc": None, "/sys/class/x/x3/links/GPU-0abc": None,
        "/sys/class/x/x1/links/GPU-0abc": None}}


@pytest.mark.parametrize(("patch", "why"), [
    ({"commands": {"tool list --json": {"stdout": "[]"}}}, "names no device"),
    ({"libraries": {"nvml": {"devices": {"3": None, "2": {"hip_id": 1}}}}}, "names GPU-2abc"),
    ({"files": {"/sys/class/acme/acme3/state": "GPU-3abc is gone\n"}}, "names GPU-3abc in its value"),
    ({"files": {"/sys/class/acme/acme3/error": "1\n", "/sys/class/acme/acme3/state": "lost\n"}}, None)])
def test_a_loss_that_is_not_only_its_device_s_is_not_moved_and_says_why(patch: dict[str, object],
                                                                        why: str | None) -> None:
    moved, said = moved_patch(patch, STATE, CARDS[3], CARDS[0], CARDS)
    if why is None:  # a file the loss adds (none on the healthy host) is added for the other device too
        assert moved == {"files": {"/sys/class/acme/acme0/error": "1\n", "/sys/class/acme/acme0/state": "lost\n"}}
    else:
        assert moved is None and why in said, said
    # An entry the lost device has and the other has not (a sysfs state file of card 3 only).
    lonely = {"files": {"/sys/class/acme/acme3/state": "ok\n"}}
    lost = {"files": {"/sys/class/acme/acme3/state": "lost\n"}}
    assert moved_patch(lost, lonely, CARDS[3], CARDS[0], CARDS)[0] is None


def test_the_loss_moves_to_the_first_device_and_a_middle_one_never_its_own() -> None:
    assert [p for p, _ in move_targets(CARDS, CARDS[3])] == [0, 2]
    assert [p for p, _ in move_targets(CARDS, CARDS[0])] == [2]
    assert move_targets(CARDS[:1], CARDS[0]) == []


def _family(devices: list[Device], unhealthy: str | None = None) -> FamilyInventory:
    declaration = corpus.PLUGINS["c-healthy"].family
    health = [HealthReport(device=d.id, state="unhealthy" if d.id == unhealthy else "healthy") for d in devices]
    return FamilyInventory(family=declaration, plugin="acme", devices=devices, topology=Topology(), health=health,
                           accelerator_type="X1", sku_known=False, resources={}, schedulable_units=[], labels={})


def _renumbered(devices: list[Device]) -> list[Device]:
    return [d.model_copy(update={"index": i}) for i, d in enumerate(devices)]


def test_devices_not_lost_are_numbered_as_the_recorded_loss_numbers_them() -> None:
    healthy = _family(CARDS)
    # Recorded: card 1 lost, the ones after it numbered on without gaps (as Ray numbers TPU chips).
    closed = _family(_renumbered([CARDS[0], CARDS[2], CARDS[3]]))
    assert moved_loss_differences(healthy, closed, {CARDS[1].id}, _family(_renumbered(CARDS[1:])), CARDS[0]) == []
    kept = moved_loss_differences(healthy, closed, {CARDS[1].id}, _family(CARDS[1:]), CARDS[0])
    assert kept[0] == (f"{CARDS[1].id}, not lost, has index 1 and units ['1'], not 0 and ['0'] (its index closed "
                       "up, as under the loss as recorded)"), kept
    # Recorded: the last card lost, nothing after it: either numbering is the recorded one's.
    last = _family(CARDS[:3])
    assert moved_loss_differences(healthy, last, {CARDS[3].id}, _family(CARDS[1:]), CARDS[0]) == []
    assert moved_loss_differences(healthy, last, {CARDS[3].id}, _family(_renumbered(CARDS[1:])), CARDS[0]) == []


def test_a_moved_loss_that_finds_other_devices_or_keeps_the_lost_one_healthy_is_named() -> None:
    healthy, recorded = _family(CARDS), _family(CARDS[:3])
    assert moved_loss_differences(healthy, recorded, {CARDS[3].id}, None, CARDS[0]) == [
        "discovery finds 0 devices, the loss as recorded 3",
        *(f"{d.id} (index {d.index}), not lost, is no longer found" for d in CARDS[1:])]
    kept_first = moved_loss_differences(healthy, recorded, {CARDS[3].id}, _family(CARDS[:3]), CARDS[0])
    assert kept_first == [f"{CARDS[0].id}, the device lost, is still found healthy",
                          f"{CARDS[3].id} (index 3), not lost, is no longer found"], kept_first
    sick = moved_loss_differences(healthy, recorded, {CARDS[3].id}, _family(CARDS[1:], unhealthy=CARDS[2].id), CARDS[0])
    assert sick == [f"{CARDS[2].id}, not lost, has health 'unhealthy', not 'healthy'"], sick


@pytest.mark.parametrize("mutant", [corpus_losses.DiscoverStopsAtLostCard, corpus_losses.DiscoverKeepsLiveCount],
                         ids=lambda cls: cls.__name__)
def test_a_loss_handled_right_only_when_last_fails_rac210_naming_the_invariant(mutant: type[corpus.Healthy]) -> None:
    said = failure(mutant_of(mutant), "RAC210", "acme-4")
    assert "invariant a-loss-anywhere-is-the-same-loss, fault lost-3 moved from ACME-0003" in said, said
    assert "(position 0)" in said and "not lost, is no longer found" in said, said
    # The healthy control, the same loss moved: passes, and says where it moved it.
    passed = evidence(corpus.PLUGINS["c-healthy"], "RAC210", "acme-4")
    assert "fault lost-3 moved to position 0, fault lost-3 moved to position 2" in passed, passed
