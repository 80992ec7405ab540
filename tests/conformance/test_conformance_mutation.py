"""``make mutation``'s own parts (scripts/mutation.py): the bake it mutates, and which survivors it may call
equivalent without a run. The mutation run itself is slow and is not part of ``make test``."""

from __future__ import annotations

import importlib.util
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


def _outcome(results: dict[tuple[str, int], str]) -> object:
    mutants = [mutation.Mutant("core/ReplaceBinaryOperator_BitOr_Add", 0, 6, 29),   # in an annotation
               mutation.Mutant("core/NumberReplacer", 0, 7, 22),                   # in the body
               mutation.Mutant("core/ReplaceComparisonOperator_Eq_NotEq", 0, 7, 30),
               mutation.Mutant("core/NumberReplacer", 1, 3, 15)]
    return mutation.Outcome(mutation.Target("bake:pick", "example", "supported"), SOURCE, mutants,
                            Path("unused.sqlite"), planned=mutants[1:], results=results)


def test_the_kill_rate_leaves_out_annotations_and_triaged_equivalents_naming_each(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = {("core/ReplaceBinaryOperator_BitOr_Add", 0): "annotation", ("core/NumberReplacer", 0): "survived",
               ("core/ReplaceComparisonOperator_Eq_NotEq", 0): "killed"}
    row = mutation.grade(_outcome(results), [])
    assert (row["killed"], row["graded"], row["kill_rate"], row["equivalent"], row["ran"]) == (1, 2, 0.5, 1, 2)
    assert row["survivors"] == [{"line": 7, "operator": "NumberReplacer", "occurrence": 0,
                                 "code": "return devices[n] if devices else None"}]
    mutation.print_report([row])
    out = capsys.readouterr().out
    assert "survived: bake:pick pick.py:7 NumberReplacer: return devices[n] if devices else None" in out
    assert "50.0%  < 90%" in out

    triage_file = tmp_path / "triage.yaml"
    triage_file.write_text("bake:pick:\n  - code: 'return devices[n] if devices else None'\n"
                           "    operators: [NumberReplacer]\n    why: n is never read past the list\n")
    triage = mutation.load_triage(triage_file)
    row = mutation.grade(_outcome(results), triage)
    assert (row["killed"], row["graded"], row["kill_rate"], row["survivors"]) == (1, 1, 1.0, [])
    assert {e["why"] for e in row["equivalents"]} == {"n is never read past the list",
                                                      "inside an annotation that is never evaluated (not run)"}
    # A triage entry for another operator on the line excuses nothing.
    other = [mutation.TriageEntry("bake:pick", "return devices[n] if devices else None", ("NumberReplacer_x",), "")]
    assert mutation.grade(_outcome(results), other)["kill_rate"] == 0.5


def test_a_triage_entry_whose_line_is_gone_is_named_and_a_malformed_one_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kept = mutation.TriageEntry("bake:pick", "LIMIT: int | None = 3", (), "why")
    gone = mutation.TriageEntry("bake:pick", "LIMIT = 4", (), "why")
    assert mutation.stale_entries([kept, gone], {"bake:pick": SOURCE}) == [gone]
    bad = tmp_path / "triage.yaml"
    bad.write_text("bake:pick:\n  - code: 'LIMIT = 4'\n")
    with pytest.raises(SystemExit) as refused:
        mutation.load_triage(bad)
    assert refused.value.code == 2
    assert "bake:pick[0] needs 'code' (the source line) or 'within'" in capsys.readouterr().err
    # A top-level definition covers every line of it, and is stale once the name is gone.
    within = mutation.TriageEntry("bake:pick", "", (), "why", within="pick")
    spans = mutation.top_level_spans(SOURCE)
    assert spans == {"LIMIT": (3, 3), "pick": (6, 7)}
    assert within.matches("bake:pick", "", "core/AddNot", 7, spans)
    assert not within.matches("bake:pick", "", "core/AddNot", 3, spans)
    assert mutation.stale_entries([within], {"bake:pick": SOURCE.replace("def pick", "def choose")}) == [within]


def test_the_largest_gap_runs_first(tmp_path: Path) -> None:
    targets = [mutation.Target(m, "tpu") for m in ("rayaccel_tpu.a", "rayaccel_tpu.b", "rayaccel_tpu.c")]
    counts = {"rayaccel_tpu.a": 5, "rayaccel_tpu.b": 50, "rayaccel_tpu.c": 20}
    assert [t.module for t in mutation.gap_order(targets, counts, tmp_path / "none.json")] == [
        "rayaccel_tpu.b", "rayaccel_tpu.c", "rayaccel_tpu.a"]  # never measured: by their count of mutants
    last = tmp_path / "results.json"
    last.write_text('{"modules": [{"module": "rayaccel_tpu.a", "survivors": [1, 2, 3]}, '
                    '{"module": "rayaccel_tpu.b", "survivors": []}]}')
    assert [t.module for t in mutation.gap_order(targets, counts, last)] == [
        "rayaccel_tpu.c", "rayaccel_tpu.a", "rayaccel_tpu.b"]


def test_every_triage_entry_of_the_shipped_file_names_a_line_that_exists() -> None:
    triage = mutation.load_triage()
    sources = {}
    for entry in triage:
        if entry.module.startswith("bake:"):
            continue  # the bake's lines are checked by the bake test below
        package, name = entry.module.split(".")
        plugin = package.removeprefix("rayaccel_")
        sources[entry.module] = (mutation.reference_source(plugin) / package / f"{name}.py").read_text()
    assert mutation.stale_entries(triage, sources) == []


def test_the_bake_is_the_template_baked_by_cookiecutter_with_its_defaults(tmp_path: Path) -> None:
    src = mutation.bake(tmp_path)
    package = src / mutation.BAKE_PACKAGE
    assert {"discovery.py", "health.py", "topology.py", "metrics.py", "probe.py", "plugin.py"} <= {
        p.name for p in package.iterdir()}
    assert any((package / "fixtures").glob("*.yaml"))
    targets = mutation.default_targets(src)
    baked = {t.module for t in targets if t.baked}
    assert {"bake:discovery", "bake:health", "bake:probe", "bake:plugin", "bake:sku_fixture"} <= baked
    assert {t.plugin for t in targets} == {"amd", "gaudi", "neuron", "nvidia", "tpu", "example"}
    assert "rayaccel_gaudi.topology" in {t.module for t in targets}
    assert not any(t.module.endswith("__init__") for t in targets)
    sources = {f"bake:{p.stem}": p.read_text() for p in package.glob("*.py")}
    assert mutation.stale_entries([e for e in mutation.load_triage() if e.module.startswith("bake:")],
                                  sources) == []


def test_survivors_of_an_earlier_result_can_be_run_again_and_a_foreign_file_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    last = tmp_path / "results.json"
    last.write_text('{"modules": [{"module": "bake:health", "survivors": [{"operator": "AddNot", "occurrence": 2}]},'
                    ' {"module": "bake:probe", "survivors": []}]}')
    assert mutation.survivors_of(last) == {"bake:health": {("AddNot", 2)}}
    last.write_text("[]")
    with pytest.raises(SystemExit) as refused:
        mutation.survivors_of(last)
    assert refused.value.code == 2 and "not a result this script wrote" in capsys.readouterr().err


COVERED = '''import os

TABLE = {"a": 1}


class Reader:
    LIMIT = 2

    def read(self, text: str, width: int = 4) -> int:
        try:
            value = int(text,
                        16)
        except ValueError:
            return -1
        if value > self.LIMIT and (
                value < 10):
            return value * 2
        return value
'''


def test_a_mutant_runs_only_the_checks_whose_baseline_ran_a_line_it_changed() -> None:
    # Which statement's execution runs the mutated row: the innermost statement, a compound one by its header.
    assert mutation.executed_lines(COVERED, 11) == range(11, 13)   # int(text,\n 16): both lines of it
    assert mutation.executed_lines(COVERED, 16) == range(15, 17)   # the if's two header lines, not its body
    assert mutation.executed_lines(COVERED, 17) == range(17, 18)
    assert mutation.executed_lines(COVERED, 13) == range(13, 14)   # an except clause: only when it is reached
    # At import (module level, a class body, a signature's default): every check runs it before any starts.
    assert [mutation.executed_lines(COVERED, row) for row in (3, 7, 9)] == [None, None, None]

    lines = {"files": {"pick.py": {"15": ["RAC201"], "16": ["RAC202"], "17": ["RAC203"], "3": ["(import)"]}},
             "spawning": ["RAC112"]}
    checks = ["RAC112", "RAC201", "RAC202", "RAC203", "RAC204"]
    mutated = COVERED.replace("value < 10", "value <= 10")
    assert mutation.changed_rows(COVERED, mutated) == {16}
    # The if's header ran in RAC201 and RAC202; RAC112 starts a process (the plugin may run unseen there).
    assert mutation.covering(checks, lines, "pick.py", COVERED, mutated) == ["RAC112", "RAC201", "RAC202"]
    assert mutation.covering(checks, lines, "pick.py", COVERED, COVERED.replace("* 2", "* 3")) == [
        "RAC112", "RAC203"]
    # A line no check ran: only the process-starting check (the mutant survives, as every other check passes).
    assert mutation.covering(checks, lines, "pick.py", COVERED, COVERED.replace("return -1", "return 1")) == [
        "RAC112"]
    # At import (a module-level value, a default): every check.
    assert mutation.covering(checks, lines, "pick.py", COVERED, COVERED.replace('"a": 1', '"a": 2')) == checks
    assert mutation.covering(checks, lines, "pick.py", COVERED, COVERED.replace("int = 4", "int = 5")) == checks
    # A check the baseline did not run (added since): not known, so run.
    assert mutation.covering(checks, {**lines, "checks": checks[:-1]}, "pick.py", COVERED,
                             COVERED.replace("return -1", "return 1")) == ["RAC112", "RAC204"]
    # A mutant that does not compile (cosmic-ray's ** in a dict display made -): the plugin does not load, which
    # only the import's checks see, so every check runs.
    assert mutation.covering(checks, lines, "pick.py", COVERED, COVERED.replace("int(text,", "int(text,,")) == checks


def test_a_baseline_past_its_bound_is_one_line_naming_the_plugin_and_the_way_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = mutation.target_of("rayaccel_gaudi.metrics", None, None)
    with pytest.raises(SystemExit) as stopped:  # the real baseline command, given far too little time
        mutation.baseline(target, tmp_path / "no-bake", tmp_path, 0.001)  # less than an interpreter start
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "gaudi unmutated did not finish" in err and "--timeout" in err


PICK = "def pick(devices: list[str], n: int) -> str | None:\n    return devices[n] if n < len(devices) else None\n"
PICK_TESTS = '''import pytest

from fakeplug.pick import pick


def test_an_index_past_the_list_picks_nothing() -> None:
    assert pick(["a", "b"], 2) is None


def test_an_index_in_the_list_picks_it() -> None:
    assert pick(["a", "b"], 1) == "b"


@pytest.mark.ray
def test_one_that_would_start_ray_is_not_run() -> None:
    raise AssertionError("a test marked ray ran in the own-tests stage")
'''


def _fake_plugin(root: Path, source: str = PICK) -> tuple[mutation.Target, Path]:
    """A tiny plugin project laid out as the bake is (src/<package>, tests/, its pytest configuration): the
    bake target's own tests are its tests/."""
    (root / "src" / "fakeplug").mkdir(parents=True)
    (root / "src" / "fakeplug" / "__init__.py").write_text("")
    (root / "src" / "fakeplug" / "pick.py").write_text(source)
    (root / "tests").mkdir()
    (root / "tests" / "test_pick.py").write_text(PICK_TESTS)
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\nmarkers =\n    ray: starts Ray\n")
    return mutation.Target("bake:pick", "example", "supported"), root / "src"


def test_the_own_tests_stage_runs_the_cheap_tests_on_the_copy_first_on_the_path(tmp_path: Path) -> None:
    target, src = _fake_plugin(tmp_path)
    cwd, tests = mutation.own_tests_of(target, src)
    assert (cwd, tests) == (tmp_path, tmp_path / "tests")
    assert mutation.own_tests_of(mutation.Target("rayaccel_tpu.health", "tpu"), src)[1] == (
        mutation.REPO / "reference_plugins" / "tpu" / "tests")
    env = mutation.test_env(target, src)
    # Unmutated: every selected test passes (the one marked ray, which would fail, is left out).
    assert mutation.run_own_tests(tests, cwd, env, 120) == mutation.OwnResult("survived")
    # A survivor of the suite that the plugin's test kills, naming the test.
    module = src / "fakeplug" / "pick.py"
    module.write_text(PICK.replace("n < len(devices)", "n <= len(devices)"))
    killed = mutation.run_own_tests(tests, cwd, env, 120)
    assert killed.outcome == "killed" and "test_an_index_past_the_list_picks_nothing" in killed.detail
    # A mutant that no longer imports kills too (the tests do not load).
    module.write_text(PICK.replace("return", "return return"))
    assert mutation.run_own_tests(tests, cwd, env, 120).outcome == "killed"
    # One that hangs is stopped at its bound, process tree and all.
    module.write_text(PICK.replace("return devices", "while True:\n        pass\n    return devices"))
    started = mutation.time.monotonic()
    assert mutation.run_own_tests(tests, cwd, env, 5).outcome == "timeout"
    assert mutation.time.monotonic() - started < 60


def test_own_tests_that_fail_unmutated_refuse_the_stage_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target, src = _fake_plugin(tmp_path, PICK.replace("else None", "else 'z'"))
    with pytest.raises(SystemExit) as refused:
        mutation.own_baseline(target, src, src, 120)
    assert refused.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "own tests" in err and "do not pass unmutated" in err
    assert "test_an_index_past_the_list_picks_nothing" in err and "without --own-tests" in err


def test_a_survivor_the_own_tests_kill_is_counted_apart_and_stays_the_suites_survivor(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = {("core/ReplaceBinaryOperator_BitOr_Add", 0): "annotation", ("core/NumberReplacer", 0): "survived",
               ("core/ReplaceComparisonOperator_Eq_NotEq", 0): "killed", ("core/NumberReplacer", 1): "survived"}
    outcome = _outcome(results)
    outcome.mutants[-1] = mutation.Mutant("core/NumberReplacer", 1, 3, 20)  # LIMIT's value, not its annotation
    outcome.own_tests = True
    outcome.own = {("core/NumberReplacer", 0): mutation.OwnResult("killed", "FAILED tests/test_pick.py::test_n"),
                   ("core/NumberReplacer", 1): mutation.OwnResult("survived")}
    row = mutation.grade(outcome, [])
    # The suite's figure is what the suite killed; the own tests' kill is its own count and rate.
    assert (row["killed"], row["graded"], row["kill_rate"]) == (1, 3, 0.3333)
    assert (row["killed_by_own_tests"], row["own_tests_ran"], row["kill_rate_with_own_tests"]) == (1, 2, 0.6667)
    assert [(s["line"], s["own_tests"]) for s in row["survivors"]] == [(3, "survived"), (7, "killed")]
    mutation.print_report([row])
    out = capsys.readouterr().out
    assert "own kill  with own" in out and "33.3%        1     66.7%  < 90%" in out
    assert "pick.py:7 NumberReplacer: return devices[n] if devices else None  [killed by own tests: " \
           "FAILED tests/test_pick.py::test_n]" in out
    # --survivors-of still runs every survivor of the suite again (a new check is judged by the suite alone).
    result = tmp_path / "results.json"
    result.write_text(mutation.json.dumps({"modules": [row]}))
    assert mutation.survivors_of(result) == {"bake:pick": {("NumberReplacer", 0), ("NumberReplacer", 1)}}
    # A survivor triaged equivalent that its own tests kill: the verdict is contradicted, and said so.
    triage = [mutation.TriageEntry("bake:pick", "return devices[n] if devices else None", (), "never read")]
    row = mutation.grade(outcome, triage)
    assert (row["killed_by_own_tests"], row["kill_rate_with_own_tests"]) == (0, 0.5)
    mutation.print_report([row])
    assert "triaged equivalent, yet its own tests kill it: bake:pick pick.py:7 NumberReplacer" in \
        capsys.readouterr().out
    # Without the stage: no own figures, no columns.
    row = mutation.grade(_outcome(results), [])
    assert (row["own_tests"], row["killed_by_own_tests"], row["kill_rate_with_own_tests"]) == (False, None, None)
    mutation.print_report([row])
    assert "with own" not in capsys.readouterr().out
