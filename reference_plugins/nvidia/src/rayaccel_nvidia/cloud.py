"""EC2 instance types with NVIDIA GPUs: count and Ray accelerator type, without probing.

Ray reads these from the EC2 API's ``GpuInfo.Gpus[0]`` at autoscaler time; a table lets a plugin answer
offline (scale from zero) with the same type string the node reports once it is up.
"""

from __future__ import annotations

from rayaccel import CloudHint

#: instance type -> (GPUs, Ray accelerator type)
EC2: dict[str, tuple[int, str]] = {
    "p3.2xlarge": (1, "V100"), "p3.8xlarge": (4, "V100"), "p3.16xlarge": (8, "V100"), "p3dn.24xlarge": (8, "V100"),
    "p4d.24xlarge": (8, "A100"), "p4de.24xlarge": (8, "A100"),
    "p5.4xlarge": (1, "H100"), "p5.48xlarge": (8, "H100"),
    "p5e.48xlarge": (8, "H200"), "p5en.48xlarge": (8, "H200"),
    "p6-b200.48xlarge": (8, "B200"), "p6e-gb200.36xlarge": (4, "GB200"),
    "g4dn.xlarge": (1, "T4"), "g4dn.2xlarge": (1, "T4"), "g4dn.4xlarge": (1, "T4"), "g4dn.8xlarge": (1, "T4"),
    "g4dn.16xlarge": (1, "T4"), "g4dn.12xlarge": (4, "T4"), "g4dn.metal": (8, "T4"),
}
for _size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge"):
    EC2[f"g5.{_size}"] = (1, "A10G")
    EC2[f"g6.{_size}"] = (1, "L4")
    EC2[f"g6e.{_size}"] = (1, "L40S")
for _family, _type in (("g5", "A10G"), ("g6", "L4"), ("g6e", "L40S")):
    EC2[f"{_family}.12xlarge"] = (4, _type)
    EC2[f"{_family}.24xlarge"] = (4, _type)
    EC2[f"{_family}.48xlarge"] = (8, _type)


def cloud_hint(provider: str, instance_type: str) -> CloudHint | None:
    if provider != "aws" or instance_type not in EC2:
        return None
    count, accelerator_type = EC2[instance_type]
    return CloudHint(provider="aws", instance_type=instance_type, family="nvidia", count=count,
                     accelerator_type=accelerator_type)


def instance_types() -> list[CloudHint]:
    """Every instance type of the table, as the hint ``cloud_hint`` gives for it."""
    return [hint for hint in (cloud_hint("aws", name) for name in EC2) if hint]
