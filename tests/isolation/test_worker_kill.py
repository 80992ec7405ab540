"""A plugin worker is killed with its process group and its descendants only while its number is its own: once
reaped (by us, or by the fork server that forked it) the number may name a stranger's process, which
WorkerProcess.kill never reaches (nor the children found under that number)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator

import pytest
from strangers import Stranger

from rayaccel.isolation.fork_server import ForkServer, ServedProcess
from rayaccel.isolation.process import ForkedProcess, Proc, WorkerProcess


@pytest.fixture
def stranger() -> Iterator[Stranger]:
    someone = Stranger()
    yield someone
    someone.end()


def _ended() -> int:
    """A process of ours that has ended, not yet reaped."""
    return os.posix_spawnp("true", ["true"], os.environ)


def _popen(number: int) -> Proc:
    done = subprocess.Popen(["true"])
    done.wait()  # reaped as Popen.poll reaps a worker that died
    done.pid = number
    return done


def _forked(number: int) -> Proc:
    done = ForkedProcess(_ended(), open(os.devnull, "wb"), open(os.devnull, "rb"))  # noqa: SIM115 (reap closes)
    done.wait()
    done.pid = number
    return done


def _served(number: int) -> Proc:
    pid = _ended()
    pidfd = os.pidfd_open(pid)  # as the fork server opens it at the fork, then reaps the worker as it ends
    os.waitpid(pid, 0)
    return ServedProcess(ForkServer(), number, pidfd, open(os.devnull, "wb"), open(os.devnull, "rb"))


@pytest.mark.parametrize("handle", [_popen, _forked, _served], ids=["spawned", "forked", "served"])
def test_a_reaped_worker_whose_number_names_a_stranger_is_killed_without_touching_it(
        stranger: Stranger, handle: Callable[[int], Proc]) -> None:
    worker = WorkerProcess([], timeout=1.0)
    worker.proc = handle(stranger.pid)  # the kernel handed the reaped worker's number to the stranger
    worker.kill()
    assert worker.proc is None
    assert stranger.spared(), "the stranger (its group or its child) was signalled through a reaped worker's number"


@pytest.mark.parametrize("handle", [_popen, _forked, _served], ids=["spawned", "forked", "served"])
def test_a_reaped_handle_kills_nothing(stranger: Stranger, handle: Callable[[int], Proc]) -> None:
    done = handle(stranger.pid)
    done.kill()
    done.wait(timeout=5)
    assert stranger.spared(), "a reaped worker's kill() reached the process that took its number"
