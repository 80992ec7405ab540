"""``make mutation``'s own parts (scripts/mutation.py): the bake it mutates, and which survivors it may call
equivalent without a run. The mutation run itself is slow and is not part of ``make test``."""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mutation.py"
_spec = importlib.util.spec_from_file_location("rayaccel_mutation_script", SCRIPT)
assert _spec is not None and _spec.loader is not None
mutation = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = mutation  # its dataclass looks its module up there
_spec.loader.exec_module(mutation)

SOURCE = '''from __future__ import annotations

LIMIT: int | None = 3


def pick(devices: list[str] | None, n: int = 2) -> str | None:
    return devices[n] if devices else None
'''


def test_annotations_are_never_evaluated_only_under_the_future_import() -> None:
    spans = mutation.annotation_spans(SOURCE)
    # The module's annotated name, both arguments and the return: the BitOr of each is inside a span.
    assert sorted(spans) == [((3, 7), (3, 17)), ((6, 18), (6, 34)), ((6, 39), (6, 42)), ((6, 51), (6, 61))]
    assert all(any(a <= bit_or < b for a, b in spans) for bit_or in ((3, 11), (6, 29), (6, 55)))
    # The body's expressions are not: a mutant there changes behaviour.
    assert not any(a <= (7, 22) < b for a, b in spans)
    assert mutation.annotation_spans(SOURCE.replace("from __future__ import annotations\n", "")) == []


def test_the_report_counts_equivalent_survivors_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session = tmp_path / "session.sqlite"
    with sqlite3.connect(session) as db:
        db.execute("CREATE TABLE mutation_specs (operator_name, start_pos_row, start_pos_col, job_id)")
        db.execute("CREATE TABLE work_results (test_outcome, job_id)")
        rows = [("core/ReplaceBinaryOperator_BitOr_Add", 6, 29, "a", "SURVIVED"),      # in an annotation
                ("core/NumberReplacer", 7, 22, "b", "SURVIVED"),                        # in the body
                ("core/ReplaceComparisonOperator_Eq_NotEq", 7, 30, "c", "KILLED")]
        for operator, row, col, job, outcome in rows:
            db.execute("INSERT INTO mutation_specs VALUES (?, ?, ?, ?)", (operator, row, col, job))
            db.execute("INSERT INTO work_results VALUES (?, ?)", (outcome, job))
    mutation.report(session, mutation.Target("bake:pick", "example", "supported"), SOURCE)
    out = capsys.readouterr().out
    assert "mutation: 1/2 mutants of bake:pick killed by the conformance suite (kill rate 50.0%" in out
    assert "1 more survive in annotations that are never evaluated (equivalent)" in out
    assert "survived: pick.py:7 NumberReplacer: return devices[n] if devices else None" in out
    assert "BitOr" not in out


def test_the_bake_is_the_template_baked_by_cookiecutter_with_its_defaults(tmp_path: Path) -> None:
    src = mutation.bake(tmp_path)
    package = src / mutation.BAKE_PACKAGE
    assert {"discovery.py", "health.py", "topology.py", "metrics.py", "probe.py", "plugin.py"} <= {
        p.name for p in package.iterdir()}
    assert any((package / "fixtures").glob("*.yaml"))
    assert all(Path(src / mutation.BAKE_PACKAGE / f"{t.module.removeprefix('bake:')}.py").is_file()
               for t in mutation.DEFAULT_TARGETS if t.baked)
