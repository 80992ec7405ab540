"""Held-out grading, round 19 (issue 46, lane J22): a health signal a tool leaves out is unread, not a clean reading
(``invariant a-left-out-signal-is-unread``, RAC203 under each declared fault).

The command-json bake ``j2`` (quill) read a health entry's missing ``fatal_errors`` or ``corrected_errors`` key as 0
("firmware leaves a counter out until it first counts"): under a declared fault with that key gone, the device came
out healthy and nothing was said, while the same counter printed ``N/A`` made it unknown with a problem. Every
fixture states every key, so j2 reached ``supported``. RAC203 now leaves each number a fault sets on a device its
faulted build takes off healthy out of the tool's output (the JSON key, the CSV cell) and prints it ``N/A`` apart:
j2 (its health path, tests/rayaccel_testplugins/heldout19_quill.py) and both corpus shapes are named; the template's
reading and the corpus controls, which read a left-out value as unread, pass.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant, replaced

from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.left_out_signals import left_out_host
from rayaccel_conformance.checks.readings import Reading
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import heldout19_quill
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_left_out_signals import (
    CSV_MACHINE,
    JSON_MACHINE,
    EmptyPagesCellAsZero,
    LeftOutCountAsZero,
)

INVARIANT = "invariant a-left-out-signal-is-unread"
CARD_2 = "ACME-0002-5e1f-4c2a-9d3b-000000000002"


class CountLeftOutUnread(LeftOutCountAsZero):
    """A count the record leaves out read right: unread, the card unknown, said."""

    left_out = None


class EmptyCellUnread(EmptyPagesCellAsZero):
    """An empty cell read right: unread, the card unknown, said."""

    empty_cell = ""


@pytest.mark.parametrize(("shape", "machine", "said"), [
    (LeftOutCountAsZero, JSON_MACHINE, f"fault card2-uncorrected: {CARD_2} is unhealthy under the fault "
                                       "(`acme-smi health --json` output cards.2.uncorrected_errors = 2); with that "
                                       "value its key left out"),
    (EmptyPagesCellAsZero, CSV_MACHINE, f"fault card2-pages-pending: {CARD_2} is degraded under the fault "
                                        "(`acme-smi pages --csv` output line 3 field 2 = 3); with that value its cell "
                                        "left empty")], ids=["tool-json", "tool-csv"])
def test_a_left_out_count_read_as_zero_is_named(shape: type[Healthy], machine: str, said: str) -> None:
    plugin = mutant(shape)
    message = failure(plugin, "RAC203", machine)
    assert f"{INVARIANT}, {plugin.name}/{machine} {said}" in message, message
    assert f"{CARD_2} is reported healthy and nothing is said, while the same value printed N/A makes it unknown, " \
           "unreadable-attribute" in message, message
    assert "expected" not in message, message  # the fixture's expectations are not what names it


@pytest.mark.parametrize(("cls", "machine"), [(CountLeftOutUnread, JSON_MACHINE), (EmptyCellUnread, CSV_MACHINE)],
                         ids=["tool-json", "tool-csv"])
def test_a_left_out_value_read_as_unread_passes(cls: type[Healthy], machine: str) -> None:
    plugin = cls("c-" + cls.__name__.lower())
    assert "faults as declared" in str(evidence(plugin, "RAC203", machine))


def _quill(left_out: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(heldout19_quill, "LEFT_OUT", left_out)
    all_checks()
    subject = replaced(heldout19_quill, "quill")
    return str(CHECKS["RAC203"].function(subject, "quill/quill-4"))


def test_j2_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CheckFailed) as failed:
        _quill(0, monkeypatch)
    said = str(failed.value)
    assert (f"{INVARIANT}, quill/quill-4 fault fatal-2: QUILL-5e1f4c2a-0002 is unhealthy under the fault "
            "(`quill-smi health --json` output devices.2.fatal_errors = 1); with that value its key left out"
            ) in said, said
    assert "fault corrected-errors: QUILL-5e1f4c2a-0003 is degraded under the fault" in said, said
    assert "printed N/A makes it unknown, malformed-output" in said, said


def test_the_templates_reading_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "2 faults as declared" in _quill(None, monkeypatch)


def test_a_value_is_left_out_as_a_tool_leaves_it_out() -> None:
    table = {"commands": {"t": {"stdout": "card, uuid, n\n0, A, 7\n"}}}
    cell = left_out_host(table, Reading("table", "t", (1, 2), 7.0, "0, A, 7"))
    assert cell is not None and cell["commands"]["t"]["stdout"] == "card, uuid, n\n0, A, \n"
    record = {"commands": {"j": {"stdout": json.dumps({"cards": [{"uuid": "A", "n": 7, "m": 1}]})}}}
    gone = left_out_host(record, Reading("command", "j", ("cards", 0, "n"), 7.0))
    assert gone is not None and json.loads(gone["commands"]["j"]["stdout"]) == {"cards": [{"uuid": "A", "m": 1}]}
    assert left_out_host(record, Reading("command", "j", ("cards", 0), 7.0)) is None  # a list's item: another damage
    assert left_out_host({"files": {"/f": "7\n"}}, Reading("file", "/f", (), 7.0)) is None  # RAC211's, not this
