"""Held-out grading, round 11 (issue 46, lane F2): a transport's class answers the name it is declared under
(``invariant named-as-declared``, RAC305).

The command-csv bake ``c3`` declared the template's transport as ``HARTFELL_SHM`` and dropped its class's
``tensor_transport_backend`` override, so the class answered the SDK's ``RAYACCEL_SHM``: transfers worked (RAC272,
RAC301) while its errors and logs named another transport. Ray's own transports each answer the name they register
under, and the method's contract says Ray matches a transport by it; Ray's collective transport alone uses the answer
as the backend its groups are looked up by, so there it must be a backend ``ray.util.collective`` knows. Three corpus
shapes fail; Ray's own declarations, the AMD plugin's RCCL (a collective class answering NCCL) and the template's
class pass.
"""

from __future__ import annotations

import pytest
from mutant_grading import graded, mutant

import rayaccel_amd.plugin
from rayaccel import TransportSpec
from rayaccel.inventory.transport_paths import RAY_TRANSPORTS
from rayaccel_conformance.checks.certified import backend_name_problems
from rayaccel_conformance.checks.ownership import RAY_TRANSPORT_CLASSES
from rayaccel_conformance.registry import CHECKS, CheckFailed, NotApplicable
from rayaccel_testplugins import corpus
from rayaccel_testplugins.corpus_transport_names import (
    CollectiveNamedAsDeclared,
    TransportNamedAsReference,
    TransportNamedAsSibling,
)


def _rac305(shape: type[corpus.Healthy]) -> str:
    """The message RAC305 (a check of the plugin, not of a fixture) fails the corpus plugin of class ``shape`` with."""
    subject = graded(mutant(shape))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC305"].function(subject)
    return str(failed.value)


def test_a_class_left_with_the_sdks_name_is_named() -> None:
    text = _rac305(TransportNamedAsReference)
    assert ("invariant named-as-declared: transport ACME_SHM's class "
            "rayaccel_testplugins.corpus_transport_names:AcmeShmTransport answers tensor_transport_backend() "
            "'RAYACCEL_SHM' (the SDK's reference shared-memory transport" in text), text
    assert "override tensor_transport_backend() to return 'ACME_SHM'" in text, text


def test_a_class_left_with_its_siblings_name_is_named() -> None:
    text = _rac305(TransportNamedAsSibling)
    assert ("transport ACME_SPOOL_BULK's class rayaccel_testplugins.corpus_transport_names:AcmeSpoolBulkTransport "
            "answers tensor_transport_backend() 'ACME_SPOOL' (a transport plugin c-transport-named-as-sibling "
            "declares)" in text), text
    assert "ACME_SPOOL'" not in text.split("ACME_SPOOL_BULK's class")[0], text  # the first transport is right


def test_a_collective_class_answering_no_backend_is_named() -> None:
    text = _rac305(CollectiveNamedAsDeclared)
    assert ("transport ACME_COLLECTIVE's class rayaccel_testplugins.corpus_transport_names:AcmeCollectiveTransport "
            "is Ray's collective transport" in text and "answers 'ACME_COLLECTIVE', no backend ray.util.collective "
            "knows" in text), text


@pytest.mark.parametrize("name", RAY_TRANSPORTS)
def test_each_of_rays_own_transports_answers_the_name_it_registers(name: str) -> None:
    # RAY_TRANSPORT_CLASSES is Ray's registry as Ray fills it (test_conformance_transports holds it to Ray's).
    spec = TransportSpec(name=name, devices=["cpu"], builtin_in_ray=True, manager_class=RAY_TRANSPORT_CLASSES[name][0])
    assert backend_name_problems(spec, {}, set()) == []


def test_a_collective_class_answering_the_backend_its_groups_use_passes() -> None:
    specs = rayaccel_amd.plugin.rayaccel_transports()
    rccl = next(s for s in specs if s.name == "RCCL")
    assert backend_name_problems(rccl, {}, set()) == []
    # The same class under a backend a plugin declares (registered by the bridge in every worker) passes too.
    own = rccl.model_copy(update={"name": "ACME_COLLECTIVE", "manager_class":
                                  "rayaccel_testplugins.corpus_transport_names:AcmeCollectiveTransport"})
    assert backend_name_problems(own, {}, {"ACME_COLLECTIVE"}) == []
    assert backend_name_problems(own, {}, set()), "a collective class answering a name no backend has passes"


def test_the_templates_class_and_the_healthy_control_pass() -> None:
    from rayaccel import SharedMemoryTransport

    spec = TransportSpec(name="RAYACCEL_SHM", devices=["cpu"], one_sided=True, reach="node",
                         manager_class="rayaccel.transports.shared_memory:SharedMemoryTransport")
    assert SharedMemoryTransport.__new__(SharedMemoryTransport).tensor_transport_backend() == "RAYACCEL_SHM"
    assert backend_name_problems(spec, {}, set()) == []
    subject = graded(mutant(corpus.Healthy))
    with pytest.raises(NotApplicable):
        CHECKS["RAC305"].function(subject)
