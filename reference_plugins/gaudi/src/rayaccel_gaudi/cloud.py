"""Cloud instance types that carry Gaudi accelerators, for scale-from-zero autoscaling.

Only AWS's DL1 (first-generation Gaudi, 8 x HL-205) has a stable public instance type. ``dl2q`` is a
Qualcomm Cloud AI 100 instance, not Gaudi; Gaudi 2 and Gaudi 3 are offered through Intel Tiber AI Cloud and
IBM Cloud, whose instance names this table does not carry.
"""

from __future__ import annotations

from rayaccel import CloudHint

INSTANCE_TYPES: dict[tuple[str, str], tuple[int, str]] = {
    ("aws", "dl1.24xlarge"): (8, "Intel-GAUDI"),
}


def cloud_hint(provider: str, instance_type: str) -> CloudHint | None:
    entry = INSTANCE_TYPES.get((provider.lower(), instance_type.lower()))
    if entry is None:
        return None
    count, accelerator_type = entry
    return CloudHint(provider="aws", instance_type=instance_type, family="gaudi", count=count,
                     accelerator_type=accelerator_type)


def instance_types() -> list[CloudHint]:
    """Every instance type of the table, as the hint ``cloud_hint`` gives for it."""
    return [hint for hint in (cloud_hint(provider, name) for provider, name in INSTANCE_TYPES) if hint]
