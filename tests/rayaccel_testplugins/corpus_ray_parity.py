"""Corpus mutants of a family Ray already has a manager for, that set or read its variable otherwise than that
manager (issue 46, found by ``make mutation`` on the TPU plugin: ``RAY_TPU_RESOURCE_PER_CHIP``, a Ray setting no
fixture carries), two shapes: RAC270; and two TPU mutants that write the variable right but not the sub-host
bounds Ray's manager writes beside it (held-out round 5's bounds chosen by units, not chips): a variable left out,
a wrong value (like c-tpu-per-chip-ignored, whose one defect is that setting, they take units for chips, and are
killed with the setting unset). Those two are not in the corpus's manager (``TPU_BOUNDS_MUTANTS``).

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
#: The sub-host bounds Ray's TPU manager writes beside TPU_VISIBLE_CHIPS for one or two chips.
BOUNDS, HOST_BOUNDS = "TPU_CHIPS_PER_HOST_BOUNDS", "TPU_HOST_BOUNDS"


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

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        # Ray's sub-host bounds for one or two chips, the units taken for chips (right while Ray's setting is unset)
        bounds = {1: {BOUNDS: "1,1,1", HOST_BOUNDS: "1,1,1"}, 2: {BOUNDS: "1,2,1", HOST_BOUNDS: "1,1,1"}}
        return {**super().rayaccel_visible_env(unit_ids), **bounds.get(len(unit_ids), {})}


class TpuBoundsLeftOut(Healthy):
    DEFECT = (f"{VISIBLE} written as Ray writes it, but not the sub-host bounds Ray's manager writes beside it for "
              f"one or two chips ({BOUNDS}, {HOST_BOUNDS}): a task given one chip gets a runtime sized for the host")
    KILLED_BY = ("RAC270", "invariant visible-env-companions-as-ray-writes-them")
    rule = TpuPerChipIgnored.rule

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.family = self.family.model_copy(update={"visible_devices_env_var": VISIBLE})

    def _resource(self, token: str) -> str:
        return "TPU"


class TpuBoundsOfOneChipAlways(Healthy):
    DEFECT = (f"{BOUNDS} written '1,1,1' (one chip's) for a task of one chip or two, where Ray's manager writes "
              "'1,2,1' for two: a two-chip task's runtime sees one chip")
    KILLED_BY = ("RAC270", "invariant visible-env-companions-as-ray-writes-them")
    rule = TpuPerChipIgnored.rule

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.family = self.family.model_copy(update={"visible_devices_env_var": VISIBLE})

    def _resource(self, token: str) -> str:
        return "TPU"

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        env = {VISIBLE: ",".join(unit_ids)}
        return {**env, BOUNDS: "1,1,1", HOST_BOUNDS: "1,1,1"} if len(unit_ids) <= 2 else env


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


#: Graded alone, each by its own manager (tests/conformance/test_conformance_heldout5.py): the corpus's one manager
#: lets one plugin claim TPU_VISIBLE_CHIPS (RAC104), and c-tpu-per-chip-ignored does.
TPU_BOUNDS_MUTANTS = (TpuBoundsLeftOut, TpuBoundsOfOneChipAlways)

for _cls in (TpuPerChipIgnored, NeuronCoresWrittenAsRanges, HipNoDevFilesKept, CudaEmptyAsOneBlankId):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
