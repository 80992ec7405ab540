"""Whether a process runs: the one liveness check of the SDK (a leaf, so any layer may ask).

The claims table drops the claims of processes that are gone, the shared-memory transport the segments of
senders that are gone, and ``rayaccel stop`` waits for a cluster's processes to end; all ask here. A zombie has
ended (it only waits for its parent to reap it), so it is not alive: a worker that died without being reaped
holds no claim.

A number is not a process: the kernel hands a freed pid to the next process that starts, and on a busy machine
the counter wraps in under a minute (``pid_max`` is 32768 on many). So a caller that knows when the process it
means was already running (a claim's time, a segment's) says so (``running_at``), and a process holding the
number that started after that moment is a stranger: the one meant is gone.
"""

from __future__ import annotations

import os

#: How much later than ``running_at`` a process may seem to have started and still be the one meant: its start
#: is known to the clock tick and the boot time to the second (Linux's /proc/stat ``btime``).
START_SLACK_S = 2.0

_boot_time: float | None = None


def _booted_at() -> float | None:
    """The machine's boot time (epoch seconds, Linux's /proc/stat ``btime``); None where there is none."""
    global _boot_time
    if _boot_time is None:
        try:
            with open("/proc/stat", encoding="ascii") as f:
                _boot_time = next(float(line.split()[1]) for line in f if line.startswith("btime "))
        except (OSError, StopIteration, ValueError, IndexError):
            return None
    return _boot_time


def alive(pid: int, running_at: float | None = None) -> bool:
    """Whether ``pid`` runs: it exists (or exists and is another user's) and is not a zombie; with
    ``running_at`` (epoch seconds, a moment the process meant was known to run), also that the process holding
    the number had started by then (where the start time can be read: Linux), not a later one given the number."""
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
            fields = f.read().rsplit(")", 1)[-1].split()  # after the command name, which may hold spaces
    except OSError:  # it ended since the signal (Linux), or there is no /proc (macOS: the signal's answer)
        return not os.path.isdir("/proc/self")
    if not fields or fields[0] == "Z":
        return False
    if running_at is None:
        return True
    booted = _booted_at()
    try:
        started = None if booted is None else booted + int(fields[19]) / os.sysconf("SC_CLK_TCK")  # starttime
    except (IndexError, ValueError, OSError):
        started = None
    return started is None or started <= running_at + START_SLACK_S
