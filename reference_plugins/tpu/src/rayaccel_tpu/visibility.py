"""TPU_VISIBLE_CHIPS and the bounds variables a sub-host allocation needs (see google/jax#14977).

Ray 2.60's ``RAY_TPU_RESOURCE_PER_CHIP`` (default 1) gives each chip that many ``TPU`` units, for generations
whose chips are several PJRT devices (TPU7x: two chiplets per chip). Unit ``u`` is then on chip
``u // per_chip``: chip ``c`` holds units ``c * per_chip .. c * per_chip + per_chip - 1``. The TPU runtime's
``TPU_VISIBLE_CHIPS`` masks whole physical chips, so the units are collapsed to their chips there, and a value
of it is expanded back into the chips' units, exactly as Ray's TPUAcceleratorManager does.

``RAY_TPU_RESOURCE_PER_CHIP`` is a Ray setting of the node, not a fact of the machine: like Ray's manager (in
the raylet and in each worker), every hook reads it from this process's environment, which a node's
processes inherit (``rayaccel_visible_env`` and ``rayaccel_parse_visible`` are given no host anyway), and
never from a simulated host.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from rayaccel import malformed

VISIBLE_CHIPS = "TPU_VISIBLE_CHIPS"
CHIPS_PER_HOST_BOUNDS = "TPU_CHIPS_PER_HOST_BOUNDS"
HOST_BOUNDS = "TPU_HOST_BOUNDS"
#: Ray 2.60's opt-in for several TPU units per physical chip (ray/_private/accelerators/tpu.py).
RESOURCE_PER_CHIP = "RAY_TPU_RESOURCE_PER_CHIP"

#: Ray 2.60's values for one and two chips; any other count leaves the runtime's defaults alone.
SUBHOST_BOUNDS = {1: "1,1,1", 2: "1,2,1"}
SINGLE_HOST_BOUNDS = "1,1,1"


def parse_resource_per_chip(raw: str | None) -> int | None:
    """Ray's rule for RAY_TPU_RESOURCE_PER_CHIP: unset means 1, a positive decimal integer is taken, anything
    else is invalid (None; Ray raises ValueError)."""
    if raw is None:
        return 1
    return int(raw) if raw.isdecimal() and int(raw) >= 1 else None


def resource_per_chip(environ: Mapping[str, str] | None = None, report: bool = False) -> int:
    """TPU units per chip from ``environ`` (default: this process's). An invalid value counts as 1 and, with
    ``report``, is reported (Ray would fail the task instead: see the README)."""
    raw = (os.environ if environ is None else environ).get(RESOURCE_PER_CHIP)
    value = parse_resource_per_chip(raw)
    if value is None:
        if report:
            malformed(RESOURCE_PER_CHIP, raw, "a positive whole number (Ray's TPU units per chip)",
                      fix=f"set {RESOURCE_PER_CHIP} to 1 or 2, or unset it for one TPU unit per chip")
        return 1
    return value


def chip_units(chip_index: int, per_chip: int) -> list[str]:
    """The TPU unit ids of a chip: Ray's device ids ``chip * per_chip + k``."""
    return [str(chip_index * per_chip + k) for k in range(per_chip)]


def physical_chips(unit_ids: Sequence[str], per_chip: int) -> list[str]:
    """The chips holding these units, once each, in order (Ray's collapse for TPU_VISIBLE_CHIPS)."""
    if per_chip == 1:
        return list(unit_ids)
    return [str(chip) for chip in sorted({int(unit) // per_chip for unit in unit_ids})]


def visible_env(unit_ids: Sequence[str], per_chip: int | None = None) -> dict[str, str]:
    """The env a process needs to see exactly the chips of these units."""
    chips = physical_chips(unit_ids, resource_per_chip() if per_chip is None else per_chip)
    env = {VISIBLE_CHIPS: ",".join(chips)}
    bounds = SUBHOST_BOUNDS.get(len(chips))
    if bounds:
        env[CHIPS_PER_HOST_BOUNDS] = bounds
        env[HOST_BOUNDS] = SINGLE_HOST_BOUNDS
    return env


def parse_visible(value: str, per_chip: int | None = None) -> list[str]:
    """The TPU units of the chips a TPU_VISIBLE_CHIPS value names; blanks are ignored (Ray keeps them when
    there is one unit per chip, see README)."""
    chips = [part.strip() for part in value.split(",") if part.strip()]
    per_chip = resource_per_chip() if per_chip is None else per_chip
    if per_chip == 1:
        return chips
    # Ray expands each chip into its units; a chip that is not a number names no unit of this node.
    return [unit for chip in chips for unit in (chip_units(int(chip), per_chip) if chip.isdecimal() else [chip])]
