"""RAC301, the certified transport contract: a declared transport that runs here moves tensors between two real
Ray actors (in the conformance run's shared cluster); one that cannot run here is skipped with the reason."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rayaccel import hookimpl
from rayaccel.inventory.transport_paths import REFERENCE
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import TransportSpec
from rayaccel.support.polling import wait_for
from rayaccel.transports.shared_memory import segment_paths
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.ownership import RAY_TRANSPORT_CLASSES
from rayaccel_conformance.harness.raycluster import shutdown_shared_cluster
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed, CheckSkipped
from rayaccel_testplugins import acme

pytest.importorskip("torch", reason="the transports need torch: pip install 'rayaccel[rdt]'")
all_checks()  # registers the checks


class _Acme:
    """The acme test plugin, declaring the given transports."""

    def __init__(self, *specs: TransportSpec) -> None:
        self.specs = list(specs)

    def __getattr__(self, name: str) -> Any:
        return getattr(acme, name)

    @hookimpl
    def rayaccel_transports(self) -> list[TransportSpec]:
        return self.specs


def subject_for(plugin: object) -> Subject:
    manager = PluginManager(autoload=False)
    for hook in ("rayaccel_family", "rayaccel_discover", "rayaccel_fixture_dirs"):
        setattr(plugin, hook, getattr(acme, hook))
    assert manager.register(plugin, "acme")
    return Subject("acme", manager)


@pytest.fixture(scope="module", autouse=True)
def _cluster() -> Iterator[None]:
    yield
    shutdown_shared_cluster()


def test_rac301_moves_tensors_through_a_runnable_transport_between_two_actors() -> None:
    evidence = CHECKS["RAC301"].run(subject_for(_Acme(REFERENCE)), None)
    assert evidence == ["RAYACCEL_SHM: transfer 1: 4 tensors, bytes identical, ref freed; aborted transfer: the "
                        "receive failed, the receiver holds no more descriptors or threads than before; "
                        "transfer 2: 4 tensors, bytes identical, ref freed; 6 more transfers: the receiver holds no "
                        "descriptor or thread per transfer; killed sender: the receive failed naming "
                        "the transport, the receiver holds no more descriptors or threads than before; "
                        "transfer 3: 4 tensors, bytes identical, ref freed"]
    # The freed refs' segments are gone (garbage collection runs asynchronously on the sender).
    wait_for(segment_paths, lambda left: not left, timeout=60, what="no rayaccel-rdt-* left in /dev/shm")


def test_rac301_skips_what_cannot_run_here_and_never_passes_an_empty_declaration() -> None:
    cuda = TransportSpec(name="NCCL", devices=["cuda"], builtin_in_ray=True, link_kinds=["nvlink"],
                         manager_class="ray.experimental.rdt.collective_tensor_transport:NCCLTensorTransport")
    with pytest.raises(CheckSkipped, match="NCCL not run here: it moves cuda tensors and this machine has no such"):
        CHECKS["RAC301"].run(subject_for(_Acme(cuda)), None)
    with pytest.raises(CheckSkipped, match="declares no tensor transports"):
        CHECKS["RAC301"].run(subject_for(_Acme()), None)



def test_rac301_fails_a_transport_that_corrupts_bytes() -> None:
    spec = TransportSpec(name="ACME_CORRUPT", devices=["cpu"], one_sided=True,
                         manager_class="rayaccel_testplugins.corrupt_transport:CorruptingTransport")
    with pytest.raises(CheckFailed, match="ACME_CORRUPT: RuntimeError: transfer 1: tensors \\[0\\] arrived with other"):
        CHECKS["RAC301"].run(subject_for(_Acme(spec)), None)


def test_rac305_knows_ray_own_transports_as_ray_registers_them() -> None:
    from ray.experimental.rdt import util as rdt_util

    rdt_util._ensure_default_transports_registered()  # type: ignore[no-untyped-call]
    for name, (manager_class, devices) in RAY_TRANSPORT_CLASSES.items():
        info = rdt_util.transport_manager_info[name]
        cls = info.transport_manager_class
        assert f"{cls.__module__}:{cls.__name__}" == manager_class, name
        assert tuple(info.devices) == devices, name


def test_rac305_accepts_ray_transports_declared_as_ray_registers_them_and_refuses_them_taken_over() -> None:
    nccl = TransportSpec(name="NCCL", devices=["cuda"], builtin_in_ray=True, link_kinds=["pcie"],
                         manager_class=RAY_TRANSPORT_CLASSES["NCCL"][0])
    assert CHECKS["RAC305"].run(subject_for(_Acme(nccl)), None) == [
        "NCCL: Ray (ray.experimental.rdt.collective_tensor_transport:NCCLTensorTransport; cuda)"]
    own_gloo = TransportSpec(name="GLOO", devices=["cpu", "acme"], builtin_in_ray=True,
                             manager_class=f"{__name__}:_Acme")
    with pytest.raises(CheckFailed, match=r"transport GLOO is Ray's own, whose class is .*GLOOTensor") as e:
        CHECKS["RAC305"].run(subject_for(_Acme(own_gloo)), None)
    assert "moves cpu tensors only, not acme" in str(e.value.args)
    with pytest.raises(CheckSkipped, match="not applicable: the plugin declares no tensor transports"):
        CHECKS["RAC305"].run(subject_for(_Acme()), None)


def test_rac305_refuses_another_vendor_s_transport_and_a_class_from_another_package() -> None:
    rccl = TransportSpec(name="RCCL", devices=["cuda"], manager_class="rayaccel_amd.transport:RCCLTensorTransport")
    with pytest.raises(CheckFailed, match="transport RCCL is AMD's, not ACME Corp's") as e:
        CHECKS["RAC305"].run(subject_for(_Acme(rccl)), None)
    assert "lives in rayaccel_amd, not in the plugin's own package" in str(e.value.args)
    fabric = TransportSpec(name="NVLINK_P2P", devices=["acme"], manager_class=f"{__name__}:_Acme")
    with pytest.raises(CheckFailed, match="transport NVLINK_P2P is NVIDIA's"):
        CHECKS["RAC305"].run(subject_for(_Acme(fabric)), None)
    own = TransportSpec(name="ACME_SHM", devices=["cpu"], one_sided=True, manager_class=f"{__name__}:_Acme")
    assert CHECKS["RAC305"].run(subject_for(_Acme(own)), None) == [f"ACME_SHM: own ({__name__}:_Acme; cpu)"]
