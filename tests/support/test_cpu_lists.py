"""rayaccel's CPU lists and masks read and written as the kernel does (``bitmap_parselist``,
``bitmap_print_to_pagebuf``), over generated CPU sets, and the Affinity record refusing what is neither."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, strategies as st
from pydantic import ValidationError

from rayaccel import (
    Affinity,
    CpuListError,
    canonical_cpu_list,
    cpus_from_mask,
    cpus_from_mask_words,
    format_cpu_list,
    parse_cpu_list,
)
from rayaccel.cpus import MAX_CPU

cpu_sets = st.frozensets(st.integers(0, 1023), max_size=200)


def _one_at_a_time(cpus: frozenset[int], seed: int) -> str:
    """The same CPUs as a tool may write them: one at a time, shuffled, some runs as ranges, some repeated."""
    rng = random.Random(seed)
    parts = [str(c) if rng.random() < 0.7 else f"{c}-{c}" for c in cpus]
    parts += rng.sample(parts, k=min(3, len(parts)))
    rng.shuffle(parts)
    return ",".join(parts)


def _kernel_mask(cpus: frozenset[int], words: int) -> str:
    value = sum(1 << c for c in cpus)
    return ",".join(f"{(value >> (32 * w)) & 0xFFFFFFFF:08x}" for w in reversed(range(words)))


@given(cpu_sets, st.integers(0, 2**16))
def test_every_form_of_a_cpu_set_reads_back_as_that_set_and_writes_as_the_kernel_does(
        cpus: frozenset[int], seed: int) -> None:
    text = format_cpu_list(cpus)
    assert parse_cpu_list(text) == cpus
    assert parse_cpu_list(_one_at_a_time(cpus, seed)) == cpus
    assert canonical_cpu_list(_one_at_a_time(cpus, seed)) == text
    assert parse_cpu_list(text + "\n") == cpus  # as sysfs prints it
    assert cpus_from_mask(_kernel_mask(cpus, 32)) == cpus == cpus_from_mask(_kernel_mask(cpus, 33))
    words = [(sum(1 << c for c in cpus) >> (64 * w)) & (2**64 - 1) for w in range(16)]
    assert cpus_from_mask_words(words) == cpus
    # The kernel's text: ascending runs, each a-b, a lone CPU as itself, never a-a or a run split in two.
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        assert not last or int(first) < int(last)
    bounds = [(int(p.partition("-")[0]), int(p.partition("-")[2] or p.partition("-")[0]))
              for p in filter(None, text.split(","))]
    assert all(b[0] > a[1] + 1 for a, b in itertools.pairwise(bounds))


def test_the_kernels_strided_ranges_and_examples() -> None:
    assert format_cpu_list(parse_cpu_list("0-15:2/4")) == "0-1,4-5,8-9,12-13"  # kernel-parameters.txt's form
    assert format_cpu_list(parse_cpu_list(",0-3 8,,\t9\n12")) == "0-3,8-9"  # separators; a newline ends it
    assert format_cpu_list([5]) == "5" and format_cpu_list([]) == "" and parse_cpu_list("") == frozenset()
    assert sorted(cpus_from_mask_words([1, 1], bits=32)) == [0, 32]  # a mask read as 32-bit words is another set
    assert sorted(cpus_from_mask("00000001,00000000")) == [32]


@pytest.mark.parametrize(("text", "why"), [
    ("zero-3", "'zero-3' is not a CPU"),
    ("3-1", "'3-1' is not a range of CPU ids"),
    ("0-3,all", "'all' is not a CPU"),
    (f"0-{MAX_CPU + 1}", "written low to high"),
    ("0-7:3/2", "used <= group"),
    ("0-7:1/0", "group >= 1"),
    ("0-3\x1b[2J", r"'0-3\?\[2J' is not a CPU"),  # a terminal escape is never echoed
    ("1," * 30_000, "longer than any"),
])
def test_text_in_no_kernel_form_is_refused_naming_the_entry(text: str, why: str) -> None:
    with pytest.raises(CpuListError, match=why):
        parse_cpu_list(text)


def test_masks_in_no_kernel_form_are_refused() -> None:
    with pytest.raises(CpuListError, match="not a 32-bit hex word"):
        cpus_from_mask("0000ffff,xyz")
    with pytest.raises(CpuListError, match="not an unsigned 64-bit word"):
        cpus_from_mask_words([-1])
    with pytest.raises(CpuListError, match="past CPU id"):
        cpus_from_mask_words([0] * 128 + [1])


def test_an_affinity_refuses_text_that_is_no_cpu_list_and_keeps_any_kernel_form() -> None:
    assert Affinity(device="GPU-0", cpus="0,1,2,3").cpus == "0,1,2,3"  # RAC257 grades the form, the record not
    with pytest.raises(ValidationError, match="not a Linux CPU list such as 0-47,96-143: 'N/A' is not a CPU"):
        Affinity(device="GPU-0", cpus="N/A")
