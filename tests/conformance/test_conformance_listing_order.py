"""RAC226's perturbation, pure: which command answers are a listing, how they are reversed, what is left in order
(records that name no device), and what the invariant compares. The check itself is graded on the corpus
(``c-index-from-json-position``, ``c-index-from-csv-row``) and the reference plugins."""

from __future__ import annotations

import json

from rayaccel_conformance.checks.listing_order import (
    listing_differences,
    listing_facts,
    reordered_commands,
    reversed_json,
    reversed_table,
)

CHECK = "RAC226"


def test_a_json_list_of_records_is_reversed_at_the_top_or_under_a_top_level_key() -> None:
    rows = [{"index": i, "uuid": f"U{i}"} for i in range(3)]
    assert json.loads(reversed_json(json.dumps(rows))[0] or "") == rows[::-1]
    new, kept = reversed_json(json.dumps({"driver": "1", "devices": rows, "links": [{"a": "U0", "b": "U1"}] * 2}))
    document = json.loads(new or "")
    assert document["devices"] == rows[::-1] and document["driver"] == "1" and kept == []


def test_records_that_name_no_device_stay_in_order_and_are_said_to() -> None:
    positional = json.dumps({"cards": [{"memory": 1}, {"memory": 2}]})
    assert reversed_json(positional) == (None, ["its 'cards' list"])
    answers, changed, kept = reordered_commands({"smi": {"stdout": positional}})
    assert changed == [] and kept == ["smi: its 'cards' list"] and answers["smi"]["stdout"] == positional


def test_a_table_keeps_its_header_first_and_a_headerless_one_is_reversed_whole() -> None:
    assert reversed_table("index, uuid\n0, U0\n1, U1\n") == "index, uuid\n1, U1\n0, U0\n"
    assert reversed_table("0, U0\n1, U1\n2, U2\n") == "2, U2\n1, U1\n0, U0\n"
    assert reversed_table("port  0:\tUP\nport  1:\tDOWN\nport  2:\tUP") == "port  2:\tUP\nport  1:\tDOWN\nport  0:\tUP"
    assert reversed_table("driver 1.2\nok\n") is None and reversed_table("a,b\n1,2\n3\n") is None


def test_failed_commands_and_plain_text_are_left_alone() -> None:
    commands = {"bad": {"stdout": "[{\"index\": 0}, {\"index\": 1}]", "returncode": 3},
                "text": {"stdout": "version 1.0\n"}}
    assert reordered_commands(commands)[1] == []


def _facts(indexes: dict[str, int], links: list[tuple[str, str]]) -> dict[str, object]:
    """What listing_facts gives for devices of these indexes and these links."""
    return {"devices": {dev: {"index": i, "units": [str(i)], "pci_bus_id": f"0000:1{i}:00.0"}
                        for dev, i in indexes.items()},
            "links": sorted((a, b, "other", 100.0) for a, b in links)}


def test_an_index_moved_or_a_link_lost_is_named_with_both_values() -> None:
    before = _facts({"A": 0, "B": 1}, [("A", "B")])
    assert listing_facts(None) == {"devices": {}, "links": []}
    assert listing_differences(before, before) == []
    wrong = listing_differences(before, _facts({"A": 1, "B": 0}, []))
    assert any("2 devices' index changed, such as A's from 0 to 1" in w for w in wrong)
    assert any("the links change: 1 lost" in w for w in wrong)
