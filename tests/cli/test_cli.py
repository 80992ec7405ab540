"""The rayaccel command as a user runs it: a real subprocess, JSON for machines, one line for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rayaccel_testplugins import acme

ACME_ENV = {"RAYACCEL_PLUGINS": "acme=rayaccel_testplugins.acme"}


def rayaccel(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rayaccel", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **ACME_ENV, **(env or {})})


def test_inspect_json_gives_the_fixture_expectation():
    done = rayaccel("inspect", "--simulate", "acme/acme-4", "--json", "--plugin", "acme")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    expected = yaml.safe_load((acme.HERE / "acme_fixtures" / "acme-4.yaml").read_text())["expected"]
    assert out["resources"] == expected["resources"]
    assert out["labels"] == expected["labels"]
    assert {"families", "devices", "topology", "resources", "labels", "health", "problems"} <= set(out)
    assert len(out["devices"]) == 4 and len(out["topology"]["links"]) == 6


def test_inspect_with_a_fault(tmp_path):
    done = rayaccel("inspect", "--simulate", "acme/acme-4", "--fault", "lost-3", "--json", "--plugin", "acme")
    assert json.loads(done.stdout)["resources"]["ACME"] == 3


@pytest.mark.parametrize(("args", "message"), [
    (["inspect", "--simulate", "acme/nope"], "unknown fixture 'acme/nope'"),
    (["inspect", "--simulate", "acme/acme-4", "--fault", "nope"], "declares no fault 'nope'"),
    (["inspect", "--plugin", "nope"], "unknown plugin 'nope'"),
    (["inspect", "--simulate", "{malformed}"], "does not exist"),
])
def test_bad_input_is_one_line_and_exit_code_2(args, message, tmp_path):
    if args[-1] == "{malformed}":
        bad = tmp_path / "bad.yaml"
        bad.write_text("schema: rayaccel-fixture/1\nplugin: acme\n")
        args = ["inspect", "--simulate", str(bad)]
        message = "invalid fixture"
    done = rayaccel(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_fixtures_and_plugins_list_what_is_installed():
    fixtures = json.loads(rayaccel("fixtures", "--json").stdout)
    assert any(row["name"] == "acme/acme-4" and row["faults"] == ["fatal-2", "lost-3"] for row in fixtures)
    plugins = json.loads(rayaccel("plugins", "--json").stdout)
    assert any(row["name"] == "acme" and row["resource"] == "ACME" for row in plugins["plugins"])


def test_inspect_of_this_machine_finds_nothing_and_no_problem():
    done = rayaccel("inspect", "--json")
    out = json.loads(done.stdout)
    assert done.returncode == 0
    assert out["devices"] == [] and out["resources"] == {}
    assert [p for p in out["problems"] if p["severity"] == "error"] == []


def test_import_rayaccel_loads_no_ray_torch_or_vendor_library():
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import rayaccel"], capture_output=True,
                          text=True, check=True)
    modules = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    assert modules.isdisjoint({"ray", "torch", "pynvml", "amdsmi", "habana_frameworks", "jax", "libtpu"}), modules


def test_readme_shows_the_two_setup_commands():
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme


def test_a_printed_line_is_never_broken_so_a_fix_command_copies_whole(capsys) -> None:
    """Piped output is 160 columns wide; a problem's fix (`rayaccel sku add --plugin ... --product-name ...`)
    is often longer, and a line broken mid-command cannot be pasted."""
    from rayaccel.cli import make_console

    options = " ".join(f"--opt{i} 'value {i}'" for i in range(30))
    line = f"  fix: onboard the SKU: rayaccel sku add --plugin acme {options}"
    assert len(line) > 300
    make_console().print(line)
    assert capsys.readouterr().out == line + "\n"
