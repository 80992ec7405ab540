"""Mutants of an AMD-like family that refuse a node environment otherwise than Ray's AMD manager (issue 46, held-out
round 6: an empty HIP_VISIBLE_DEVICES beside ROCR_VISIBLE_DEVICES): Ray refuses ROCR_VISIBLE_DEVICES set without
HIP_VISIBLE_DEVICES and reads any HIP_VISIBLE_DEVICES beside it, the empty one it writes for a task given no GPU
included. Two shapes: the empty value taken for an unset one (a truthiness test), and the two variables required to
agree. RAC270 ``invariant companions-as-ray-reads-them``. And two that write ROCR_VISIBLE_DEVICES beside
HIP_VISIBLE_DEVICES (held-out round 11's a1), which Ray's manager reads but leaves the node's: always, and only
where the process has none. RAC270 ``invariant companions-left-as-ray-leaves-them``.

Each claims Ray's GPU resource with HIP_VISIBLE_DEVICES over the ACME machine, as c-hip-no-dev-files-kept does, so
they are graded alone, each by its own manager (tests/conformance/test_conformance_companions.py): the corpus's one
manager lets one plugin claim the variable (RAC104).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from rayaccel import Device, Host
from rayaccel_testplugins.corpus import Healthy

HIP, ROCR = "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"


class _AmdLike(Healthy):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.family = self.family.model_copy(update={"visible_devices_env_var": HIP})

    def _resource(self, token: str) -> str:
        return "GPU"

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        return [] if value.strip() == "NoDevFiles" else super().rayaccel_parse_visible(value)  # as Ray reads it

    def refuses(self, env: dict[str, str]) -> bool:
        raise NotImplementedError

    def rayaccel_discover(self, host: Host) -> list[Device]:
        env = dict(host.environ())
        if self.refuses(env):
            raise RuntimeError(f"{ROCR}={env.get(ROCR)!r} is set but {HIP} is not: Ray assigns AMD GPUs through {HIP}")
        return super().rayaccel_discover(host)


class HipEmptyTakenForUnset(_AmdLike):
    DEFECT = (f"{ROCR} beside an empty {HIP} refused as if {HIP} were unset (a truthiness test): Ray's AMD manager "
              f"reads it, and writes the empty {HIP} itself for a task given no GPU")
    KILLED_BY = ("RAC270", "invariant companions-as-ray-reads-them")

    def refuses(self, env: dict[str, str]) -> bool:
        return ROCR in env and not env.get(HIP)  # the defect: `HIP not in env` was meant


class HipMustMatchRocr(_AmdLike):
    DEFECT = (f"{ROCR} refused unless {HIP} holds the same GPUs: Ray's AMD manager reads any {HIP} beside it, the "
              "empty one too")
    KILLED_BY = ("RAC270", "invariant companions-as-ray-reads-them")

    def refuses(self, env: dict[str, str]) -> bool:
        return ROCR in env and env.get(HIP) != env[ROCR]  # the defect: only an unset HIP is refused by Ray


class _AmdLikeWriter(_AmdLike):
    def refuses(self, env: dict[str, str]) -> bool:
        return ROCR in env and HIP not in env  # as Ray's AMD manager refuses it


class RocrBesideHip(_AmdLikeWriter):
    DEFECT = (f"{ROCR} written with the task's GPUs beside {HIP} (ROCm's advice on Linux): Ray's AMD manager writes "
              f"{HIP} alone and leaves {ROCR} the node's; ROCm applies {ROCR} first and renumbers what it keeps, so "
              f"{HIP}=2,3 then indexes two GPUs and the task sees none")
    KILLED_BY = ("RAC270", "invariant companions-left-as-ray-leaves-them")

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        ids = ",".join(unit_ids)
        return {HIP: ids, ROCR: ids}


class RocrPinnedUnlessSet(_AmdLikeWriter):
    DEFECT = (f"{ROCR} pinned to the task's GPUs where the process has none (a node Slurm's gres did not set it on), "
              f"kept where it has one: the same second layer as c-rocr-beside-hip on every node outside Slurm")
    KILLED_BY = ("RAC270", "invariant companions-left-as-ray-leaves-them")

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        ids = ",".join(unit_ids)
        return {HIP: ids} if ROCR in os.environ else {HIP: ids, ROCR: ids}


#: Graded alone, each by its own manager (one claimant of HIP_VISIBLE_DEVICES per manager).
COMPANION_MUTANTS = (HipEmptyTakenForUnset, HipMustMatchRocr)
#: Writers of a variable Ray's AMD manager reads but leaves to the node, graded alone as COMPANION_MUTANTS are; each
#: bound here under its name, so a fresh process (RAC112, RAC269) imports it.
LEFT_TO_THE_NODE_MUTANTS = (RocrBesideHip, RocrPinnedUnlessSet)
c_rocr_beside_hip = RocrBesideHip("c-rocr-beside-hip")
c_rocr_pinned_unless_set = RocrPinnedUnlessSet("c-rocr-pinned-unless-set")
