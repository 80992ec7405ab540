"""Optional parts of the distribution (``pip install 'rayaccel[EXTRA]'``) and the one check a command that
needs one makes first: a missing extra is one line naming it and exit code 2, never an ImportError.

A leaf: imports nothing from rayaccel but its errors.
"""

from __future__ import annotations

import importlib.util

from rayaccel.errors import RayaccelError

#: What each extra brings that the runtime (a Ray node) does not need.
EXTRAS = {
    "conformance": ("pytest", "cryptography"),
    "template": ("cookiecutter", "cruft"),
}


class MissingExtra(RayaccelError):
    """A command needs an extra that is not installed."""


def require(extra: str, what: str) -> None:
    """Raise :class:`MissingExtra` unless every module of ``extra`` can be imported; ``what`` names the command."""
    missing = [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtra(f"{what} needs the {extra!r} extra ({', '.join(missing)} not installed): "
                           f"pip install 'rayaccel[{extra}]'")
