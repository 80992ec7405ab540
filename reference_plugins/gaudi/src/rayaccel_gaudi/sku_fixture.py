"""Rewrite a fixture so its devices are of another SKU: the ``name`` and ``memory.total`` columns of the
hl-smi query output, in the host and in each fault's patch."""

from __future__ import annotations

import copy
import shlex
from typing import Any

from rayaccel import SkuRecord
from rayaccel_gaudi.hlsmi import QUERY_ARGV, QUERY_FIELDS

QUERY_LINE = shlex.join(QUERY_ARGV)
_NAME, _MEMORY = QUERY_FIELDS.index("name"), QUERY_FIELDS.index("memory.total")


def rewrite_fixture(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    data = copy.deepcopy(fixture)
    for state in [data.get("host") or {}, *[(f.get("patch") or {}) for f in data.get("faults") or []]]:
        answer = (state.get("commands") or {}).get(QUERY_LINE)
        if isinstance(answer, dict) and isinstance(answer.get("stdout"), str):
            answer["stdout"] = _rewrite_query(answer["stdout"], sku)
    return data


def _rewrite_query(text: str, sku: SkuRecord) -> str:
    name = sku.match.product_names[0] if sku.match.product_names else sku.marketing_name
    lines = []
    for line in text.splitlines():
        values = [v.strip() for v in line.split(",")]
        if len(values) == len(QUERY_FIELDS):  # garbage in a fault stays garbage
            values[_NAME] = name
            if sku.memory_mib is not None:
                values[_MEMORY] = f"{sku.memory_mib} MiB"
            line = ", ".join(values)
        lines.append(line)
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")
