"""Whether a process runs (rayaccel.support.liveness): a number held by a process that started after the moment
the one meant was known to run is a stranger's, not the one meant (the kernel reuses freed pids)."""

from __future__ import annotations

import os
import subprocess
import time

import psutil

from rayaccel.support.liveness import START_SLACK_S, alive


def test_a_running_process_is_alive_only_for_a_moment_after_it_started() -> None:
    later = subprocess.Popen(["sleep", "60"])
    try:
        started = psutil.Process(later.pid).create_time()
        assert alive(later.pid) and alive(later.pid, running_at=started) and alive(later.pid, running_at=time.time())
        # Meant: a process known to run a minute before this one started (one that died, its number reused).
        assert not alive(later.pid, running_at=started - 60)
        assert not alive(later.pid, running_at=started - 2 * START_SLACK_S)
    finally:
        later.kill()
        later.wait()


def test_an_ended_process_and_a_zombie_are_not_alive() -> None:
    ended = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while psutil.Process(ended.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not alive(ended.pid, running_at=time.time())  # ended, not reaped yet: a zombie
    ended.wait()
    assert not alive(ended.pid) and not alive(0) and not alive(-1)
    assert alive(os.getpid(), running_at=time.time())
