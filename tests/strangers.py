"""A stranger's process, for tests that show a number we no longer hold is never signalled."""

from __future__ import annotations

import subprocess

import psutil

from rayaccel.support.polling import wait_for
from rayaccel.support.signalling import signal_held

WAIT_S = 10.0


class Stranger:
    """Someone else's process, as a reused number would find it: a session of its own (its group's number is its
    pid) and a child that left its group (as a descendant found under the number would be). It reports how its
    child ended, so a test sees which signal reached which."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(["sh", "-c", "setsid sleep 60 & wait $!; echo $?"], stdout=subprocess.PIPE,
                                        start_new_session=True)
        self.pid = self.process.pid
        self.child: psutil.Process = wait_for(lambda: psutil.Process(self.pid).children(), timeout=WAIT_S,
                                              interval=0.01, what="the stranger's child")[0]

    def spared(self) -> bool:
        """Whether nothing but our own SIGTERM, sent now, reached the stranger or its child (a SIGKILL sent
        earlier wins over it: the shell would end by SIGKILL, or say 137 for its child)."""
        self.child.terminate()
        out, _ = self.process.communicate(timeout=WAIT_S)
        return self.process.returncode == 0 and out == b"143\n"

    def end(self) -> None:
        signal_held([self.child])
        self.process.kill()
        self.process.communicate(timeout=WAIT_S)
