"""What a conformance run sets up in its own process to cost less CPU, each changing no outcome (issue 42): Hypothesis
keeps the literals it reads from the run's modules in the user's cache folder, not in the working directory, where a
run in a fresh directory read every module afresh. And what a run may shorten: how long RAC301 and RAC311 wait for a
failed transfer's buffers to go (--conformance-release-timeout), never longer than the default."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import hypothesis
import pytest
from hypothesis.configuration import set_hypothesis_home_dir, storage_directory

from rayaccel_conformance.checks import recovery, transport_contract
from rayaccel_conformance.plugin import _keep_hypothesis_constants, _wait_for_release


@pytest.fixture
def hypothesis_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("HYPOTHESIS_STORAGE_DIRECTORY", raising=False)
    set_hypothesis_home_dir(None)
    yield tmp_path / "cache" / "rayaccel" / f"hypothesis-{hypothesis.__version__}"
    set_hypothesis_home_dir(None)  # Hypothesis's own choice again for the rest of this process


def test_hypothesis_keeps_what_it_reads_in_the_users_cache_folder_per_version(hypothesis_home: Path) -> None:
    _keep_hypothesis_constants()
    assert storage_directory("constants").path == hypothesis_home / "constants"
    assert hypothesis_home.stat().st_mode & 0o777 == 0o700


def test_a_folder_others_may_write_or_the_users_own_choice_is_left_alone(hypothesis_home: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    hypothesis_home.mkdir(parents=True)
    os.chmod(hypothesis_home, 0o777)  # anyone could plant literals there: not used
    _keep_hypothesis_constants()
    assert storage_directory("constants").path == Path.cwd() / ".hypothesis" / "constants"
    os.chmod(hypothesis_home, 0o700)
    monkeypatch.setenv("HYPOTHESIS_STORAGE_DIRECTORY", str(hypothesis_home.parent / "chosen"))
    set_hypothesis_home_dir(None)
    _keep_hypothesis_constants()
    assert storage_directory("constants").path == hypothesis_home.parent / "chosen" / "constants"


def test_a_run_may_shorten_the_wait_for_a_failed_transfers_buffers_never_lengthen_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (recovery, transport_contract):  # restored after the test, whatever it set
        monkeypatch.setattr(module, "RELEASE_TIMEOUT_S", module.RELEASE_TIMEOUT_S)
    _wait_for_release(3.0)
    assert recovery.RELEASE_TIMEOUT_S == transport_contract.RELEASE_TIMEOUT_S == 3.0  # RAC311's wait and RAC301's
    for bad in (30.5, 0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(pytest.UsageError, match=r"^--conformance-release-timeout \S+: give seconds above 0 and "
                           r"at most 30 \(a shorter wait only fails more\)$"):
            _wait_for_release(bad)
        assert recovery.RELEASE_TIMEOUT_S == transport_contract.RELEASE_TIMEOUT_S == 3.0  # left as it was
    _wait_for_release(None)  # a run without the option waits the default
    assert recovery.RELEASE_TIMEOUT_S == transport_contract.RELEASE_TIMEOUT_S == 30.0
