"""Corpus mutants whose cloud hints give the count and leave the accelerator type out, "discovery reports it once the
node is up" (issue 46, held-out round 12's ``s1``: a sysfs bake's instance-types.yaml without accelerator_type). The
autoscaler's node type then lacks ``accelerator_type:R1``, which every ACME node publishes, so a task asking for R1
never starts one from zero. RAC209's ``a-hint-names-the-type-its-node-publishes`` kills both shapes: a hook building
the hint in code, and an instance-type table read through the SDK's ``cloud_hint``, as s1 did.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its name
so a Ray node loads it (``c-hint-type-left-to-discovery`` as ``c_hint_type_left_to_discovery``).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from rayaccel import CloudHint
from rayaccel.files.atomic import write_atomically
from rayaccel.plugins.instance_types import cloud_hint, instance_type_hints
from rayaccel_testplugins.corpus import FIXTURE_ROOT, Healthy, add_import_defect

#: ACME's instance types and their cards, as the table lists them (acme-node is the corpus machine's host name).
ENTRIES = {"aws": {"acme1.xlarge": 1, "acme1.4xlarge": 4}, "other": {"acme-node": 4}}


class HintTypeLeftToDiscovery(Healthy):
    DEFECT = ("the cloud hint gives acme-node's 4 cards and no accelerator type, leaving it to discovery once the node "
              "is up: the autoscaler's node type lacks accelerator_type:R1")
    KILLED_BY = ("RAC209", "invariant a-hint-names-the-type-its-node-publishes")

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        found = super().hint(provider, instance_type)
        return None if found is None else found.model_copy(update={"accelerator_type": None})  # the defect


def untyped_table(plugin: str) -> Path:
    """The plugin's instance-type table without accelerator types, beside its fixtures (written at import)."""
    path = FIXTURE_ROOT / f"{plugin}-instance-types.yaml"
    if not path.exists():
        data = {"schema": "rayaccel-instance-types/1", "family": plugin, "instance_types": {
            provider: {name: {"count": count} for name, count in names.items()}  # the defect: no accelerator_type
            for provider, names in ENTRIES.items()}}
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, yaml.safe_dump(data, sort_keys=False), durable=False)
    return path


class TableWithoutTypes(Healthy):
    DEFECT = ("the instance-type table gives each type's count and no accelerator type (\"discovery reports it\"), "
              "both hooks answered from it as the SDK's conventions answer them")
    KILLED_BY = ("RAC209", "invariant a-hint-names-the-type-its-node-publishes")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.table = untyped_table(name)

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        return cloud_hint(self.table, provider, instance_type)

    def rayaccel_cloud_instance_types(self) -> list[CloudHint]:
        return instance_type_hints(self.table)


for _cls in (HintTypeLeftToDiscovery, TableWithoutTypes):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
