"""Corpus mutants that answer an instance type their table does not list with another entry's hint (issue 46,
held-out round 11's ``n2``: an NVIDIA wrapper answering an unlisted size with its family's first listed entry, so
``p5.4xlarge``, one H100, got ``p5.48xlarge``'s eight while the table trailed AWS's launch). Every real size of
a family the tables list is listed today, so nothing asked reaches the fallback; only RAC222's
``a-hint-is-its-own-entry`` does, handing the plugin its own table with one entry left out at a time.

Each mutant answers ``rayaccel_cloud_hints`` from an instance-type table of its own (read through the SDK's
``cloud_hint``, written beside its fixtures: ``acme1.xlarge`` and ``acme1.4xlarge`` on AWS, ``acme-r1-1g`` and
``acme-r1-4g`` on GCP, ``acme-node`` as before), in one of two shapes of fallback for a type the table lacks: the
first listed entry of its AWS family (the name before the dot), and the largest entry of its GCP series (the name
before the last dash). Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each
is bound here under its name (``c-hint-from-family-first-entry`` as ``c_hint_from_family_first_entry``) so a Ray
node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from rayaccel import CloudHint
from rayaccel.files.atomic import write_atomically
from rayaccel.plugins.instance_types import cloud_hint, instance_type_hints
from rayaccel_testplugins.corpus import FIXTURE_ROOT, Healthy, add_import_defect

ENTRIES = {"aws": {"acme1.xlarge": 1, "acme1.4xlarge": 4}, "gcp": {"acme-r1-1g": 1, "acme-r1-4g": 4},
           "other": {"acme-node": 4}}


def table_of(plugin: str) -> Path:
    """The plugin's instance-type table, beside its fixtures (written when the plugin is made)."""
    return FIXTURE_ROOT / f"{plugin}-instance-types.yaml"


def write_table(plugin: str) -> None:
    """The plugin's table, once per corpus version: at import, never from a hook (RAC109)."""
    path = table_of(plugin)
    if not path.exists():
        data = {"schema": "rayaccel-instance-types/1", "family": plugin, "instance_types": {
            provider: {name: {"count": count, "accelerator_type": "R1"} for name, count in names.items()}
            for provider, names in ENTRIES.items()}}
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, yaml.safe_dump(data, sort_keys=False), durable=False)


def listed(plugin: str, provider: str) -> list[CloudHint]:
    return [h for h in instance_type_hints(table_of(plugin)) if h.provider == provider]


class HintFromFamilyFirstEntry(Healthy):
    DEFECT = ("an instance type its table does not list is hinted as its AWS family's first listed entry (the name "
              "before the dot): a new size gets another size's count")
    KILLED_BY = ("RAC222", "invariant a-hint-is-its-own-entry")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        write_table(name)

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        if (found := cloud_hint(table_of(self.name), provider, instance_type)) is not None:
            return found
        family = instance_type.strip().lower().split(".", 1)[0]
        same = [h for h in listed(self.name, provider) if h.instance_type.split(".", 1)[0] == family]
        return same[0].model_copy(update={"instance_type": instance_type}) if same else None  # the defect


class HintFromSeriesLargestEntry(Healthy):
    DEFECT = ("an instance type its table does not list is hinted as the largest listed entry of its GCP series (the "
              "name before the last dash): a new shape gets the biggest one's count")
    KILLED_BY = ("RAC222", "invariant a-hint-is-its-own-entry")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        write_table(name)

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        if (found := cloud_hint(table_of(self.name), provider, instance_type)) is not None:
            return found
        series = instance_type.strip().lower().rsplit("-", 1)[0]
        same = [h for h in listed(self.name, provider) if "-" in h.instance_type
                and h.instance_type.rsplit("-", 1)[0] == series]
        largest = max(same, key=lambda h: h.count, default=None)  # the defect: no hint was meant
        return largest.model_copy(update={"instance_type": instance_type}) if largest else None


class HintFromOwnEntry(Healthy):
    DEFECT = "none: the table's own entry, no hint for a type it lacks (the right reader, not registered)"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        write_table(name)

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        return cloud_hint(table_of(self.name), provider, instance_type)


for _cls in (HintFromFamilyFirstEntry, HintFromSeriesLargestEntry):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
