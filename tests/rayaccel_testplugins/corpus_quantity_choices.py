"""Mutants of families Ray already has a manager for whose quantity rule refuses a whole count that manager accepts
(issue 46, held-out round 11's p2: a TPU wrapper declaring choices [1, 4, 8], "no 2-chip GCE shape", where Ray's TPU
manager accepts 1, 2, 4, 8 and writes the bounds for two chips). Two shapes over the ACME machine: Neuron cores in
powers of two (NeuronCore groups: 3 refused; typed as Ray types Neuron nodes, corpus_ray_types.NeuronLike), where
Ray's Neuron manager takes any whole count, and Gaudi modules one or a ring of four or eight (p2's shape, a count
inside the list left out: 2 refused; typed as Ray types HPU nodes, corpus_ray_types.HpuLike), where Ray's HPU
manager does too. RAC106 ``invariant whole-quantities-as-ray-takes-them``.

Each claims Ray's resource with its variable, so they are graded alone, each by its own manager, beside the healthy
control (tests/conformance/test_conformance_heldout11_quantities.py): the corpus's one manager lets one plugin
claim a variable (RAC104), and c-neuron-cores-written-as-ranges claims NEURON_RT_VISIBLE_CORES there. Each is
bound here under its name, so a fresh process (RAC112, RAC269) imports it.
"""

from __future__ import annotations

from rayaccel import QuantityRule
from rayaccel_testplugins.corpus_ray_types import HpuLike, NeuronLike


class NeuronCoresInPowersOfTwo(NeuronLike):
    DEFECT = ("quantity choices [1, 2, 4, 8, 16, 32] for neuron_cores (NeuronCore groups of powers of two): Ray's "
              "Neuron manager places any whole number of cores, 3 too, which the plugin's rule refuses")
    KILLED_BY = ("RAC106", "invariant whole-quantities-as-ray-takes-them")
    rule = QuantityRule(kind="choices", choices=[1, 2, 4, 8, 16, 32])


class HpuRingsOfFourOrEight(HpuLike):
    DEFECT = ("quantity choices [1, 4, 8] for HPU (one module, or an HCCL ring of four or eight), p2's shape: Ray's "
              "HPU manager places any whole number of modules, 2 too, which the plugin's rule refuses")
    KILLED_BY = ("RAC106", "invariant whole-quantities-as-ray-takes-them")
    rule = QuantityRule(kind="choices", choices=[1, 4, 8])


QUANTITY_MUTANTS = (NeuronCoresInPowersOfTwo, HpuRingsOfFourOrEight)
c_neuron_cores_in_powers_of_two = NeuronCoresInPowersOfTwo("c-neuron-cores-in-powers-of-two")
c_hpu_rings_of_four_or_eight = HpuRingsOfFourOrEight("c-hpu-rings-of-four-or-eight")
