"""Signals sent only to a process this process still holds, never to whatever took its number since.

The kernel hands a freed pid to the next process that starts, and on a busy machine the counter wraps in under a
minute (``pid_max`` is 32768 on many). A pid kept from a process that has ended, been reaped, and then signalled
by number reaches a stranger: another program's worker, any process of the user. So a process is signalled by
number only while the number is known to be its own, and otherwise by something that cannot be reused:

- a child we reap ourselves: while it is not reaped (its number stays its own, zombie or not);
- a process group whose leader we started: while the leader is not reaped, or once no process holds the leader's
  number (Linux keeps a group's number reserved while any member lives, so then the group, if any, is ours);
- any other process (a descendant found by a scan, one another process reaps): a :class:`psutil.Process` taken
  when it was found (it checks the start time before signalling: a reused number raises ``NoSuchProcess``), or a
  pidfd opened while it was known alive (Linux).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil


def number_taken(pid: int) -> bool:
    """Whether some process (a zombie included) holds the number ``pid`` now."""
    try:
        os.kill(pid, 0)  # signal 0: a question, nothing is sent
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_group(leader: int, leader_unreaped: bool, sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to the process group of ``leader`` (a process we started in a session of its own), only while
    the group's number is still ours: the leader not reaped yet (``leader_unreaped``), or no process holding its
    number (members it left keep the number reserved, so no stranger can have taken it)."""
    if leader <= 0 or (not leader_unreaped and number_taken(leader)):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, sig)


def held(pids: Iterable[int]) -> list[psutil.Process]:
    """The processes with these numbers now, held by identity (number and start time); those gone are left out.
    Take them at the moment the numbers are found, never later."""
    import psutil

    found = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            found.append(psutil.Process(pid))
    return found


def signal_held(processes: Iterable[psutil.Process], sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to each process that is still the one held (an ended one, or a reused number, is skipped)."""
    import psutil

    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.send_signal(sig)


def alive_held(processes: Iterable[psutil.Process]) -> list[psutil.Process]:
    """Those of ``processes`` that still run (the same process, not a zombie)."""
    import psutil

    running = []
    for process in processes:
        with contextlib.suppress(psutil.Error):
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                running.append(process)
    return running


def pidfd_signal(pidfd: int | None, sig: int = signal.SIGKILL) -> bool:
    """Send ``sig`` through a pidfd (to the very process it was opened on, Linux); whether it was sent: False once
    that process was reaped (or the pidfd closed). Signal 0 asks whether it is unreaped, sending nothing."""
    if pidfd is None:
        return False
    try:
        signal.pidfd_send_signal(pidfd, sig)
    except OSError:  # ESRCH: reaped; its number may be a stranger's now, which this never reaches
        return False
    return True
