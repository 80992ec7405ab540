"""Strings from a plugin, a fixture, a file or the user, on their way into text another program reads.

An exporter's output (gres.conf, a ``ray start`` line, an NFD file), a terminal and an error message are
parsed by someone with authority: a newline starts a new gres.conf line, an escape sequence moves a
terminal's cursor, a space ends a shell word. So a foreign string is either checked against the rules of
the place it goes (:func:`device_path_problem` for a device file, :func:`control_characters` everywhere)
and refused, or shown only as a short escaped excerpt (:func:`excerpt`, :func:`terminal_text`).
"""

from __future__ import annotations

import re
import unicodedata

#: Unicode categories no configuration value or line of a terminal may hold: C0/C1 controls (NUL, ESC,
#: newline, ...), format characters (bidi overrides, zero-width joiners), line and paragraph separators
#: (U+2028/U+2029, which some parsers take as line ends) and lone surrogates.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
#: Characters of a foreign value an error message quotes.
MAX_EXCERPT = 60
#: The longest device file path taken (Linux's PATH_MAX).
MAX_PATH = 4096
#: Linux's MAX_ARG_STRLEN: execve refuses an argument or ``NAME=value`` env string of this many bytes or more
#: (with its NUL), whatever ``ulimit -s`` allows in all: a node env or a command line must stay under it.
MAX_ARG_BYTES = 32 * 4096
#: One path segment of a device file: what /dev names use, and never a shell, gres.conf or list separator
#: (space, ',', '=', ':', '[', quotes).
_DEVICE_SEGMENT_RE = re.compile(r"^[A-Za-z0-9_.+@-]+$")


def control_characters(text: str) -> list[str]:
    """The characters of ``text`` no configuration value may hold (see ``_UNPRINTABLE``), escaped."""
    return sorted({ascii(c)[1:-1] for c in text if unicodedata.category(c) in _UNPRINTABLE})


def excerpt(value: object, limit: int = MAX_EXCERPT) -> str:
    """A short quotable form of a foreign value: at most ``limit`` characters, every character that is not
    printable ASCII escaped (a newline as ``\\n``, ESC as ``\\x1b``), quoted."""
    text = str(value)
    cut = text[:limit]
    return ascii(cut) + (f" (+{len(text) - limit} more characters)" if len(text) > limit else "")


def terminal_text(text: str) -> str:
    """``text`` safe to print on one terminal line: whitespace runs as one space, every other control or
    format character escaped (``\\x1b``), so a value cannot move the cursor, recolour or hide what follows."""
    return _escaped(" ".join(text.split()))


def terminal_lines(text: str) -> str:
    """``text`` safe to print on a terminal as it is laid out: its line ends kept, every other control or format
    character escaped (``\\x1b``)."""
    return "\n".join(_escaped(line) for line in text.split("\n"))


def _escaped(line: str) -> str:
    if not control_characters(line):
        return line
    return "".join(ascii(c)[1:-1] if unicodedata.category(c) in _UNPRINTABLE else c for c in line)


def device_path_problem(path: str, root: str = "/dev") -> str | None:
    """Why ``path`` cannot be a device file under ``root`` (None when it can): it must be an absolute path
    below ``root`` of plain segments (letters, digits, ``_ . + @ -``), none of them ``.`` or ``..``, at most
    :data:`MAX_PATH` characters."""
    if len(path) > MAX_PATH:
        return f"is {len(path)} characters long (at most {MAX_PATH})"
    if control_characters(path):
        return f"holds control characters ({', '.join(control_characters(path))})"
    base = root.rstrip("/") + "/"
    if not path.startswith(base):
        return f"is not under {base}"
    for segment in path[len(base):].split("/"):
        if segment in ("", ".", ".."):
            return "has an empty, '.' or '..' segment (a device file is a plain path)"
        if not _DEVICE_SEGMENT_RE.fullmatch(segment):
            return f"has a segment {excerpt(segment)} with characters a device name never has (letters, digits, _.+@-)"
    return None


def device_root_problem(root: str) -> str | None:
    """Why ``root`` cannot stand for ``/dev`` (None when it can): an absolute path of plain segments."""
    stripped = root.rstrip("/")
    if not stripped:
        return None if root == "/" else "is empty"
    return device_path_problem(stripped, root="")
