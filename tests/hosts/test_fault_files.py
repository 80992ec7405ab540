"""A simulated node's fault file is read like every other file rayaccel reads: a regular file only, bounded,
never quoted. A fault file that cannot be read (garbage, binary, a 10 MB line, a directory, a FIFO, a symlink)
is one problem naming the file, and the devices keep the health they had; a refused ``rayaccel start`` leaves
no fault file behind (issue 39)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rayaccel.files import reading
from rayaccel.hosts import simulated
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.inventory.builder import collect_inventory
from rayaccel.plugins.manager import default_manager
from rayaccel.records import NodeInventory
from rayaccel.simulation.host_factory import make_host

FIXTURE = "nvidia/dgx-h100"
SECRET_LINE = "root:$6$saltsalt$VerySecretHashValue0123456789abcdefghijklmnopqrstuv:19000:0:99999:7:::"


def _garbage(path: Path, secret: Path) -> None:
    path.write_text("this is not\na list of fault names {]\n", encoding="utf-8")


def _binary(path: Path, secret: Path) -> None:
    path.write_bytes(b"\x00\xff\xfe" * 1000)


def _long_line(path: Path, secret: Path) -> None:
    path.write_bytes(b"x" * (10 * 1024 * 1024))


def _directory(path: Path, secret: Path) -> None:
    path.mkdir()


def _fifo(path: Path, secret: Path) -> None:
    os.mkfifo(path)


def _symlink_to_a_secret(path: Path, secret: Path) -> None:
    path.symlink_to(secret)


def _secret_itself(path: Path, secret: Path) -> None:
    path.write_text(SECRET_LINE + "\n", encoding="utf-8")  # a file of another format named as the fault file


REPLACEMENTS: dict[str, Callable[[Path, Path], None]] = {
    "garbage": _garbage, "binary": _binary, "10-MB-line": _long_line, "directory": _directory, "fifo": _fifo,
    "symlink-to-secret": _symlink_to_a_secret, "another-file": _secret_itself,
}


def build(host: SimulatedHost) -> NodeInventory:
    return collect_inventory(default_manager(), host)


def states(inventory: NodeInventory) -> dict[str, str]:
    return {report.device: report.state for family in inventory.families for report in family.health}


def in_thread(call: Callable[[], NodeInventory], timeout: float = 60) -> NodeInventory:
    """``call()``'s result, failing (not hanging) when it blocks: a FIFO opened for reading waits for a writer."""
    done: list[NodeInventory] = []
    worker = threading.Thread(target=lambda: done.append(call()), daemon=True)
    worker.start()
    worker.join(timeout)
    assert not worker.is_alive(), "reading the fault file blocked"
    return done[0]


@pytest.mark.parametrize("replacement", list(REPLACEMENTS))
def test_an_unreadable_fault_file_is_one_problem_and_devices_keep_their_health(
        tmp_path: Path, replacement: str) -> None:
    secret = tmp_path / "shadow"
    secret.write_text(SECRET_LINE + "\n", encoding="utf-8")
    fault_file = tmp_path / "faults.txt"
    fault_file.write_text("xid-79\n", encoding="utf-8")
    host = make_host(FIXTURE, [], str(fault_file))
    assert isinstance(host, SimulatedHost)
    before = build(host)
    assert sorted(states(before).values()).count("unhealthy") == 1  # XID 79 on one GPU

    fault_file.unlink()
    REPLACEMENTS[replacement](fault_file, secret)
    after = in_thread(lambda: build(host))

    assert states(after) == states(before)  # neither all cordoned nor the fault forgotten
    about_file = [p for p in after.problems if p.code == "bad-fault-file"]
    assert about_file, after.problems
    assert len(about_file) == 1  # one problem, however many plugins and hooks read the file
    rendered = " ".join(p.render() for p in after.problems)
    assert str(fault_file) in about_file[0].message and "xid-79" in about_file[0].message
    assert "VerySecretHashValue" not in rendered and "saltsalt" not in rendered and "\x00" not in rendered
    assert len(about_file[0].message) < 400


def test_a_fault_file_that_is_fixed_again_is_read_again(tmp_path: Path) -> None:
    fault_file = tmp_path / "faults.txt"
    fault_file.write_text("", encoding="utf-8")
    host = make_host(FIXTURE, [], str(fault_file))
    assert isinstance(host, SimulatedHost)
    fault_file.write_text("nonsense\n", encoding="utf-8")
    assert host.active_faults() == ()
    assert [p.code for p in host.fault_file_problems()] == ["bad-fault-file"]
    fault_file.write_text("gpu-lost\n", encoding="utf-8")
    assert host.active_faults() == ("gpu-lost",)
    assert host.fault_file_problems() == []


def test_a_fault_file_is_read_again_unless_it_settled_before_the_last_read_and_is_unchanged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call of every hook asks for the faults: the file is read whole again, unless it last changed more than
    a clock tick before the last read and its identity, size and times are still those (a change within the same
    tick could leave them all as they were, so a file changed that recently is always read)."""
    fault_file = tmp_path / "faults.txt"
    fault_file.write_text("xid-79\n", encoding="utf-8")
    host = make_host(FIXTURE, [], str(fault_file))
    assert isinstance(host, SimulatedHost)
    read: list[str] = []
    read_text = reading.read_text

    def counted(*args: Any, **kwargs: Any) -> str:
        read.append(str(args[0]))
        return read_text(*args, **kwargs)

    monkeypatch.setattr(reading, "read_text", counted)
    margins = ("FAULT_FILE_SETTLED_NS", "COARSE_FAULT_FILE_SETTLED_NS")
    for margin in margins:  # as if every read came within a tick of the last change
        monkeypatch.setattr(simulated, margin, 10**18)
    assert [host.active_faults() for _ in range(3)] == [("xid-79",)] * 3
    assert len(read) == 3
    for margin in margins:  # as if the last change were long before every read
        monkeypatch.setattr(simulated, margin, -10**18)
    read.clear()
    assert [host.active_faults() for _ in range(3)] == [("xid-79",)] * 3
    assert len(read) == 1
    fault_file.write_text("gpu-lost\n", encoding="utf-8")  # another size
    assert host.active_faults() == ("gpu-lost",)
    replacement = tmp_path / "new.txt"
    replacement.write_text("xid-13\n", encoding="utf-8")  # the first one's size, another file put in its place
    replacement.replace(fault_file)
    assert host.active_faults() == ("xid-13",)
    fault_file.unlink()
    assert host.active_faults() == ()
    assert len(read) == 4  # once settled, then once after each change (a gone file is asked for, and not there)


def test_a_refused_start_leaves_no_fault_file_in_tmpdir(tmp_path: Path) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir), "HOME": str(home), "RAY_AUTH_MODE": "token"}
    env.pop("RAY_AUTH_TOKEN", None)
    env.pop("RAY_AUTH_TOKEN_PATH", None)
    # Joining with token authentication on and no token: refused before `ray start` runs.
    done = subprocess.run([sys.executable, "-m", "rayaccel", "start", "--simulate", "nvidia/l4-single",
                           "--address=127.0.0.1:1"], capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode != 0 and "token" in done.stderr, done.stderr
    assert list(tmpdir.iterdir()) == []


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory"])
def test_faults_given_at_start_are_never_written_through_a_symlink_or_into_a_fifo(tmp_path: Path, kind: str) -> None:
    from rayaccel.errors import FixtureError

    victim = tmp_path / "bashrc"
    victim.write_text("export PATH=/usr/bin\n", encoding="utf-8")
    fault_file = tmp_path / "faults.txt"
    if kind == "symlink":
        fault_file.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(fault_file)
    else:
        fault_file.mkdir()
    raised: list[BaseException] = []

    def start() -> None:
        try:
            make_host(FIXTURE, ["xid-79"], str(fault_file))
        except BaseException as e:
            raised.append(e)

    worker = threading.Thread(target=start, daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "writing the faults blocked"
    [error] = raised
    assert isinstance(error, FixtureError) and "fault file" in str(error) and "\n" not in str(error)
    assert victim.read_text(encoding="utf-8") == "export PATH=/usr/bin\n"


def test_through_the_monitors_worker_pool_an_unreadable_fault_file_keeps_health_poll_after_poll(
        tmp_path: Path) -> None:
    from rayaccel.isolation.pool import WorkerPool
    from rayaccel.plugins.manager import default_manager

    fault_file = tmp_path / "faults.txt"
    fault_file.write_text("xid-79\n", encoding="utf-8")
    manager = default_manager()
    host = make_host(FIXTURE, [], str(fault_file), manager=manager)
    with WorkerPool(manager, ["nvidia"]) as pool:
        pool.refresh = True  # as the health monitor polls: each plugin in its worker, the host kept there
        before = pool.build(host)
        fault_file.unlink()
        os.mkfifo(fault_file)
        polls = [pool.build(host) for _ in range(2)]
    assert sorted(states(before).values()).count("unhealthy") == 1
    for inventory in polls:
        assert states(inventory) == states(before)
        assert [p.code for p in inventory.problems if p.code == "bad-fault-file"] == ["bad-fault-file"]


@pytest.mark.parametrize("content", [SECRET_LINE + "\nbin:*:19000:0:99999:7:::\n", SECRET_LINE.replace(":", "") + "\n",
                                     f"- {SECRET_LINE}\n", "{'" + SECRET_LINE + "': 1}\n"])
def test_a_fixture_named_by_mistake_is_never_quoted_beyond_its_shape(tmp_path: Path, content: str) -> None:
    from rayaccel.errors import FixtureError
    from rayaccel.hosts.fixtures import load_fixture

    secret = tmp_path / "shadow"
    secret.write_text(content, encoding="utf-8")
    (tmp_path / "fixture.yaml").symlink_to(secret)
    with pytest.raises(FixtureError) as refused:
        load_fixture(tmp_path / "fixture.yaml")
    assert "VerySecretHashValue" not in str(refused.value) and "saltsalt" not in str(refused.value), refused.value
