"""Held-out grading, round 9 (issue 46, lane S2): the untaken path its survivor j2 needed.

A device's capacity emitted only beside its stats record (a command-json bake: memory_total inside `if stats is not
None`, though the listing gives the device's memory): every fixture's tool answers list every device, so RAC233
leaves the device's record out of one answer and holds what the device reads elsewhere, or states in its own record,
in place (``a-missing-record-keeps-the-rest``). Two shapes: the capacity beside a JSON record
(c-capacity-beside-busy-record), every sample of a card built from its CSV row (c-samples-only-from-power-row); a
plugin reading the same JSON record and keeping the rest passes.
"""

from __future__ import annotations

from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant

from rayaccel_testplugins.corpus_missing_records import CapacityBesideBusyRecord, SamplesOnlyFromPowerRow
from rayaccel_testplugins.corpus_zero import IdleCoreBusyUnread

CARD_2 = "ACME-0002-5e1f-4c2a-9d3b-000000000002"


@pytest.mark.parametrize(("cls", "machine", "record", "lost"), [
    (CapacityBesideBusyRecord, "acme-4-busy", "`acme-smi --json --query-busy` output cards.2", ["memory_total"]),
    (SamplesOnlyFromPowerRow, "acme-4-power", "`acme-smi --query-power --format=csv,noheader` output line 3",
     ["memory_total", "memory_used", "temperature", "utilization"])], ids=["json-record", "csv-row"])
def test_a_device_losing_what_it_reads_elsewhere_with_one_record_fails_rac233_naming_the_invariant(
        cls: type[Any], machine: str, record: str, lost: list[str]) -> None:
    plugin = mutant(cls)
    text = failure(plugin, "RAC233", machine)
    assert (f"invariant a-missing-record-keeps-the-rest, {plugin.name}/{machine} with {record} ({CARD_2}'s record) "
            "left out") in text, text
    for name in lost:
        assert f"{CARD_2}'s {name} (" in text and "which that record does not give, is gone" in text, (name, text)


def test_a_plugin_keeping_the_rest_of_a_device_without_its_record_passes() -> None:
    # It reads the busy record as the first mutant does, and keeps the capacity (its own defect is RAC223's).
    text = evidence(mutant(IdleCoreBusyUnread), "RAC233", "acme-4-busy")
    assert "1 of its records left out in turn: the rest kept" in text, text
