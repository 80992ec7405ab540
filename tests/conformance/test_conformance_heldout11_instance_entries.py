"""Held-out grading, round 11 (issue 46, lane F3): an instance type's hint is its own entry's (``invariant
a-hint-is-its-own-entry``, RAC222).

The NVIDIA wrapper ``n2`` answered an instance type its table does not list with its family's first listed entry. Every
real size of a family the table lists is listed today, so nothing the suite asked reached it; the table trails the
cloud, though (AWS added ``p5.4xlarge``, one H100, beside ``p5.48xlarge``'s eight), and on the day a size launches the
wrapper hints it as another. The SDK reads the table, so RAC222 hands the plugin its own table with each entry left out
in turn: the answer must be no hint, or what it was. Two corpus shapes (an AWS family's first entry, a GCP series'
largest); the table's own reader, and the reference plugins answering from theirs, pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutant_grading import graded, mutant, wrapped

from rayaccel.plugins import instance_types
from rayaccel.plugins.instance_types import cloud_hint, instance_type_hints, load_instance_types
from rayaccel.records import CloudHint
from rayaccel_conformance.checks.instance_entries import tables_read, without
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_nvidia import plugin as nvidia
from rayaccel_testplugins import corpus_instance_entries as entries

TABLE = Path(nvidia.__file__).with_name("instance-types.yaml")


def family_first(provider: str, instance_type: str) -> CloudHint | None:
    """``n2``'s hook: the table's entry, else its AWS family's first listed one."""
    if (hint := cloud_hint(TABLE, provider, instance_type)) is not None:
        return hint
    family = instance_type.split(".", 1)[0]
    same = [h for h in instance_type_hints(TABLE) if h.provider == provider
            and h.instance_type.split(".", 1)[0] == family]
    return same[0].model_copy(update={"instance_type": instance_type}) if same else None


def test_the_nvidia_plugin_hinting_an_unlisted_size_as_its_familys_first_entry_is_named() -> None:
    subject = wrapped(nvidia, "nvidia", str(TABLE.parent), rayaccel_cloud_hints=family_first)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC222"].function(subject)
    text = str(failed.value)
    assert "invariant a-hint-is-its-own-entry: with aws p3.8xlarge left out of the instance-type table " in text, text
    assert "the plugin still hints it: 1 x V100, p3.2xlarge's entry, where its own entry gives 4 x V100" in text, text
    assert "answer no hint for an instance type the table does not list" in text, text
    p5 = family_first("aws", "p5.4xlarge")
    assert p5 is not None and p5.count == 1  # listed today: only the table as it stood before reaches the defect
    with tables_read({str(TABLE): without(load_instance_types(TABLE), "aws", "p5.4xlarge")}):
        before = family_first("aws", "p5.4xlarge")
    assert before is not None and (before.count, before.accelerator_type) == (8, "H100")


def test_the_nvidia_plugin_answering_from_its_table_passes() -> None:
    subject = wrapped(nvidia, "nvidia", str(TABLE.parent),
                      rayaccel_cloud_hints=lambda provider, instance_type: cloud_hint(TABLE, provider, instance_type))
    evidence = str(CHECKS["RAC222"].function(subject))
    assert "entries of the instance-type tables it reads each left out in turn, none answered from another" \
        in evidence, evidence


@pytest.mark.parametrize(("shape", "line"), [
    (entries.HintFromFamilyFirstEntry, "with aws acme1.4xlarge left out of the instance-type table "),
    (entries.HintFromSeriesLargestEntry, "with gcp acme-r1-1g left out of the instance-type table ")],
    ids=["aws-family", "gcp-series"])
def test_a_hint_taken_from_another_entry_is_named(shape: type[entries.HintFromFamilyFirstEntry], line: str) -> None:
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC222"].function(graded(mutant(shape)))
    text = str(failed.value)
    assert f"invariant a-hint-is-its-own-entry: {line}" in text, text
    assert "x R1, acme" in text and "'s entry, where its own entry gives " in text, text
    assert "acme-node left out" not in text, text  # no entry to take it from


def test_the_tables_own_reader_passes_and_the_loader_is_restored() -> None:
    plugin = entries.HintFromOwnEntry("c-hint-from-own-entry")
    evidence = str(CHECKS["RAC222"].function(graded(plugin)))
    assert "5 entries of the instance-type tables it reads each left out in turn" in evidence, evidence
    assert instance_types.load_instance_types is load_instance_types
    table = load_instance_types(entries.table_of(plugin.name))
    trimmed = without(table, "gcp", "acme-r1-1g")
    assert [h.instance_type for h in trimmed.hints()] == ["acme1.xlarge", "acme1.4xlarge", "acme-r1-4g", "acme-node"]
    assert len(table.hints()) == 5  # the table read is not changed
