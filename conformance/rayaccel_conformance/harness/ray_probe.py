"""What the run's Ray checks run inside Ray workers (RAC108, RAC208, and each node's warm-up workers).

Ray pickles a task's function and an actor's class by reference, so every worker that runs one imports the
module it lives in. This module imports nothing beyond the standard library and Ray (which the worker has
already): :mod:`.raycluster`, where these lived, imports the SDK's records (65 modules, ~0.08 s of CPU) in each
of the 21 workers of a nvidia run that run one, for models no worker uses.
"""

from __future__ import annotations

import os


def probe(env_var: str, resource: str) -> tuple[str, str | None, list[str]]:
    """Runs in a Ray worker: where it ran, what the env var says, what Ray assigned."""
    import ray

    context = ray.get_runtime_context()
    return context.get_node_id(), os.environ.get(env_var), list(context.get_accelerator_ids().get(resource, []))


class UnitHolder:
    """A Ray actor that holds one unit, so that the next task gets another one (RAC108)."""

    def probe(self, env_var: str, resource: str) -> tuple[str, str | None, list[str]]:
        return probe(env_var, resource)
