"""``rayaccel enable`` / ``rayaccel disable``: whether plain ``ray start`` and ``ray.init()`` load the plugins."""

from __future__ import annotations

import typer

from rayaccel.cli import app
from rayaccel.ray.activation import disable as disable_activation, enable as enable_activation


@app.command()
def enable() -> None:
    """Make plain `ray start` and `ray.init()` in this environment load the installed plugins (writes one file
    into its site-packages; `rayaccel disable` removes it)."""
    state = enable_activation()
    typer.echo(f"rayaccel: Ray activation {state.describe()}")
    typer.echo("rayaccel: nodes started from now on offer the plugins' families; what still needs `rayaccel start` "
               "(the health monitor, ...) is in docs/ray-bridge.md")


@app.command()
def disable() -> None:
    """Turn the activation off again: remove the one file `rayaccel enable` wrote (nodes already running keep what
    they started with)."""
    state, removed = disable_activation()
    typer.echo(f"rayaccel: Ray activation {state.describe()}" if removed
               else f"rayaccel: Ray activation was already {state.describe()}")
