"""`rayaccel record`: fixtures captured from a machine, replayed, anonymised, extended by fault states.

The round trip runs every shipped fixture of every reference plugin (and of template-baked plugins), with
and without each declared fault, through a RecordingHost over the simulated host; the recording replayed on
a SimulatedHost must give the same inventory. No Ray: all in-process except the CLI checks.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from baked_plugins import bake_plugins

from rayaccel.hosts.call_log import RecordingError, RecordingLibrary, ReplayLibrary
from rayaccel.hosts.fixtures import installed_fixtures, load_fixture, parse_fixture
from rayaccel.hosts.recorded_fixture import expected_from_inventory, inventory_view, merge_diff, shape_view
from rayaccel.hosts.recording import RecordingHost
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.inventory.builder import collect_inventory
from rayaccel.plugins.manager import PluginManager

RAYACCEL = [sys.executable, "-m", "rayaccel"]
BAKES = {"rec-sysfs": "sysfs", "rec-lib": "python-library"}

_REFERENCE = installed_fixtures(PluginManager())
CASES = [(ref, None) for ref in _REFERENCE] + [
    (ref, fault.name) for ref, path in _REFERENCE.items() for fault in load_fixture(path).faults]


@pytest.fixture(scope="module")
def manager() -> PluginManager:
    return PluginManager()


def cli(*args: str, home: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*RAYACCEL, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HOME": str(home)})
    if check:
        assert done.returncode == 0, done.stderr
    return done


def record_and_replay(manager: PluginManager, fixture: Any, faults: list[str]) -> tuple[Any, Any, dict[str, Any]]:
    recorder = RecordingHost(SimulatedHost(fixture, faults=faults))
    recorded = collect_inventory(manager, recorder, plugins=[fixture.plugin])
    state = recorder.host_state()
    data = {"schema": "rayaccel-fixture/1", "plugin": fixture.plugin, "name": fixture.name,
            "description": "recorded", "host": state, "expected": expected_from_inventory(recorded, fixture.plugin)}
    replayed_fixture = parse_fixture(json.loads(json.dumps(data)), "recording")  # JSON Schema and model
    replayed = collect_inventory(manager, SimulatedHost(replayed_fixture), plugins=[fixture.plugin])
    return recorded, replayed, data


def full_view(inventory: Any) -> dict[str, Any]:
    view = inventory_view(inventory)
    view["metrics"] = sorted((m.device, m.name, m.value) for f in inventory.families for m in f.metrics)
    view["problems"] = sorted(p.code for p in inventory.problems)
    return view


@pytest.mark.parametrize(("ref", "fault"), CASES, ids=[f"{r}:{f or 'base'}" for r, f in CASES])
def test_round_trip_of_every_shipped_fixture(manager: PluginManager, ref: str, fault: str | None) -> None:
    fixture = load_fixture(_REFERENCE[ref])
    recorded, replayed, data = record_and_replay(manager, fixture, [fault] if fault else [])
    # The problems in full on a failure: a hook that raised while recording says what it raised.
    assert full_view(replayed) == full_view(recorded), [p.render() for p in (*recorded.problems, *replayed.problems)]
    family = recorded.family(fixture.plugin)
    if family is not None and family.devices and not fault:
        assert data["expected"]["devices"] == len(family.devices) > 0
        assert data["expected"]["device_ids"] == [d.id for d in family.devices]


@pytest.fixture(scope="module")
def baked(tmp_path_factory: pytest.TempPathFactory) -> tuple[PluginManager, dict[str, Path]]:
    """Template-baked plugins (real cookiecutter), registered beside the reference plugins."""
    manager = PluginManager()
    for family, module in bake_plugins(tmp_path_factory.mktemp("record-bakes"), BAKES).items():
        assert manager.register(module, family), manager.problems
    fixtures = {ref: path for ref, path in installed_fixtures(manager).items() if ref.split("/")[0] in BAKES}
    assert len(fixtures) >= len(BAKES)
    return manager, fixtures


def test_round_trip_of_template_baked_plugins(baked: tuple[PluginManager, dict[str, Path]]) -> None:
    manager, fixtures = baked
    for ref, path in fixtures.items():
        fixture = load_fixture(path)
        for faults in [[], *([f.name] for f in fixture.faults)]:
            recorded, replayed, _ = record_and_replay(manager, fixture, faults)
            assert recorded.family(fixture.plugin) is not None, ref
            assert full_view(replayed) == full_view(recorded), (ref, faults)


def test_record_on_this_machine_replays_as_inspect(tmp_path: Path) -> None:
    out = tmp_path / "this-machine.json"
    done = cli("record", "-o", str(out), home=tmp_path)
    assert "wrote" in done.stdout
    data = json.loads(out.read_text())
    assert data["source"].startswith("recorded by rayaccel record at ")
    assert "rayaccel SDK" in data["source"]
    replay = json.loads(cli("inspect", "--simulate", str(out), "--json", home=tmp_path).stdout)
    live = json.loads(cli("inspect", "--json", home=tmp_path).stdout)
    assert replay.pop("simulated") is True and live.pop("simulated") is False
    assert replay == live
    assert load_fixture(out).expected.devices == sum(len(f["devices"]) for f in live["families"])


def _originals(fixture: Any) -> list[str]:
    text = json.dumps(fixture.host.model_dump(mode="json"))
    found = re.findall(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", text)
    found += [ip for ip in re.findall(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])", text)
              if ip not in {"169.254.169.254", "127.0.0.1"} and not ip.startswith("0")]
    if fixture.host.hostname:
        found.append(fixture.host.hostname)
    nvml = fixture.host.libraries.get("nvml") or {}
    found += [str(d["serial"]) for d in (nvml.get("devices") or {}).values() if d.get("serial")]
    return sorted(set(found))


@pytest.mark.parametrize("ref", ["nvidia/dgx-h100", "tpu/v5p-16-worker0", "amd/mi300x-8", "neuron/trn1.32xlarge"])
def test_anonymize_leaves_no_identifier_and_keeps_the_structure(tmp_path: Path, manager: PluginManager,
                                                                 ref: str) -> None:
    plugin, name = ref.split("/")
    out = tmp_path / f"{name}-anon.yaml"  # a shipped name, e.g. an instance type with a dot: trn1.32xlarge
    cli("record", "--simulate", ref, "--plugin", plugin, "--anonymize", "-o", str(out), home=tmp_path)
    text = out.read_text()
    original = load_fixture(_REFERENCE[ref])
    originals = _originals(original)
    assert originals, "the test needs identifiers to look for"
    leaked = [s for s in originals if s in text]
    assert not leaked
    anonymised = load_fixture(out)
    before = collect_inventory(manager, SimulatedHost(original), plugins=[plugin])
    after = collect_inventory(manager, SimulatedHost(anonymised), plugins=[plugin])
    assert shape_view(after) == shape_view(before)
    assert anonymised.expected.devices == len(before.families[0].devices) > 0
    # consistent: the same key gives the same tokens in a second recording
    again = tmp_path / "again.yaml"
    cli("record", "--simulate", ref, "--plugin", plugin, "--anonymize", "-o", str(again), home=tmp_path)
    first, second = yaml.safe_load(text)["host"], yaml.safe_load(again.read_text())["host"]
    for section in ("hostname", "env", "files", "commands", "http"):
        assert second.get(section) == first.get(section), section
    for name, data in first.get("libraries", {}).items():  # NVML's answers carry timestamps: compare the calls
        assert set(second["libraries"][name]["rayaccel_calls"]) == set(data["rayaccel_calls"])


@pytest.mark.parametrize(("ref", "fault"), [("nvidia/dgx-h100", "gpu-lost"), ("gaudi/hls-gaudi3", "module-ecc"),
                                            ("tpu/v5e-8", "chip-lost")])
def test_record_fault_adds_a_patch_that_replays_the_fault_state(tmp_path: Path, manager: PluginManager, ref: str,
                                                                fault: str) -> None:
    plugin = ref.split("/")[0]
    out = tmp_path / "lab.yaml"
    cli("record", "--simulate", ref, "--plugin", plugin, "-o", str(out), home=tmp_path)
    cli("record", "--simulate", ref, "--simulate-fault", fault, "--fault", "recorded-fault", "--kind", "other",
        "--into", str(out), home=tmp_path)
    recorded = load_fixture(out)
    [added] = recorded.faults
    assert added.name == "recorded-fault" and added.patch
    original = load_fixture(_REFERENCE[ref])
    direct = collect_inventory(manager, SimulatedHost(original, faults=[fault]), plugins=[plugin])
    replay = collect_inventory(manager, SimulatedHost(recorded, faults=["recorded-fault"]), plugins=[plugin])
    assert inventory_view(replay) == inventory_view(direct)
    want = {h.device: h.state for h in direct.families[0].health if h.state != "healthy"}
    assert added.expected.health == want
    assert added.expected.devices == len(direct.families[0].devices)
    assert added.expected.resources == direct.resources != load_fixture(_REFERENCE[ref]).expected.resources
    # the base state is untouched
    base = collect_inventory(manager, SimulatedHost(recorded), plugins=[plugin])
    assert inventory_view(base) == inventory_view(collect_inventory(manager, SimulatedHost(original),
                                                                    plugins=[plugin]))


def test_record_fault_of_an_unchanged_machine_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "lab.yaml"
    cli("record", "--simulate", "gaudi/hls-gaudi3", "--plugin", "gaudi", "-o", str(out), home=tmp_path)
    before = out.read_text()
    done = cli("record", "--simulate", "gaudi/hls-gaudi3", "--fault", "same", "--into", str(out), home=tmp_path,
               check=False)
    assert done.returncode == 2 and "nothing to record" in done.stderr and len(done.stderr.splitlines()) == 1
    assert out.read_text() == before


def test_fixture_expect_shows_the_difference_and_writes_only_when_asked(tmp_path: Path) -> None:
    source = yaml.safe_load(_REFERENCE["gaudi/hls-gaudi3"].read_text())
    source["expected"]["labels"]["rayaccel.io/count"] = "7"
    path = tmp_path / "hls-gaudi3.yaml"
    path.write_text(yaml.safe_dump(source))
    before = path.read_text()
    shown = cli("fixture", "expect", str(path), home=tmp_path)
    assert '-    "rayaccel.io/count": "7"' in shown.stdout and '+    "rayaccel.io/count": "8"' in shown.stdout
    assert "--write" in shown.stdout and path.read_text() == before
    cli("fixture", "expect", str(path), "--write", home=tmp_path)
    assert load_fixture(path).expected.labels["rayaccel.io/count"] == "8"
    assert "expected is current" in cli("fixture", "expect", str(path), home=tmp_path).stdout
    assert list(tmp_path.glob(".hls-gaudi3.yaml.*")) == []  # the atomic writer left no temporary file


def test_an_answer_the_format_cannot_express_is_an_error_naming_the_call(tmp_path: Path) -> None:
    data = yaml.safe_load(_REFERENCE["gaudi/hls-gaudi3"].read_text())
    line = next(iter(data["host"]["commands"]))
    data["host"]["commands"][line]["stdout"] = "\ufffd\x00binary"
    data["faults"] = []
    path = tmp_path / "hls-gaudi3.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "out.yaml"
    done = cli("record", "--simulate", str(path), "--plugin", "gaudi", "-o", str(out), home=tmp_path, check=False)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and line in done.stderr and "binary" in done.stderr
    assert not out.exists() and list(tmp_path.glob(".out.yaml*")) == []


def test_a_library_result_that_cannot_be_serialised_is_refused() -> None:
    class Library:
        def get_thing(self, index: int) -> Any:
            return {1, 2}  # a set: no fixture form

    host = RecordingHost(SimulatedHost(load_fixture(_REFERENCE["nvidia/l4-single"])))
    library = RecordingLibrary(Library(), "vendorlib", host)
    host._libraries["vendorlib"] = library
    assert library.get_thing(3) == {1, 2}
    with pytest.raises(RecordingError, match=r"vendorlib\.get_thing\(3\).*set"):
        host.host_state()


def test_replayed_library_answers_in_sequence_and_raises_the_library_errors() -> None:
    from rayaccel_nvidia.nvml import CONSTANTS, open_simulated

    base = open_simulated({})
    lib = ReplayLibrary("nvml", base, {
        "nvmlDeviceGetCount()": [2, 3],
        "nvmlDeviceGetHandleByIndex(0)": [{"$raise": {"type": "NVMLError_GpuIsLost", "bases": ["NVMLError"],
                                                       "args": [CONSTANTS["NVML_ERROR_GPU_IS_LOST"]]}}],
    })
    assert [lib.nvmlDeviceGetCount(), lib.nvmlDeviceGetCount(), lib.nvmlDeviceGetCount()] == [2, 3, 3]
    with pytest.raises(base.NVMLError) as raised:
        lib.nvmlDeviceGetHandleByIndex(0)
    assert raised.value.value == CONSTANTS["NVML_ERROR_GPU_IS_LOST"]
    with pytest.raises(RuntimeError, match="no answer"):
        lib.nvmlDeviceGetName(1)


def test_merge_diff_is_the_patch_from_one_state_to_the_other() -> None:
    from rayaccel.hosts.fixtures import merge_patch

    base = {"files": {"/a": "1", "/b": "2"}, "env": {"X": "1"}}
    new = copy.deepcopy(base)
    new["files"]["/a"] = "9"
    del new["files"]["/b"]
    new["commands"] = {"tool": {"stdout": "x"}}
    patch = merge_diff(base, new)
    assert patch == {"files": {"/a": "9", "/b": None}, "commands": {"tool": {"stdout": "x"}}}
    assert merge_patch(base, patch) == new


def test_record_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for args, words in [(["record", "-o", str(tmp_path / "x.txt")], "ends in"),
                        (["record", "-o", str(tmp_path / "Bad Name.yaml")], "lower-case"),
                        (["record", "--fault", "x"], "--into"),
                        (["fixture", "expect", "nope/none"], "unknown fixture"),
                        (["record", "--plugin", "no-such-plugin"], "no-such-plugin")]:
        done = cli(*args, home=tmp_path, check=False)
        assert done.returncode == 2, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr, (args, done.stderr)


def test_anonymizer_is_consistent_keeps_shapes_and_versions() -> None:
    from rayaccel.hosts.anonymize import Anonymizer

    state = {"hostname": "lab-node-7",
             "files": {"/sys/class/net/eth0/address": "0c:42:a1:3b:9e:01\n",
                       "/etc/hosts": "10.1.2.3 lab-node-7\n169.254.169.254 metadata\n"},
             "commands": {"tool --serial SN12345": {"stdout": "uuid: 5e1f4c2a-1111-2222-3333-444455556666\n"
                                                              "serial: SN12345 on lab-node-7-ib0\n"
                                                              "driver version 2.19.64.0\n"}},
             "env": {"PEER": "10.1.2.3:2112"}}
    anonymizer = Anonymizer(b"k" * 32, ["lab-node-7", "SN12345"])
    out = anonymizer.data(state)
    text = json.dumps(out)
    for original in ("lab-node-7", "SN12345", "0c:42:a1:3b:9e:01", "5e1f4c2a-1111-2222-3333-444455556666", "10.1.2.3"):
        assert original not in text, original
    assert "169.254.169.254" in text and "2.19.64.0" in text  # the metadata address and versions stay
    host = out["hostname"]
    assert len(host) == len("lab-node-7") and f"{host}-ib0" in text and text.count(host) == 3
    ip = anonymizer.replaced["10.1.2.3"]
    assert out["env"]["PEER"] == f"{ip}:2112" and out["files"]["/etc/hosts"].startswith(ip)
    serial = anonymizer.replaced["SN12345"]
    assert re.fullmatch(r"[A-Z]{2}\d{5}", serial) and f"tool --serial {serial}" in out["commands"]
    mac = out["files"]["/sys/class/net/eth0/address"].strip()
    assert re.fullmatch(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}", mac)
    assert Anonymizer(b"k" * 32, ["lab-node-7", "SN12345"]).data(state) == out  # same key, same tokens
    assert Anonymizer(b"x" * 32, ["lab-node-7", "SN12345"]).data(state) != out
