"""The one way the SDK and the suite write a file others read: complete or not at all.

Data goes to a temporary file in the same directory (so the rename cannot cross file systems), is flushed
to disk, and is then renamed over the target: a reader, or a crash, never sees a half-written fixture,
catalog, report or key.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

#: Permissions of a new file unless the caller says otherwise (mkstemp would leave it 0600).
DEFAULT_MODE = 0o644


def write_atomically(path: str | Path, data: str | bytes, mode: int | None = None, *, overwrite: bool = True,
                     durable: bool = True) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` atomically.

    ``mode``: the file's permissions; default the replaced file's, else 0644. ``overwrite=False`` refuses
    an existing file (FileExistsError) with no window in which another writer's file is clobbered.
    ``durable=False`` skips the flush to disk: readers still never see half a file, but a power cut may
    lose it (state that dies with its processes anyway, such as a Ray node's claims table).
    """
    path = Path(path)
    if mode is None:
        mode = path.stat().st_mode & 0o777 if path.exists() else DEFAULT_MODE
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.chmod(tmp, mode)
        if overwrite:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails if path exists
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
