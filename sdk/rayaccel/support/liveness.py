"""Whether a process runs: the one liveness check of the SDK (a leaf, so any layer may ask).

The claims table drops the claims of processes that are gone, and ``rayaccel stop`` waits for a cluster's
processes to end; both ask here. A zombie has ended (it only waits for its parent to reap it), so it is not
alive: a worker that died without being reaped holds no claim.
"""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether ``pid`` runs: it exists (or exists and is another user's) and is not a zombie."""
    if pid <= 0:  # names a process group (or every process), not one process
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:  # it ended since the signal (Linux), or there is no /proc (macOS: the signal's answer)
        return not os.path.isdir("/proc/self")
