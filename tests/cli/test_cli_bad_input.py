"""Every command of the rayaccel CLI, fed what users get wrong: one line on stderr, exit code 2, no traceback.

The commands are enumerated from the typer app, so a new command gets the generic cases (unknown option,
missing argument, option without its value, bad number, over-long and empty values) without a change here;
a new file or directory parameter must be classified below (a test fails until it is) and then gets every
bad file: missing, directory, FIFO, /dev/zero, binary, not UTF-8, nested 100,000 deep (JSON and YAML),
oversized, empty, a 5000-character name.

Most cases call :func:`rayaccel.cli.main` (the console script's entry point) in process, for speed; the
end-to-end cases run ``python -m rayaccel`` as a subprocess.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import typer

from rayaccel.cli import _register_commands, app, main
from rayaccel.files.reading import MAX_BYTES

ACME_ENV = {"RAYACCEL_PLUGINS": "acme=rayaccel_testplugins.acme", "RAYACCEL_NO_AUTOLOAD": "1"}


def _commands() -> dict[str, typer.main.TyperCommand]:
    _register_commands()

    def walk(command: object, path: tuple[str, ...]) -> dict[str, object]:
        subcommands = getattr(command, "commands", None)
        if not subcommands:
            return {" ".join(path): command}
        found: dict[str, object] = {}
        for name, sub in subcommands.items():
            found.update(walk(sub, (*path, name)))
        return found

    return walk(typer.main.get_command(app), ())  # type: ignore[return-value]


COMMANDS = _commands()

#: (command, parameter) pairs that name a file to read, a directory to read, or a path to write.
FILE_INPUTS = {("inspect", "--simulate"), ("start", "--simulate"), ("certify verify", "REPORT"),
               ("certify verify", "--key"), ("certify summary", "REPORT"), ("sku add", "--from-fixture"),
               ("sku add", "--check-fixture"),
               ("record", "--simulate"), ("record", "--into"), ("fixture expect", "FIXTURE"),
               ("transports", "--simulate"), ("export", "--simulate"), ("certify diff", "A"), ("certify diff", "B"),
               ("certify registry", "--key"), ("inspect", "--health-policy"), ("start", "--health-policy")}
DIR_INPUTS = {("upgrade", "PROJECT"), ("certify registry", "FOLDER")}
OUTPUTS = {("new", "--output-dir"), ("certify keygen", "KEY"), ("start", "--fault-file"), ("record", "--output"),
           ("export", "--output"), ("inspect", "--html"), ("inspect", "--svg"),
           ("cluster", "--html"), ("certify registry", "--output")}
#: Parameters whose names look path-like but are not paths on this machine.
NOT_PATHS = {("new", "[KEY=VALUE]..."), ("new", "--directory"), ("sku add", "--fixture-name"),
             ("record", "--simulate-fault")}
#: Free-form values where any string is acceptable (a git ref is only checked when the template is a repo).
ANY_STRING = {("new", "--checkout")}

#: What a command needs besides the parameter under test, so that the case reaches that parameter.
#: `start` gets a free port and no monitor: if a bad value were ever accepted, it must not touch port 6379.
#: `sku add` always runs with --dry-run so that nothing is written.
BASE_ARGS = {
    "sku add": ["--plugin", "acme", "--id", "x-1", "--marketing-name", "X", "--accelerator-type", "X",
                "--product-name", "X", "--dry-run"],
    "start": ["--head", "--no-monitor", "--port=1"],
    "new": ["--no-input"],
    "export": ["--format", "nfd"],
}
#: `stop` forwards what it does not know to `ray stop`, and run without --address it stops every Ray node
#: on the machine: only the cases that fail while parsing its own options are run.
PARSE_ONLY = {"stop"}


def _name(param: object) -> str:
    opts = getattr(param, "opts", [])
    longest = max(opts, key=len) if opts else str(getattr(param, "name", ""))
    return longest if longest.startswith("-") else str(getattr(param, "metavar", None) or longest).upper()


def _params(command: object) -> list[object]:
    return [p for p in getattr(command, "params", []) if _name(p) not in ("--help",)]


def _is_flag(param: object) -> bool:
    return bool(getattr(param, "is_flag", False))


def _annotation(param: object) -> object:
    descriptor = getattr(param, "type_descriptor", None)
    return getattr(descriptor, "annotation", None)


def _value_case(command: str, param: object, value: str) -> list[str]:
    name = _name(param)
    argv = [*command.split(), *BASE_ARGS.get(command, [])]
    if name.startswith("-"):
        if name in argv:  # the base already sets it: replace its value
            i = argv.index(name)
            argv[i + 1] = value
            return argv
        return [*argv, name, value]
    return [*argv, value]


def _bad_files(tmp: Path) -> dict[str, str]:
    (tmp / "dir.yaml").mkdir()
    os.mkfifo(tmp / "fifo.yaml")
    (tmp / "binary.yaml").write_bytes(bytes(range(256)))
    (tmp / "latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    (tmp / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp / "deep.yaml").write_text("[" * 100_000 + "]" * 100_000)
    (tmp / "nul.yaml").write_text("name: a\x00b\n")
    (tmp / "empty.yaml").write_text("")
    (tmp / "zero.yaml").symlink_to("/dev/zero")  # a fixture suffix, so the reader itself must refuse it
    levels = ["a: &a [" + ", ".join(['"lol"'] * 9) + "]"]
    for prev, name in itertools.pairwise("abcdefghi"):  # 9**9 values once the aliases are expanded
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    (tmp / "bomb.yaml").write_text("\n".join(levels) + "\n")
    with open(tmp / "huge.yaml", "wb") as f:  # sparse: costs no disk
        f.truncate(MAX_BYTES + 1)
    return {
        "missing": str(tmp / "missing.yaml"),
        "directory": str(tmp / "dir.yaml"),
        "fifo": str(tmp / "fifo.yaml"),
        "dev-zero": "/dev/zero",
        "link-to-dev-zero": str(tmp / "zero.yaml"),
        "yaml-alias-bomb": str(tmp / "bomb.yaml"),
        "binary": str(tmp / "binary.yaml"),
        "not-utf8": str(tmp / "latin1.yaml"),
        "nul-byte": str(tmp / "nul.yaml"),
        "deep-json": str(tmp / "deep.json"),
        "deep-yaml": str(tmp / "deep.yaml"),
        "empty": str(tmp / "empty.yaml"),
        "huge": str(tmp / "huge.yaml"),
        "long-name": str(tmp / ("n" * 5000 + ".yaml")),
        "under-a-file": str(tmp / "binary.yaml" / "x.yaml"),
    }


def _bad_dirs(tmp: Path) -> dict[str, str]:
    cruft_dir = tmp / "cruft-is-dir"
    (cruft_dir / ".cruft.json").mkdir(parents=True)
    cruft_list = tmp / "cruft-is-list"
    cruft_list.mkdir()
    (cruft_list / ".cruft.json").write_text("[1, 2]")
    cruft_fifo = tmp / "cruft-is-fifo"
    cruft_fifo.mkdir()
    os.mkfifo(cruft_fifo / ".cruft.json")
    cruft_deep = tmp / "cruft-is-deep"
    cruft_deep.mkdir()
    (cruft_deep / ".cruft.json").write_text("[" * 100_000 + "]" * 100_000)
    cruft_binary = tmp / "cruft-is-binary"
    cruft_binary.mkdir()
    (cruft_binary / ".cruft.json").write_bytes(bytes(range(256)))
    (tmp / "a-file").write_text("x")
    return {"missing": str(tmp / "missing"), "a-file": str(tmp / "a-file"), "long-name": str(tmp / ("n" * 5000)),
            "cruft-dir": str(cruft_dir), "cruft-list": str(cruft_list), "cruft-fifo": str(cruft_fifo),
            "cruft-deep": str(cruft_deep), "cruft-binary": str(cruft_binary)}


def _bad_outputs(tmp: Path) -> dict[str, str]:
    (tmp / "existing-dir").mkdir()
    (tmp / "a-file").write_text("x")
    return {"under-a-file": str(tmp / "a-file" / "x"), "long-name": str(tmp / ("n" * 5000)),
            "under-proc": "/proc/rayaccel-no-such/x", "empty": ""}


def _generic_cases() -> list[tuple[str, list[str]]]:
    cases: list[tuple[str, list[str]]] = []
    for command, click_command in COMMANDS.items():
        words = command.split()
        cases.append((f"{command}: unknown option", [*words, "--no-such-option"]))
        params = _params(click_command)
        if any(getattr(p, "required", False) for p in params):
            cases.append((f"{command}: nothing given", words))
        for param in params:
            name = _name(param)
            if _is_flag(param):
                continue
            if name.startswith("-"):
                cases.append((f"{command}: {name} without its value", [*words, *BASE_ARGS.get(command, []), name]))
            if _annotation(param) in (int, float, int | None, float | None):
                cases.append((f"{command}: {name} not a number", _value_case(command, param, "abc")))
                # Every number has a range: one past any physical meaning is refused, never used.
                huge = "1" + "0" * 30 if _annotation(param) in (int, int | None) else "1e300"
                cases.append((f"{command}: {name} beyond its range", _value_case(command, param, huge)))
            if command in PARSE_ONLY or (command, name) in OUTPUTS:
                continue
            if _annotation(param) in (int, float, int | None, float | None) or (command, name) in ANY_STRING:
                continue
            cases.append((f"{command}: {name} of 5000 characters", _value_case(command, param, "x" * 5000)))
    return [c for c in cases if not (c[0].startswith(tuple(PARSE_ONLY)) and "unknown option" in c[0])]


def _run_in_process(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _assert_one_line_exit_2(code: int, out: str, err: str, argv: list[str]) -> None:
    shown = [a if len(a) < 80 else a[:40] + "..." for a in argv]
    assert "Traceback" not in out + err, (shown, err)
    assert code == 2, (shown, code, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), (shown, err)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key, value in ACME_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("RAYACCEL_SIMULATE", raising=False)
    monkeypatch.chdir(tmp_path)  # a command that wrongly accepted its input writes here, not in the tree


def test_every_file_parameter_is_classified() -> None:
    """A new path-like parameter must be put in FILE_INPUTS, DIR_INPUTS or OUTPUTS to get its cases."""
    classified = FILE_INPUTS | DIR_INPUTS | OUTPUTS | NOT_PATHS
    unclassified = []
    for command, click_command in COMMANDS.items():
        for param in _params(click_command):
            name = _name(param)
            pathlike = _annotation(param) in (Path, Path | None) or any(
                word in name.lower() for word in ("file", "dir", "report", "key", "simulate", "fixture", "project"))
            if pathlike and (command, name) not in classified:
                unclassified.append((command, name))
    assert not unclassified
    known = {(c, _name(p)) for c, cmd in COMMANDS.items() for p in _params(cmd)}
    assert classified <= known, classified - known


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("case", "argv"), _generic_cases(), ids=[c for c, _ in _generic_cases()])
def test_generic_bad_input(case: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    _assert_one_line_exit_2(*_run_in_process(argv, capsys), argv)


#: Each path parameter with its bad values. `start --fault-file` is left out: reaching it needs a good
#: fixture, and then a wrongly accepted value would start a Ray node.
PATH_CASES = ([(_bad_files, c, p) for c, p in sorted(FILE_INPUTS)] + [(_bad_dirs, c, p) for c, p in sorted(DIR_INPUTS)]
              + [(_bad_outputs, c, p) for c, p in sorted(OUTPUTS - {("start", "--fault-file")})])


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("values", "command", "param"), PATH_CASES,
                         ids=[f"{c} {p} ({v.__name__.removeprefix('_')})" for v, c, p in PATH_CASES])
def test_bad_paths(values: Callable[[Path], dict[str, str]], command: str, param: str, tmp_path: Path,
                   capsys: pytest.CaptureFixture[str]) -> None:
    target = next(p for p in _params(COMMANDS[command]) if _name(p) == param)
    for kind, path in values(tmp_path).items():
        argv = _value_case(command, target, path)
        started = time.monotonic()
        _assert_one_line_exit_2(*_run_in_process(argv, capsys), [kind, *argv])
        assert time.monotonic() - started < 20, kind


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "abc", "1e9"])
def test_a_bad_hook_timeout_is_one_line(value: str, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RAYACCEL_HOOK_TIMEOUT", value)
    code, out, err = _run_in_process(["plugins"], capsys)
    _assert_one_line_exit_2(code, out, err, ["plugins"])
    assert "RAYACCEL_HOOK_TIMEOUT" in err


def test_an_empty_product_name_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = _value_case("sku add", next(p for p in _params(COMMANDS["sku add"]) if _name(p) == "--product-name"), "")
    _assert_one_line_exit_2(*_run_in_process(argv, capsys), argv)


# End to end: the installed entry point in a subprocess ---------------------------------------------------


def rayaccel(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rayaccel", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **ACME_ENV, **(env or {})})


def test_bare_rayaccel_prints_help_and_exits_2() -> None:
    done = rayaccel()
    assert done.returncode == 2 and "Traceback" not in done.stderr + done.stdout
    assert "inspect" in done.stdout + done.stderr and "Usage" in done.stdout + done.stderr


@pytest.mark.parametrize("args", [["inspect", "--bogus"], ["inspect", "--simulate", "/dev/null/x"],
                                  ["start", "--head", "--monitor-interval", "abc"], ["inspect", "--fault", "x"],
                                  ["certify", "verify"]])
def test_everyday_mistakes_end_to_end(args: list[str]) -> None:
    done = rayaccel(*args)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_fifo_fixture_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.yaml")
    done = rayaccel("inspect", "--simulate", str(tmp_path / "pipe.yaml"), timeout=30)
    assert done.returncode == 2 and "not a regular file" in done.stderr


HANGING_PLUGIN = '''
import pathlib, time
from rayaccel import Device, FamilyDeclaration

def rayaccel_family():
    return FamilyDeclaration(name="sleepy", vendor="Sleepy", resource_name="SLEEPY",
                             visible_devices_env_var="SLEEPY_VISIBLE", spec_version="1.0")

def rayaccel_discover(host):
    pathlib.Path({marker!r}).write_text("in the hook")
    time.sleep(120)
    return []
'''


def test_sigint_exits_130_with_one_line(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    (tmp_path / "sleepy_plugin.py").write_text(HANGING_PLUGIN.format(marker=str(marker)))
    env = {**os.environ, "RAYACCEL_NO_AUTOLOAD": "1", "RAYACCEL_PLUGINS": "sleepy=sleepy_plugin",
           "RAYACCEL_HOOK_TIMEOUT": "120", "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    process = subprocess.Popen([sys.executable, "-m", "rayaccel", "inspect"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():  # the command is inside the plugin's hook
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert err.strip().splitlines() == ["error: interrupted (SIGINT); run the command again to finish it"]


@pytest.mark.parametrize(("value", "message"), [("", "give a file path"), (".", "is a directory"),
                                                ("no/such/dir/r.json", "does not exist"),
                                                ("n" * 5000, "File name too long")])
def test_a_bad_conformance_report_path_is_a_usage_error(value: str, message: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--conformance",
                           f"--conformance-report={value}", "--conformance-plugin=acme"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env={**os.environ, **ACME_ENV})
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == [] and not (tmp_path.parent / f"{tmp_path.name}.xml").exists()
