"""Mutants of an AMD-like family that refuse a node environment otherwise than Ray's AMD manager (issue 46, held-out
round 6: an empty HIP_VISIBLE_DEVICES beside ROCR_VISIBLE_DEVICES): Ray refuses ROCR_VISIBLE_DEVICES set without
HIP_VISIBLE_DEVICES and reads any HIP_VISIBLE_DEVICES beside it, the empty one it writes for a task given no GPU
included. Two shapes: the empty value taken for an unset one (a truthiness test), and the two variables required to
agree. RAC270 ``invariant companions-as-ray-reads-them``.

Each claims Ray's GPU resource with HIP_VISIBLE_DEVICES over the ACME machine, as c-hip-no-dev-files-kept does, so
they are graded alone, each by its own manager (tests/conformance/test_conformance_companions.py): the corpus's one
manager lets one plugin claim the variable (RAC104).
"""

from __future__ import annotations

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


#: Graded alone, each by its own manager (one claimant of HIP_VISIBLE_DEVICES per manager).
COMPANION_MUTANTS = (HipEmptyTakenForUnset, HipMustMatchRocr)
