"""Held-out grading, round 10 (issue 46, lane F1): the untaken path its survivor c3 needed.

A command-csv bake publishing no metric at all for a device with fatal errors ("its readings are garbage until
reset"): no fixture's fault states metric values, so nothing compared a faulty device's samples with the readings the
fault leaves in place. RAC223's ``a-fault-takes-only-its-readings``: under each fault, a device still discovered keeps
every metric whose reading the fault leaves as it was. Two shapes: a card left out of the samples once its health
report is not healthy (c-samples-dropped-when-unhealthy), every card's sensors unread once any card counts a fatal
error (c-sensors-unread-after-fatal); the healthy control, under the same fault, keeps them.
"""

from __future__ import annotations

from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant

from rayaccel_testplugins import corpus
from rayaccel_testplugins.corpus_fault_metrics import SamplesDroppedWhenUnhealthy, SensorsUnreadAfterFatal

CARD = "ACME-000{}-5e1f-4c2a-9d3b-00000000000{}"


@pytest.mark.parametrize(("cls", "cards"), [(SamplesDroppedWhenUnhealthy, [2]),
                                            (SensorsUnreadAfterFatal, [0, 1, 2, 3])],
                         ids=["unhealthy-card", "whole-node"])
def test_metrics_taken_away_with_their_readings_in_place_fail_rac223_naming_the_invariant(
        cls: type[Any], cards: list[int]) -> None:
    plugin = mutant(cls)
    text = failure(plugin, "RAC223", "acme-4")
    for card in cards:
        card_id = CARD.format(card, card)
        assert (f"invariant a-fault-takes-only-its-readings, {plugin.name}/acme-4 under fault fatal-2: {card_id} is "
                "still discovered but has no ") in text, (card_id, text)
    said = text.split(f"{CARD.format(2, 2)} is still discovered but has no ", 1)[1]
    for name in ("power", "memory_used"):  # the files whose names name a metric (temp_mc, busy_percent do not)
        assert f"{name} (file /sys/class/acme/acme2/" in said.split("though the fault", 1)[0], (name, text)
    assert "(it changes fatal_errors)" in text, text


def test_a_plugin_keeping_a_faulty_cards_metrics_passes() -> None:
    # The control reports card 2 unhealthy under fatal-2 and keeps its samples.
    evidence(mutant(corpus.Healthy), "RAC223", "acme-4")
