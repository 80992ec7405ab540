"""Cloud instance types that carry AMD Instinct GPUs, for scale-from-zero autoscaling."""

from __future__ import annotations

from rayaccel import CloudHint

#: (provider, instance type) -> (GPUs, Ray accelerator type). Names as the providers publish them.
INSTANCE_TYPES: dict[tuple[str, str], tuple[int, str]] = {
    ("azure", "standard_nd96isr_mi300x_v5"): (8, "AMD-Instinct-MI300X-OAM"),
    ("oci", "bm.gpu.mi300x.8"): (8, "AMD-Instinct-MI300X-OAM"),
}


def cloud_hint(provider: str, instance_type: str) -> CloudHint | None:
    entry = INSTANCE_TYPES.get((provider.lower(), instance_type.lower()))
    if entry is None:
        return None
    count, accelerator_type = entry
    return CloudHint(provider=provider.lower(), instance_type=instance_type, family="amd",  # type: ignore[arg-type,unused-ignore]
                     count=count, accelerator_type=accelerator_type)


def instance_types() -> list[CloudHint]:
    """Every instance type of the table, as the hint ``cloud_hint`` gives for it."""
    return [hint for hint in (cloud_hint(provider, name) for provider, name in INSTANCE_TYPES) if hint]
