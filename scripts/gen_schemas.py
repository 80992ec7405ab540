"""Regenerate the shipped JSON Schemas from the records: ``.venv/bin/python scripts/gen_schemas.py``.

A development script, not part of the library: the schemas ship as files (``rayaccel/schemas/`` for the
SDK's documents, ``rayaccel_conformance/report/`` for the conformance report) and the loader only reads them.
tests/docs/test_schemas.py fails while a shipped schema differs from what this script generates.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

BASE_URI = "https://rayaccel.io/schemas/"


def sources() -> dict[Path, type[BaseModel]]:
    """Each shipped schema file and the model it is generated from."""
    import rayaccel_conformance.report.document as report
    from rayaccel.hosts.fixtures import Fixture
    from rayaccel.inventory.health_policy import HealthPolicy
    from rayaccel.outputs.inspect_json import InspectOutput
    from rayaccel.plugins.instance_types import InstanceTypeTable
    from rayaccel.records import SkuCatalog
    from rayaccel.schemas import SCHEMA_DIR

    return {SCHEMA_DIR / "fixture.schema.json": Fixture,
            SCHEMA_DIR / "sku-catalog.schema.json": SkuCatalog,
            SCHEMA_DIR / "instance-types.schema.json": InstanceTypeTable,
            SCHEMA_DIR / "inventory.schema.json": InspectOutput,
            SCHEMA_DIR / "health-policy.schema.json": HealthPolicy,
            report.SCHEMA_DIR / "conformance-report.schema.json": report.ConformanceReport}


def generate(path: Path, model: type[BaseModel]) -> dict[str, Any]:
    schema: dict[str, Any] = model.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"{BASE_URI}{path.name}", **schema}


def text_of(schema: dict[str, Any]) -> str:
    """The file's text: stable key order, so a regenerated schema diffs only where the records changed."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main() -> int:
    for path, model in sources().items():
        path.write_text(text_of(generate(path, model)), encoding="utf-8")
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
