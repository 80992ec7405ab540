"""Pure parsers of the TPU plugin, checked against Ray's own rules where Ray has one."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, strategies as st

from rayaccel.testing import PluginKit
from rayaccel_tpu import metrics, podtype, probe, slice_info, topology, visibility

ray_tpu = pytest.importorskip("ray._private.accelerators.tpu")

POD_TYPES = st.from_regex(r"\A(v|tpu|V|TPU)\d{1,2}[a-zA-Z]{0,9}-\d{1,4}\Z")


@given(st.one_of(POD_TYPES, st.text(max_size=20)))
def test_pod_type_validation_and_normalisation_match_ray(raw: str) -> None:
    ray_valid = ray_tpu.TPUAcceleratorManager.is_valid_tpu_accelerator_type(raw)
    expected = ray_tpu.normalize_tpu_accelerator_type(raw) if ray_valid else None
    assert podtype.parse_pod_type(raw) == expected


@given(POD_TYPES)
def test_accelerator_type_is_ray_s(raw: str) -> None:
    pod_type = podtype.normalize(raw)
    generation = ray_tpu.normalize_tpu_accelerator_type(pod_type).split("-")[0]
    assert podtype.accelerator_type(pod_type) == f"TPU-{generation.upper()}"


@pytest.mark.parametrize(("pod_type", "chips"), [
    ("v5litepod-8", 8), ("v5p-16", 8), ("v6e-256", 256), ("v7x-8", 4), ("v4-32", 16), ("v6e-4", 4),
    ("v5litepod-1", 1), ("v4-1", 0),
])
def test_slice_sizes_follow_ray_core_counts(pod_type: str, chips: int) -> None:
    assert podtype.chips_in_slice(pod_type) == chips
    assert podtype.chips_in_slice(pod_type) == ray_tpu.get_total_chips_from_accelerator_type(pod_type)


@given(st.text(alphabet=st.characters(blacklist_characters="'"), max_size=12).map(str.strip).filter(bool))
def test_topology_in_tpu_env_matches_ray_pattern(topology: str) -> None:
    text = f"ACCELERATOR_TYPE: 'v5p-16'\nTOPOLOGY: '{topology}'\nWORKER_ID: '0'\n"
    found = re.search(r"TOPOLOGY:\s*'([^']+)'", text)
    assert slice_info.parse_topology_from_tpu_env(text) == (found.group(1).strip().lower() if found else None)


@given(st.text(max_size=8))
def test_worker_id_is_an_int_or_nothing(raw: str) -> None:
    parsed = slice_info.parse_worker_id(raw)
    assert parsed is None or parsed == int(raw)


def test_uevent_gives_bus_id_and_google_device_id_only() -> None:
    fields = probe.parse_uevent("DRIVER=accel\nPCI_ID=1AE0:0062\nPCI_SLOT_NAME=0000:00:04.0\n")
    assert fields["PCI_SLOT_NAME"] == "0000:00:04.0"
    assert probe.pci_device_id_from_uevent(fields) == "0x0062"
    assert probe.pci_device_id_from_uevent({"PCI_ID": "10DE:2330"}) is None


@given(st.sampled_from([1, 2, 4, 8]))
def test_host_grid_links_join_grid_neighbours_once(n: int) -> None:
    pairs = topology.grid_neighbours(n)
    x, y = topology.host_grid(n)
    assert x * y == n
    assert len(pairs) == (x - 1) * y + (y - 1) * x
    assert len(set(pairs)) == len(pairs)
    for i, j in pairs:
        assert i < j and abs(i % x - j % x) + abs(i // x - j // x) == 1


def test_visible_env_adds_bounds_for_one_or_two_chips_only() -> None:
    assert visibility.visible_env(["3"]) == {"TPU_VISIBLE_CHIPS": "3", "TPU_CHIPS_PER_HOST_BOUNDS": "1,1,1",
                                             "TPU_HOST_BOUNDS": "1,1,1"}
    assert visibility.visible_env(["0", "1"])["TPU_CHIPS_PER_HOST_BOUNDS"] == "1,2,1"
    assert visibility.visible_env(["0", "1", "2", "3"]) == {"TPU_VISIBLE_CHIPS": "0,1,2,3"}


@given(st.lists(st.integers(min_value=0, max_value=63), max_size=8))
def test_parse_visible_round_trips(ids: list[int]) -> None:
    text = ",".join(str(i) for i in ids)
    assert visibility.parse_visible(text) == [str(i) for i in ids]


PROM = """# TYPE tensorcore_utilization gauge
tensorcore_utilization{accelerator_id="77-0",model="tpu-v5p-slice",tpu_topology="2x2x2"} 12.5
tensorcore_utilization{accelerator_id="77-1",model="tpu-v5p-slice",tpu_topology="2x2x2"} 13.5
# TYPE memory_used gauge
memory_used{accelerator_id="77-4",model="tpu-v5p-slice",tpu_topology="2x2x2"} 100
memory_used{accelerator_id="77-5",model="tpu-v5p-slice",tpu_topology="2x2x2"} 200
"""


def test_slice_indexed_metrics_are_mapped_onto_host_chips() -> None:
    parsed = metrics.parse_device_plugin_metrics(PROM)
    assert parsed[0]["utilization"] == ("percent", 12.5)
    assert parsed[0]["memory_used"] == ("bytes", 100.0)
    assert parsed[1]["memory_used"] == ("bytes", 200.0)


def test_garbage_metrics_text_raises_value_error() -> None:
    with pytest.raises(ValueError):
        metrics.parse_device_plugin_metrics("{{{ not prometheus")


def test_cloud_hints_know_the_gce_tpu_machine_types(rayaccel_kit: PluginKit) -> None:
    hint = rayaccel_kit.cloud_hint("gcp", "ct5lp-hightpu-8t")
    assert hint is not None and hint.count == 8 and hint.accelerator_type == "TPU-V5LITEPOD"
    assert rayaccel_kit.cloud_hint("gcp", "ct5p-hightpu-4t").count == 4  # type: ignore[union-attr]
    assert rayaccel_kit.cloud_hint("gcp", "n2-standard-8") is None
    assert rayaccel_kit.cloud_hint("aws", "ct6e-standard-4t") is None
