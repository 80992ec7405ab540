"""TPU_VISIBLE_CHIPS and the bounds variables a sub-host allocation needs (see google/jax#14977)."""

from __future__ import annotations

from collections.abc import Sequence

VISIBLE_CHIPS = "TPU_VISIBLE_CHIPS"
CHIPS_PER_HOST_BOUNDS = "TPU_CHIPS_PER_HOST_BOUNDS"
HOST_BOUNDS = "TPU_HOST_BOUNDS"

#: Ray 2.60's values for one and two chips; any other count leaves the runtime's defaults alone.
SUBHOST_BOUNDS = {1: "1,1,1", 2: "1,2,1"}
SINGLE_HOST_BOUNDS = "1,1,1"


def visible_env(unit_ids: Sequence[str]) -> dict[str, str]:
    """The env a process needs to see exactly these chips."""
    env = {VISIBLE_CHIPS: ",".join(unit_ids)}
    bounds = SUBHOST_BOUNDS.get(len(unit_ids))
    if bounds:
        env[CHIPS_PER_HOST_BOUNDS] = bounds
        env[HOST_BOUNDS] = SINGLE_HOST_BOUNDS
    return env


def parse_visible(value: str) -> list[str]:
    """Comma-separated chip indices; blanks are ignored (Ray keeps them, see README)."""
    return [part.strip() for part in value.split(",") if part.strip()]
