"""The token-authentication mode ``rayaccel start`` gives a node (``rayaccel.ray.auth``): Ray's own
``ray start`` rule made explicit. The real-Ray side (the node's mode, ``ray status`` with and without the
exported line) is in test_ray_cli_node.py and test_readme.py."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rayaccel.errors import RayaccelError
from rayaccel.ray.auth import AUTH_MODE_ENV, decide_auth_mode


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty HOME, no token in the environment, RAY_AUTH_MODE unset (restored after)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    saved = os.environ.pop(AUTH_MODE_ENV, None)
    try:
        yield tmp_path
    finally:
        os.environ.pop(AUTH_MODE_ENV, None)
        if saved is not None:
            os.environ[AUTH_MODE_ENV] = saved


def with_token(home: Path) -> None:
    (home / ".ray").mkdir(exist_ok=True)
    (home / ".ray" / "auth_token").write_text("7f3e9c2a5b1d4e8f9a6c3b2d1e0f4a5b")


def test_unset_mode_and_no_token_is_disabled(home: Path) -> None:
    assert decide_auth_mode() == ("disabled", "RAY_AUTH_MODE is unset and no Ray token exists")


def test_unset_mode_and_a_token_is_token_as_ray_start_decides(home: Path) -> None:
    with_token(home)
    mode, why = decide_auth_mode()
    assert mode == "token" and "a Ray token exists" in why


def test_a_token_in_the_environment_counts_too(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_AUTH_TOKEN", "7f3e9c2a5b1d4e8f9a6c3b2d1e0f4a5b")
    assert decide_auth_mode()[0] == "token"


@pytest.mark.parametrize("value", ["token", "disabled", "TOKEN "])
def test_an_explicit_mode_wins_over_the_token_file(home: Path, value: str) -> None:
    with_token(home)
    os.environ[AUTH_MODE_ENV] = value
    assert decide_auth_mode() == (value.strip().lower(), f"RAY_AUTH_MODE={value.strip().lower()}")


def test_an_unknown_mode_is_one_clear_error(home: Path) -> None:
    os.environ[AUTH_MODE_ENV] = "tokn"
    with pytest.raises(RayaccelError, match="RAY_AUTH_MODE='tokn' is not a mode Ray knows: set it to token or"):
        decide_auth_mode()


AGREE = ("import os; from ray._raylet import AuthenticationMode, get_authentication_mode; "
         "from rayaccel.ray.auth import agree_with_cluster; mode = agree_with_cluster(); "
         "print(mode, os.environ.get('RAY_AUTH_MODE'), get_authentication_mode() == AuthenticationMode.TOKEN)")


def agree(home: Path, mode: str | None = None) -> str:
    """What connect() decides, in a fresh process (Ray's config is per process, and this one is shared)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env.update({"HOME": str(home), **({AUTH_MODE_ENV: mode} if mode else {})})
    done = subprocess.run([sys.executable, "-c", AGREE], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_connect_agrees_token_mode_when_a_token_exists(home: Path) -> None:
    assert agree(home) == "disabled None False"
    with_token(home)
    assert agree(home) == "token token True"  # and Ray's cached config re-read it


def test_connect_keeps_an_explicit_disabled(home: Path) -> None:
    with_token(home)
    assert agree(home, "disabled") == "disabled disabled False"


def rayaccel(home: Path, *args: str, mode: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env.update(HOME=str(home), RAY_AUTH_MODE=mode, RAYACCEL_PLUGINS="acme=rayaccel_testplugins.acme")
    return subprocess.run([sys.executable, "-m", "rayaccel", *args], capture_output=True, text=True, timeout=120,
                          env=env)


@pytest.mark.parametrize(("args", "mode", "message"), [
    (["--head"], "bogus", "RAY_AUTH_MODE='bogus' is not a mode Ray knows"),
    (["--address=127.0.0.1:1"], "token",
     "this machine has no Ray token: copy the head node's ~/.ray/auth_token here"),
])
def test_start_refuses_an_auth_it_cannot_use_in_one_line_before_starting_ray(tmp_path: Path, args: list[str],
                                                                           mode: str, message: str) -> None:
    done = rayaccel(tmp_path, "start", *args, "--simulate", "acme/acme-4", mode=mode)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "node started" not in done.stdout


@pytest.mark.ray
@pytest.mark.slow
def test_the_suites_ray_checks_pass_where_a_ray_token_exists(home: Path) -> None:
    # `make demo` graded every reference plugin 'none' on a machine where an earlier ray.init() had left
    # ~/.ray/auth_token: the suite's private cluster came up with token auth and never ran an actor.
    with_token(home)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env["HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--conformance", "--conformance-plugin=gaudi",
         f"--conformance-report={home / 'report.json'}", "-k", "RAC108 and hls-gaudi2"],
        capture_output=True, text=True, timeout=300, env=env, cwd=home)  # cwd: no repository conftest
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:]
