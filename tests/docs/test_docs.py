"""The docs stay true: every hook and every vocabulary label is documented."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from rayaccel import hookspec
from rayaccel.labels import VOCABULARY

DOCS = Path(__file__).parents[2] / "docs"


def test_hook_reference_is_generated_from_the_spec():
    spec = importlib.util.spec_from_file_location("gen_hooks", DOCS / "gen_hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (DOCS / "hooks.md").read_text() == module.render(), "run: python docs/gen_hooks.py > docs/hooks.md"
    for name in vars(hookspec):
        if name.startswith("rayaccel_"):
            assert f"## `{name}`" in (DOCS / "hooks.md").read_text()


def test_every_vocabulary_label_is_in_the_label_docs():
    text = (DOCS / "labels.md").read_text()
    for key in VOCABULARY:
        assert f"| `{key}` |" in text, key
