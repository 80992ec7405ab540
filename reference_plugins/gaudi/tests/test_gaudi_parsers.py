"""The hl-smi parsers: the documented CSV query and port listings, units, N/A, and clear errors otherwise."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from rayaccel.testing import collect_problems
from rayaccel_gaudi.hlsmi import QUERY_FIELDS, HlSmiParseError, parse_ports, parse_query

ROW = ("0, 2, HL-225, 01P0-HL2080A0-15-TNB0Y2-22-01-01, AN21100450, 0000:33:00.0, 98304 MiB, 672 MiB, "
       "1.18.0-ee698fb, 26 C, 96 W, 0 %, 0, 3, 0, 3")

cells = st.sampled_from(["0", "7", "HL-225", "N/A", "98304 MiB", "26 C", "96 W", "0 %", "0000:33:00.0", "", "x", "-1"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(cells | st.text(max_size=6), min_size=len(QUERY_FIELDS) - 1, max_size=len(QUERY_FIELDS) + 1)
                .map(", ".join), max_size=4).map("\n".join))
def test_query_output_either_parses_or_raises_a_parse_error(text):
    try:
        records = parse_query(text)
    except HlSmiParseError as e:
        assert str(e).startswith("`hl-smi -Q`")
    else:
        assert [r.index for r in records] == sorted(r.index for r in records)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=80))
def test_port_output_either_parses_or_raises_a_parse_error(text):
    try:
        ports = parse_ports(text, "hl-smi -n link -i x")
    except HlSmiParseError as e:
        assert "hl-smi -n link" in str(e)
    else:
        assert all(isinstance(p, int) for p in ports)


def test_query_row_with_units():
    (record,) = parse_query(ROW + "\n")
    assert (record.index, record.module_id, record.name, record.bus_id) == (0, 2, "HL-225", "0000:33:00.0")
    assert (record.memory_total_mib, record.memory_used_mib) == (98304, 672)
    assert (record.temperature_c, record.power_w) == (26, 96)
    assert (record.ecc_uncorrected, record.ecc_corrected, record.missing) == (0, 3, [])


def test_not_available_fields_are_missing_not_zero():
    row = ROW.replace("672 MiB", "N/A").replace("26 C", "N/A").replace("96 W", "N/A").replace("0 %", "N/A")
    (record,) = parse_query(row)
    assert record.memory_used_mib is None and sorted(record.missing) == sorted(
        ["memory.used", "temperature.aip", "power.draw", "utilization.aip"])


def test_a_cut_line_is_reported_naming_the_line_and_the_fields_and_the_others_kept():
    with collect_problems() as sink:
        (record,) = parse_query(ROW + "\n1, 6, HL-2\n")
    assert record.module_id == 2
    assert "line 2 has 3 fields, expected 16 (index, module_id" in sink.drain()[0].message


def test_wrong_unit_or_absurd_value_is_reported_and_that_field_unknown():
    with collect_problems() as sink:
        (record,) = parse_query(ROW.replace("98304 MiB", "96 GB").replace("26 C", "9999 C"))
    assert record.memory_total_mib is None and record.temperature_c is None and record.power_w == 96
    messages = "\n".join(r.message for r in sink.drain())
    assert "memory.total is '96 GB', expected a number in MiB" in messages
    assert "temperature.aip is '9999 C', expected a number in [-50, 250] C" in messages


def test_duplicate_module_ids_are_reported_and_the_first_kept():
    with collect_problems() as sink:
        (record,) = parse_query(ROW + "\n" + ROW.replace("0, 2,", "1, 2,", 1))
    assert record.index == 0
    assert "repeats index 1 or module_id 2" in sink.drain()[0].message


def test_a_billion_lines_are_not_read():
    with collect_problems() as sink:
        records = parse_query((ROW + "\n") * 100_000)
    assert len(records) == 1 and len(sink.drain()) >= 2


def test_ports():
    assert parse_ports("port  0:\tUP\nport 22:        DOWN\n", "c") == {0: "up", 22: "down"}
    assert parse_ports("port  8:\texternal\n", "c") == {8: "external"}
    with pytest.raises(HlSmiParseError, match="line 1 is not 'port <n>: <state>'"):
        parse_ports("hl-smi: device not found\n", "c")
