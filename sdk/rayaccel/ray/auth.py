"""Ray token authentication: one decision, stated, that ``rayaccel start``, its monitor's driver and
:func:`rayaccel.ray.connect` share.

Ray 2.60 decides per entry point: ``ray start --head`` turns token authentication on when
``RAY_AUTH_MODE`` is unset and a token exists (``~/.ray/auth_token``, which any ``ray.init()`` that
starts a local node writes), ``ray.init()`` starting a local node always turns it on, while
``ray status``, ``ray start --address`` and ``ray.init(address=HOST:PORT)`` follow ``RAY_AUTH_MODE``
alone (unset: disabled). So a node can come up with authentication that the next ``ray status`` does not
send. The SDK makes Ray's ``ray start`` rule explicit instead: ``RAY_AUTH_MODE`` when set, else ``token``
when a token exists, else ``disabled``; it sets the variable for the processes it starts and tells the
user the line to export.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from rayaccel.errors import RayaccelError

AUTH_MODE_ENV = "RAY_AUTH_MODE"
MODES = ("token", "disabled")
#: What a shell needs before ``ray status`` or a driver talks to a node with token authentication.
EXPORT_TOKEN_LINE = f"export {AUTH_MODE_ENV}=token"


def token_available() -> bool:
    """Whether Ray finds a token here (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``)."""
    raylet: Any = importlib.import_module("ray._raylet")
    loader = raylet.AuthenticationTokenLoader.instance()
    loader.reset_cache()  # HOME or the token file may have changed since this process last asked
    try:
        return bool(loader.has_token(ignore_auth_mode=True))
    finally:
        # Leave no token cached: a process with auth disabled that holds one rejects its workers' calls.
        loader.reset_cache()


def decide_auth_mode() -> tuple[str, str]:
    """The node's mode (``token`` or ``disabled``) and why, by Ray's ``ray start --head`` rule, made explicit."""
    explicit = os.environ.get(AUTH_MODE_ENV)
    if explicit is not None:
        mode = explicit.strip().lower()
        if mode not in MODES:
            raise RayaccelError(f"{AUTH_MODE_ENV}={explicit!r} is not a mode Ray knows: set it to "
                                f"{' or '.join(MODES)}, or unset it")
        return mode, f"{AUTH_MODE_ENV}={mode}"
    if token_available():
        return "token", f"{AUTH_MODE_ENV} is unset and a Ray token exists (~/.ray/auth_token)"
    return "disabled", f"{AUTH_MODE_ENV} is unset and no Ray token exists"


def set_auth_mode(mode: str | None) -> None:
    """``RAY_AUTH_MODE`` set to ``mode`` (``None``: unset) in this process, for the Ray processes it starts and
    the drivers it connects, and Ray's cached config re-read."""
    if mode is None:
        os.environ.pop(AUTH_MODE_ENV, None)
    else:
        os.environ[AUTH_MODE_ENV] = mode
    raylet: Any = importlib.import_module("ray._raylet")
    raylet.Config.initialize("")  # Ray caches its config (the auth mode with it): re-read the environment


def agree_with_cluster() -> str:
    """Before a driver joins a cluster by address: the mode ``rayaccel start`` gives a node here.

    Unset ``RAY_AUTH_MODE`` plus a token means token; a token sent to a node without authentication is
    ignored, so this joins both kinds of node. Returns the mode used.
    """
    mode, _ = decide_auth_mode()
    if os.environ.get(AUTH_MODE_ENV) is None and mode == "token":
        set_auth_mode(mode)
    return mode
