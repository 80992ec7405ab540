"""Command groups other packages add to the CLI (the ``rayaccel.cli`` entry point group; the conformance suite
adds ``certify``), and commands whose extra is not installed: each failure is one line and exit code 2."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rayaccel.cli import main


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def test_certify_comes_from_the_suites_entry_point() -> None:
    from importlib.metadata import entry_points

    (certify,) = [ep for ep in entry_points(group="rayaccel.cli") if ep.name == "certify"]
    assert certify.value == "rayaccel_conformance.cli:app"


def _fake_distribution(site: Path, value: str) -> None:
    """An installed distribution (as pip leaves one) that declares a `rayaccel.cli` entry point."""
    info = site / "acme_cli-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-cli\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[rayaccel.cli]\nacme = {value}\n")


def _rayaccel(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "rayaccel", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


def test_a_command_group_from_another_distribution_joins_the_cli(tmp_path: Path) -> None:
    (tmp_path / "acme_commands.py").write_text(
        "import typer\napp = typer.Typer(no_args_is_help=True)\n\n@app.command()\ndef hello() -> None:\n"
        "    print('hello from acme')\n\n@app.command()\ndef bye() -> None:\n    pass\n")
    _fake_distribution(tmp_path, "acme_commands:app")
    done = _rayaccel(tmp_path, "acme", "hello")
    assert (done.returncode, done.stdout.strip()) == (0, "hello from acme"), done.stderr


@pytest.mark.parametrize("value, why", [
    ("acme_missing_module:app", "ModuleNotFoundError: No module named 'acme_missing_module'"),
    ("json:dumps", "not a typer.Typer"),
])
def test_a_broken_entry_point_is_one_line_when_run_and_harmless_otherwise(tmp_path: Path, value: str,
                                                                          why: str) -> None:
    _fake_distribution(tmp_path, value)
    done = _rayaccel(tmp_path, "acme", "hello", "--flag")
    line = _one_line(done.stderr)
    assert done.returncode == 2
    assert f"entry point acme = {value} of acme-cli" in line and why in line and "reinstall acme-cli" in line
    other = _rayaccel(tmp_path, "certify", "--help")  # the rest of the CLI does not notice
    assert other.returncode == 0 and other.stderr == "" and "keygen" in other.stdout


def test_certify_without_the_conformance_extra_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "cryptography", None)  # as if not installed: find_spec is None
    assert main(["certify", "keygen", str(tmp_path / "key")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "pip install 'rayaccel[conformance]'" in line and "cryptography" in line
    assert not (tmp_path / "key").exists()


@pytest.mark.parametrize("argv", [["new", "--no-input"], ["upgrade", "."]])
def test_template_commands_without_the_template_extra_name_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str],
                                                              argv: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "cruft", None)
    assert main(argv) == 2
    line = _one_line(capsys.readouterr().err)
    assert "pip install 'rayaccel[template]'" in line and "cruft" in line
    assert list(tmp_path.iterdir()) == []


def test_pytest_conformance_without_the_conformance_extra_names_it(tmp_path: Path) -> None:
    """pytest itself may be installed without the extra: `--conformance` then says what to install."""
    code = ("import sys; sys.modules['cryptography'] = None; import pytest; "
            "sys.exit(pytest.main(['-p', 'no:cacheprovider', '--conformance', '-q']))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    assert "pip install 'rayaccel[conformance]'" in done.stderr and "Traceback" not in done.stderr


def test_each_command_imports_only_its_own_module_and_the_table_says_which() -> None:
    """`rayaccel inspect` must not pay for the template, Ray or transports commands: the table that maps a
    command to its module is what each module registers, and running a command imports no other."""
    probe = (
        "import importlib, json, typer.main\n"
        "from rayaccel.cli import COMMAND_MODULES, app\n"
        "added, before = {}, set()\n"
        "for module in dict.fromkeys(COMMAND_MODULES.values()):\n"
        "    importlib.import_module(f'rayaccel.cli.{module}')\n"
        "    after = set(typer.main.get_command(app).commands)\n"
        "    added.update({name: module for name in after - before})\n"
        "    before = after\n"
        "print(json.dumps([added, COMMAND_MODULES]))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    added, table = json.loads(done.stdout)
    assert added == table
    only = subprocess.run([sys.executable, "-c", "import sys\nfrom rayaccel.cli import main\n"
                           "code = main(['inspect', '--json', '--simulate', 'acme/acme-4'])\n"
                           "print(sorted(m for m in sys.modules if m.startswith('rayaccel.cli.')), file=sys.stderr)"],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "RAYACCEL_PLUGINS": "acme=rayaccel_testplugins.acme",
                               "PYTHONPATH": str(Path(__file__).parents[1])})
    assert only.returncode == 0, only.stderr[-3000:]
    imported = ast.literal_eval(only.stderr.strip().splitlines()[-1])
    commands = {f"rayaccel.cli.{module}" for module in table.values()}
    # Shared option modules (policy_option: --health-policy of inspect and start) are no command's module.
    assert [m for m in imported if m in commands] == ["rayaccel.cli.inventory"], imported
    assert json.loads(only.stdout)["families"]


def test_commands_run_one_after_another_in_one_process_each_find_their_module() -> None:
    """`main` called several times in one process (a notebook, the suite) reuses the command typer made of
    the app only while no module has added commands since: a command whose module is first imported by a
    later call still runs, and the first one still runs after it."""
    probe = ("import json, sys\nfrom rayaccel.cli import main\n"
             "codes = [main(argv) for argv in (['plugins', '--json'], ['sku', 'check', '--json'],"
             " ['plugins', '--json'])]\n"
             "print(json.dumps(codes), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "RAYACCEL_PLUGINS": "acme=rayaccel_testplugins.acme",
                               "PYTHONPATH": str(Path(__file__).parents[1])})
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stderr.strip().splitlines()[-1]) == [0, 0, 0], done.stderr[-3000:]


def test_an_entry_points_command_imports_no_built_in_command_module(tmp_path: Path) -> None:
    """`rayaccel certify ...` (run dozens of times by a vendor's CI and by the suite's tests) loads its own group
    alone, none of the built-in commands' modules; another entry point's broken group still names itself."""
    _fake_distribution(tmp_path, "acme_missing_module:app")
    probe = ("import sys\nfrom rayaccel.cli import main\ncode = main(['certify', 'keygen', sys.argv[1]])\n"
             "print(sorted(m for m in sys.modules if m.startswith('rayaccel.cli.')), file=sys.stderr)\n"
             "sys.exit(code)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "vendor.key")], capture_output=True,
                          text=True, timeout=120, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert ast.literal_eval(done.stderr.strip().splitlines()[-1]) == [], done.stderr[-3000:]
    assert (tmp_path / "vendor.key.pub").exists() and "key id:" in done.stdout
    # The broken entry point still speaks for itself when it is the one run.
    broken = _rayaccel(tmp_path, "acme", "hello")
    assert broken.returncode == 2 and "entry point acme = acme_missing_module:app" in _one_line(broken.stderr)
