"""EC2 instance types -> NeuronCores, for autoscalers that scale from zero.

Ray 2.60's table (trn1, trn1n, inf2) plus what it lacks: inf1, and Trainium2. Trn2 counts are the
*logical* NeuronCores the runtime exposes at the default Logical NeuronCore config 2: a trn2.48xlarge has
16 Trainium2 devices x 8 physical cores = 128, seen as 64 (a trn2.3xlarge: one device, 4).
"""

from __future__ import annotations

from rayaccel import CloudHint

ACCELERATOR_TYPE = "aws-neuron-core"

#: instance type -> NeuronCores (Ray's AWS_NEURON_INSTANCE_MAP first).
EC2_NEURON_CORES: dict[str, int] = {
    "trn1.2xlarge": 2, "trn1.32xlarge": 32, "trn1n.32xlarge": 32,
    "inf2.xlarge": 2, "inf2.8xlarge": 2, "inf2.24xlarge": 12, "inf2.48xlarge": 24,
    "inf1.xlarge": 4, "inf1.2xlarge": 4, "inf1.6xlarge": 16, "inf1.24xlarge": 64,
    "trn2.3xlarge": 4, "trn2.48xlarge": 64, "trn2u.48xlarge": 64,
}


def cloud_hint(provider: str, instance_type: str) -> CloudHint | None:
    if provider != "aws":
        return None
    cores = EC2_NEURON_CORES.get(instance_type.strip().lower())
    if cores is None:
        return None
    return CloudHint(provider="aws", instance_type=instance_type, family="neuron", count=cores,
                     accelerator_type=ACCELERATOR_TYPE)


def instance_types() -> list[CloudHint]:
    """Every instance type of the table, as the hint ``cloud_hint`` gives for it."""
    return [hint for hint in (cloud_hint("aws", name) for name in EC2_NEURON_CORES) if hint]
