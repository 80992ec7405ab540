"""A record a plugin built without validation is validated at the hook's boundary like any answer.

pydantic takes a model instance of the right class as valid as it stands, so a record built with
``model_construct`` or changed with ``model_copy(update=...)`` never ran its validators: a memory size left as text
(issue 46's report-writer crash), a CPU list the SDK refuses (held-out round 16's s3: a topology built with
``model_copy``). The manager turns each record back into data and validates that: a value its model would change is
used as validated, with a warning naming it; a value its model refuses is refused, the record left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rayaccel import Affinity, Device, Topology, hookimpl
from rayaccel.catalog import load_catalog
from rayaccel.plugins.manager import PluginManager
from rayaccel_testplugins import acme


class _Answers:
    PLUGIN = "acme"

    def __init__(self, **answers: Any) -> None:
        self._answers = answers

    @hookimpl
    def rayaccel_family(self) -> Any:
        return acme.rayaccel_family()

    @hookimpl
    def rayaccel_discover(self, host: Any) -> Any:
        return self._answers["discover"]

    @hookimpl
    def rayaccel_topology(self, host: Any, devices: Any) -> Any:
        return self._answers["topology"]

    @hookimpl
    def rayaccel_sku_catalog(self) -> Any:
        return self._answers["catalog"]


def _device(**fields: Any) -> Device:
    return Device(**{"id": "ACME-0", "index": 0, "product_name": "ACME X1", "memory_mib": 65536, **fields})


def _manager(**answers: Any) -> PluginManager:
    manager = PluginManager(autoload=False)
    assert manager.register(_Answers(**answers), "acme"), manager.problems
    return manager


def test_a_value_its_model_changes_is_used_validated_and_named() -> None:
    built = Device.model_construct(**{**dict(_device()), "memory_mib": "65536"})
    problems: list[Any] = []
    [device] = _manager(discover=[built]).answer("acme", "rayaccel_discover", problems, host=None)
    assert device.memory_mib == 65536 and isinstance(device.memory_mib, int)
    [warned] = problems
    assert (warned.code, warned.severity) == ("unvalidated-record", "warning")
    assert "0.memory_mib is '65536' (str), not 65536" in warned.message


def test_a_value_its_model_refuses_is_refused_though_the_record_was_copied_with_it() -> None:
    """held-out round 16's s3: a topology whose affinity was changed with model_copy(update=...), a CPU list the
    SDK's own Affinity refuses (its text never ran the check)."""
    good = Topology(affinities=[Affinity(device="ACME-0", numa_node=0, cpus="0-15")])
    copied = good.model_copy(update={"affinities": [good.affinities[0].model_copy(update={"cpus": "16-15"})]})
    problems: list[Any] = []
    topology = _manager(topology=copied).answer("acme", "rayaccel_topology", problems, host=None,
                                                devices=[_device()])
    assert topology.affinities == []  # the spec's default: the malformed answer is not used
    assert [p.code for p in problems] == ["invalid-record"] and "cpus" in problems[0].message, problems


def test_records_built_by_their_constructors_pass_unchanged_and_unsaid() -> None:
    device, problems = _device(), []
    assert _manager(discover=[device]).answer("acme", "rayaccel_discover", problems, host=None) == [device]
    assert problems == []


def test_a_catalog_keeps_the_file_it_was_loaded_from() -> None:
    path = Path(acme.__file__).parent / "acme-skus.yaml"
    catalog = _manager(catalog=load_catalog(path)).answer("acme", "rayaccel_sku_catalog", [])
    assert catalog is not None and catalog.source_path == str(path)


def test_a_field_left_to_its_default_stays_unset() -> None:
    """Checks tell a declaration's own value from the record's default (RAC272: "reach='cluster' (TransportSpec's
    default)"): validating a record again keeps which fields the plugin set."""
    from rayaccel import TransportSpec

    spec = TransportSpec(name="ACME_SHM", devices=["cpu"], manager_class="rayaccel.transports.shared_memory:"
                         "SharedMemoryTransport")

    class Declares(_Answers):
        @hookimpl
        def rayaccel_transports(self) -> Any:
            return [spec]

    manager = PluginManager(autoload=False)
    assert manager.register(Declares(), "acme"), manager.problems
    [said] = manager.answer("acme", "rayaccel_transports", [])
    assert said == spec and "reach" not in said.model_fields_set
