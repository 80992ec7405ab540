"""``--health-policy``: the operator's health policy for ``inspect`` and ``start`` (docs/ray-bridge.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rayaccel.inventory.health_policy import HealthPolicy
    from rayaccel.records import NodeInventory

HealthPolicyOption = Annotated[Path | None, typer.Option(
    "--health-policy", metavar="POLICY.yaml",
    help="The operator's health policy (what each reason a plugin reports does: drain, drain-after, degrade, "
         "ignore); default: RAYACCEL_HEALTH_POLICY")]


def use_health_policy(path: Path | None) -> HealthPolicy | None:
    """The policy ``path`` (else ``RAYACCEL_HEALTH_POLICY``) names, checked now: a bad one is one line and exit 2
    before anything starts. A given path is put in the environment, so the plugins' workers, ``ray start`` and
    the node's health monitor read the same file."""
    from rayaccel.inventory.health_policy import POLICY_ENV, load_policy, policy_from_env

    if path is None:
        return policy_from_env()
    policy = load_policy(path)
    os.environ[POLICY_ENV] = os.path.abspath(path)
    return policy


def warn_policy(policy: HealthPolicy, inventory: NodeInventory) -> None:
    """A warning on stderr per family or reason the policy names that no plugin here reports."""
    from rich.text import Text

    from rayaccel.cli import err_console
    from rayaccel.inventory.health_policy import policy_warnings

    for warning in policy_warnings(policy, inventory):
        err_console.print(Text(f"warning: {warning}"))
