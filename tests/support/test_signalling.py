"""Signals reach only a process we still hold: a number whose process was reaped, and which another process took
since, is never signalled (rayaccel.support.signalling, which the isolation pool, vendor commands and `rayaccel
stop` send through)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator

import psutil
import pytest
from strangers import WAIT_S, Stranger

from rayaccel.support.polling import wait_for
from rayaccel.support.signalling import held, kill_group, number_taken, pidfd_signal, signal_held


@pytest.fixture
def stranger() -> Iterator[Stranger]:
    someone = Stranger()
    yield someone
    someone.end()


def _reaped_pid() -> int:
    """The number of a process that has ended and been reaped (free for the kernel to hand out again)."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_a_group_whose_leader_was_reaped_is_spared_once_its_number_names_another_process(stranger: Stranger) -> None:
    kill_group(stranger.pid, leader_unreaped=False)  # our leader reaped, and the kernel gave its number on
    assert stranger.spared()


def test_the_members_a_reaped_leader_left_are_still_killed() -> None:
    leader = subprocess.Popen(["sh", "-c", "sleep 60 >/dev/null & echo $!"], stdout=subprocess.PIPE,
                              start_new_session=True)
    left = psutil.Process(int(leader.communicate(timeout=WAIT_S)[0]))
    assert leader.returncode == 0 and not number_taken(leader.pid)  # the group's number, held for its member
    try:
        kill_group(leader.pid, leader_unreaped=False)
        wait_for(lambda: not left.is_running() or left.status() == psutil.STATUS_ZOMBIE, timeout=WAIT_S,
                 interval=0.01, what="the member the leader left to end")
    finally:
        signal_held([left])


def test_a_pidfd_of_a_reaped_process_signals_nothing() -> None:
    done = subprocess.Popen(["sleep", "60"])
    pidfd = os.pidfd_open(done.pid)
    try:
        assert pidfd_signal(pidfd, 0)  # running: unreaped
        done.kill()
        done.wait()
        assert not pidfd_signal(pidfd, 0) and not pidfd_signal(pidfd, signal.SIGKILL)
    finally:
        os.close(pidfd)
    assert not pidfd_signal(None)


def test_processes_held_by_identity_are_signalled_only_while_they_run() -> None:
    assert held([_reaped_pid()]) == []  # gone when looked for: nothing held
    sleeper = subprocess.Popen(["sleep", "60"])
    mine = held([sleeper.pid])
    signal_held(mine, signal.SIGTERM)
    assert sleeper.wait(timeout=WAIT_S) == -signal.SIGTERM
    signal_held(mine)  # reaped now: nothing is sent, nothing raised
