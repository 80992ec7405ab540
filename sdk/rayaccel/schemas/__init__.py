"""JSON Schemas for the data files rayaccel reads and writes, generated from the records.

The ``*.schema.json`` files beside this module are shipped; regenerate them with
``python -m rayaccel.schemas`` after changing a record (a test fails while they are stale).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_DIR = Path(__file__).parent
BASE_URI = "https://rayaccel.io/schemas/"


def _models() -> dict[str, Any]:
    from rayaccel.fixtures import Fixture
    from rayaccel.records import NodeInventory, SkuCatalog

    models: dict[str, Any] = {"fixture": Fixture, "sku-catalog": SkuCatalog, "inventory": NodeInventory}
    try:
        from rayaccel_conformance.report import ConformanceReport
    except ImportError:  # the conformance package ships in the same distribution; tolerate partial trees
        pass
    else:
        models["conformance-report"] = ConformanceReport
    return models


def generate(name: str) -> dict[str, Any]:
    model = _models()[name]
    schema: dict[str, Any] = model.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"{BASE_URI}{name}.schema.json",
            **schema}


def schema_errors(name: str, data: Any) -> list[str]:
    """Where data breaks the shipped schema ``name``, as 'at <path>: <message>', in document order."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema(name))
    errors = sorted(validator.iter_errors(data), key=lambda err: [str(p) for p in err.absolute_path])
    return [f"at {'/'.join(str(p) for p in err.absolute_path) or '(top level)'}: {err.message}" for err in errors]


@cache
def load_schema(name: str) -> dict[str, Any]:
    path = SCHEMA_DIR / f"{name}.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def write_all() -> list[Path]:
    written = []
    for name in _models():
        path = SCHEMA_DIR / f"{name}.schema.json"
        path.write_text(json.dumps(generate(name), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        written.append(path)
    return written
