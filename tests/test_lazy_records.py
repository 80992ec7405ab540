"""Records build their validators at first use (pydantic's ``defer_build``), so a plugin's import stays cheap; the
checks are the same once built. Each probe runs in a fresh Python: in this test process other tests have long
since built every record."""

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
