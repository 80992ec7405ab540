"""Corpus mutants of a family Ray already has a manager for, that set or read its variable otherwise than that
manager (issue 46, found by ``make mutation`` on the TPU plugin: ``RAY_TPU_RESOURCE_PER_CHIP``, a Ray setting no
fixture carries), two shapes: RAC270.

Each claims a resource of Ray's with its variable (as the vendor's own plugin would) over the ACME machine: TPU
(right while Ray's setting is unset, which is all a fixture can show) and Neuron cores (the runtime's range form
written where Ray writes a list).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it (``c-tpu-per-chip-ignored`` as ``c_tpu_per_chip_ignored``).
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import QuantityRule
from rayaccel_testplugins.corpus import Healthy, add_import_defect

#: Ray 2.60's setting of TPU units per chip (ray/_private/accelerators/tpu.py), and its variable.
PER_CHIP, VISIBLE = "RAY_TPU_RESOURCE_PER_CHIP", "TPU_VISIBLE_CHIPS"


class TpuPerChipIgnored(Healthy):
    DEFECT = (f"{VISIBLE} read as chip ids whatever {PER_CHIP} says: with 2 units a chip, Ray's manager reads "
              "'0' as units 0 and 1, the plugin as unit 0 alone")
    KILLED_BY = ("RAC270", "invariant visible-parse-as-ray-reads-it")
    rule = QuantityRule(kind="choices", choices=[1, 2, 4, 8])  # Ray's TPU rule

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.family = self.family.model_copy(update={"visible_devices_env_var": VISIBLE})

    def _resource(self, token: str) -> str:
        return "TPU"


class NeuronCoresWrittenAsRanges(Healthy):
    DEFECT = ("NEURON_RT_VISIBLE_CORES written in the Neuron runtime's range form ('0-3') where Ray's manager writes "
              "the cores one by one ('0,1,2,3'): Ray's own reading of the task's variable gets the one id '0-3'")
    KILLED_BY = ("RAC270", "invariant visible-env-as-ray-writes-it")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.family = self.family.model_copy(update={"visible_devices_env_var": "NEURON_RT_VISIBLE_CORES"})

    def _resource(self, token: str) -> str:
        return "neuron_cores"

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        ids = [int(u) for u in unit_ids]
        runs = ids == list(range(ids[0], ids[0] + len(ids))) if len(ids) > 1 else False
        return {self.family.visible_devices_env_var: f"{ids[0]}-{ids[-1]}" if runs else ",".join(unit_ids)}

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        out: list[str] = []
        for token in super().rayaccel_parse_visible(value):
            low, _, high = token.partition("-")
            out += [str(i) for i in range(int(low), int(high) + 1)] if high else [token]
        return out


class HipNoDevFilesKept(Healthy):
    DEFECT = ("HIP_VISIBLE_DEVICES=NoDevFiles, which Ray's AMD manager reads as no GPU, parsed as the one unit id "
              "'NoDevFiles'")
    KILLED_BY = ("RAC270", "invariant visible-none-as-ray-reads-it")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.family = self.family.model_copy(update={"visible_devices_env_var": "HIP_VISIBLE_DEVICES"})

    def _resource(self, token: str) -> str:
        return "GPU"


class CudaEmptyAsOneBlankId(Healthy):
    DEFECT = ("CUDA_VISIBLE_DEVICES split on commas with blanks kept: the empty value, which Ray's NVIDIA manager "
              "reads as no GPU, parses as one blank unit id")
    KILLED_BY = ("RAC270", "invariant visible-none-as-ray-reads-it")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.family = self.family.model_copy(update={"visible_devices_env_var": "CUDA_VISIBLE_DEVICES"})

    def _resource(self, token: str) -> str:
        return "GPU"

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        return [part.strip() for part in value.split(",")]


for _cls in (TpuPerChipIgnored, NeuronCoresWrittenAsRanges, HipNoDevFilesKept, CudaEmptyAsOneBlankId):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
