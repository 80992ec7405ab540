"""Held-out grading, round 9 (issue 46, lane Y): an id cut in discovery only names the cut, not only the unknowns.

The command-json bake ``j1`` stripped the tool's ``DUNLIN-`` prefix from each uuid in discovery while health, stats
and links stayed keyed by the full uuid: RAC105 said every device's health was unknown, no error counters. Where
every discovered id is the machine's with one prefix or suffix cut off and printed alone nowhere,
:func:`value_relations.trimmed_ids` says so, with the places the machine prints the full form.
"""

from __future__ import annotations

from mutant_grading import failure, mutant

from rayaccel_conformance.checks.value_relations import trimmed_ids
from rayaccel_testplugins.corpus_trimmed_ids import IdPrefixCut

LIST = "dunlin-smi list --json"


def test_a_sysfs_uuid_cut_in_discovery_names_the_prefix() -> None:
    """Another shape than j1's tool: the driver's uuid files, ``ACME-`` cut."""
    said = failure(mutant(IdPrefixCut), "RAC105", "acme-4")
    assert ("every device id is the machine's id with the prefix 'ACME-' cut off: 0000-5e1f-4c2a-9d3b-000000000000 "
            "is ACME-0000-5e1f-4c2a-9d3b-000000000000 in file /sys/class/acme/acme0/uuid") in said, said


def test_j1s_tool_output_names_the_prefix_and_every_place() -> None:
    state = {"commands": {
        LIST: {"stdout": '{"devices": [{"uuid": "DUNLIN-5e1f4c2a-0000"}, {"uuid": "DUNLIN-5e1f4c2a-0001"}]}'},
        "dunlin-smi health --json": {"stdout": '{"DUNLIN-5e1f4c2a-0000": {}, "DUNLIN-5e1f4c2a-0001": {}}'}}}
    said = trimmed_ids(["5e1f4c2a-0000", "5e1f4c2a-0001"], state) or ""
    assert said.startswith("every device id is the machine's id with the prefix 'DUNLIN-' cut off: 5e1f4c2a-0000 is "
                           f"DUNLIN-5e1f4c2a-0000 in `dunlin-smi health --json` output, `{LIST}` output"), said
    # The ids as the machine prints them, or one printed alone somewhere: nothing to name.
    assert trimmed_ids(["DUNLIN-5e1f4c2a-0000", "DUNLIN-5e1f4c2a-0001"], state) is None
    state["commands"]["dunlin-smi serial"] = {"stdout": "5e1f4c2a-0000\n"}
    assert trimmed_ids(["5e1f4c2a-0000", "5e1f4c2a-0001"], state) is None
