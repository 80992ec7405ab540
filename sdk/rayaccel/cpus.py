"""Linux CPU sets as the kernel writes them: CPU lists (``0-47,96-143``) and CPU masks (``ffff,0000ffff``).

A device's affinity reaches a plugin in one of these forms (sysfs ``local_cpulist`` / ``local_cpus``, a tool's
JSON, NVML's mask words) and leaves the SDK as a list in the kernel's own text, which consumers compare as text
(the Slurm exporter's ``Cores``, the node picture, an operator's ``taskset -c``). The kernel's parser
(``bitmap_parselist``) takes ranges in any order, repeated or overlapping, a lone CPU as itself or as ``a-a``, and
the strided form ``a-b:used/group``; it writes a list back ascending, runs as ``a-b`` and a lone CPU as itself
(``bitmap_print_to_pagebuf``): :func:`parse_cpu_list` and :func:`format_cpu_list` do the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

#: The highest CPU id accepted: Linux's NR_CPUS is at most 8192 on every distribution kernel (x86 MAXSMP).
MAX_CPU = 8191
#: The longest CPU list or mask text read: 8192 CPUs written one at a time fit.
MAX_TEXT_CHARS = 48_000

_RANGE = re.compile(r"^(\d{1,5})(?:-(\d{1,5})(?::(\d{1,5})/(\d{1,5}))?)?$")
_SEPARATORS = re.compile(r"[,\s]+")
_MASK_WORD = re.compile(r"^[0-9a-fA-F]{1,8}$")


class CpuListError(ValueError):
    """Text that is not a CPU list (or mask) in any form the kernel takes; the message says what was wrong."""


def parse_cpu_list(text: str) -> frozenset[int]:
    """The CPUs of a Linux CPU list in any form the kernel's parser takes (``0-3,8``, ``0,1,2,3,8``,
    ``8,0-3``, ``0-3 8``, ``0-15:2/4``, a trailing newline as sysfs prints it). An empty list is no CPUs; the
    kernel's ``N`` and ``all``, which name CPUs by the machine's count, are refused.
    Raises :class:`CpuListError` naming the first entry that is not a range of CPU ids.

    >>> sorted(parse_cpu_list("8,0-2\\n"))
    [0, 1, 2, 8]
    """
    if not isinstance(text, str):
        raise CpuListError(f"a CPU list is text such as 0-47,96-143, not {type(text).__name__}")
    if len(text) > MAX_TEXT_CHARS:
        raise CpuListError(f"a CPU list of {len(text)} characters is longer than any of {MAX_CPU + 1} CPUs")
    cpus: set[int] = set()
    # The kernel's grammar: regions separated by commas or white space (any number, leading ones too), the text
    # ending at a newline (lib/bitmap-str.c: __end_of_region, end_of_str).
    for entry in _SEPARATORS.split(text.split("\n", 1)[0]):
        if not entry:
            continue
        match = _RANGE.match(entry)
        if match is None:
            raise CpuListError(f"{_shown(entry)} is not a CPU, a range a-b or a strided range a-b:used/group")
        first = int(match.group(1))
        last = int(match.group(2) or first)
        used, group = int(match.group(3) or 1), int(match.group(4) or 1)
        if last < first or last > MAX_CPU:
            raise CpuListError(f"{_shown(entry)} is not a range of CPU ids 0-{MAX_CPU} written low to high")
        if group < 1 or used > group:
            raise CpuListError(f"{_shown(entry)}: a strided range a-b:used/group needs used <= group, group >= 1")
        cpus.update(cpu for cpu in range(first, last + 1) if (cpu - first) % group < used)
    return frozenset(cpus)


def format_cpu_list(cpus: Iterable[int]) -> str:
    """CPU ids as the kernel writes a CPU list: ascending, each run ``a-b``, a lone CPU as itself.

    >>> format_cpu_list([9, 0, 1, 2, 5])
    '0-2,5,9'
    """
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if cpu < 0 or cpu > MAX_CPU:
            raise CpuListError(f"CPU {cpu} is not a CPU id 0-{MAX_CPU}")
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def canonical_cpu_list(text: str) -> str:
    """A CPU list in any form the kernel takes, written as the kernel writes it (:class:`CpuListError` if none)."""
    return format_cpu_list(parse_cpu_list(text))


def cpus_from_mask(text: str) -> frozenset[int]:
    """The CPUs of a kernel CPU mask (sysfs ``local_cpus``, ``/proc/irq/*/smp_affinity``): comma-separated
    32-bit hex words, the most significant first, as many words as the kernel was built for.

    >>> sorted(cpus_from_mask("00000000,00000101"))
    [0, 8]
    """
    if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS:
        raise CpuListError("a CPU mask is text of comma-separated 32-bit hex words such as 00000000,0000ffff")
    words = text.strip().split(",")
    value = 0
    for word in words:
        if not _MASK_WORD.match(word):
            raise CpuListError(f"{_shown(word)} is not a 32-bit hex word of a CPU mask (e.g. 00000000,0000ffff)")
        value = value << 32 | int(word, 16)
    return _bits(value)


def cpus_from_mask_words(words: Sequence[int], bits: int = 64) -> frozenset[int]:
    """The CPUs of a mask given as integer words, the least significant first (``cpu_set_t``, NVML's
    ``nvmlDeviceGetCpuAffinity``: ``unsigned long``, 64 bits on 64-bit Linux).

    >>> sorted(cpus_from_mask_words([0b101, 1]))
    [0, 2, 64]
    """
    value = 0
    for position, word in enumerate(words):
        word = int(word)
        if word < 0 or word >> bits:
            raise CpuListError(f"mask word {position} ({word}) is not an unsigned {bits}-bit word")
        value |= word << (position * bits)
    return _bits(value)


def _bits(value: int) -> frozenset[int]:
    if value.bit_length() > MAX_CPU + 1:
        raise CpuListError(f"a CPU mask naming CPU {value.bit_length() - 1}, past CPU id {MAX_CPU}")
    cpus: set[int] = set()
    while value:  # only the set bits: a machine's mask is mostly zeros
        low = value & -value
        cpus.add(low.bit_length() - 1)
        value ^= low
    return frozenset(cpus)


def _shown(text: str) -> str:
    printable = "".join(c if c.isprintable() else "?" for c in text[:24])
    return repr(printable + ("..." if len(text) > 24 else ""))
