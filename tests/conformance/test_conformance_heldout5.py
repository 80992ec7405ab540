"""Held-out grading, round 5 (issue 46, lane H): the invariants its survivors lacked, on pure helpers and on the two
TPU mutants the corpus's one manager cannot hold, and how RAC206 names a node's mean given to every device.

The label and link invariants are graded by the corpus too (c-healthy-label-counts-not-lost,
c-unhealthy-label-counts-missing: RAC203; c-ids-lower-cased-links-lost, c-links-of-first-card-only: RAC267).
"""

from __future__ import annotations

import pytest

from rayaccel.hosts.expectations import compare_expected
from rayaccel.hosts.fixtures import installed_fixtures, load_fixture
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import Device, MetricSample
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.health_labels import health_word
from rayaccel_conformance.checks.link_readings import spelled_in, under_link
from rayaccel_conformance.checks.listing_order import listing_differences
from rayaccel_conformance.checks.ray_parity import companions
from rayaccel_conformance.checks.readings import Reading
from rayaccel_conformance.checks.supported import metric_value_differences
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_ray_parity import TPU_BOUNDS_MUTANTS

VAR = "TPU_VISIBLE_CHIPS"


def test_the_variables_ray_writes_beside_its_own_are_those_it_added_or_changed() -> None:
    before = {"HOME": "/root", "TPU_HOST_BOUNDS": "2,2,1"}
    after = {**before, VAR: "0", "TPU_CHIPS_PER_HOST_BOUNDS": "1,1,1", "TPU_HOST_BOUNDS": "1,1,1"}
    assert companions(before, after, VAR) == {"TPU_CHIPS_PER_HOST_BOUNDS": "1,1,1", "TPU_HOST_BOUNDS": "1,1,1"}
    assert companions(before, {**before, VAR: "0"}, VAR) == {}


def rac270_alone(mutant: type[Healthy]) -> tuple[str, str]:
    """RAC270 graded on a TPU mutant alone (one claimant of TPU_VISIBLE_CHIPS per manager), on its first fixture:
    (that fixture, the failure's text); the mutant is named as the corpus names it."""
    all_checks()
    name = "c-" + "".join(f"-{c.lower()}" if c.isupper() else c for c in mutant.__name__).lstrip("-")
    manager = PluginManager(autoload=False, timeout=5.0)
    manager.register(mutant(name), name)
    subject = Subject(name, manager)
    (fixture, *_) = subject.fixture_paths()
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC270"].function(subject, fixture)
    return fixture, str(failed.value)


@pytest.mark.parametrize("mutant", TPU_BOUNDS_MUTANTS, ids=lambda cls: cls.__name__)
def test_tpu_bounds_otherwise_than_ray_writes_them_fail_rac270_naming_them(mutant: type[Healthy]) -> None:
    _, said = rac270_alone(mutant)
    assert mutant.KILLED_BY is not None and mutant.KILLED_BY[1] in said and "TPU_CHIPS_PER_HOST_BOUNDS" in said, said
    assert "Ray's TPUAcceleratorManager writes TPU_CHIPS_PER_HOST_BOUNDS=" in said


@pytest.mark.parametrize(("key", "word"), [
    ("zlabel.example.com/healthy-devices", "healthy"), ("acme.example.com/unhealthy_cards", "unhealthy"),
    ("vendor.example/chips.healthy", "healthy"), ("vendor.example/healthcheck-port", None),
    ("vendor.example/devices", None)])
def test_a_label_is_about_health_where_a_word_of_its_last_segment_says_so(key: str, word: str | None) -> None:
    assert health_word(key) == word


def test_a_link_entry_naming_a_peer_in_another_case_is_read_as_naming_it() -> None:
    peer = Device(index=1, id="ZCASE-5E1F4C2A-0001", product_name="X1")
    stated = Reading("library", "zcase-lib", ("devices", "0", "links", "ZCASE-5e1f4c2a-0001"), 200.0)
    assert under_link(stated) and spelled_in(stated, peer) == "ZCASE-5e1f4c2a-0001"
    power = Reading("library", "zcase-lib", ("devices", "0", "power"), 80.0)
    assert not under_link(power) and spelled_in(power, peer) is None
    file = Reading("file", "/sys/class/acme/acme0/links/ZCASE-5E1F4C2A-0001", (), 100.0)
    assert under_link(file) and spelled_in(file, peer) == peer.id


def test_a_sample_equal_to_the_mean_of_the_devices_readings_is_named_the_node_s_mean() -> None:
    readings = {"d0": 3.0, "d1": 41.0, "d2": 17.0, "d3": 29.0}
    samples = [MetricSample(device=d, name="utilization", unit="percent", value=22.5) for d in readings]
    wrong = metric_value_differences(samples, {d: {"utilization": v} for d, v in readings.items()})
    assert len(wrong) == 4 and all("the mean of the 4 devices' readings (22.5)" in w for w in wrong), wrong
    # A sample that is simply another value is not blamed on the mean.
    (other,) = metric_value_differences([MetricSample(device=d, name="utilization", unit="percent", value=v)
                                         for d, v in (("d0", 50.0), ("d1", 41.0))],
                                        {"d0": {"utilization": 3.0}, "d1": {"utilization": 41.0}})
    assert "mean" not in other


def test_a_reversed_listing_that_loses_whichever_device_comes_first_is_named_a_skipped_first_line() -> None:
    def facts(indexes: dict[str, int]) -> dict[str, object]:
        return {"devices": {d: {"index": i, "units": [str(i)], "pci_bus_id": None} for d, i in indexes.items()},
                "links": []}

    # Recorded as B, C, D (A, listed first, skipped); reversed, D comes first and goes, A comes back.
    (line,) = listing_differences(facts({"B": 1, "C": 2, "D": 3}), facts({"A": 0, "B": 1, "C": 2}))
    assert line.startswith("the devices change: 1 gone (D), 1 new (A): the row listed first is lost"), line
    (other,) = listing_differences(facts({"B": 1, "C": 2, "D": 3}), facts({"A": 0, "C": 2, "D": 3}))
    assert "listed first" not in other


def test_units_that_are_each_device_s_index_where_the_fixture_states_others_are_named_so() -> None:
    manager = PluginManager()
    fixture = load_fixture(installed_fixtures(manager)["tpu/v5e-8"])
    inventory = InventoryBuilder(manager, ["tpu"]).build(simulated_host(fixture))
    ids = fixture.expected.device_ids
    # TPU's units are the chips' indexes (Ray's TPU ids); a fixture stating other ids names the index.
    moved = fixture.expected.model_copy(update={"units": {ids[0]: ["7"], ids[1]: ["6"]}})
    wrong = compare_expected(inventory, fixture, moved)
    assert wrong == [f"units of {ids[0]}: expected ['7'], got ['0']: the device's index, not the id the runtime's "
                     "visible-devices variable takes",
                     f"units of {ids[1]}: expected ['6'], got ['1']: the device's index, not the id the runtime's "
                     "visible-devices variable takes"], wrong
