"""Pure parsers of the Neuron plugin: neuron-ls JSON, NEURON_RT_VISIBLE_CORES, links, cloud hints."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from rayaccel import Device
from rayaccel.testing import PluginKit
from rayaccel_neuron import neuronls, topology, visibility

ray_neuron = pytest.importorskip("ray._private.accelerators.neuron")

DEVICE = st.fixed_dictionaries({
    "nc_count": st.sampled_from([1, 2, 4, 8]),
    "memory_size": st.sampled_from([8589934592, 34359738368, 103079215104]),
    "numa_node": st.sampled_from(["-1", "0", "1"]),
    "with_ids": st.booleans(),
})


def neuron_ls_json(specs: list[dict], peers: dict[int, list[int]] | None = None) -> str:
    entries = []
    start = 0
    for i, spec in enumerate(specs):
        entry = {"neuron_device": i, "bdf": f"0000:{i:02x}:1e.0", "cpu_affinity": "0-7", "numa_node": spec["numa_node"],
                 "connected_to": (peers or {}).get(i), "nc_count": spec["nc_count"], "memory_size": spec["memory_size"],
                 "neuron_processes": []}
        if spec["with_ids"]:
            entry["neuroncore_ids"] = list(range(start, start + spec["nc_count"]))
        start += spec["nc_count"]
        entries.append(entry)
    return json.dumps(entries)


@given(st.lists(DEVICE.filter(lambda s: True), min_size=1, max_size=16).map(
    lambda specs: [{**s, "nc_count": specs[0]["nc_count"]} for s in specs]))
def test_neuron_ls_devices_and_core_ids(specs: list[dict]) -> None:
    text = neuron_ls_json(specs)
    devices = neuronls.parse_neuron_ls(text)
    assert [d.index for d in devices] == list(range(len(specs)))
    cores = [c for d in devices for c in d.core_ids]
    # Global NeuronCore ids run 0..N-1 device by device, with or without neuroncore_ids in the output.
    assert cores == list(range(sum(s["nc_count"] for s in specs)))
    assert sum(d.nc_count for d in devices) == sum(e.get("nc_count", 0) for e in json.loads(text))
    assert all(d.numa_node is None if s["numa_node"] == "-1" else d.numa_node == int(s["numa_node"])
               for d, s in zip(devices, specs, strict=True))


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12)


@given(st.one_of(st.text(max_size=60), JSONISH.map(json.dumps)))
def test_any_output_gives_devices_or_a_neuron_ls_error(text: str) -> None:
    try:
        devices = neuronls.parse_neuron_ls(text)
    except neuronls.NeuronLsError as e:
        assert "neuron-ls" in str(e) or "entry" in str(e)
    else:
        assert all(d.nc_count >= 0 and (d.bdf is None or isinstance(d.bdf, str)) for d in devices)
        assert all(d.cpu_affinity is None or isinstance(d.cpu_affinity, str) for d in devices)


def test_ray_s_own_test_output_parses() -> None:
    text = ('[{"neuron_device":0,"bdf":"00:1e.0","connected_to":null,"nc_count":2,'
            '"memory_size":34359738368,"neuron_processes":[]}]')
    (device,) = neuronls.parse_neuron_ls(text)
    assert device.core_ids == [0, 1] and device.memory_bytes == 34359738368 and device.connected_to == []


def test_empty_device_objects_are_ignored_as_ray_counts_them_zero() -> None:
    assert neuronls.parse_neuron_ls("[{}]") == []


@pytest.mark.parametrize(("value", "expected"), [
    ("0-3", ["0", "1", "2", "3"]), ("0,2-3", ["0", "2", "3"]), ("4", ["4"]), ("", []),
    ("8-11,16", ["8", "9", "10", "11", "16"]), ("3-1", ["3-1"]), ("abc", ["abc"]),
])
def test_visible_cores_ranges_are_expanded(value: str, expected: list[str]) -> None:
    assert visibility.parse_visible_cores(value) == expected


@given(st.lists(st.integers(min_value=0, max_value=127), max_size=12))
def test_plain_lists_parse_as_ray_parses_them(ids: list[int]) -> None:
    value = ",".join(str(i) for i in ids)
    ray = [] if value == "" else value.split(",")
    assert visibility.parse_visible_cores(value) == ray


@given(st.integers(min_value=0, max_value=64), st.integers(min_value=0, max_value=64))
def test_a_range_is_every_id_between_its_ends(lo: int, hi: int) -> None:
    parsed = visibility.parse_visible_cores(f"{lo}-{hi}")
    assert parsed == ([str(i) for i in range(lo, hi + 1)] if lo <= hi else [f"{lo}-{hi}"])


def _devices(n: int) -> list[Device]:
    return [Device(index=i, id=f"d{i}", product_name="Trainium1") for i in range(n)]


def test_links_are_undirected_and_skip_absent_peers() -> None:
    links = topology.neuronlink_links(_devices(3), {0: [1, 2, 7], 1: [0], 2: [0]})
    assert {(ln.a, ln.b) for ln in links} == {("d0", "d1"), ("d0", "d2")}
    assert all(ln.kind == "neuronlink" for ln in links)


def test_a_link_either_end_reports_is_one_link_and_no_device_is_its_own_peer() -> None:
    # A listing cut after device 0's entry names the link 0-1 from its lower end only; a garbled entry names 1 itself.
    links = topology.neuronlink_links(_devices(3), {0: [1], 1: [1], 2: [1]})
    assert sorted((ln.a, ln.b) for ln in links) == [("d0", "d1"), ("d1", "d2")]


def test_cloud_hints_cover_ray_s_table_and_trn2(rayaccel_kit: PluginKit) -> None:
    for instance_type, cores in ray_neuron.AWS_NEURON_INSTANCE_MAP.items():
        hint = rayaccel_kit.cloud_hint("aws", instance_type)
        assert hint is not None and hint.count == cores and hint.accelerator_type == "aws-neuron-core"
    assert rayaccel_kit.cloud_hint("aws", "trn2.48xlarge").count == 64  # type: ignore[union-attr]
    assert rayaccel_kit.cloud_hint("aws", "p5.48xlarge") is None
    assert rayaccel_kit.cloud_hint("gcp", "trn1.32xlarge") is None


@pytest.mark.parametrize(("stated", "kept"), [
    ("0-47,96-143", "0-47,96-143"), ("0,1,2,3,8,9,10,11", "0-3,8-11"), ("5-5,7", "5,7"),
    (",".join(map(str, range(192))), "0-191"),  # one CPU at a time, past 256 characters
    ("0-3 ,8", "0-3,8"),  # the kernel separates regions by commas and white space alike (lib/bitmap-str.c)
    ("3-1", None), ("0-3;8", None), (7, None)])
def test_cpu_affinity_in_any_form_of_the_kernel_s_list_is_kept_as_the_kernel_writes_it(
        stated: object, kept: str | None) -> None:
    entry = {"neuron_device": 0, "nc_count": 2, "bdf": "0000:10:1e.0", "cpu_affinity": stated, "numa_node": 0}
    (device,) = neuronls.parse_neuron_ls(json.dumps([entry]))
    assert device.cpu_affinity == kept
