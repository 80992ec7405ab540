"""Corpus mutants whose cloud hint for their machine's own instance type is wrong where the fixture is not named for
it (held-out round 6: a Neuron hint for trn2u.48xlarge unlike its fixture ``trn2u.48xlarge-ultraserver-x2``), two
shapes: a table row copied from the next size (its count), and a row promising a resource the machine never gets.
RAC209's ``hint-is-its-stated-machine`` kills both: the fixture's host states the instance type where EC2 writes it,
the DMI product name.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it (``c-hint-row-of-next-size`` as ``c_hint_row_of_next_size``).
"""

from __future__ import annotations

from rayaccel import CloudHint
from rayaccel_testplugins.corpus import Healthy, add_import_defect, read_machine, write_machine

#: Where EC2 writes the instance type on the machine (Nitro's DMI product name, as the Neuron fixtures record it).
DMI_PRODUCT_NAME = "/sys/devices/virtual/dmi/id/product_name"
#: The corpus machine's own instance type (four cards; acme-4 is called after its cards, not its type).
OWN_TYPE = "acme1.4xlarge"


def state_instance_type(plugin: str) -> None:
    """The plugin's fixture as recorded on an EC2 instance of ACME's: its host states the type (written atomically)."""
    data = read_machine(plugin)
    if data["host"]["files"].get(DMI_PRODUCT_NAME) != OWN_TYPE + "\n":
        data["host"]["files"][DMI_PRODUCT_NAME] = OWN_TYPE + "\n"
        write_machine(plugin, "acme-4", data)


def table_hint(plugin: Healthy, table: dict[str, tuple[int, dict[str, float]]], provider: str,
               instance_type: str) -> CloudHint | None:
    """The hint of ACME's instance-type table (type -> cards, extra resources), else the control's own."""
    row = table.get(instance_type.strip().lower()) if provider == "aws" else None
    if row is None:
        return Healthy.hint(plugin, provider, instance_type)
    return CloudHint(provider="aws", instance_type=instance_type, family=plugin.name, count=row[0],
                     accelerator_type="R1", extra_resources=row[1])


class HintRowOfNextSize(Healthy):
    DEFECT = (f"the hint table's row for the machine's own instance type ({OWN_TYPE}) was copied from the next size: "
              "8 cards where the machine has 4, so an autoscaler starts it for tasks that never fit")
    KILLED_BY = ("RAC209", "invariant hint-is-its-stated-machine")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        state_instance_type(name)

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        return table_hint(self, {OWN_TYPE: (8, {}), "acme1.8xlarge": (8, {})}, provider, instance_type)


class HintGivesFabricItLacks(Healthy):
    DEFECT = (f"the hint table gives every size the fabric resource only the 8-card machine has: {OWN_TYPE}'s row "
              "promises '<RES>_fabric', which discovery on that machine never gives")
    KILLED_BY = ("RAC209", "invariant hint-is-its-stated-machine")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        state_instance_type(name)

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        fabric = {f"{self.family.resource_name}_fabric": 1.0}
        return table_hint(self, {OWN_TYPE: (4, fabric), "acme1.8xlarge": (8, fabric)}, provider, instance_type)


for _cls in (HintRowOfNextSize, HintGivesFabricItLacks):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
