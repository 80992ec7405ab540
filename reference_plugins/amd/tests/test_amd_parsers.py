"""The amd-smi JSON parsers: both layouts amd-smi has shipped, units, and a clear error for anything else; and the
same range checks on what the amdsmi library answers."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from rayaccel.testing import collect_problems
from rayaccel_amd import amdsmi as amdsmi_adapter, cli, products
from rayaccel_amd.cli import AmdSmiParseError
from rayaccel_amd.library import read_library

PARSERS = [cli.parse_static, cli.parse_list, cli.parse_metric, cli.parse_topology, cli.parse_version,
           cli.parse_partition]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 300) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["gpu", "gpu_data", "asic", "market_name", "device_id", "bus", "bdf", "vram", "size", "value",
                         "unit", "uuid", "links", "link_type", "num_hops", "weight", "ecc", "usage", "power",
                         "mem_usage", "total_vram", "rocm_version", "numa", "node", "partition", "current_partition",
                         "gpu_id", "accelerator_type", "memory", "partition_id"]),
        children, max_size=5),
    max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(data=json_values, parser=st.sampled_from(PARSERS))
def test_any_json_either_parses_or_raises_a_parse_error(data, parser):
    try:
        parser(json.dumps(data))
    except AmdSmiParseError as e:
        assert "amd-smi" in str(e)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=60), parser=st.sampled_from(PARSERS))
def test_any_text_either_parses_or_raises_a_parse_error(text, parser):
    try:
        parser(text)
    except AmdSmiParseError as e:
        assert "\n" not in str(e)


STATIC_ENTRY = {"gpu": 0, "asic": {"market_name": "AMD Instinct MI300X", "device_id": "0x74a1",
                                   "target_graphics_version": "gfx942"},
                "bus": {"bdf": "0000:05:00.0"}, "driver": {"name": "amdgpu", "version": "6.10.5"},
                "vram": {"type": "HBM3", "size": {"value": 196592, "unit": "MB"}},
                "numa": {"node": 1, "affinity": 1},
                "partition": {"compute_partition": "CPX", "memory_partition": "NPS4", "partition_id": 0}}


@pytest.mark.parametrize("layout", ["gpu_data", "bare-list"])
def test_static_reads_both_layouts(layout):
    data = {"gpu_data": [STATIC_ENTRY]} if layout == "gpu_data" else [STATIC_ENTRY]
    gpu = cli.parse_static(json.dumps(data))[0]
    assert gpu["market_name"] == "AMD Instinct MI300X"
    assert gpu["device_id"] == 0x74A1 and gpu["vram_mib"] == 196592 and gpu["numa_node"] == 1
    assert (gpu["compute_partition"], gpu["memory_partition"]) == ("CPX", "NPS4")


def test_static_reads_rocm_64_accelerator_partition_and_string_units():
    entry = dict(STATIC_ENTRY, vram={"size": "65520 MB"}, partition={"accelerator_partition": "SPX"})
    gpu = cli.parse_static(json.dumps([entry]))[0]
    assert gpu["vram_mib"] == 65520 and gpu["compute_partition"] == "SPX"


@pytest.mark.parametrize(("field", "mib"), [({"value": 192, "unit": "GB"}, 196608),
                                            ({"value": 2**30, "unit": "B"}, 1024), ("N/A", None),
                                            ({"value": 2**20, "unit": "KB"}, 1024), ("67076096 KiB", 65504),
                                            ({"value": "N/A", "unit": "MB"}, None), (-5, None)])
def test_memory_units(field, mib):
    assert cli.mib_of(field) == mib


def test_static_without_market_name_says_what_to_do():
    entry = dict(STATIC_ENTRY, asic={"device_id": "0x74a1"})
    with collect_problems() as sink:
        found = cli.parse_static(json.dumps([entry]))
    assert found[0]["market_name"] == ""  # read_cli takes the model from the other GPUs
    assert "GPU 0 has no asic.market_name" in sink.drain()[0].message


def test_entry_without_gpu_index_is_reported_and_the_others_kept():
    with collect_problems() as sink:
        found = cli.parse_list(json.dumps([{"uuid": "x"}, {"gpu": 1, "uuid": "y"}, {"gpu": -1, "uuid": "z"}]))
    assert found == {1: {"uuid": "y", "bdf": None, "partition_id": None}}
    messages = [r.message for r in sink.drain()]
    assert "entry 0: gpu is None" in messages[0] and "entry 2: gpu is -1" in messages[1]


def test_not_json_names_the_command_and_shows_the_output():
    expected = r"`amd-smi metric --json` printed output that is not JSON \('ERROR: x'\)"
    with pytest.raises(AmdSmiParseError, match=expected):
        cli.parse_metric("ERROR: x\n")


def test_topology_skips_self_and_classifies_links():
    data = [{"gpu": 0, "links": [{"gpu": 0, "link_type": "SELF", "weight": 0},
                                 {"gpu": 1, "link_type": "XGMI", "num_hops": 1, "weight": 15},
                                 {"gpu": 2, "link_type": "PCIE", "num_hops": 2, "weight": 40}]}]
    peers = cli.parse_topology(json.dumps(data))[0]
    assert sorted(peers) == [1, 2]
    assert (peers[1].kind, peers[1].weight, peers[2].kind, peers[2].hops) == ("xgmi", 15, "pcie", 2)


def test_metric_reads_ecc_power_and_temperature():
    data = {"gpu_data": [{"gpu": 0, "ecc": {"total_correctable_count": 2, "total_uncorrectable_count": 1,
                                            "total_deferred_count": 0},
                          "power": {"socket_power": {"value": 750, "unit": "W"}},
                          "temperature": {"edge": {"value": "N/A", "unit": "C"}, "hotspot": {"value": 71, "unit": "C"}},
                          "usage": {"gfx_activity": {"value": 97, "unit": "%"}}}]}
    gpu = cli.parse_metric(json.dumps(data))[0]
    assert (gpu["ecc"].correctable, gpu["ecc"].uncorrectable) == (2, 1)
    assert (gpu["power_w"], gpu["temperature_c"], gpu["gfx_activity"]) == (750, 71, 97)


@pytest.mark.parametrize("activity", [-97, 101, "-3 %"])
def test_an_activity_outside_0_to_100_percent_is_reported_and_unknown(activity):
    # A secondary partition prints N/A on amd-smi 25, so the GPU's utilization is its primary's reading alone.
    data = {"gpu_data": [{"gpu": 0, "usage": {"gfx_activity": {"value": activity, "unit": "%"},
                                              "umc_activity": {"value": 40, "unit": "%"}}}]}
    with collect_problems() as sink:
        gpu = cli.parse_metric(json.dumps(data))[0]
    assert (gpu["gfx_activity"], gpu["umc_activity"]) == (None, 40)
    assert "usage.gfx_activity" in sink.drain()[0].message


@pytest.mark.parametrize("activity", [65535, -1, 100.5])
def test_amdsmi_activity_outside_0_to_100_percent_is_reported_and_unknown(activity):
    gpus = {"0": {"uuid": "u0", "bdf": "0000:05:00.0", "asic_info": {"market_name": "AMD Instinct MI300X"},
                  "activity": {"gfx_activity": activity, "umc_activity": 40, "mm_activity": "N/A"}}}
    with collect_problems() as sink:
        (gpu,) = read_library(amdsmi_adapter.open_simulated({"gpus": gpus}), links=False).gpus
    assert (gpu.gfx_activity, gpu.umc_activity) == (None, 40)
    assert any("activity.gfx_activity" in p.message for p in sink.drain())


def test_an_ecc_count_left_out_or_not_a_number_is_unknown_not_zero():
    # amd-smi prints N/A where a count is not supported, and a version may leave a key out: no count, no metric.
    data = {"gpu_data": [{"gpu": 0, "ecc": {"total_correctable_count": "N/A", "total_deferred_count": 0}}]}
    gpu = cli.parse_metric(json.dumps(data))[0]
    assert (gpu["ecc"].correctable, gpu["ecc"].uncorrectable, gpu["ecc"].deferred) == (None, None, 0)
    from rayaccel_amd.health import report_for
    from rayaccel_amd.readings import GpuRecord

    report = report_for(GpuRecord(index=0, uuid="u", market_name="m", ecc=gpu["ecc"]))
    assert report.state == "healthy" and not report.reasons  # no count is no evidence, as no ECC section is


@given(st.one_of(st.integers(), st.text(max_size=8), st.none()))
def test_pci_device_id_never_crashes(value):
    result = products.pci_device_id(value)
    assert result is None or (len(result) == 6 and result == result.lower())


def test_a_pci_device_id_is_one_of_the_16_bit_ids_or_none():
    # Ray's product table and the SKU catalog key on 0x and four hex digits; a negative or wider id names no device.
    assert [products.pci_device_id(v) for v in (0, 0x74A1, "0x74A1", 0xFFFF)] == ["0x0000", "0x74a1", "0x74a1",
                                                                                  "0xffff"]
    assert [products.pci_device_id(v) for v in (-1, "-0x1", 0x10000, "0x10000")] == [None] * 4


def test_text_with_control_characters_is_reported_and_not_used():
    # amd-smi prints what the driver hands it: an escape sequence in a name would reach labels and terminals.
    entry = dict(STATIC_ENTRY, asic=dict(STATIC_ENTRY["asic"], market_name="MI300X\x1b[2J",
                                         asic_serial="0x5F\x00"))
    with collect_problems() as sink:
        found = cli.parse_static(json.dumps([entry]))
    assert found[0]["market_name"] == "" and found[0]["asic_serial"] is None
    messages = [r.message for r in sink.drain()]
    assert any("asic.market_name" in m for m in messages) and any("asic.asic_serial" in m for m in messages)


def test_product_table_is_rays_with_lower_case_keys():
    from ray._private.accelerators.amd_gpu import amd_product_dict

    assert amd_product_dict == products.RAY_PRODUCT_TABLE
    assert products.accelerator_type_for(0x679A) == "AMD-Radeon-HD-7900"  # Ray's lookup misses this one
    assert products.accelerator_type_for("0x74A1") == "AMD-Instinct-MI300X-OAM"


@pytest.mark.parametrize("printed", ["nan", "inf", "1e309", "-inf", 12345678901234567890123, "1\ufffd134",
                                     "[Error 15: Unknown Error]"])
def test_a_value_printed_as_no_number_is_no_reading(printed: object) -> None:
    from rayaccel_amd import library

    assert isinstance(printed, int) or library._number(printed) is None  # (the binding's ints are u64)
    assert cli.number_of({"value": printed, "unit": "W"}) is None
