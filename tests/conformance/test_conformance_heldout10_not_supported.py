"""Held-out grading, round 10 (issue 46, lane F1): the untaken path its survivor c1 needed.

A command-csv bake matching the tool's not-supported spellings case-sensitively ("[n/a]" but not "N/A"): one cell the
tool prints N/A made the row malformed and the device lost every metric of it. RAC271 answered each reading as not
supported and checked only that reading's metric and the other devices; ``not-supported-takes-only-its-value``: the
device keeps the samples other readings give. Two shapes: a card skipped whole when its JSON busy record's figure is
no number (c-card-skipped-on-busy-na), a card left with its capacity alone when its CSV power row's draw is no number
(c-row-dropped-on-power-na); the healthy control keeps them.
"""

from __future__ import annotations

from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant

from rayaccel_testplugins import corpus
from rayaccel_testplugins.corpus_not_supported_rows import CardSkippedOnBusyNa, RowDroppedOnPowerNa

CARD_2 = "ACME-0002-5e1f-4c2a-9d3b-000000000002"


@pytest.mark.parametrize(("cls", "machine", "answer", "lost"), [
    (CardSkippedOnBusyNa, "acme-4-busy", "`acme-smi --json --query-busy` output cards.2.utilization.core printed 'N/A'",
     "memory_total, memory_used, power, temperature"),
    (RowDroppedOnPowerNa, "acme-4-power", "`acme-smi --query-power --format=csv,noheader` output line 2 field 2 "
     "printed 'N/A'", "memory_used, temperature, utilization")], ids=["json-record", "csv-row"])
def test_a_device_losing_its_other_values_with_one_not_supported_fails_rac271_naming_the_invariant(
        cls: type[Any], machine: str, answer: str, lost: str) -> None:
    plugin = mutant(cls)
    text = failure(plugin, "RAC271", machine)
    assert f"invariant not-supported-takes-only-its-value, {plugin.name}/{machine} with {CARD_2}'s " in text, text
    assert f"{answer}: {CARD_2} lost {lost} too, which other readings give" in text, text


def test_a_plugin_keeping_the_rest_of_a_device_with_one_value_not_supported_passes() -> None:
    assert "answered as not supported in turn" in evidence(mutant(corpus.Healthy), "RAC271", "acme-4")
