"""The numbers of a host state (readings.host_readings), which a run asks for again and again about the same
states and keeps (by the state's whole content): what is kept must never change an answer."""

from __future__ import annotations

import json
from typing import Any

from rayaccel_conformance.checks.readings import host_readings


def _state(power: Any = 300, order: tuple[str, str] = ("power", "temp")) -> dict[str, Any]:
    values = {"power": power, "temp": 40}
    device = {key: values[key] for key in order}
    return {"files": {"/sys/class/acme/acme0/fatal": "0", "/sys/class/acme/acme0/power": "12"},
            "libraries": {"lib": {"devices": [device, {"power": 0, "temp": 41}]}},
            "commands": {"acme-smi --json": {"stdout": json.dumps({"gpus": [{"util": 7}]})},
                         "acme-smi --csv": {"stdout": "0, 96 W, 0 %"}}}


def _numbers(state: dict[str, Any], zeros: bool = False) -> list[tuple[str, str, tuple[Any, ...], float]]:
    return [(r.where, r.key, r.path, r.value) for r in host_readings(state, zeros)]


def test_a_state_changed_in_place_is_read_again() -> None:
    state = _state()
    assert ("library", "lib", ("devices", 0, "power"), 300.0) in _numbers(state)
    state["libraries"]["lib"]["devices"][0]["power"] = 301  # the same dict, other content
    assert ("library", "lib", ("devices", 0, "power"), 301.0) in _numbers(state)
    assert ("library", "lib", ("devices", 0, "power"), 300.0) not in _numbers(state)


def test_equal_states_in_another_key_order_are_read_in_their_own_order() -> None:
    power_first, temp_first = _numbers(_state(order=("power", "temp"))), _numbers(_state(order=("temp", "power")))
    assert sorted(power_first) == sorted(temp_first) and power_first != temp_first
    assert [p for _, _, p, _ in temp_first if p[:2] == ("devices", 0)] == [("devices", 0, "temp"),
                                                                           ("devices", 0, "power")]


def test_a_number_and_its_text_are_different_states() -> None:
    assert ("library", "lib", ("devices", 0, "power"), 300.0) in _numbers(_state(300))
    assert not [p for _, _, p, _ in _numbers(_state("300")) if p == ("devices", 0, "power")]  # text is no number


def test_what_a_caller_does_to_its_answer_is_not_the_next_callers() -> None:
    state = _state()
    first = host_readings(state, zeros=True)
    count = len(first)
    first.clear()
    assert len(host_readings(state, zeros=True)) == count


def test_zeros_are_read_only_when_asked_for() -> None:
    state = _state()
    every, nonzero = _numbers(state, zeros=True), _numbers(state)
    assert nonzero == [n for n in every if n[3] != 0]
    assert ("file", "/sys/class/acme/acme0/fatal", (), 0.0) in every
    assert ("table", "acme-smi --csv", (0, 2), 0.0) in every and ("table", "acme-smi --csv", (0, 1), 96.0) in nonzero
