"""Two TPU mutants that write Ray's sub-host bounds beside ``TPU_VISIBLE_CHIPS`` for a count of chips Ray's manager
leaves them unset for (issue 46, held-out round 16's ``p1``: single-host bounds written for 4 chips too). Ray 2.60's
TPUAcceleratorManager writes ``TPU_CHIPS_PER_HOST_BOUNDS`` ('1,1,1', '1,2,1') and ``TPU_HOST_BOUNDS`` ('1,1,1')
for a task of 1 or 2 chips only; for any other count it leaves both as the node has them, so the runtime takes its
own defaults, a multi-host slice's place of the host included. Two shapes: a bounds table with a 4-chip entry (both
variables, p1's), and the host bounds written for every count (one variable, from no table). RAC270 ``invariant
companions-only-where-ray-writes-them``.

Each claims Ray's TPU resource with ``TPU_VISIBLE_CHIPS`` over the ACME machine, as corpus_ray_parity's bounds
mutants do, so they are graded alone, each by its own manager
(tests/conformance/test_conformance_heldout16_tpu_bound_counts.py): the corpus's one manager lets one plugin claim
the variable (RAC104).
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_ray_parity import BOUNDS, HOST_BOUNDS, VISIBLE, TpuPerChipIgnored

#: Ray 2.60's TPU_CHIPS_PER_HOST_BOUNDS for one and two chips, and its single-host TPU_HOST_BOUNDS.
RAY_CHIP_BOUNDS, SINGLE_HOST = {1: "1,1,1", 2: "1,2,1"}, "1,1,1"


class _TpuLike(Healthy):
    rule = TpuPerChipIgnored.rule  # Ray's TPU rule

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.family = self.family.model_copy(update={"visible_devices_env_var": VISIBLE})

    def _resource(self, token: str) -> str:
        return "TPU"


class TpuBoundsForFourChips(_TpuLike):
    DEFECT = (f"a sub-host bounds table with an entry for 4 chips ({BOUNDS}='2,2,1', {HOST_BOUNDS}='1,1,1'): Ray's "
              "manager writes bounds for 1 or 2 chips only, so a whole 4-chip host of a multi-host slice is told it is "
              "alone")
    KILLED_BY = ("RAC270", "invariant companions-only-where-ray-writes-them")

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        bounds = {**RAY_CHIP_BOUNDS, 4: "2,2,1"}.get(len(unit_ids))  # the defect: the 4-chip entry
        env = {VISIBLE: ",".join(unit_ids)}
        return {**env, BOUNDS: bounds, HOST_BOUNDS: SINGLE_HOST} if bounds else env


class TpuHostBoundsAlways(_TpuLike):
    DEFECT = (f"{HOST_BOUNDS}='1,1,1' written for a task of any count of chips, {BOUNDS} as Ray writes it: Ray's "
              f"manager writes {HOST_BOUNDS} with the sub-host bounds only, and leaves a multi-host slice's own for "
              "more chips")
    KILLED_BY = ("RAC270", "invariant companions-only-where-ray-writes-them")

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        env = {VISIBLE: ",".join(unit_ids), HOST_BOUNDS: SINGLE_HOST}  # the defect: not only beside BOUNDS
        bounds = RAY_CHIP_BOUNDS.get(len(unit_ids))
        return {**env, BOUNDS: bounds} if bounds else env


#: Graded alone, each by its own manager (one claimant of TPU_VISIBLE_CHIPS per manager).
BOUND_COUNT_MUTANTS = (TpuBoundsForFourChips, TpuHostBoundsAlways)
# Each bound here under its name, so a fresh process (RAC112, RAC269) imports it.
c_tpu_bounds_for_four_chips = TpuBoundsForFourChips("c-tpu-bounds-for-four-chips")
c_tpu_host_bounds_always = TpuHostBoundsAlways("c-tpu-host-bounds-always")
