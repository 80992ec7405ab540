"""Corpus mutants whose cloud hint answers an instance type's name whatever the provider asked (issue 46, held-out
round 15's ``c3``: a command-csv bake looking its AWS table up by name alone, so ``gcp:hop1.12xlarge`` got the AWS
machine's 4 accelerators). Every check asked a hinted name under the provider it was hinted for, and unknown names
under every provider; RAC222's ``a-hint-is-its-providers`` asks each hinted name under the providers that do not list
it.

Each mutant lists its table's hints (``rayaccel_cloud_instance_types``) and answers ``rayaccel_cloud_hints`` in one
of two shapes: a table keyed by the instance type's name alone (AWS's and GCP's names in one dict, c3's shape), and
per-provider tables read through the SDK (``corpus_instance_entries``' table) with a fallback to another provider's
entry of the same name ("one machine, whatever the cloud").

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-hints-by-name-alone`` as ``c_hints_by_name_alone``).
"""

from __future__ import annotations

from rayaccel import CloudHint
from rayaccel.plugins.instance_types import cloud_hint, instance_type_hints
from rayaccel_testplugins.corpus import Healthy, add_import_defect
from rayaccel_testplugins.corpus_instance_entries import ENTRIES, table_of, write_table


class HintsByNameAlone(Healthy):
    DEFECT = ("the cloud hint looks the instance type's name up in one table of every provider's names, whatever the "
              "provider asked: gcp 'acme1.4xlarge' (an AWS name) gets AWS's 4 cards")
    KILLED_BY = ("RAC222", "invariant a-hint-is-its-providers")
    #: name -> (the provider that lists it, cards), every provider's names in one dict.
    BY_NAME = {name: (provider, count) for provider, names in ENTRIES.items() for name, count in names.items()}

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        found = self.BY_NAME.get(instance_type.strip().lower())
        if found is None:
            return None
        return CloudHint(provider=provider, instance_type=instance_type, family=self.name, count=found[1],
                         accelerator_type="R1")

    def rayaccel_cloud_instance_types(self) -> list[CloudHint]:
        return [CloudHint(provider=provider, instance_type=name, family=self.name, count=count, accelerator_type="R1")
                for name, (provider, count) in self.BY_NAME.items()]


class HintsFromAnotherProvider(Healthy):
    DEFECT = ("the cloud hint falls back to another provider's entry of the same name when the provider asked lists "
              "none ('one machine, whatever the cloud'): azure 'acme-r1-4g' (a GCP name) gets GCP's 4 cards")
    KILLED_BY = ("RAC222", "invariant a-hint-is-its-providers")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        write_table(name)

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        table = table_of(self.name)
        found = cloud_hint(table, provider, instance_type)
        for other in (p for p in ENTRIES if found is None and p != provider):
            found = cloud_hint(table, other, instance_type)  # the defect: another cloud's machine
            found = found.model_copy(update={"provider": provider}) if found else None
        return found

    def rayaccel_cloud_instance_types(self) -> list[CloudHint]:
        return instance_type_hints(table_of(self.name))


MUTANTS = (HintsByNameAlone, HintsFromAnotherProvider)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
