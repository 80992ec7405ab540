"""The simulated host answers like the real one would, from a fixture, and faults patch it."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, strategies as st

from rayaccel.errors import FixtureError
from rayaccel.hosts.fixtures import Fixture, merge_patch, parse_fixture
from rayaccel.hosts.seam import (
    CommandNotFound,
    CommandTimeout,
    HttpUnavailable,
    LibraryAdapter,
    LibraryUnavailable,
    RealHost,
)
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.support.bounded import BoundedTimeout, run_bounded, simulated_hang


def fixture(**host: object) -> Fixture:
    return parse_fixture({
        "schema": "rayaccel-fixture/1", "plugin": "t", "name": "t", "description": "test",
        "host": host, "expected": {"devices": 0},
        "faults": [{"name": "hang", "description": "tool hangs", "kind": "tool-hang",
                    "patch": {"commands": {"tool --json": {"hang": True}}}, "expected": {"devices": 0}},
                   {"name": "gone", "description": "file removed", "kind": "device-lost",
                    "patch": {"files": {"/dev/accel0": None}}, "expected": {"devices": 0}}],
    }, "test")


@pytest.fixture
def host() -> SimulatedHost:
    return SimulatedHost(fixture(
        env={"A": "1"},
        files={"/dev/accel0": "", "/dev/accel1": "", "/sys/class/x/x0/uuid": "u0\n", "/empty/": ""},
        commands={"tool --json": {"stdout": '{"ok": true}'}, "broken": {"returncode": 3, "stderr": "bad"}},
        http={"http://meta/x": {"body": "v5p-16", "require_headers": {"Metadata-Flavor": "Google"}},
              "http://meta/stuck": {"hang": True}},
        libraries={"nvml": None},
    ))


def test_files_and_directories(host):
    assert host.read_text("/sys/class/x/x0/uuid") == "u0\n"
    assert host.is_dir("/sys/class/x") and host.is_dir("/empty") and not host.is_dir("/dev/accel0")
    assert host.list_dir("/dev") == ["accel0", "accel1"]
    assert host.glob("/dev/accel*") == ["/dev/accel0", "/dev/accel1"]
    assert host.list_dir("/empty") == []
    with pytest.raises(FileNotFoundError):
        host.read_text("/nope")
    with pytest.raises(IsADirectoryError):
        host.read_text("/dev")
    with pytest.raises(NotADirectoryError):
        host.list_dir("/dev/accel0")


def test_commands_answer_fail_and_hang_within_the_timeout(host):
    assert host.run(["tool", "--json"]).stdout == '{"ok": true}'
    assert host.run(["broken"]).returncode == 3
    assert host.run(["tool", "--other"]).returncode == 2  # a known tool, an unrecorded call
    with pytest.raises(CommandNotFound):
        host.run(["absent-tool"])
    hung = SimulatedHost(host.fixture, faults=["hang"])
    started = time.monotonic()
    with pytest.raises(CommandTimeout):
        hung.run(["tool", "--json"], timeout=0.05)
    assert time.monotonic() - started < 1


def test_a_hang_sleeps_what_the_process_chose_and_charges_the_rest_of_the_timeout(host, monkeypatch):
    import rayaccel.hosts.simulated as simulated

    monkeypatch.setattr(simulated, "_hang_sleep_s", simulated.SIMULATED_HANG_SECONDS)
    hung = SimulatedHost(host.fixture, faults=["hang"])
    simulated.sleep_hangs_for(0.01)  # as a conformance run does: real plus charged time is still the timeout
    started = time.monotonic()
    with pytest.raises(CommandTimeout):
        hung.run(["tool", "--json"], timeout=120)
    with pytest.raises(HttpUnavailable):
        host.http_get("http://meta/stuck", timeout=5)
    assert 0.02 <= time.monotonic() - started < simulated.SIMULATED_HANG_SECONDS  # each blocked, briefly
    assert hung.skipped_wait_s == pytest.approx(120 - 0.01) and host.skipped_wait_s == pytest.approx(5 - 0.01)
    for wrong in (-1, 0.5, float("nan")):
        with pytest.raises(ValueError, match=r"sleeps 0 to 0\.2 s for real"):
            simulated.sleep_hangs_for(wrong)


def test_http_needs_the_declared_headers_and_unknown_urls_are_unreachable(host):
    assert host.http_get("http://meta/x", {"Metadata-Flavor": "Google"}).body == "v5p-16"
    assert host.http_get("http://meta/x").status == 403
    with pytest.raises(HttpUnavailable):
        host.http_get("http://meta/other")
    started = time.monotonic()
    with pytest.raises(HttpUnavailable, match=r"no answer within 0\.05s"):
        host.http_get("http://meta/stuck", timeout=0.05)
    assert time.monotonic() - started < 1


def _no_real_library() -> object:
    raise LibraryUnavailable("not on this machine")


def test_absent_library_is_unavailable(host):
    with pytest.raises(LibraryUnavailable):
        host.library(LibraryAdapter("nvml", _no_real_library, dict))
    with pytest.raises(LibraryUnavailable, match="not installed"):
        host.library(LibraryAdapter("not-a-library", _no_real_library, dict))
    # A library is named by the plugin's adapter object, never looked up by a string.
    with pytest.raises(TypeError, match="LibraryAdapter"):
        host.library("nvml")


def test_a_library_adapter_is_opened_once_per_host_real_or_simulated():
    opened: list[object] = []

    def open_simulated(data: object) -> dict[str, object]:
        opened.append(data)
        return {"adapter": data}

    def open_real() -> str:
        opened.append("real")
        return "real library"

    adapter = LibraryAdapter("acmeml", open_real, open_simulated)
    simulated = SimulatedHost(fixture(libraries={"acmeml": {"devices": 2}}))
    assert simulated.library(adapter) == {"adapter": {"devices": 2}}
    assert simulated.library(adapter) is simulated.library(adapter)
    real = RealHost()
    assert real.library(adapter) == real.library(adapter) == "real library"
    assert opened == [{"devices": 2}, "real"]

    def broken_driver() -> object:
        raise OSError("libacme.so: cannot open shared object file")

    with pytest.raises(LibraryUnavailable, match=r"acmeml: OSError: libacme\.so"):
        RealHost().library(LibraryAdapter("acmeml", broken_driver, open_simulated))
    with pytest.raises(ValueError, match="non-empty name"):
        LibraryAdapter("", open_real, open_simulated)
    with pytest.raises(TypeError, match="callables"):
        LibraryAdapter("acmeml", "acme:open_real", open_simulated)  # type: ignore[arg-type]


def test_a_machine_changed_under_the_process_keeps_open_library_sessions_and_answers_the_new_state():
    class Counters:
        """A vendor library that keeps a section of its data at open, as adapters do."""

        def __init__(self, data: dict[str, object]) -> None:
            self.cards = data["cards"]

        def read(self, card: str) -> object:
            return self.cards[card]["tx"]  # type: ignore[index]

    adapter = LibraryAdapter("acmelink", lambda: None, Counters)
    busy = fixture(libraries={"acmelink": {"cards": {"0": {"tx": [5, 9]}, "1": {"tx": [7, 8]}}}},
                   files={"/sys/class/x/x0/tx": "9\n"})
    reset = busy.model_copy(update={"host": busy.host.model_copy(update={
        "libraries": {"acmelink": {"cards": {"0": {"tx": [0, 0]}, "1": {"tx": [7, 8]}}}},
        "files": {"/sys/class/x/x0/tx": "0\n"}})})
    host = SimulatedHost(busy)
    session = host.library(adapter)
    assert session.read("0") == [5, 9]
    host.change_machine(reset)
    assert host.library(adapter) is session  # the process keeps its session, as on a driver reload
    assert session.read("0") == [0, 0] and session.read("1") == [7, 8]
    assert host.read_text("/sys/class/x/x0/tx") == "0\n"
    assert busy.host.libraries["acmelink"]["cards"]["0"]["tx"] == [5, 9]  # the fixture itself is left as it was
    fresh = SimulatedHost(busy)
    assert fresh.library(adapter).read("0") == [5, 9]


def test_faults_patch_only_what_they_name_and_a_fault_file_switches_them_live(host, tmp_path):
    fault_file = tmp_path / "faults"
    live = SimulatedHost(host.fixture, fault_file=str(fault_file))
    assert live.exists("/dev/accel0")
    fault_file.write_text("gone\n")
    assert not live.exists("/dev/accel0") and live.exists("/dev/accel1")
    fault_file.write_text("")
    assert live.exists("/dev/accel0")  # recovery


def test_unknown_fault_names_fail_with_the_valid_ones(host):
    with pytest.raises(FixtureError, match="hang, gone"):
        SimulatedHost(host.fixture, faults=["nope"])


def test_real_host_reads_this_machine(tmp_path):
    (tmp_path / "sys").mkdir()
    (tmp_path / "sys" / "f").write_text("x")
    real = RealHost(root=str(tmp_path), env={"K": "v"})
    assert real.read_text("/sys/f") == "x" and real.list_dir("/sys") == ["f"] and real.getenv("K") == "v"
    assert real.run(["true"]).returncode == 0
    with pytest.raises(CommandNotFound):
        real.run(["/no/such/binary"])
    with pytest.raises(CommandTimeout):
        real.run(["sleep", "5"], timeout=0.2)
    with pytest.raises(HttpUnavailable):
        real.http_get("http://127.0.0.1:9/", timeout=0.5)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                           lambda children: st.dictionaries(st.text(max_size=3), children, max_size=3), max_leaves=10)


@given(json_values, json_values)
def test_merge_patch_follows_rfc7386(target, patch):
    result = merge_patch(target, patch)
    if not isinstance(patch, dict):
        assert result == patch
        return
    for key, value in patch.items():
        if value is None:
            assert key not in result
        elif not isinstance(value, dict):
            assert result[key] == value
    if isinstance(target, dict):
        for key in set(target) - set(patch):
            assert result[key] == target[key]


class _Acme:
    """A simulated vendor library whose every call blocks when its fixture data says the driver is wedged."""

    def __init__(self, data: dict[str, object]) -> None:
        self._data = data
        self._block = simulated_hang()  # asked while the host opens it: hangs charge that host

    def count(self) -> int:
        if self._data.get("hang"):
            self._block(float(str(self._data.get("hang_seconds", 600))))
        return 2


ACME = LibraryAdapter("acmeml", _no_real_library, _Acme)


@pytest.mark.parametrize("kept_threads", [False, True])
def test_a_simulated_library_hang_under_a_bound_gives_up_at_once_charged_the_whole_timeout(
        kept_threads: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    import rayaccel.support.bounded as bounded

    monkeypatch.setattr(bounded, "_reuse", kept_threads)  # the health monitor's workers keep their threads
    monkeypatch.setattr(bounded, "_idle", [])
    host = SimulatedHost(fixture(libraries={"acmeml": {"hang": True}}))
    started = time.monotonic()
    for _ in range(3):  # a plugin retrying a wedged driver three times, 120 s a call
        with pytest.raises(BoundedTimeout):
            run_bounded(lambda: host.library(ACME).count(), 120)
    assert time.monotonic() - started < 5  # not 360 s of real time ...
    assert host.skipped_wait_s == pytest.approx(360, abs=1)  # ... but 360 s of the host's time, as on a machine
    # The same with the SDK's own library fault (a hang of any adapter).
    faulty = SimulatedHost(fixture(libraries={"acmeml": {"rayaccel_fault": {"hang": True, "hang_seconds": 600}}}))
    with pytest.raises(BoundedTimeout):
        run_bounded(lambda: faulty.library(ACME).count(), 30)
    assert faulty.skipped_wait_s == pytest.approx(30, abs=1)


def test_a_simulated_hang_shorter_than_the_bound_or_unbounded_is_waited_in_real_time() -> None:
    short = SimulatedHost(fixture(libraries={"acmeml": {"hang": True, "hang_seconds": 0.3}}))
    started = time.monotonic()
    assert run_bounded(lambda: short.library(ACME).count(), 30) == 2  # it returns, after its 0.3 s
    assert time.monotonic() - started >= 0.3 and short.skipped_wait_s == 0
    started = time.monotonic()
    assert short.library(ACME).count() == 2  # nobody bounds it: it blocks for real
    assert time.monotonic() - started >= 0.3 and short.skipped_wait_s == 0
    # A hang in a thread the bounded call started is not the call's own: the bound waits for real.
    host = SimulatedHost(fixture(libraries={"acmeml": {"hang": True}}))
    started = time.monotonic()

    def in_a_thread_of_its_own() -> None:
        thread = threading.Thread(target=lambda: host.library(ACME).count(), daemon=True)
        thread.start()
        thread.join()

    with pytest.raises(BoundedTimeout):
        run_bounded(in_a_thread_of_its_own, 0.5)
    assert time.monotonic() - started >= 0.5 and host.skipped_wait_s == 0
