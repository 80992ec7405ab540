"""Held-out grading, round 8 (issue 46, lane H5): the untaken paths two of its survivors needed.

A tool's CSV read by splitting each line on every comma (the command-csv bake ``c1``): no fixture's cell holds a
comma, so the split reads every fixture right. RAC225's ``quoted-cell-keeps-the-row`` writes the middle card's
product name with a comma in it, quoted as RFC 4180 quotes such a cell, where the command asks for
``--format=csv``: the card must carry the new name and nothing else may move (c-csv-row-split-on-commas: the
card's line skipped, the card lost; c-csv-cells-by-position: the name cut at the comma).

Two error counters read from each other's fields (the command-json bake ``j2``: corrected and uncorrected ECC errors
swapped): every fixture's counters are 0. RAC223's ``a-fault-moves-its-own-metric`` builds each fault of the fixture
and sees the number it raised in the other counter's metric (c-ecc-keys-swapped: a JSON record's keys;
c-ecc-cells-swapped: a CSV row's cells).
"""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant

from rayaccel_conformance.checks.fault_readings import field_name, named_metric
from rayaccel_conformance.checks.readings import Reading, TextReading, quoted_host, quotes_cells
from rayaccel_testplugins.corpus_fault_counters import EccCellsSwapped, EccKeysSwapped
from rayaccel_testplugins.corpus_quoted_cells import CsvCellsByPosition, CsvRowSplitOnCommas

MACHINE = "acme-4-names"




def by_csv_reader(stdout: str) -> dict[int, str]:
    rows = csv.reader(io.StringIO(stdout), skipinitialspace=True)
    return {int(row[0]): row[1].strip() for row in rows if len(row) == 3}


class NamesByCsvReader(CsvRowSplitOnCommas):
    """The tool's CSV read with a CSV reader, as the template's probe reads it: a quoted cell is one cell."""

    PARSE = staticmethod(by_csv_reader)


def test_a_cell_is_written_quoted_as_rfc_4180_quotes_it() -> None:
    command = "smi --query=index,name --format=csv,noheader"
    host: dict[str, Any] = {"commands": {command: {"stdout": "0, A 1, x\n1, A 1, y\n"}}}
    state = quoted_host(host, TextReading("table", command, (1, 1)), 'A 1, "big"')
    assert state["commands"][command]["stdout"] == '0, A 1, x\n1, "A 1, ""big""", y\n'
    assert list(csv.reader(io.StringIO(state["commands"][command]["stdout"]), skipinitialspace=True))[1] == \
        ["1", 'A 1, "big"', "y"]
    assert host["commands"][command]["stdout"] == "0, A 1, x\n1, A 1, y\n"  # the given state untouched
    assert quotes_cells(command) and quotes_cells("smi --format=csv")
    assert not quotes_cells("hl-smi -Q index,name -f csv") and not quotes_cells("smi --format=csvx")


@pytest.mark.parametrize(("cls", "fragment"), [
    (CsvRowSplitOnCommas, "the devices change: 1 gone (ACME-0002-5e1f-4c2a-9d3b-000000000002)"),
    (CsvCellsByPosition, "its product_name is 'ACME Roadrunner R1', not 'ACME Roadrunner R1, rev B'")],
    ids=["row-split-on-commas", "cells-by-position"])
def test_a_csv_split_on_every_comma_fails_rac225_naming_the_invariant(cls: type[Any], fragment: str) -> None:
    plugin = mutant(cls)
    said = failure(plugin, "RAC225", MACHINE)
    assert f"invariant quoted-cell-keeps-the-row, {plugin.name}/{MACHINE} with `acme-smi" in said, said
    assert "written '\"ACME Roadrunner R1, rev B\"'" in said and fragment in said, said


def test_a_csv_reader_passes_rac225_with_the_name_quoted() -> None:
    said = evidence(NamesByCsvReader("c-names-by-csv-reader"), "RAC225", MACHINE)
    assert "written quoted with a comma in it, the new text is its name and nothing else moves" in said, said


def test_a_field_names_the_metric_it_shares_most_words_with() -> None:
    ecc = {"ecc_errors_corrected", "ecc_errors_uncorrected", "power"}
    assert named_metric("corrected_errors", ecc) == "ecc_errors_corrected"
    assert named_metric("ecc.uncorrected", ecc) == "ecc_errors_uncorrected"
    assert named_metric("fatal_errors", ecc) is None  # one common word with each: no claim
    row = "2, ID-2, 12, 0"
    assert field_name(Reading("table", "smi --query-ecc=index,uuid,ecc.corrected,ecc.uncorrected --format=csv",
                              (2, 2), 12.0, row)) == "ecc.corrected"
    assert field_name(Reading("command", "smi --json", ("cards", 2, "ecc", "corrected"), 12.0)) == "corrected"
    assert field_name(Reading("file", "/sys/class/x/x2/fatal_errors", (), 1.0)) == "fatal_errors"


@pytest.mark.parametrize("cls", [EccKeysSwapped, EccCellsSwapped], ids=lambda cls: cls.__name__)
def test_counters_read_from_each_other_s_fields_fail_rac223_naming_the_invariant(cls: type[Any]) -> None:
    plugin = mutant(cls)
    said = failure(plugin, "RAC223", "acme-4")
    assert f"invariant a-fault-moves-its-own-metric, {plugin.name}/acme-4 under fault corrected-2: " in said, said
    assert "went from 0 to 12, and ecc_errors_uncorrected reads 12 while ecc_errors_corrected reads 0" in said, said


def test_counters_read_from_their_own_fields_pass_rac223_under_the_fault() -> None:
    swap = {"ecc_errors_corrected": "ecc_errors_uncorrected", "ecc_errors_uncorrected": "ecc_errors_corrected"}

    class EccKeysRight(EccKeysSwapped):
        def rayaccel_metrics(self, host: Any, devices: Any) -> Any:
            return [s.model_copy(update={"name": swap.get(s.name, s.name)})
                    for s in super().rayaccel_metrics(host, devices)]

    assert "moved exactly with their readings" in evidence(EccKeysRight("c-ecc-keys-right"), "RAC223", "acme-4")
