"""RAC233's ``a-missing-key-is-an-unknown-reading`` (issue 46, held-out round 6: a reading's key missing from a
tool's JSON): each key of a metric reading in a command's JSON output left out in turn, on the pure helpers, on
AMD's amd-smi path, and on the two corpus mutants that read the tool right only while every field is there (graded
by the corpus too)."""

from __future__ import annotations

import json

import pytest
from mutant_grading import failure, mutant as mutant_of

from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks.damaged_readings import key_drops, without_key
from rayaccel_conformance.checks.readings import Reading
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS
from rayaccel_testplugins import corpus, corpus_missing_keys

OUTPUT = {"cards": [{"index": 0, "memory_used": {"value": 3000, "unit": "MiB"}, "power": 90}]}
HOST = {"commands": {"acme-smi --json": {"stdout": json.dumps(OUTPUT)}}, "files": {"/x": "1\n"}}


def test_a_json_reading_loses_its_own_key_and_its_object_s_named_key_in_turn() -> None:
    size = Reading("command", "acme-smi --json", ("cards", 0, "memory_used", "value"), 3000.0)
    assert key_drops(size) == [("cards", 0, "memory_used", "value"), ("cards", 0, "memory_used")]
    power = Reading("command", "acme-smi --json", ("cards", 0, "power"), 90.0)
    assert key_drops(power) == [("cards", 0, "power")]  # a list's element has no key of its own
    # A library's value left out is the binding's "not supported" (RAC271's); a table's cell has no key; a list item.
    assert key_drops(Reading("library", "nvml", ("devices", "0", "power_usage"), 90.0)) == []
    assert key_drops(Reading("table", "hl-smi", (1, 4), 90.0)) == []
    assert key_drops(Reading("command", "tool --json", ("temps", 2), 41.0)) == []


def test_a_key_left_out_is_gone_and_nothing_else_changes() -> None:
    size = Reading("command", "acme-smi --json", ("cards", 0, "memory_used", "value"), 3000.0)
    changed = without_key(HOST, size, size.path)
    after = json.loads(changed["commands"]["acme-smi --json"]["stdout"])
    assert after == {"cards": [{"index": 0, "memory_used": {"unit": "MiB"}, "power": 90}]}
    assert changed["files"] is HOST["files"] and json.loads(HOST["commands"]["acme-smi --json"]["stdout"]) == OUTPUT
    whole = json.loads(without_key(HOST, size, size.path[:-1])["commands"]["acme-smi --json"]["stdout"])
    assert whole == {"cards": [{"index": 0, "power": 90}]}


def test_amd_smi_json_with_each_metric_key_left_out_reads_it_as_unknown() -> None:
    manager = PluginManager()
    said = str(CHECKS["RAC233"].function(Subject("amd", manager), "amd/mi300x-8"))
    assert "14 of their JSON keys left out in turn: unknown, nothing else moved" in said, said


@pytest.mark.parametrize("mutant", [corpus_missing_keys.MissingKeyReadAsZero,
                                    corpus_missing_keys.MissingKeyDropsEveryCard], ids=lambda cls: cls.__name__)
def test_a_tool_read_right_only_with_every_key_fails_rac233_naming_the_invariant(mutant: type[corpus.Healthy]) -> None:
    plugin = mutant_of(mutant)
    name, said = plugin.name, failure(plugin, "RAC233", "acme-4-smi")
    assert f"invariant a-missing-key-is-an-unknown-reading, {name}/acme-4-smi with `acme-smi --json` output " \
           "cards.2.memory_used.value of ACME-0002" in said, said
    assert ("went from 3.38061e+09 to 0, unreported" if mutant is corpus_missing_keys.MissingKeyReadAsZero
            else "memory_used of ACME-0000-5e1f-4c2a-9d3b-000000000000 went from") in said, said
