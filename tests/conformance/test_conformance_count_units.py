"""Held-out grading, round 9 (issue 46, lane Y): a count off by a per-chip factor names it, with the machine's word.

The TPU wrapper ``p2`` left v6e out of the single-core generations: a v6e-256 slice's 256 chips counted as 128, which
RAC201 said only as ``label rayaccel.io/scale-up-domain-size: expected '256', got '128'``. A whole count 1/2, 1/4 or
1/8 (or 2, 4, 8 times) of the one due is said with that ratio (which per-unit factor gave it, the numbers do not
tell: held-out round 17's lane J14); where the machine states the count due two ways that agree (its topology's
product and the count its name ends in) its chips hold one unit each, so no per-chip factor applies:
:func:`value_relations.count_mixup` says so, naming both.
"""

from __future__ import annotations

from mutant_grading import evidence, failure, mutant

from rayaccel_conformance.checks.value_relations import count_mixup
from rayaccel_testplugins.corpus_pod_counts import MACHINE, PodCoresTakenForCards, PodFromTopology

TPU_ENV = "http://metadata.google.internal/computeMetadata/v1/instance/attributes/tpu-env"


def test_a_pod_of_single_core_cards_counted_as_cores_names_the_factor() -> None:
    """Another shape than p2's GCE metadata: a driver's pod files, the name's count halved."""
    said = failure(mutant(PodCoresTakenForCards), "RAC201", MACHINE)
    assert "label rayaccel.io/scale-up-domain-size: expected '16', got '8'" in said, said
    assert ("label rayaccel.io/scale-up-domain-size: 8 is half the 16 due; the machine states 16 twice, its "
            "topology 4x4 (file "
            "/sys/class/acme/pod/topology) and its name acme-r1-16 (file /sys/class/acme/pod/name): its chips hold "
            "one unit each (the name counts chips, as the topology does), so no per-chip factor of 2 applies to this "
            "machine") in said, said


def test_the_pod_sized_by_its_topology_passes() -> None:
    assert "as expected" in evidence(PodFromTopology("c-pod-from-topology"), "RAC201", MACHINE)


def test_tpu_metadata_names_the_single_core_generation() -> None:
    """p2's machine: v6e-256's tpu-env says TOPOLOGY 16x16 and ACCELERATOR_TYPE v6e-256."""
    state = {"http": {TPU_ENV: {"body": "ACCELERATOR_TYPE: 'v6e-256'\nTOPOLOGY: '16x16'\n"}}}
    said = count_mixup(128, 256, state) or ""
    assert f"the machine states 256 twice, its topology 16x16 ({TPU_ENV}) and its name v6e-256 ({TPU_ENV})" in said
    # A two-core generation (v4-8: 2x2x1 is 4 chips, 8 cores): the two counts disagree, so no factor is ruled out.
    said = count_mixup(8, 4, {"http": {TPU_ENV: {"body": "ACCELERATOR_TYPE: 'v4-8'\nTOPOLOGY: '2x2x1'\n"}}}) or ""
    assert said.startswith("8 is twice the 4 due; the machine states 4: topology 2x2x1") and "factor" not in said, said
    assert count_mixup(3, 4, state) is None and count_mixup(4, 4, state) is None
