"""Whether a killed process is gone as far as what it held goes."""

from __future__ import annotations

import os

import psutil


def released(pid: int) -> bool:
    """Whether process ``pid`` no longer exists or, killed and not yet reaped, holds no open file any more.

    A killed process's leader shows as a zombie while its other threads are still exiting, and those still hold
    its descriptors (and the locks on them: a transport telling a live sender by its lock sees it alive then). Once
    the last thread has exited, ``/proc/<pid>/fd`` lists nothing."""
    try:
        if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            return False
    except psutil.NoSuchProcess:
        return True
    try:
        return not os.listdir(f"/proc/{pid}/fd")
    except (FileNotFoundError, ProcessLookupError):
        return True
    except PermissionError:  # another user's zombie: its status is all this process may read
        return True
