"""HABANA_VISIBLE_MODULES: a comma-separated list of module ids (the OAM slots, not hl-smi's indices).

``""`` means none, as Ray reads it; surrounding spaces and empty entries are ignored.
"""

from __future__ import annotations

HABANA_VISIBLE_MODULES = "HABANA_VISIBLE_MODULES"


def parse_visible(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]
