"""The ``rayaccel`` command line. Rich tables for people, ``--json`` for machines.

Bad input ends with one line on stderr naming what was wrong and how to fix it, and exit code 2; never a
traceback (:func:`main` is the one place that turns errors into that line). Each command group lives in
its own module and is added to :data:`app` here. Text from plugins and vendor tools is data: the consoles
here never read it as Rich markup, emoji codes or links.
"""

from __future__ import annotations

import errno
import json
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, cast

import click
import typer
from pydantic import ValidationError

from rayaccel.errors import RayaccelError
from rayaccel.plugins import containment
from rayaccel.schemas import describe_validation_error

app = typer.Typer(name="rayaccel", help="The vendor device-plugin SDK for Ray.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False)


@app.callback()
def _commands() -> None:
    # A callback keeps `rayaccel` a group of commands even when the one module a command needs adds only
    # that command (typer would otherwise run it without its name: `rayaccel cluster` -> "extra argument").
    pass

#: Set RAYACCEL_DEBUG=1 to get the traceback of an unexpected error instead of its one line.
DEBUG_ENV = "RAYACCEL_DEBUG"


if TYPE_CHECKING:
    from rich.console import Console


def make_console(stderr: bool = False) -> Console:
    """A console for output that carries data: no markup, emoji codes or highlighting is read from the
    strings printed (``[/]``, ``[link=...]`` and ``0000:ab:00.0`` print as they are); style with
    :class:`rich.text.Text` instead. Piped output (CI logs, ``| less``) is not squeezed into 80 columns, and a
    printed line is never broken (a fix command such as ``rayaccel sku add ...`` must stay one line to copy);
    tables still fit the width."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else 160, markup=False, emoji=False,
                   highlight=False, soft_wrap=True)


class _ConsoleAtFirstUse:
    """:func:`make_console`'s console, made when first used: a command that prints JSON never imports Rich."""

    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            self._console = make_console(self._stderr)
        return getattr(self._console, name)


console = cast("Console", _ConsoleAtFirstUse(stderr=False))
err_console = cast("Console", _ConsoleAtFirstUse(stderr=True))


def strict_json(data: Any, indent: int | None = None) -> str:
    """JSON with no NaN/Infinity (not JSON): a non-finite number is written as null and named on stderr."""
    try:
        return json.dumps(data, allow_nan=False, indent=indent)
    except ValueError:
        pass
    where: list[str] = []

    def finite(value: Any, path: str) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            where.append(path or "(top level)")
            return None
        if isinstance(value, dict):
            return {k: finite(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [finite(v, f"{path}[{i}]") for i, v in enumerate(value)]
        return value

    text = json.dumps(finite(data, ""), allow_nan=False, indent=indent)
    err_console.print(f"warning: non-finite numbers (NaN/Infinity) written as null at {', '.join(where[:5])}"
                      + (f" and {len(where) - 5} more" if len(where) > 5 else "")
                      + "; the plugin that reported them should report a finite value or none")
    return text


def output_path(value: str | Path) -> Path:
    """The ``parser`` of every option naming a file or folder to write: an empty value would silently mean
    the current directory (``Path("")`` is ``.``), so it is refused. (A default arrives as a ``Path``.)"""
    if isinstance(value, Path):
        return value
    if not value.strip():
        raise typer.BadParameter("an empty path names nothing to write; give a file or folder, e.g. ./out")
    return Path(value)


def check_output_path(output: Path, option: str = "--output", example: str = "export.txt") -> None:
    """Refuse, before any work, an output path that cannot take a file (one line naming the option)."""
    if output.is_dir():
        raise RayaccelError(f"{option} {output} is a directory; give a file path, e.g. {output / example}")
    if not output.parent.is_dir():
        raise RayaccelError(f"{option} {output}: the directory {output.parent} does not exist; create it first")


def print_json(data: Any) -> None:
    """Print data as strict JSON on stdout (indented for people on a terminal; written as it is, not
    through Rich, which would cost a second parse of a large document)."""
    sys.stdout.write(strict_json(data, indent=2 if sys.stdout.isatty() else None) + "\n")
    sys.stdout.flush()


#: The module that adds each built-in command, in the order `rayaccel --help` lists them: running a command
#: imports only its own module (tests/cli/test_cli_entry_points.py keeps this table equal to what registers).
COMMAND_MODULES: dict[str, str] = {
    "inspect": "inventory", "fixtures": "inventory", "plugins": "inventory", "start": "node", "stop": "node",
    "new": "template", "upgrade": "template", "sku": "sku", "record": "record", "fixture": "record",
    "transports": "transports", "export": "export", "cluster": "cluster",
    "enable": "activation", "disable": "activation",
}
#: Entry point group through which other packages add command groups (the conformance suite adds `certify`):
#: ``[project.entry-points."rayaccel.cli"] NAME = "module:typer_app"`` becomes ``rayaccel NAME ...``.
COMMANDS_GROUP = "rayaccel.cli"
_added_groups: set[str] = set()


def _register_commands(argv: list[str] | None = None) -> None:
    """Add the commands ``argv`` runs: a built-in command's module alone, else (help, an entry point's group,
    a typo) every module and entry point group. Without ``argv``: everything."""
    import importlib

    command = next((arg for arg in argv if not arg.startswith("-")), None) if argv is not None else None
    if command in COMMAND_MODULES:
        importlib.import_module(f"rayaccel.cli.{COMMAND_MODULES[command]}")
        return
    if command is not None and _add_entry_point_groups(command):
        return  # an entry point's group (`rayaccel certify ...`): the built-in modules are not its commands
    for module in dict.fromkeys(COMMAND_MODULES.values()):  # each adds its commands to `app` when imported
        importlib.import_module(f"rayaccel.cli.{module}")
    _add_entry_point_groups()


def _add_entry_point_groups(name: str | None = None) -> bool:
    """Add each ``rayaccel.cli`` entry point's typer app as a command group (only the one called ``name``, if
    given), once per process; whether any entry point has that name. One that cannot be loaded still gets its
    name: running it says, in one line, which entry point is broken."""
    from importlib.metadata import entry_points

    builtin = set(COMMAND_MODULES)
    found = entry_points(group=COMMANDS_GROUP) if name is None else entry_points(group=COMMANDS_GROUP, name=name)
    for ep in sorted(found, key=lambda e: e.name):
        if ep.name in _added_groups or ep.name in builtin:  # a built-in command is never replaced
            continue
        _added_groups.add(ep.name)
        try:
            group = ep.load()
            if not isinstance(group, typer.Typer):
                raise TypeError(f"it is a {type(group).__name__}, not a typer.Typer")
        except Exception as e:  # any failure of someone else's code: the command says so when run
            dist = getattr(ep.dist, "name", None) or "its distribution"
            _add_broken_group(ep.name, f"the '{ep.name}' commands cannot be loaded (entry point {ep.name} = "
                                       f"{ep.value} of {dist}): {type(e).__name__}: {_one_line(str(e))}; "
                                       f"reinstall {dist}")
            continue
        app.add_typer(group, name=ep.name)
    return bool(found)


def _add_broken_group(name: str, message: str) -> None:
    @app.command(name, help=f"(broken) {message}", add_help_option=False,
                 context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def broken(ctx: typer.Context) -> None:
        raise RayaccelError(message)


#: The click command typer made of :data:`app`, with the commands it was made from (:func:`_registered`).
_built: dict[tuple[object, ...], Callable[..., Any]] = {}


def _registered(typer_app: typer.Typer) -> tuple[object, ...]:
    """What ``typer_app`` holds, as a key: its commands and, recursively, its groups' (a command module
    imported later adds to them)."""
    return (len(typer_app.registered_commands), typer_app.registered_callback is not None,
            tuple((group.name, _registered(group.typer_instance)) for group in typer_app.registered_groups
                  if group.typer_instance is not None))


def _click_command() -> Callable[..., Any]:
    """:data:`app` as a click command, made once for each set of registered commands: typer makes it afresh
    from every command function's signature on each call (0.1-0.3 s with every module imported), which a
    process running several commands (``main`` called in process: tests, notebooks) paid each time."""
    key = _registered(app)
    if key not in _built:
        _built.clear()
        _built[key] = typer.main.get_command(app)
    return _built[key]


def _click_classes(name: str) -> tuple[type[Any], ...]:
    """The class of that name in click and in the click that typer vendors (typer >= 0.22 raises its own),
    wherever it exists: errors are told apart by class hierarchy, never by module name."""
    modules: list[object] = [click.exceptions]
    try:
        from typer._click import exceptions as vendored
    except ImportError:  # an older typer that raises click's own
        pass
    else:
        modules.append(vendored)
    found = [getattr(module, name, None) for module in modules]
    return tuple(dict.fromkeys(c for c in found if isinstance(c, type)))


_CLICK_ERRORS = _click_classes("ClickException")
_USAGE_ERRORS = _click_classes("UsageError")
_NO_ARGS_IS_HELP = _click_classes("NoArgsIsHelpError")
_ABORTS: tuple[type[BaseException], ...] = (click.exceptions.Abort, typer.Abort)


def _one_line(text: str) -> str:
    from rayaccel.support.safe_text import terminal_text  # a message may quote a plugin's or a file's value

    return terminal_text(str(text))


def _error(message: str) -> None:
    print(f"error: {_one_line(message)}", file=sys.stderr, flush=True)


def _usage_error(e: Any) -> str:
    """`click`'s three-line usage message as one line that names the fix."""
    message = _one_line(e.format_message())
    ctx = getattr(e, "ctx", None)
    if ctx is not None:
        message += f" (see '{ctx.command_path} --help')"
    return message


def _os_error(e: OSError) -> str:
    what = e.strerror or type(e).__name__
    where = f": {e.filename}" if e.filename else ""
    if len(where) > 200:
        where = where[:200] + "..."
    fix = {errno.ENAMETOOLONG: "use a shorter name", errno.EACCES: "check the permissions",
           errno.ENOSPC: "free some disk space", errno.EROFS: "choose a writable location"}.get(e.errno or 0)
    return f"{what}{where}" + (f"; {fix}" if fix else "")


@contextmanager
def _sigint_marks_interrupt() -> Iterator[list[bool]]:
    """Remember that SIGINT arrived (typer turns the KeyboardInterrupt into a silent exit code 130)."""
    seen: list[bool] = []
    # Only over Python's own handler: an ignored SIGINT (a job started with `nohup` or `&`) stays ignored.
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield seen
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        seen.append(True)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rayaccel`` script; returns the exit code (console scripts sys.exit it).

    Everything a user can get wrong ends here as one line on stderr and exit code 2; an interrupt as
    one line and 130; anything else (a bug) as one line and 1, with the traceback under RAYACCEL_DEBUG=1.
    """
    try:
        # Routed streams for the whole command: a hook abandoned at its timeout that prints later still
        # cannot write into the command's output (e.g. between the lines of `inspect --json`).
        with _sigint_marks_interrupt() as interrupted, containment.routed_streams():
            _register_commands(sys.argv[1:] if argv is None else argv)
            result = _click_command()(args=argv, standalone_mode=False)
        if interrupted:
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        _error("interrupted (SIGINT); run the command again to finish it")
        return 130
    except _NO_ARGS_IS_HELP as e:  # bare `rayaccel` or `rayaccel certify`: the help, exit 2 as click does
        if e.format_message().strip():  # typer's rich help has been printed already
            print(e.format_message(), file=sys.stderr)
        return 2
    except _USAGE_ERRORS as e:
        _error(_usage_error(e))
        return 2
    except _CLICK_ERRORS as e:
        _error(e.format_message())
        return int(getattr(e, "exit_code", 1) or 1)
    except _ABORTS:
        _error("aborted")
        return 1
    except RayaccelError as e:
        _error(str(e))
        return e.exit_code
    except ValidationError as e:  # a record built from what the user typed (e.g. an empty name)
        _error(f"invalid input: {describe_validation_error(e)}")
        return 2
    except RecursionError:
        _error("the input is nested too deeply to process; flatten it")
        return 2
    except UnicodeError as e:
        _error(f"input is not valid UTF-8 text ({e}); save it as UTF-8")
        return 2
    except OSError as e:
        if e.errno == errno.EPIPE:  # `rayaccel ... | head`: the reader left, nothing to say
            return 1
        _error(_os_error(e))
        return 2
    except Exception as e:
        if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
            raise
        _error(f"unexpected {type(e).__name__}: {e} (a bug in rayaccel or a plugin; rerun with {DEBUG_ENV}=1 "
               "for the traceback and report it)")
        return 1
    return result if isinstance(result, int) else 0
