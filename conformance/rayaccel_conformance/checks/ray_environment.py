"""The process environment around a call of Ray's own accelerator manager (RAC270): Ray's settings by name, and
whatever the manager writes into ``os.environ`` undone afterwards."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

#: Ray's own settings are named so; ``RAY_EXPERIMENTAL_NOSET_*`` (leave the variable alone) is the SDK's to honour.
RAY_PREFIX, NOSET = "RAY_", "RAY_EXPERIMENTAL_NOSET_"


@contextlib.contextmanager
def environment_kept() -> Iterator[None]:
    """Whatever Ray's manager writes into ``os.environ`` (the variable, TPU's bounds) is undone afterwards."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        for key in [k for k in os.environ if k not in saved]:
            del os.environ[key]
        os.environ.update(saved)
