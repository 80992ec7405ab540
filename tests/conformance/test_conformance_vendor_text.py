"""RAC256: a reading printed as text that is no number is unknown. The forms written where each reading lives (a
file, a CSV cell, a library's data, a command's JSON), the builds planned so every form is printed, and the check
run on two corpus shapes (the first number in the text, float()), the control and AMD's library path (whose
float() took 'nan' and raised on 'inf' in discovery before aa5700f), with no Ray."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from rayaccel.plugins.manager import PluginManager
from rayaccel.records import Device
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.readings import Reading
from rayaccel_conformance.checks.vendor_text import (
    ERROR_TEXT,
    FORMS,
    LONG_DIGITS,
    applies,
    build_plans,
    damaged_host,
)
from rayaccel_conformance.harness.subject import Subject
from rayaccel_testplugins import corpus, corpus_text_numbers

RAC256 = next(c for c in all_checks() if c.id == "RAC256")
FORM = {f.name: f for f in FORMS}
FILE = Reading("file", "/sys/class/x/x2/power_mw", (), 250000.0)
TABLE = Reading("table", "smi --csv", (2, 2), 96.0, "GPU-2, 0000:12:00.0, 96 W, 40")
LIBRARY = Reading("library", "lib", ("devices", "2", "power"), 96.0)
JSON_OUT = Reading("command", "smi --json", (2, "power"), 96.0)
HOST = {"files": {FILE.key: "250000\n"},
        "libraries": {"lib": {"devices": {"2": {"power": 96}}}},
        "commands": {"smi --csv": {"stdout": "id, bus, power, temp\nGPU-1, 0000:11:00.0, 90 W, 41\n" + TABLE.row},
                     "smi --json": {"stdout": json.dumps([{}, {}, {"power": 96}])}}}


def printed(reading: Reading, form: str) -> object:
    state = damaged_host(HOST, [(reading, FORM[form])])
    if reading.where == "file":
        return state["files"][reading.key]
    if reading.where == "table":
        return state["commands"][reading.key]["stdout"].split("\n")[2]
    if reading.where == "library":
        return state["libraries"]["lib"]["devices"]["2"]["power"]
    return json.loads(state["commands"][reading.key]["stdout"])[2]["power"]


def test_each_form_is_written_where_the_reading_lives_as_the_vendor_writes_it() -> None:
    assert printed(FILE, "a garbled field") == "1\ufffd250000\n"  # the leading number, the digits: another number
    assert printed(FILE, "a truncated line") == "\n"
    assert printed(TABLE, "a truncated line") == "GPU-2, 0000:12:00.0,"
    assert printed(TABLE, "an error string") == f"GPU-2, 0000:12:00.0, {ERROR_TEXT} W, 40"
    assert printed(TABLE, "a negative value") == "GPU-2, 0000:12:00.0, -96 W, 40"
    assert printed(LIBRARY, "nan") == "nan" and printed(JSON_OUT, "1e309 (past a double)") == "1e309"
    assert printed(JSON_OUT, "a number of 23 digits") == int(LONG_DIGITS) and int(LONG_DIGITS) > 2**64
    assert len(ERROR_TEXT) > 80 and any(c.isdigit() for c in ERROR_TEXT) and "," not in ERROR_TEXT
    assert math.isinf(float("1e309"))


def test_a_form_goes_only_where_it_can_be_written_and_suits_the_reading() -> None:
    assert not applies(FORM["a truncated line"], LIBRARY, {"power"})
    assert not applies(FORM["a truncated line"], JSON_OUT, {"power"})
    assert not applies(FORM["a number of 23 digits"], LIBRARY, {"power"})  # a binding's typed value holds none
    assert not applies(FORM["a negative value"], TABLE, {"temperature"})  # a temperature may be below 0
    assert applies(FORM["a negative value"], TABLE, {"power"}) and applies(FORM["nan"], LIBRARY, {"power"})


def test_a_build_per_form_prints_every_reading_the_form_can_be_written_to() -> None:
    fed = {FILE: {"power"}, LIBRARY: {"power"}, TABLE: {"temperature"}}
    plans = {plan[0][1].name: [r for r, _ in plan] for plan in build_plans(fed)}
    assert list(plans) == [f.name for f in FORMS]  # every form printed, in its own build
    assert plans["a truncated line"] == [FILE, TABLE] and plans["a negative value"] == [FILE]
    assert plans["nan"] == [FILE, LIBRARY, TABLE]
    assert all(len({form.name for _, form in plan}) == 1 for plan in build_plans(fed))


def _subject(name: str) -> Subject:
    manager = PluginManager(autoload=False)
    assert manager.register(corpus.PLUGINS[name], name), manager.problems
    return Subject(name, manager)


@pytest.mark.parametrize("plugin", ["c-first-number-in-text", "c-sensors-read-by-float"])
def test_each_corpus_shape_fails_naming_the_invariant_and_the_number_it_made(plugin: str) -> None:
    assert corpus_text_numbers.__name__ in corpus.MUTANT_MODULES
    subject = _subject(plugin)
    (outcome,) = [subject.run(RAC256, ref) for ref in subject.fixture_paths()]
    assert outcome.outcome == "failed", outcome
    assert all("invariant text-that-is-no-number-is-unknown" in e for e in outcome.evidence)
    assert any("printed as" in e and " is " in e and "(was " in e for e in outcome.evidence), outcome.evidence


def test_the_control_and_amd_s_library_path_pass() -> None:
    control = _subject("c-healthy")
    assert {control.run(RAC256, ref).outcome for ref in control.fixture_paths()} == {"passed"}
    amd = Subject("amd", PluginManager(autoload=True), only_fixtures=["mi210-pair"])
    (ref,) = amd.fixture_paths()
    outcome = amd.run(RAC256, ref)
    assert outcome.outcome == "passed" and "forms that are no number" in outcome.evidence[0], outcome


class _SilentSensors(corpus.Healthy):
    """Text that is no number left out, as it should be, but without a word (a bare ``except: return None``)."""

    def number(self, host: object, path: str) -> float | None:
        text = host.read_text(path).strip()  # type: ignore[attr-defined]
        return int(text) if text.isascii() and text.isdigit() and len(text) < 19 else None

    def device(self, host: Any, path: str, driver: str | None) -> Any:
        def text(name: str) -> str:
            return str(host.read_text(f"{path}/{name}")).strip()

        return Device(index=int(path.rsplit("acme", 1)[1]), id=text("uuid"), product_name=text("product"),
                      memory_mib=self.number(host, f"{path}/memory_mib"), pci_bus_id=text("pci_bus_id"),
                      numa_node=self.number(host, f"{path}/numa_node"), driver_version=driver)


def test_a_value_left_out_without_a_problem_is_named() -> None:
    name = "c-first-number-in-text"  # its machine, read strictly but silently
    manager = PluginManager(autoload=False)
    assert manager.register(_SilentSensors(name), name), manager.problems
    (outcome,) = [Subject(name, manager).run(RAC256, ref) for ref in Subject(name, manager).fixture_paths()]
    assert outcome.outcome == "failed", outcome
    assert all(e.startswith("invariant a-value-left-out-is-reported, ") for e in outcome.evidence), outcome.evidence
    assert "left out with no problem reported" in outcome.evidence[0]
