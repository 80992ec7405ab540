"""CUDA_VISIBLE_DEVICES syntax, as Ray 2.60 reads it (plus tolerance for stray spaces and commas)."""

from __future__ import annotations

#: Values that mean "no GPU" (Ray: "" and the container runtime's "NoDevFiles").
NO_DEVICES = ("", "NoDevFiles")


def parse_visible(value: str) -> list[str]:
    """'0,1' -> ['0', '1']; GPU/MIG UUIDs pass through; '' and 'NoDevFiles' -> []."""
    if value.strip() in NO_DEVICES:
        return []
    # Ray keeps ' 1' and '' from '0, 1,'; CUDA ignores the spaces, so the plugin does too.
    return [part.strip() for part in value.split(",") if part.strip()]
