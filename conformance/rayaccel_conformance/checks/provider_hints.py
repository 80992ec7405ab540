"""A hint answers for one provider's instance type (RAC222's ``invariant a-hint-is-its-providers``; issue 46,
held-out round 15's ``c3``).

A cloud hint is an answer for a (provider, instance type) pair: the SDK's instance-type tables key each entry by
both (``rayaccel.plugins.instance_types``: ``provider -> instance type -> units``), ``rayaccel export`` takes
``PROVIDER:TYPE`` and writes a node type for that provider, and each cloud names its machines in its own scheme
(AWS ``p5.48xlarge``, GCP ``a3-highgpu-8g``, Azure ``Standard_ND96isr_H100_v5``, OCI ``BM.GPU.H100.8``). A plugin
that looks the name up whatever the provider answers ``gcp:hop1.12xlarge`` with the AWS machine's accelerators, and
the export offers a GCP node type of 4 accelerators for a machine GCP does not have. RAC209, RAC220 and RAC222 asked
each hinted name under the provider it was hinted for (and unknown names under every provider), so the answer for
a name under another provider was never asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import get_args

from rayaccel.plugins.instance_types import Provider
from rayaccel.records import CloudHint

#: Every provider the SDK's tables and ``rayaccel export`` know.
PROVIDERS: tuple[str, ...] = get_args(Provider)


def other_provider_hints(answer: Callable[[str, str], CloudHint | None], hinted: Iterable[tuple[str, str]],
                         listed: Iterable[CloudHint], resource: str) -> list[str]:
    """Hints ``answer`` gives an instance type the plugin hints under one provider, asked under a provider it
    neither lists that name for (``rayaccel_cloud_instance_types``, without regard to case) nor was asked it
    under: one failure per name, naming both answers."""
    listed_under: dict[str, set[str]] = {}
    for entry in listed:
        listed_under.setdefault(entry.instance_type.strip().lower(), set()).add(entry.provider)
    wrong: list[str] = []
    seen: set[str] = set()
    for _provider, instance_type in sorted(hinted):
        name = instance_type.strip().lower()
        if name in seen:
            continue
        seen.add(name)
        own = listed_under.get(name, set()) | {p for p, t in hinted if t.strip().lower() == name}
        for other in (p for p in PROVIDERS if p not in own):
            got = answer(other, instance_type)
            if got is not None:
                wrong.append(
                    f"invariant a-hint-is-its-providers: {other}:{instance_type} gets a hint of {got.count:g} "
                    f"{resource} ({got.accelerator_type}), though the plugin hints {instance_type!r} under "
                    f"{', '.join(sorted(own))} only: an instance type's name is its provider's, and the same name "
                    f"under {other} is no machine the plugin knows (rayaccel export would offer a {other} node type "
                    f"of it); look the name up under the provider asked (the SDK's instance-types.yaml keys each "
                    f"entry by both) and give no hint for a provider that does not list it")
                break
    return wrong
