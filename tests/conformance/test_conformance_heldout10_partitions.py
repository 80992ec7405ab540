"""Held-out grading, round 10 (issue 46, lane Yb): a unit's own failure judged on some of its records only.

``a1`` (an AMD wrapper) reported a partitioned GPU's health from its primary partition alone: a secondary partition
that stops answering amdsmi (``amd/mi300x-cpx-nps4``'s ``gpu1-partition5-io-error``) went unreported, named only as
"health of 13: expected unhealthy, got absent", which the fixture's expectation alone held. RAC203's ``invariant
a-failure-anywhere-is-seen`` compares the plugin with itself: the fault's change written on a sibling record (the
GPU's primary) fails the GPU, so the change on the secondary's must fail something too. Shown with the expectation
edited to the defect's answer (as a vendor edits it with the code), and on two corpus shapes (a die's directory,
a die library's records gathered by card, a tool's JSON listing read for die 0, a tool's CSV rows gathered by card)
whose machines' expectations are likewise the author's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from mutant_grading import evidence, failure, mutant, replaced

import rayaccel
from rayaccel.catalog import load_catalog
from rayaccel_amd import plugin as amd
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.registry import CHECKS
from rayaccel_testplugins import corpus
from rayaccel_testplugins.corpus import SYSFS
from rayaccel_testplugins.corpus_unseen_failures import (
    CSV_MACHINE,
    DIE_ROWS,
    DIE_TOOL,
    FILES_MACHINE,
    LIBRARY_MACHINE,
    TOOL_MACHINE,
    CardFromDieZeroRows,
    CardFromEveryDie,
    CardFromFirstDieRow,
    CardFromItsFirstDie,
    CardFromOneDieRecord,
)

INVARIANT = "invariant a-failure-anywhere-is-seen"
CARD2 = "ACME-0002-5e1f-4c2a-9d3b-000000000002"
FIXTURE = "mi300x-cpx-nps4"
GPU1 = "2bff74a1-0000-1000-804f-6a2f95e3d5c1"
DIES_OUTPUT = f"`{' '.join(DIE_TOOL)}` output dies"
ROWS_OUTPUT = f"`{' '.join(DIE_ROWS)}` output line"


def primary_only(host: Any, devices: list[rayaccel.Device]) -> list[rayaccel.HealthReport]:
    """a1's defect: each GPU's report alone, a secondary partition's own report dropped."""
    return [r for r in amd.rayaccel_health(host, devices) if r.device in {d.id for d in devices}]


def amd_with(health: Any, fixtures: Path) -> Any:
    here = Path(amd.__file__).parent
    return replaced(amd, "amd", rayaccel_health=health, rayaccel_fixture_dirs=lambda: [str(fixtures)],
                    rayaccel_sku_catalog=lambda: load_catalog(here / "skus.yaml"))


def edited_fixture(tmp_path: Path) -> Path:
    """The fixture with the fault's expectation edited to what the defect answers: nothing changes."""
    data = yaml.safe_load((Path(amd.__file__).parent / "fixtures" / f"{FIXTURE}.yaml").read_text(encoding="utf-8"))
    fault = next(f for f in data["faults"] if f["name"] == "gpu1-partition5-io-error")
    fault["expected"] = {"health": {GPU1: "healthy"}, "fatal": False,
                         "resources": dict(data["expected"]["resources"])}
    (tmp_path / f"{FIXTURE}.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return tmp_path


def test_a_secondary_partitions_failure_unreported_fails_with_its_expectation_edited(tmp_path: Path) -> None:
    all_checks()
    result = amd_with(primary_only, edited_fixture(tmp_path)).run(CHECKS["RAC203"], f"amd/{FIXTURE}")
    assert result.outcome == "failed", result.evidence
    said = " ".join(result.evidence)
    assert f"{INVARIANT}, amd/{FIXTURE} fault gpu1-partition5-io-error: its change of library amdsmi gpus.13 " in said
    assert f"the record is partition 13 of {GPU1}) changes no unit's health" in said, said
    assert f"the same change on library amdsmi gpus.8 (partition 8 of {GPU1} (its first" in said, said
    assert f"gives {GPU1} unhealthy [amdsmi-io]" in said and "a partition's own failure goes unreported" in said, said


def test_the_amd_plugin_reporting_the_partition_passes(tmp_path: Path) -> None:
    all_checks()
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    shipped = Path(amd.__file__).parent / "fixtures" / f"{FIXTURE}.yaml"
    (fixtures / f"{FIXTURE}.yaml").write_bytes(shipped.read_bytes())
    result = amd_with(amd.rayaccel_health, fixtures).run(CHECKS["RAC203"], f"amd/{FIXTURE}")
    assert result.outcome == "passed", result.evidence


@pytest.mark.parametrize(("cls", "machine", "record", "sibling"), [
    (CardFromItsFirstDie, FILES_MACHINE, f"directory {SYSFS}/acme2/die1", f"directory {SYSFS}/acme2/die0"),
    (CardFromOneDieRecord, LIBRARY_MACHINE, "library acmedie dies.4", "library acmedie dies.5"),
    (CardFromDieZeroRows, TOOL_MACHINE, f"{DIES_OUTPUT}.5", f"{DIES_OUTPUT}.4"),
    (CardFromFirstDieRow, CSV_MACHINE, f"{ROWS_OUTPUT} 5", f"{ROWS_OUTPUT} 4")],
    ids=["first-die-directory", "one-record-per-card", "die-zero-json-entries", "first-csv-row-per-card"])
def test_a_card_judged_by_one_of_its_dies_fails_naming_the_invariant(
        cls: type[corpus.Healthy], machine: str, record: str, sibling: str) -> None:
    plugin = mutant(cls)
    said = failure(plugin, "RAC203", machine)
    assert f"{INVARIANT}, {plugin.name}/{machine} fault die-fatal: its change of {record} " in said, said
    assert f"the same change on {sibling} ({CARD2}'s record) gives {CARD2} unhealthy [acme-fatal]" in said, said
    assert f"{CARD2} is judged by one of its records and not by the other" in said, said


def test_the_reader_of_every_die_passes() -> None:
    right = CardFromEveryDie("c-card-from-every-die")
    for machine in (FILES_MACHINE, LIBRARY_MACHINE, TOOL_MACHINE, CSV_MACHINE):
        assert "die-fatal" in evidence(right, "RAC203", machine)
