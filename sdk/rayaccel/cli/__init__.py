"""The ``rayaccel`` command line. Rich tables for people, ``--json`` for machines.

Bad input ends with one line on stderr naming what was wrong, and exit code 2; never a traceback.
Each command group lives in its own module and is added to :data:`app` here.
"""

from __future__ import annotations

import sys

import click
import typer
from rich.console import Console

from rayaccel.errors import RayaccelError

app = typer.Typer(name="rayaccel", help="The vendor device-plugin SDK for Ray.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False)
# Piped output (CI logs, `| less`) would otherwise be squeezed into 80 columns.
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


#: Command modules, in the order `rayaccel --help` lists their commands.
COMMAND_MODULES = ("inventory", "node", "certify", "template", "sku")


def _register_commands() -> None:
    import importlib

    for name in COMMAND_MODULES:  # each adds its commands to `app` when imported
        importlib.import_module(f"rayaccel.cli.{name}")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rayaccel`` script; returns the exit code (console scripts sys.exit it)."""
    _register_commands()
    try:
        result = app(args=argv, standalone_mode=False)
    except click.exceptions.ClickException as e:
        e.show()
        return e.exit_code
    except click.exceptions.Abort:
        err_console.print("aborted")
        return 1
    except RayaccelError as e:
        err_console.print(f"error: {e}", markup=False, highlight=False, soft_wrap=True)
        return e.exit_code
    return result if isinstance(result, int) else 0
