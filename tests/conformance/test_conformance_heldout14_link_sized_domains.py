"""Held-out grading, round 14 (issue 46, lane K2): a domain's size counts its devices, which one link neither adds
nor takes away (``invariant a-domain-is-sized-by-its-devices``, RAC202).

The command-csv bake ``c2`` sized its fabric's domain by the links its tool lists (6 for a full mesh of 4 devices);
with the domain's id made from its first member (``c2fe``), not the host's name, and the fixture's labels edited to
the code's answer, it passed. Two corpus shapes whose fixtures expect the code's labels: the mesh sized by its links,
and by the link entries the driver lists (each link at both ends).
"""

from __future__ import annotations

from typing import Any

import pytest
from mutant_grading import failure, mutant

from rayaccel_conformance.checks.link_sized_domains import INVARIANT, without_readings
from rayaccel_conformance.checks.readings import Reading
from rayaccel_testplugins.corpus_link_sized_domains import MeshSizedByLinkEntries, MeshSizedByLinks
from rayaccel_testplugins.corpus_linked_members import MACHINE


@pytest.mark.parametrize(("shape", "size"), [(MeshSizedByLinks, 6), (MeshSizedByLinkEntries, 12)])
@pytest.mark.parametrize("machine", ["acme-4", MACHINE])
def test_a_domain_sized_by_its_links_is_named(shape: type[MeshSizedByLinks], size: int, machine: str) -> None:
    said = failure(mutant(shape), "RAC202", machine)
    assert f"invariant {INVARIANT}, {mutant(shape).name}/{machine}: domain other " in said, said
    assert f"-mesh' has size {size} with 4 members here; with link " in said, said
    assert f"its members are the same and its size is {size - 1 if size == 6 else size - 2}" in said, said
    assert "expected" not in said, said


def test_a_table_line_a_file_and_a_json_record_are_taken_away() -> None:
    host: dict[str, Any] = {
        "files": {"/sys/x/links/b": "100\n"}, "libraries": {"lib": {"links": {"0": {"1": {"gbps": 100}}}}},
        "commands": {"tool --links": {"stdout": "a, b, 100\na, c, 100\n"}}, "env": {}, "http": {}}
    gone = without_readings(host, [Reading("file", "/sys/x/links/b", (), 100.0),
                                   Reading("table", "tool --links", (0, 2), 100.0, "a, b, 100"),
                                   Reading("library", "lib", ("links", "0", "1", "gbps"), 100.0)])
    assert gone["files"] == {} and gone["commands"]["tool --links"]["stdout"] == "a, c, 100\n"
    assert gone["libraries"]["lib"] == {"links": {"0": {}}}
    assert host["commands"]["tool --links"]["stdout"] == "a, b, 100\na, c, 100\n"  # the state given is unchanged
