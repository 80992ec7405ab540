"""Held-out grading, round 12 (issue 46, lane FG1): a cloud hint names the accelerator type its node publishes
(``invariant a-hint-names-the-type-its-node-publishes``, RAC209).

The sysfs bake ``s1`` shipped an instance-types.yaml giving each instance type's count and no accelerator type
("discovery reports it once the node is up"). The autoscaler node type `rayaccel export` builds from such a hint has
the family's resource and no ``accelerator_type:<type>``, which Ray's own AWS node types carry beside the count, so a
task asking for the type never starts one from zero while the node, once up, publishes it. RAC209 asked only the big
clouds' instance types and the fixtures', never the ones the plugin lists, and let a hint without a type pass. Two
corpus shapes (a hook dropping the type, a table without types); the reference plugins and the s1 table with its types
pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from mutant_grading import graded, mutant, wrapped

from rayaccel.plugins.instance_types import cloud_hint, instance_type_hints
from rayaccel.records import CloudHint
from rayaccel_conformance.checks.hint_types import untyped_hint_problem
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_gaudi import plugin as gaudi
from rayaccel_testplugins import corpus_untyped_hints as untyped

PACKAGE = Path(gaudi.__file__).parent
PHRASE = "invariant a-hint-names-the-type-its-node-publishes: "


def gaudi_with_table(tmp_path: Path, keep_types: bool) -> CheckFailed | str:
    """RAC209 on the Gaudi plugin answering both cloud hooks from a copy of its table (its types dropped: s1's edit)."""
    data = yaml.safe_load((PACKAGE / "instance-types.yaml").read_text(encoding="utf-8"))
    if not keep_types:
        for entries in data["instance_types"].values():
            for entry in entries.values():
                entry.pop("accelerator_type", None)
    table = tmp_path / "instance-types.yaml"
    table.write_text(yaml.safe_dump(data), encoding="utf-8")
    subject = wrapped(gaudi, "gaudi", str(PACKAGE),
                      rayaccel_cloud_hints=lambda provider, instance_type: cloud_hint(table, provider, instance_type),
                      rayaccel_cloud_instance_types=lambda: instance_type_hints(table))
    try:
        return str(CHECKS["RAC209"].function(subject))
    except CheckFailed as failed:
        return failed


def test_the_gaudi_plugin_with_a_table_without_accelerator_types_is_named(tmp_path: Path) -> None:
    failed = gaudi_with_table(tmp_path, keep_types=False)
    assert isinstance(failed, CheckFailed), failed
    text = str(failed)
    assert f"{PHRASE}hint for aws dl1.24xlarge gives 8 HPU and no accelerator type, but every node of the family " \
           "publishes one (discovery gives one on each of its 2 fixtures: Intel-GAUDI2, Intel-GAUDI3)" in text, text
    assert "the autoscaler's node type lacks accelerator_type:" in text, text


def test_the_gaudi_plugin_with_its_own_table_passes(tmp_path: Path) -> None:
    evidence = gaudi_with_table(tmp_path, keep_types=True)
    assert isinstance(evidence, str) and "hints agree with the family and catalog" in evidence, evidence


@pytest.mark.parametrize(("shape", "asked"), [
    (untyped.HintTypeLeftToDiscovery, ["hint for other acme-node gives 4 "]),
    (untyped.TableWithoutTypes, ["hint for aws acme1.xlarge gives 1 ", "hint for aws acme1.4xlarge gives 4 ",
                                 "hint for other acme-node gives 4 "])],
    ids=["hook", "table"])
def test_a_hint_without_the_type_every_node_publishes_is_named(shape: type[untyped.HintTypeLeftToDiscovery],
                                                               asked: list[str]) -> None:
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC209"].function(graded(mutant(shape)))
    text = str(failed.value)
    for line in asked:  # the listed types (acme1.*) are asked only because the plugin lists them
        assert f"{PHRASE}{line}" in text, text
    assert "the autoscaler's node type lacks accelerator_type:R1" in text, text


def test_a_family_whose_nodes_may_publish_no_type_is_not_held_to_one() -> None:
    hint = CloudHint(provider="aws", instance_type="acme1.xlarge", family="acme", count=1)
    assert untyped_hint_problem(hint, "ACME", {"acme/a": "R1", "acme/b": None}, {"R1"}, "hint") is None
    assert untyped_hint_problem(hint.model_copy(update={"accelerator_type": "R1"}), "ACME", {"acme/a": "R1"}, {"R1"},
                                "hint") is None
    said = untyped_hint_problem(hint, "ACME", {"acme/a": "R1", "acme/b": "R2"}, {"R1", "R2"}, "hint")
    assert said is not None and "discovery gives one on each of its 2 fixtures: R1, R2)" in said, said
    assert "lacks accelerator_type:<type>" in said, said  # two types the family can be: none named as the one
