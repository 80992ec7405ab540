"""Simulated-host fixtures: what a machine's vendor interfaces answer, plus the expected outcome.

A fixture is one YAML or JSON file, validated by the shipped JSON Schema
(``rayaccel/schemas/fixture.schema.json``) and then by the :class:`Fixture` model. Faults are JSON
merge patches (RFC 7386) over the host state, so a fault changes only what it names: one device's ECC
counter, one command's output.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol

from pydantic import Field, ValidationError, model_validator

from rayaccel.errors import FixtureError
from rayaccel.files.checked import load_checked
from rayaccel.hosts.expectations import Expected, FaultExpectation
from rayaccel.records import Record
from rayaccel.schemas import describe_validation_error, validate_document

if TYPE_CHECKING:
    import yaml

FIXTURE_SCHEMA_ID = "rayaccel-fixture/1"
FIXTURE_SUFFIXES = (".yaml", ".yml", ".json")
#: A fixture's name (its file's stem, the part after ``plugin/`` in a ref): cloud instance types are natural
#: names, so dots are allowed (``neuron/trn2.48xlarge``).
FIXTURE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def fixture_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a fixture (None when it can)."""
    if FIXTURE_NAME.fullmatch(name) and ".." not in name:
        return None
    return (f"{name[:70]!r} cannot name a fixture: use at most 64 lower-case letters, digits, '.', '_' and '-', "
            "starting with a letter or digit (e.g. dgx-h100-lab or trn2.48xlarge)")


class SimCommand(Record):
    """What a command prints. ``hang`` makes it behave like a tool that never returns."""

    stdout: str = ""
    stderr: str = ""
    returncode: int = 0
    hang: bool = False


class SimHttp(Record):
    status: int = 200
    body: str = ""
    require_headers: dict[str, str] = Field(default_factory=dict,
                                            description="Headers without which the server answers 403")
    unreachable: bool = False
    hang: bool = Field(False, description="The server accepts the request and never answers (the caller's "
                                          "timeout ends the wait)")


class HostState(Record):
    """The machine as its vendor interfaces see it."""

    hostname: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    process_env: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = Field(
        default_factory=list, description="Names of env variables every process on the node has (a GKE pod's "
                                          "TPU_* variables): a simulated Ray node starts with them")
    files: dict[str, str] = Field(default_factory=dict,
                                  description="Absolute path -> content. A key ending in '/' is an empty dir")
    commands: dict[str, SimCommand] = Field(default_factory=dict,
                                            description="Command line (shlex-joined argv) -> its answer")
    http: dict[str, SimHttp] = Field(default_factory=dict, description="URL -> response")
    libraries: dict[str, Any] = Field(default_factory=dict,
                                      description="Vendor library name -> data for its simulated adapter")

    @model_validator(mode="after")
    def _process_env_is_env(self) -> HostState:
        # The node's processes and the plugin must see one machine: a name here is a variable of ``env``.
        missing = [name for name in self.process_env if name not in self.env]
        if missing:
            raise ValueError(f"process_env names {missing}, which env does not set")
        return self


class Fault(Record):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str
    kind: Literal["device-lost", "fatal-error", "ecc", "tool-hang", "tool-garbage", "degraded", "other"]
    patch: dict[str, Any] = Field(description="JSON merge patch over the host state")
    expected: FaultExpectation


class Perturbation(Record):
    """A variant of the host the conformance suite cannot derive itself, in the vendor's own format: the
    suite knows what the inventory must do under each kind (RAC210, RAC211), the fixture says how."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str
    kind: Literal["reorder", "lose", "change"] = Field(
        description="reorder: the vendor lists the same devices in another order (same ids, units, SKUs, "
                    "health and links); lose: the devices named are gone (named nowhere, the others "
                    "unchanged); change: the devices named report other values (only their facts change)")
    devices: list[str] = Field(default_factory=list, description="Ids of the devices lost or changed")
    patch: dict[str, Any] = Field(description="JSON merge patch over the host state")

    @model_validator(mode="after")
    def _names_devices(self) -> Perturbation:
        if self.kind != "reorder" and not self.devices:
            raise ValueError(f"perturbation {self.name}: a '{self.kind}' perturbation names the devices it "
                             "loses or changes (devices: [id, ...])")
        return self


class Fixture(Record):
    schema_: Literal["rayaccel-fixture/1"] = Field(alias="schema")
    plugin: str
    name: str
    description: str
    source: str | None = Field(None, description="Where the recorded answers come from")
    host: HostState
    expected: Expected
    faults: list[Fault] = Field(default_factory=list)
    perturbations: list[Perturbation] = Field(
        default_factory=list, description="Variants of the host for the conformance suite's invariants")

    model_config = Record.model_config | {"populate_by_name": True}

    @property
    def ref(self) -> str:
        return f"{self.plugin}/{self.name}"

    def fault(self, name: str) -> Fault:
        for fault in self.faults:
            if fault.name == name:
                return fault
        raise FixtureError(f"fixture {self.ref} declares no fault {name!r}; it has: "
                           f"{', '.join(f.name for f in self.faults) or 'none'}")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: dicts merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def apply_faults(fixture: Fixture, fault_names: Iterable[str]) -> HostState:
    state: dict[str, Any] = fixture.host.model_dump(mode="json")
    for name in fault_names:
        state = merge_patch(state, fixture.fault(name).patch)
    try:
        return HostState.model_validate(state)
    except ValidationError as e:
        raise FixtureError(f"fixture {fixture.ref}: faults {list(fault_names)} give an invalid host state: "
                           f"{describe_validation_error(e, limit=1)}") from None


def parse_fixture(data: Any, origin: str, schema_checked: bool = False) -> Fixture:
    """Validate fixture data (already parsed) against the JSON Schema (unless ``schema_checked``), then the model."""
    return validate_document(data, Fixture, schema="fixture", what="fixture", origin=origin, error=FixtureError,
                             schema_checked=schema_checked)


def load_fixture(path: str | Path) -> Fixture:
    path = Path(path)
    data = load_checked(path, "fixture", "fixture", FixtureError)  # parsed and schema-checked once per content
    fixture = parse_fixture(data, str(path), schema_checked=True)
    if path.stem != fixture.name:
        raise FixtureError(f"{path}: the file is named {path.stem!r} but declares name {fixture.name!r}; "
                           "rename one so they match")
    return fixture


class FixtureDirectories(Protocol):
    """Whoever knows the plugins and where each keeps its fixtures (the plugin manager: the hosts sit below the
    plugins and name none of their machinery)."""

    def plugin_names(self) -> list[str]: ...

    def fixture_dirs(self, plugin: str) -> list[str]: ...


def installed_fixtures(manager: FixtureDirectories) -> dict[str, Path]:
    """Fixture ref (``plugin/name``) -> file, for every active plugin's fixture directories."""
    found: dict[str, Path] = {}
    for plugin in manager.plugin_names():
        for directory in manager.fixture_dirs(plugin):
            for path in sorted(Path(directory).glob("*")):
                if path.suffix in FIXTURE_SUFFIXES:
                    found[f"{plugin}/{path.stem}"] = path
    return found


def resolve_fixture(ref_or_path: str, manager: FixtureDirectories) -> Fixture:
    """A fixture by ``plugin/name`` or by file path; a clear FixtureError otherwise."""
    path = Path(ref_or_path)
    if path.suffix in FIXTURE_SUFFIXES and os.path.lexists(path):  # False for a name too long
        return load_fixture(path)
    known = installed_fixtures(manager)
    if ref_or_path in known:
        fixture = load_fixture(known[ref_or_path])
        plugin = ref_or_path.split("/", 1)[0]
        if fixture.plugin != plugin:
            raise FixtureError(f"{known[ref_or_path]}: shipped by plugin {plugin!r} but declares "
                               f"plugin {fixture.plugin!r}")
        return fixture
    if path.suffix in FIXTURE_SUFFIXES:
        return load_fixture(path)  # says why it cannot be read: missing, name too long, ...
    hint = ", ".join(sorted(known)[:8]) + (" ..." if len(known) > 8 else "")
    raise FixtureError(f"unknown fixture {ref_or_path!r}: give plugin/name or a fixture file path "
                       f"(run 'rayaccel fixtures' to list them; installed: {hint or 'none'})")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value.rstrip("\n") else None)


def fixture_text(data: dict[str, Any], suffix: str) -> str:
    """Fixture data as the text of a file with ``suffix``: JSON, else YAML with recorded output as literal blocks."""
    if suffix == ".json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    import yaml  # only writing YAML needs it: reading a fixture does not (rayaccel.files.checked)

    class FixtureDumper(yaml.SafeDumper):
        """Multi-line strings (recorded command output) as literal blocks, as people write fixtures."""

    FixtureDumper.add_representer(str, _represent_str)
    return yaml.dump(data, Dumper=FixtureDumper, sort_keys=False, allow_unicode=True, width=120)
