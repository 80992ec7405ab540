"""TPU mutants that label the node's worker id otherwise than Ray's manager once GKE's ``TPU_WORKER_ID`` stands beside
the metadata server's ``agent-worker-number`` (held-out round 6), two shapes: the metadata server read first, and
the id taken from the TPU VM's host name (``t1v-n-<id>-w-<worker>``), the variable never read. RAC270's
``labels-as-ray-reads-them`` kills both; no fixture sets both.

Each claims TPU with ``TPU_VISIBLE_CHIPS`` over the ACME machine, recorded on a TPU VM: its host name is the VM's and
its metadata server answers the worker number as GCE does (the reference TPU fixtures' keys). Not in the corpus's
manager (one claimant of the variable per manager, RAC104: c-tpu-per-chip-ignored claims it there): graded alone
by tests/conformance/test_conformance_heldout6.py (``TPU_LABEL_MUTANTS``).
"""

from __future__ import annotations

import re

from rayaccel import FamilyDeclaration, FamilyInventory, Host, HttpUnavailable
from rayaccel_testplugins.corpus import read_machine, write_machine
from rayaccel_testplugins.corpus_ray_parity import TpuPerChipIgnored

METADATA = "http://metadata.google.internal/computeMetadata/v1/instance/attributes/"
HEADERS = {"Metadata-Flavor": "Google"}
WORKER_LABEL = "ray.io/tpu-worker-id"
#: A TPU VM's host name (as reference_plugins/tpu's v5e-8 records it): the worker number is its last part.
HOSTNAME = "t1v-n-5e8a0c71-w-0"
_WORKER_IN_HOSTNAME = re.compile(r"-w-(\d+)$")


def on_a_tpu_vm(plugin: str) -> None:
    """The plugin's fixture as recorded on worker 0 of a TPU VM (written atomically, once)."""
    data = read_machine(plugin)
    if data["host"].get("http"):
        return
    data["host"]["hostname"] = HOSTNAME
    data["host"]["http"] = {METADATA + "agent-worker-number": {"body": "0", "require_headers": HEADERS}}
    data["expected"]["labels"][WORKER_LABEL] = "0"
    write_machine(plugin, "acme-4", data)


def metadata_worker(host: Host) -> str | None:
    try:
        response = host.http_get(METADATA + "agent-worker-number", headers=HEADERS, timeout=1.0)
    except HttpUnavailable:
        return None
    return response.body.strip() if response.status == 200 and response.body.strip().isdigit() else None


class _OnATpuVm(TpuPerChipIgnored):
    """A TPU family over the ACME machine on a TPU VM, declaring Ray's worker label (its variable and bounds as
    Ray's manager writes them while Ray's settings are unset, as c-tpu-per-chip-ignored's)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.family = FamilyDeclaration.model_validate({**self.family.model_dump(), "ray_labels": [WORKER_LABEL]})
        on_a_tpu_vm(name)


class TpuWorkerFromMetadataFirst(_OnATpuVm):
    DEFECT = ("the worker id is read from the metadata server first and TPU_WORKER_ID only where it does not answer: "
              "on GKE the pod's worker index, which Ray labels the node with, is lost to the VM's")
    KILLED_BY = ("RAC270", "invariant labels-as-ray-reads-them")

    def rayaccel_labels(self, host: Host, inventory: FamilyInventory) -> dict[str, str]:
        worker = metadata_worker(host) or host.getenv("TPU_WORKER_ID")
        return {**self.labels(inventory), **({WORKER_LABEL: worker} if worker else {})}


class TpuWorkerFromHostName(_OnATpuVm):
    DEFECT = ("the worker id is the TPU VM's host name's last part ('-w-0'): TPU_WORKER_ID, which Ray reads first, "
              "is never read")
    KILLED_BY = ("RAC270", "invariant labels-as-ray-reads-them")

    def rayaccel_labels(self, host: Host, inventory: FamilyInventory) -> dict[str, str]:
        found = _WORKER_IN_HOSTNAME.search(host.name)
        return {**self.labels(inventory), **({WORKER_LABEL: found.group(1)} if found else {})}


#: Graded alone, each by its own manager (one claimant of TPU_VISIBLE_CHIPS per manager).
TPU_LABEL_MUTANTS = (TpuWorkerFromMetadataFirst, TpuWorkerFromHostName)
