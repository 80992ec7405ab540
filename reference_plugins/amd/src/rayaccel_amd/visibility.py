"""HIP_VISIBLE_DEVICES: the variable Ray sets for AMD GPUs, and the ROCR_VISIBLE_DEVICES trap.

Ray's AMD manager refuses a process environment that sets ``ROCR_VISIBLE_DEVICES`` without
``HIP_VISIBLE_DEVICES`` (it raises a bare RuntimeError). ROCR filtering happens below HIP and renumbers
devices, so Ray's ids would no longer match; the plugin makes the same check, with a message that says
what to do.
"""

from __future__ import annotations

from collections.abc import Mapping

HIP_VISIBLE_DEVICES = "HIP_VISIBLE_DEVICES"
ROCR_VISIBLE_DEVICES = "ROCR_VISIBLE_DEVICES"


class VisibleDevicesError(RuntimeError):
    """The process environment selects AMD GPUs in a way Ray cannot follow."""


def visible_env_problem(env: Mapping[str, str]) -> str | None:
    if HIP_VISIBLE_DEVICES in env or ROCR_VISIBLE_DEVICES not in env:
        return None
    value = env[ROCR_VISIBLE_DEVICES]
    return (f"{ROCR_VISIBLE_DEVICES}={value!r} is set but {HIP_VISIBLE_DEVICES} is not: Ray assigns AMD GPUs "
            f"through {HIP_VISIBLE_DEVICES} (Ray's own AMD manager refuses this environment too); unset "
            f"{ROCR_VISIBLE_DEVICES} and set {HIP_VISIBLE_DEVICES}={value!r} instead")


def check_visible_env(env: Mapping[str, str]) -> None:
    problem = visible_env_problem(env)
    if problem:
        raise VisibleDevicesError(problem)


def parse_visible(value: str) -> list[str]:
    """Unit ids in HIP_VISIBLE_DEVICES; "" and "NoDevFiles" mean none (as Ray reads them)."""
    if value.strip() in ("", "NoDevFiles"):
        return []
    return [part.strip() for part in value.split(",") if part.strip()]
