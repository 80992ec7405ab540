"""A plugin's import loads no pydantic: the record classes it binds (``from rayaccel import Device``) are stand-ins
that import ``rayaccel.records`` at first use (``rayaccel.support.lazy.DeferredClass``), and each record builds its
validator at its first use (pydantic's ``defer_build``); the checks are the same through the stand-in and once
built. Each probe runs in a fresh Python: in this test process other tests have long since imported and built
every record."""

from __future__ import annotations

import json
import subprocess
import sys


def _probe(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_records_build_at_first_use_and_still_refuse_bad_input() -> None:
    """Importing rayaccel builds no record's validator; the first use builds it, with every check in place:
    unknown fields, bounds, patterns, frozen records."""
    probe = """
import rayaccel
from rayaccel import Device, FamilyDeclaration
from pydantic import ValidationError
print(Device.__pydantic_complete__, FamilyDeclaration.__pydantic_complete__)
refused = []
for bad in ({"index": -1, "id": "a", "product_name": "p"}, {"index": 0, "id": "a", "product_name": "p", "x": 1},
            {"index": 0, "id": "a", "product_name": "p", "memory_mib": -1}):
    try:
        Device(**bad)
    except ValidationError as e:
        refused.append(e.errors()[0]["type"])
device = Device(index=0, id="a", product_name="p")
try:
    device.index = 3
except ValidationError as e:
    refused.append(e.errors()[0]["type"])
print(Device.__pydantic_complete__, refused)
"""
    before, after = _probe(probe).strip().splitlines()
    assert before == "False False"
    assert after == "True ['greater_than_equal', 'extra_forbidden', 'greater_than_equal', 'frozen_instance']"


#: For every record class, in a fresh process after a plugin's import: built or not, then each field given a
#: value of no type it declares, plus an unknown field, then one field set on a (valid or not) instance.
_EVERY_RECORD = """
import json
from rayaccel import Device, FamilyDeclaration, hookimpl  # a plugin's import
import rayaccel.records as records
from pydantic import ValidationError

classes = [c for c in vars(records).values()
           if isinstance(c, type) and issubclass(c, records.Record) and c.__module__ == records.__name__]
out = {"built_at_import": sorted(c.__name__ for c in classes if c.__pydantic_complete__), "records": {}}
for c in classes:
    bad = {name: object() for name in c.model_fields} | {"no_such_field": 1}
    try:
        c.model_validate(bad)
        refused = None
    except ValidationError as e:
        refused = sorted({str(err["loc"][0]) for err in e.errors()})
    try:
        setattr(c.model_construct(), next(iter(c.model_fields), "no_such_field"), None)
        frozen = None
    except ValidationError as e:
        frozen = e.errors()[0]["type"]
    out["records"][c.__name__] = {"fields": sorted(c.model_fields), "refused": refused, "frozen": frozen,
                                  "built": c.__pydantic_complete__}
print(json.dumps(out))
"""


def test_every_record_class_builds_lazily_and_refuses_bad_input_once_built() -> None:
    result = json.loads(_probe(_EVERY_RECORD))
    records = result["records"]
    assert len(records) >= 20, sorted(records)  # the probe found the module's records
    assert {"Device", "FamilyDeclaration", "NodeInventory", "Partition", "SkuCatalog"} <= set(records)
    assert result["built_at_import"] == [], "a plugin's import built these records' validators"
    for name, record in records.items():
        assert record["built"], f"{name}: its first use did not build its validator"
        # Every field refused a value of no type it declares, and the unknown field was refused too.
        assert record["refused"] == sorted([*record["fields"], "no_such_field"]), name
        assert record["frozen"] == "frozen_instance", name


#: A plugin's import line, then every module each reference plugin's entry point imports: none may load pydantic
#: (or the other heavy libraries) before a record is first built or validated.
_IMPORT_LOADS_NOTHING_HEAVY = """
import sys
HEAVY = ("pydantic", "pydantic_core", "rayaccel.records", "jsonschema", "yaml", "networkx", "ray", "rich", "typer")
from rayaccel import Device, FamilyDeclaration, hookimpl
after_line = sorted(name for name in HEAVY if name in sys.modules)
import rayaccel_nvidia.plugin, rayaccel_amd.plugin, rayaccel_tpu.plugin, rayaccel_neuron.plugin, rayaccel_gaudi.plugin
after_plugins = sorted(name for name in HEAVY if name in sys.modules)
isinstance(object(), Device)  # answering "no" needs no import: no instance can exist yet
print(after_line, after_plugins, sorted(name for name in HEAVY if name in sys.modules))
"""


def test_a_plugins_import_loads_no_pydantic() -> None:
    """`from rayaccel import Device, FamilyDeclaration, hookimpl` and the five reference plugins' modules load no
    pydantic, jsonschema, yaml, networkx, Ray, Rich or Typer (docs/performance.md: pydantic alone is over the
    import's +100 ms budget)."""
    assert _probe(_IMPORT_LOADS_NOTHING_HEAVY).strip() == "[] [] []"


#: Every record class the package exports, reached through its public name before rayaccel.records is imported
#: (the stand-in a plugin's module binds): refusals, frozen instances, isinstance both ways, pickling.
_EVERY_PUBLIC_RECORD = """
import json, pickle
from pathlib import Path
import rayaccel
from rayaccel.support.lazy import DeferredClass, declared_exports

names = sorted(n for n, module in declared_exports(Path(rayaccel.__file__).read_text()).items()
               if module == "rayaccel.records")
stand_ins = {name: getattr(rayaccel, name) for name in names}
out = {"not_stand_ins": sorted(n for n, c in stand_ins.items() if not isinstance(c, DeferredClass)), "records": {}}
import rayaccel.records as records
from pydantic import ValidationError

for name, stand_in in stand_ins.items():
    real = getattr(records, name)
    result = out["records"][name] = {"same": stand_in.real_class is real}
    bad = {field: object() for field in stand_in.model_fields} | {"no_such_field": 1}
    for how, make in (("called", lambda: stand_in(**bad)), ("validated", lambda: stand_in.model_validate(bad))):
        try:
            make()
            result[how] = None
        except ValidationError as e:
            result[how] = sorted({str(err["loc"][0]) for err in e.errors()})
    instance = stand_in.model_construct()  # a real instance, not validated: enough for the checks below
    try:
        setattr(instance, next(iter(stand_in.model_fields), "no_such_field"), None)
        result["frozen"] = None
    except ValidationError as e:
        result["frozen"] = e.errors()[0]["type"]
    result["fields"] = sorted(stand_in.model_fields)
    result["isinstance"] = [isinstance(instance, stand_in), isinstance(instance, real), type(instance) is real,
                            issubclass(real, stand_in), isinstance(object(), stand_in)]
    again = pickle.loads(pickle.dumps(instance))
    result["pickled"] = [type(again) is real, again == instance, pickle.loads(pickle.dumps(stand_in)) is stand_in]
print(json.dumps(out))
"""


def test_every_public_record_reached_through_its_stand_in_refuses_bad_input_and_behaves_as_the_record() -> None:
    result = json.loads(_probe(_EVERY_PUBLIC_RECORD))
    records = result["records"]
    assert len(records) >= 20 and {"Device", "FamilyDeclaration", "Topology", "SkuCatalog"} <= set(records)
    assert result["not_stand_ins"] == [], "asked for before rayaccel.records was imported, these were not stand-ins"
    for name, record in records.items():
        assert record["same"], name
        # Called or validated, every field refused a value of no type it declares, and the unknown field too.
        expected = sorted([*record["fields"], "no_such_field"])
        assert record["called"] == expected and record["validated"] == expected, name
        assert record["frozen"] == "frozen_instance", name
        assert record["isinstance"] == [True, True, True, True, False], name
        assert record["pickled"] == [True, True, True], name


_STAND_IN_USES = """
import pickle
from rayaccel import Device, Partition
from pydantic import BaseModel, TypeAdapter, ValidationError
import rayaccel.records as records

device = Device(index=0, id="GPU-0", product_name="X1", partitions=[Partition(id="p0", kind="mig", profile="1g")])
print(type(device) is records.Device, type(device.partitions[0]) is records.Partition,
      pickle.loads(pickle.dumps(device)) == device)
print(repr(Device))
print(Device.__doc__ == records.Device.__doc__, Device.__name__, "model_validate" in dir(Device))


class Mine(Device):  # a plugin's own subclass: made of the real class, validated as one
    slot: int = 0


print(Mine.__mro__[1] is records.Device, issubclass(Mine, Device), isinstance(Mine(index=1, id="a", product_name="p"),
      Device))
refused = []
for make in (lambda: Mine(index=1, id="a", product_name="p", slot="x"),
             lambda: Mine(index=-1, id="a", product_name="p"), lambda: Device(index=0, id="", product_name="p"),
             lambda: Device(index=0, id="a", product_name="p", x=1),
             lambda: Device(index=0, id="a", product_name="p", pci_device_id="0xZZZZ")):
    try:
        make()
    except ValidationError as e:
        refused.append(e.errors()[0]["type"])
print(refused)


class Report(BaseModel):  # a stand-in in a pydantic annotation validates as the record
    devices: list[Device]


try:
    Report(devices=[{"index": -1, "id": "a", "product_name": "p"}])
except ValidationError as e:
    print(e.errors()[0]["type"], e.errors()[0]["loc"])
print(type(TypeAdapter(list[Device]).validate_python([{"index": 0, "id": "a", "product_name": "p"}])[0]).__name__)
"""


def test_a_stand_in_builds_subclasses_and_annotations_of_the_real_record_and_never_lets_bad_input_through() -> None:
    lines = _probe(_STAND_IN_USES).strip().splitlines()
    assert lines[0] == "True True True"
    assert "stand-in for rayaccel.records.Device" in lines[1]
    assert lines[2] == "True Device True"  # help() shows the record's documentation once it is loaded
    assert lines[3] == "True True True"
    assert lines[4] == "['int_parsing', 'greater_than_equal', 'string_too_short', 'extra_forbidden', 'value_error']"
    assert lines[5] == "greater_than_equal ('devices', 0, 'index')"
    assert lines[6] == "Device"
