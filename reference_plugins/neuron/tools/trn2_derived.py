"""What the Neuron fixture builders share: the trn2.48xlarge fixture each one derives its node from, and writing
the result (atomically, where the test or the committed fixtures want it).

The builders import it as a sibling module: they are run as scripts from this directory's parent's parent
(``.venv/bin/python reference_plugins/neuron/tools/build_<name>.py [DIR]``), which puts this directory first on
``sys.path``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from rayaccel.files.atomic import write_atomically

HERE = Path(__file__).resolve().parents[1] / "src" / "rayaccel_neuron" / "fixtures"


def trn2_fixture() -> dict[str, Any]:
    """The trn2.48xlarge fixture every derived node starts from."""
    fixture: dict[str, Any] = yaml.safe_load((HERE / "trn2.48xlarge.yaml").read_text(encoding="utf-8"))
    return fixture


def write_fixture(data: dict[str, Any], out_dir: Path) -> int:
    out = out_dir / f"{data['name']}.yaml"
    write_atomically(out, yaml.safe_dump(data, sort_keys=False, width=120))
    print(out)
    return 0


def run(main: Callable[[Path], int]) -> None:
    # An optional directory to write into (tests/hosts/test_fixture_builders.py compares it with the committed files).
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE))
