"""Every command that builds an inventory or asks the plugins runs them in worker processes, and takes
``--in-process`` (for debugging a plugin) to call their hooks in the command's own process instead: the same
answer each way, and the in-process run says on stderr, in one line, what it gives up."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
import yaml

from rayaccel.cli.inventory import IN_PROCESS_LIMITS

COMMANDS = {
    "plugins": ["plugins", "--json"],
    "fixtures": ["fixtures", "--json"],
    "transports": ["transports", "--simulate", "nvidia/dgx-h100", "--json"],
    "export": ["export", "--format", "ray-start", "--simulate", "nvidia/dgx-h100", "--json"],
    "record": ["record", "--simulate", "nvidia/l4-single", "--plugin", "nvidia"],
    "fixture-expect": ["fixture", "expect", "nvidia/l4-single"],
    "sku-check": ["sku", "check", "--json"],
}


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    # Wide enough that the help's table never wraps a sentence across its rows.
    return subprocess.run([sys.executable, "-m", "rayaccel", *argv], capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, "COLUMNS": "1000"})


def recorded(text: str) -> dict[str, Any]:
    """What a recording says about the machine, without the moments it was made at (they differ by run)."""
    data = yaml.safe_load(text)
    host = data["host"]
    return {"expected": data["expected"], "files": sorted(host.get("files", {})),
            "commands": sorted(host.get("commands", {})), "libraries": sorted(host.get("libraries", {}))}


@pytest.mark.parametrize("argv", list(COMMANDS.values()), ids=list(COMMANDS))
def test_a_command_answers_alike_in_workers_and_in_process(argv: list[str]) -> None:
    isolated, in_process = run(argv), run([*argv, "--in-process"])
    assert isolated.returncode == 0 and in_process.returncode == 0, in_process.stderr or isolated.stderr
    if argv[0] == "record":
        assert recorded(in_process.stdout) == recorded(isolated.stdout)
    else:
        assert in_process.stdout == isolated.stdout
    assert "--in-process" not in isolated.stderr
    warning = [line for line in in_process.stderr.splitlines() if "--in-process" in line]
    assert len(warning) == 1 and IN_PROCESS_LIMITS in warning[0]


@pytest.mark.parametrize("argv", list(COMMANDS.values()), ids=list(COMMANDS))
def test_the_option_says_what_it_does_not_defend(argv: list[str]) -> None:
    shown = " ".join(run([*argv[:2 if argv[0] in ("fixture", "sku") else 1], "--help"]).stdout.split())
    assert "--in-process" in shown and "monkeypatching the SDK" in shown and "os._exit" in shown
