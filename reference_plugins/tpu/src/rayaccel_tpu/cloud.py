"""GCE TPU machine types -> chips per VM, for autoscalers that scale from zero.

Names from GCE's machine-type families: ct4p (v4), ct5lp (v5e), ct5p (v5p), ct6e (v6e Trillium),
tpu7x (Ironwood; ``tpu7x-standard-4t``, 4 chips per VM as Google documents, is the one name not
checked against a live machine-type listing). The suffix ``-<n>t`` is the number of chips on the VM.
"""

from __future__ import annotations

from rayaccel import CloudHint

#: machine type -> (chips on the VM, Ray accelerator type).
GCE_MACHINE_TYPES: dict[str, tuple[int, str]] = {
    "ct4p-hightpu-4t": (4, "TPU-V4"),
    "ct5lp-hightpu-1t": (1, "TPU-V5LITEPOD"),
    "ct5lp-hightpu-4t": (4, "TPU-V5LITEPOD"),
    "ct5lp-hightpu-8t": (8, "TPU-V5LITEPOD"),
    "ct5p-hightpu-4t": (4, "TPU-V5P"),
    "ct6e-standard-1t": (1, "TPU-V6E"),
    "ct6e-standard-4t": (4, "TPU-V6E"),
    "ct6e-standard-8t": (8, "TPU-V6E"),
    "tpu7x-standard-4t": (4, "TPU-V7X"),
}


def cloud_hint(provider: str, instance_type: str) -> CloudHint | None:
    if provider != "gcp":
        return None
    known = GCE_MACHINE_TYPES.get(instance_type.strip().lower())
    if known is None:
        return None
    chips, accel_type = known
    return CloudHint(provider="gcp", instance_type=instance_type, family="tpu", count=chips,
                     accelerator_type=accel_type)


def instance_types() -> list[CloudHint]:
    """Every instance type of the table, as the hint ``cloud_hint`` gives for it."""
    return [hint for hint in (cloud_hint("gcp", name) for name in GCE_MACHINE_TYPES) if hint]
