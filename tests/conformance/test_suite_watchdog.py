"""``make test`` fails in bounded time, naming the worker and the test, when a pytest-xdist worker dies while a
process it forked holds its pipe (issue 39: the controller waited for ever), when a worker dies under the parallel
pass's own file scheduling, and when a test hangs."""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

TESTS_DIR = Path(__file__).parents[1]  # tests/, where the test plugins are

DYING = '''
import os, signal, time
from pathlib import Path

def test_first():
    time.sleep(0.2)

def test_the_worker_dies_with_a_forked_child_alive():
    child = os.fork()
    if child == 0:  # outlives the worker, holding every descriptor it had (as a forked plugin worker does)
        time.sleep(300)
        os._exit(0)
    Path(os.environ["CHILD_PID_FILE"]).write_text(str(child))
    os.kill(os.getpid(), signal.SIGKILL)

def test_last():
    time.sleep(0.2)
'''

HANGING = '''
import time

def test_that_hangs():
    time.sleep(3600)
'''


CRASHING = '''
import os, signal

def test_before():
    pass

def test_the_worker_crashes():
    os.kill(os.getpid(), signal.SIGSEGV)

def test_after():
    pass
'''

QUICK = '''
def test_one():
    pass

def test_two():
    pass

def test_three():
    pass
'''


def parallel_pass_options() -> list[str]:
    """The options of ``make test``'s parallel pass, as the Makefile gives them (its marker selection left out)."""
    text = (TESTS_DIR.parent / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    (line,) = [line for line in text.splitlines() if "-m pytest" in line and "--dist" in line]
    options = shlex.split(line.split("-m pytest", 1)[1])
    marker = options.index("-m")
    return options[:marker] + options[marker + 2:]


def run_nested(tmp_path: Path, source: str, *options: str,
               **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    (tmp_path / "test_nested.py").write_text(source, encoding="utf-8")
    argv = [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", "-p", "suite_watchdog",
            "--rootdir", str(tmp_path), *options, "test_nested.py"]
    started = time.monotonic()
    # Output to files, not pipes: a forked child of a worker holds whatever the run's stdout is until it dies.
    with open(tmp_path / "out", "w+", encoding="utf-8") as out, open(tmp_path / "err", "w+", encoding="utf-8") as err:
        process = subprocess.Popen(argv, cwd=tmp_path, stdout=out, stderr=err,
                                   env={**os.environ, "PYTHONPATH": str(TESTS_DIR), **env})
        try:
            returncode = process.wait(timeout=240)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(argv, returncode, out.read(), err.read())
    return done, time.monotonic() - started


def test_a_worker_that_dies_holding_its_pipe_ends_the_run_naming_worker_and_test(tmp_path: Path) -> None:
    child_pid_file = tmp_path / "child.pid"
    try:
        done, took = run_nested(tmp_path, DYING, RAYACCEL_WORKER_GRACE_S="3", CHILD_PID_FILE=str(child_pid_file))
    finally:
        if child_pid_file.exists():  # the orphan the nested test forked, stopped only while its pid is still it:
            with contextlib.suppress(psutil.Error):  # it carries the file's name, a process that took the pid does not
                orphan = psutil.Process(int(child_pid_file.read_text()))
                if orphan.environ().get("CHILD_PID_FILE") == str(child_pid_file):
                    orphan.kill()
    output = done.stdout + done.stderr
    assert done.returncode == 3, output
    assert took < 120, f"the run took {took:.0f} s"
    assert "rayaccel suite watchdog: worker gw" in output, output
    assert "test_nested.py::test_the_worker_dies_with_a_forked_child_alive" in output, output


def test_a_worker_that_crashes_under_the_parallel_pass_s_scheduling_ends_the_run_naming_its_test(
        tmp_path: Path) -> None:
    """pytest-xdist 3.8's file scheduling, replacing a crashed worker, hands the dead worker's finished files out
    again as empty work and then waits for ever (pytest-dev/pytest-xdist#1378, #784): a crash in the parallel pass
    must end it, naming the test, instead of leaving the suite to its budget."""
    for number in range(5):
        (tmp_path / f"test_quick_{number}.py").write_text(QUICK, encoding="utf-8")
    done, took = run_nested(tmp_path, CRASHING, *parallel_pass_options(), ".")
    output = done.stdout + done.stderr
    assert done.returncode == 1 and took < 120, output
    assert "crashed while running 'test_nested.py::test_the_worker_crashes'" in output, output


def test_a_hanging_test_fails_at_the_configured_timeout_naming_it(tmp_path: Path) -> None:
    done, took = run_nested(tmp_path, HANGING, "-o", "timeout=3")
    output = done.stdout + done.stderr
    assert done.returncode == 1 and took < 120, output
    assert "test_nested.py::test_that_hangs" in output and "Timeout" in output, output


@pytest.mark.parametrize("key", ["timeout", "timeout_method"])
def test_the_suite_configures_a_per_test_timeout(key: str) -> None:
    import tomllib

    options = tomllib.loads((TESTS_DIR.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert key in options["tool"]["pytest"]["ini_options"]
