"""TPU mutants that label the node's pod type otherwise than Ray's manager gives it on the same machine (held-out
round 18's ``p1``), two shapes: the metadata server's accelerator type respelt as Google's marketing name
(``v5litepod`` written ``v5e``), and a pod type made from the host's own chips (a worker of a ``v5p-16`` slice
labelled ``v5p-8``). Each fixture expects the code's label, so only RAC270's ``labels-as-ray-gives-them`` kills
them: Ray's TPU manager sets ``ray.io/tpu-pod-type`` itself, from the accelerator type it reads
(ray/_private/accelerators/tpu.py, ``get_current_node_tpu_pod_type``).

Each claims TPU with ``TPU_VISIBLE_CHIPS`` over the ACME machine (4 chips), recorded on a TPU VM whose metadata
server answers ``accelerator-type`` as GCE does (reference_plugins/tpu's v5e-8 and v5p-16-worker0 record
``v5litepod-8`` and ``v5p-16``). Not in the corpus's manager (one claimant of the variable per manager, RAC104):
graded alone by tests/conformance/test_conformance_ray_pod_types.py (``TPU_POD_TYPE_MUTANTS``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from rayaccel import (
    CloudHint,
    Device,
    FamilyDeclaration,
    FamilyInventory,
    Host,
    HttpUnavailable,
    ResourceContribution,
    Topology,
    report_problem,
)
from rayaccel_testplugins.corpus import read_machine, write_machine
from rayaccel_testplugins.corpus_ray_labels import HEADERS, HOSTNAME, METADATA
from rayaccel_testplugins.corpus_ray_parity import TpuPerChipIgnored

POD_TYPE_LABEL = "ray.io/tpu-pod-type"
#: Where a fixture or catalog states the accelerator type (the expectation, the catalog's SKU, Ray's label).
TYPE_KEYS = ("accelerator_type", "ray.io/accelerator-type")
PER_CHIP, BOUNDS, HOST_BOUNDS = "RAY_TPU_RESOURCE_PER_CHIP", "TPU_CHIPS_PER_HOST_BOUNDS", "TPU_HOST_BOUNDS"
#: ``v<generation>-<count>`` as GCE's metadata server answers a TPU VM's accelerator type.
_ACCELERATOR_TYPE = re.compile(r"^(v\d+[a-z]*)-(\d+)$")


def accelerator_type(host: Host) -> str | None:
    """The metadata server's ``accelerator-type`` (None where it does not answer one; a server that fails is
    reported, as the TPU plugin reports it)."""
    try:
        response = host.http_get(METADATA + "accelerator-type", headers=HEADERS, timeout=1.0)
    except HttpUnavailable as e:
        report_problem("metadata-unavailable", f"the GCE metadata server did not answer ({e}): ray.io/tpu-pod-type "
                       "left out")
        return None
    if response.status not in (200, 404):
        report_problem("metadata-unavailable", f"GET {METADATA}accelerator-type: HTTP {response.status}: "
                       "ray.io/tpu-pod-type left out")
    return response.body.strip() if response.status == 200 and response.body.strip() else None


def ray_type(accelerator: str) -> str:
    """The accelerator type Ray's TPU manager answers for a pod type (``TPU-<generation>``)."""
    return "TPU-" + accelerator.split("-")[0].upper()


def _retyped(data: Any, old: str, new: str) -> Any:
    """``data`` (a fixture's expectations) with the accelerator type ``old`` written ``new`` everywhere."""
    if isinstance(data, dict):
        return {(f"accelerator_type:{new}" if k == f"accelerator_type:{old}" else k):
                (new if k in TYPE_KEYS and v == old else _retyped(v, old, new)) for k, v in data.items()}
    if isinstance(data, list):
        return [_retyped(v, old, new) for v in data]
    return data


def units_per_chip() -> int:
    """Ray's ``RAY_TPU_RESOURCE_PER_CHIP`` read with Ray's rule (a positive whole number); one that is not is
    reported and 1 used, as without it."""
    value = os.environ.get(PER_CHIP)
    if value is None:
        return 1
    if not value.isdecimal() or int(value) < 1:
        report_problem("malformed-setting", f"{PER_CHIP}={value!r} is not a positive whole number: 1 used")
        return 1
    return int(value)


class _OnATpuSlice(TpuPerChipIgnored):
    """A TPU family over the ACME machine on worker 0 of a TPU VM of ``ACCELERATOR_TYPE``, declaring Ray's pod-type
    label, its fixture expecting the code's label; ``TPU_VISIBLE_CHIPS``, its bounds and the units of each chip as
    Ray's TPU manager writes, reads and numbers them under ``RAY_TPU_RESOURCE_PER_CHIP``."""

    ACCELERATOR_TYPE = ""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.family = FamilyDeclaration.model_validate({**self.family.model_dump(), "ray_labels": [POD_TYPE_LABEL]})
        data = read_machine(name)
        if not data["host"].get("http"):
            data["host"]["hostname"] = HOSTNAME
            data["host"]["http"] = {METADATA + "accelerator-type": {"body": self.ACCELERATOR_TYPE,
                                                                    "require_headers": HEADERS}}
            data["expected"]["labels"][POD_TYPE_LABEL] = self.pod_type(self.ACCELERATOR_TYPE, 4)
            for key in ("expected", "faults"):
                data[key] = _retyped(data.get(key), "R1", ray_type(self.ACCELERATOR_TYPE))
            write_machine(name, "acme-4", data)

    def pod_type(self, accelerator: str, chips: int) -> str:
        raise NotImplementedError

    def rayaccel_discover(self, host: Host) -> list[Device]:
        per = units_per_chip()
        return [d.model_copy(update={"units": [str(d.index * per + i) for i in range(per)] if per > 1 else []})
                for d in super().rayaccel_discover(host)]

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        per = int(v) if (v := os.environ.get(PER_CHIP, "1")).isdecimal() and int(v) >= 1 else 1
        chips = [c.strip() for c in value.split(",") if c.strip()]
        return chips if per == 1 else [str(int(c) * per + i) for c in chips for i in range(per)]

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        per = int(v) if (v := os.environ.get(PER_CHIP, "1")).isdecimal() and int(v) >= 1 else 1
        chips = list(dict.fromkeys(int(u) // per for u in unit_ids))  # in the order given, as Ray writes them
        bounds = {1: {BOUNDS: "1,1,1", HOST_BOUNDS: "1,1,1"}, 2: {BOUNDS: "1,2,1", HOST_BOUNDS: "1,1,1"}}
        return {self.family.visible_devices_env_var: ",".join(str(c) for c in chips), **bounds.get(len(chips), {})}

    def rayaccel_resources(self, host: Host, devices: list[Device], topology: Topology) -> ResourceContribution:
        # The type Ray's TPU manager answers for the slice (it adds accelerator_type:<type> itself)
        return ResourceContribution(accelerator_type=ray_type(self.ACCELERATOR_TYPE) if devices else None,
                                    extra=self.extra(devices))

    def catalog_data(self) -> dict[str, Any]:
        return _retyped(super().catalog_data(), "R1", ray_type(self.ACCELERATOR_TYPE))  # type: ignore[no-any-return]

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        found = super().hint(provider, instance_type)
        return found.model_copy(update={"accelerator_type": ray_type(self.ACCELERATOR_TYPE)}) if found else None

    def rayaccel_labels(self, host: Host, inventory: FamilyInventory) -> dict[str, str]:
        found = accelerator_type(host)
        pod = self.pod_type(found, len(inventory.devices)) if found else None
        return {**self.labels(inventory), **({POD_TYPE_LABEL: pod} if pod else {})}


class TpuPodTypeAsCloudNamesIt(_OnATpuSlice):
    DEFECT = ("the pod type respelt as Google's docs name the generation ('v5litepod-4' labelled 'v5e-4'): Ray labels "
              "the node with the accelerator type as the metadata server answers it, and selectors written for Ray's "
              "label match no node")
    KILLED_BY = ("RAC270", "invariant labels-as-ray-gives-them")
    ACCELERATOR_TYPE = "v5litepod-4"

    def pod_type(self, accelerator: str, chips: int) -> str:
        return accelerator.replace("v5litepod", "v5e")


class TpuPodTypeFromHostChips(_OnATpuSlice):
    DEFECT = ("the pod type made from the generation and this host's chips (2 cores each: 'v5p-8'), where the slice "
              "is 'v5p-16' over two hosts: each worker labelled a slice of its own size")
    KILLED_BY = ("RAC270", "invariant labels-as-ray-gives-them")
    ACCELERATOR_TYPE = "v5p-16"

    def pod_type(self, accelerator: str, chips: int) -> str:
        found = _ACCELERATOR_TYPE.match(accelerator)
        return f"{found.group(1)}-{2 * chips}" if found else accelerator


#: Graded alone, each by its own manager (one claimant of TPU_VISIBLE_CHIPS per manager).
TPU_POD_TYPE_MUTANTS = (TpuPodTypeAsCloudNamesIt, TpuPodTypeFromHostChips)
#: Bound at module level, as RAC112's fresh process imports a plugin object (the corpus's names).
c_tpu_pod_type_as_cloud_names_it = TpuPodTypeAsCloudNamesIt("c-tpu-pod-type-as-cloud-names-it")
c_tpu_pod_type_from_host_chips = TpuPodTypeFromHostChips("c-tpu-pod-type-from-host-chips")
