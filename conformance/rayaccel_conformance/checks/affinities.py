"""A device's affinity in the topology (supported tier, issue 46): its CPU list written as the kernel writes one,
read alike in every form the kernel and the tools write (RAC257), and its NUMA node the one discovery read
(RAC258).

``Affinity.cpus`` is what the Slurm exporter turns into ``Cores`` and the node picture prints; consumers compare it
as text. A formatter that writes ``5-5`` for a lone CPU or one CPU at a time, or a reader that takes a mask of
the fixture's word count only or a list of ranges only, is right on every fixture its author recorded and wrong
on the next machine. The SDK cannot read a vendor's format, but it can find CPU lists on the host: a file named
for them (``local_cpulist``, ``cpulist``: list text; ``local_cpus``, ``cpumap``: the kernel's mask of 32-bit hex
words, comma separated), a string under a key naming CPUs in a library's data or a command's JSON (neuron-ls's
``cpu_affinity``), and write each in the kernel's other form. Each helper here is pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rayaccel.hosts.fixtures import HostState
from rayaccel.records import Affinity, FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

_LIST = re.compile(r"^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$")
#: The kernel's cpumask text (bitmap_print_to_pagebuf): 32-bit words, 8 hex digits each, the highest first.
_MASK = re.compile(r"^[0-9a-fA-F]{8}(?:,[0-9a-fA-F]{8})*$")
_MASK_FILES = ("local_cpus", "cpumap", "cpumask")
_LIST_FILES = ("local_cpulist", "cpulist", "cpus_list")
#: A key of a library's data or a command's JSON that holds CPUs (``cpu_affinity``, ``cpulist``, ``localCpus``).
_CPU_KEY = re.compile(r"(?:^|[^A-Za-z])[Cc][Pp][Uu]|(?<=[a-z])Cpu")


def cpu_set(text: str) -> frozenset[int] | None:
    """The CPUs of a Linux CPU list (``0-3,8``, ``0,1,2,3,8``); None when the text is not one (a reversed range,
    a space, anything else)."""
    text = text.strip()
    if not text:
        return frozenset()
    if not _LIST.match(text):
        return None
    found: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        if int(last or first) < int(first):
            return None
        found.update(range(int(first), int(last or first) + 1))
    return frozenset(found)


def mask_set(text: str) -> frozenset[int] | None:
    """The CPUs of the kernel's cpumask text (``0000ffff,00000000``); None when it is not one."""
    text = text.strip()
    if not _MASK.match(text):
        return None
    value = int(text.replace(",", ""), 16)
    return frozenset(bit for bit in range(value.bit_length()) if value >> bit & 1)


def canonical_list(cpus: frozenset[int]) -> str:
    """The kernel's CPU list text (bitmap_print_list_to_buf): ascending, runs of two or more as ``a-b``, a lone CPU
    as itself, no spaces."""
    parts: list[str] = []
    ordered = sorted(cpus)
    start = 0
    for i in range(1, len(ordered) + 1):
        if i == len(ordered) or ordered[i] != ordered[i - 1] + 1:
            first, last = ordered[start], ordered[i - 1]
            parts.append(f"{first}" if first == last else f"{first}-{last}")
            start = i
    return ",".join(parts)


def one_at_a_time(cpus: frozenset[int]) -> str:
    """The same CPUs listed one at a time (``0,1,2,3``): a list the kernel's parser takes as well."""
    return ",".join(str(c) for c in sorted(cpus))


def mask_text(cpus: frozenset[int], words: int) -> str:
    """The kernel's cpumask text of ``cpus`` in ``words`` 32-bit words (more words: a kernel built for more CPUs)."""
    value = sum(1 << c for c in cpus)
    needed = max(words, -(-(max(cpus, default=0) + 1) // 32))
    return ",".join(f"{(value >> (32 * w)) & 0xFFFFFFFF:08x}" for w in reversed(range(needed)))


def canonical_problem(cpus: str) -> str | None:
    """Why an affinity's ``cpus`` is not the kernel's CPU list text (None when it is)."""
    found = cpu_set(cpus)
    if found is None:
        return "it is not a Linux CPU list (ascending numbers and a-b ranges, comma separated, no spaces)"
    canonical = canonical_list(found)
    if cpus == canonical:
        return None
    if re.search(r"(?:^|,)(\d+)-\1(?:,|$)", cpus):
        return f"a lone CPU is written as a range (the kernel writes {canonical!r})"
    return f"the kernel writes these CPUs {canonical!r} (runs as a-b ranges, ascending, each CPU once)"


@dataclass(frozen=True)
class CpuText:
    """Where the host states CPUs as text: a file, a library's data or a command's JSON."""

    where: str  # "file", "library" or "command"
    key: str  # the file's path, the library's name, the command line
    path: tuple[str | int, ...]  # inside the data
    form: str  # "list" or "mask"
    cpus: frozenset[int]
    text: str  # as the host states it

    def describe(self) -> str:
        inner = ".".join(str(p) for p in self.path)
        return {"file": f"file {self.key}", "library": f"library {self.key} {inner}",
                "command": f"`{self.key}` output {inner}"}[self.where]


def _text_leaves(data: Any, path: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], str]]:
    if isinstance(data, dict):
        return [leaf for key, value in data.items() for leaf in _text_leaves(value, (*path, key))]
    if isinstance(data, list):
        return [leaf for i, value in enumerate(data) for leaf in _text_leaves(value, (*path, i))]
    return [(path, data)] if isinstance(data, str) else []


def _stated(text: str, name: str) -> tuple[str, frozenset[int], str] | None:
    """(form, CPUs, text) of text the host states under ``name`` (a file's or key's name), if it is a CPU list or
    mask."""
    if name in _MASK_FILES or (_CPU_KEY.search(name) and "mask" in name.lower()):
        found = mask_set(text)
        return ("mask", found, text.strip()) if found else None
    found = cpu_set(text)
    # A lone number under a CPU key is a count or a temperature, not a list worth rewriting.
    return ("list", found, text.strip()) if found and ("," in text or "-" in text) else None


def cpu_texts(host: dict[str, Any]) -> list[CpuText]:
    """Every CPU list or mask the host states as text (``HostState.model_dump(mode='json')``)."""
    found = []
    for path, text in (host.get("files") or {}).items():
        name = path.rsplit("/", 1)[-1]
        if name in _MASK_FILES or name in _LIST_FILES:
            stated = _stated(text or "", name)
            if stated:
                found.append(CpuText("file", path, (), *stated))
    sources = [("library", name, data) for name, data in (host.get("libraries") or {}).items()]
    for line, answer in (host.get("commands") or {}).items():
        try:
            sources.append(("command", line, json.loads((answer or {}).get("stdout") or "")))
        except (ValueError, TypeError):
            continue  # a table's CPU column would be split by its own commas: not rewritten
    for where, key, data in sources:
        for path, text in _text_leaves(data):
            name = str(next((p for p in reversed(path) if isinstance(p, str)), ""))
            stated = _stated(text, name) if _CPU_KEY.search(name) else None
            if stated:
                found.append(CpuText(where, key, path, *stated))
    return found


def other_form(text: CpuText) -> str:
    """The same CPUs as the kernel could write them otherwise: a mask with one more word, a list of ranges one CPU
    at a time (or, one at a time already, as ranges)."""
    if text.form == "mask":
        return mask_text(text.cpus, text.text.count(",") + 2)
    spelled = one_at_a_time(text.cpus)
    return canonical_list(text.cpus) if text.text == spelled else spelled


def lone_cpus(texts: list[CpuText]) -> dict[frozenset[int], int]:
    """For each distinct CPU set the host states, one CPU more past a gap after every CPU the host states (a lone
    CPU ending the list, as a VM's odd vCPU does), no two sets given the same one."""
    top = max((max(t.cpus) for t in texts if t.cpus), default=-2)
    distinct = sorted({t.cpus for t in texts if t.cpus}, key=sorted)
    return {cpus: top + 2 * (i + 1) for i, cpus in enumerate(distinct)}


def with_lone_cpu_text(text: CpuText, lone: int) -> str:
    """The text with CPU ``lone`` added in its own form: ``,<lone>`` ending a list, the mask's bit (a word more
    where it falls past them)."""
    if text.form == "mask":
        return mask_text(text.cpus | {lone}, text.text.count(",") + 1)
    return f"{text.text},{lone}"


def rewritten_host(host: dict[str, Any], texts: list[CpuText],
                   write: Callable[[CpuText], str] = other_form) -> dict[str, Any]:
    """The host with every CPU text written as ``write`` gives it (its other form), where and as the vendor wrote
    it."""
    state: dict[str, Any] = json.loads(json.dumps(host))
    documents: dict[str, Any] = {}
    for text in texts:
        if text.where == "file":
            old = state["files"][text.key]
            state["files"][text.key] = old.replace(old.strip(), write(text), 1)
            continue
        if text.where == "library":
            data = state["libraries"][text.key]
        else:
            data = documents.setdefault(text.key, json.loads(state["commands"][text.key]["stdout"]))
        inner = data
        for step in text.path[:-1]:
            inner = inner[step]
        inner[text.path[-1]] = write(text)
    for line, data in documents.items():
        state["commands"][line]["stdout"] = json.dumps(data, indent=1)
    return state


@dataclass(frozen=True)
class MaskWords:
    """A device's CPU mask stated as data: 64-bit words under a key naming CPUs (NVML's
    ``nvmlDeviceGetCpuAffinity``), in a library's data or a command's JSON."""

    where: str  # "library" or "command"
    key: str
    path: tuple[str | int, ...]
    words: tuple[int, ...]

    @property
    def cpus(self) -> frozenset[int]:
        return frozenset(64 * w + b for w, word in enumerate(self.words) for b in range(64) if word >> b & 1)

    def describe(self) -> str:
        inner = ".".join(str(p) for p in self.path)
        return f"library {self.key} {inner}" if self.where == "library" else f"`{self.key}` output {inner}"


def _word_lists(data: Any, path: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], list[int]]]:
    if isinstance(data, dict):
        return [leaf for key, value in data.items() for leaf in _word_lists(value, (*path, key))]
    if isinstance(data, list) and data and all(isinstance(w, int) and not isinstance(w, bool) and 0 <= w < 2**64
                                               for w in data):
        return [(path, data)] if path and _CPU_KEY.search(str(path[-1])) else []
    if isinstance(data, list):
        return [leaf for i, value in enumerate(data) for leaf in _word_lists(value, (*path, i))]
    return []


def mask_words(host: dict[str, Any], device_index: int) -> list[MaskWords]:
    """The CPU masks stated as data in the device's own entry (its index among the keys leading there)."""
    sources = [("library", name, data) for name, data in (host.get("libraries") or {}).items()]
    for line, answer in (host.get("commands") or {}).items():
        try:
            sources.append(("command", line, json.loads((answer or {}).get("stdout") or "")))
        except (ValueError, TypeError):
            continue
    found = []
    for where, key, data in sources:
        for path, words in _word_lists(data):
            keys = [p for p in path if isinstance(p, int) or str(p).isdigit()]
            if keys and int(keys[0]) == device_index:
                found.append(MaskWords(where, key, path, tuple(words)))
    return found


#: A CPU the host names on its own: its sysfs directory (``/sys/devices/system/cpu/cpu12``), a ``processor`` line of
#: /proc/cpuinfo; and what separates the words of a tool's table (``nvidia-smi topo -m``'s CPU Affinity column).
_CPU_DIR = re.compile(r"/cpu(\d+)(?:/|$)")
_PROCESSOR = re.compile(r"^processor\s*:\s*(\d+)\s*$", re.MULTILINE)
_TABLE_GAPS = re.compile(r"[\s|\"';]+")


def host_cpu_sets(host: dict[str, Any]) -> set[frozenset[int]]:
    """Every CPU set the host states (``HostState.model_dump(mode='json')``): a CPU list or mask as text (a list file
    holding a lone CPU too), mask words under a key naming CPUs, a word of a tool's output written as a list or a
    mask; and each CPU it names on its own (its sysfs directory, a ``processor`` line) as a set of one."""
    found: set[frozenset[int]] = {text.cpus for text in cpu_texts(host)}
    for path, content in (host.get("files") or {}).items():
        if path.rsplit("/", 1)[-1] in _LIST_FILES and (listed := cpu_set(content or "")):
            found.add(listed)
        found |= {frozenset({int(m.group(1))}) for m in [_CPU_DIR.search(path)] if m}
        found |= {frozenset({int(n)}) for n in _PROCESSOR.findall(content or "")}
    sources: list[Any] = list((host.get("libraries") or {}).values())
    for answer in (host.get("commands") or {}).values():
        stdout = (answer or {}).get("stdout") or ""
        found |= {frozenset({int(n)}) for n in _PROCESSOR.findall(stdout)}
        for word in _TABLE_GAPS.split(stdout):
            if stated := (cpu_set(word) if "-" in word or "," in word else None) or mask_set(word):
                found.add(stated)
        try:
            sources.append(json.loads(stdout))
        except (ValueError, TypeError):
            continue
    for data in sources:
        for _, words in _word_lists(data):
            found.add(frozenset(64 * w + b for w, word in enumerate(words) for b in range(64) if word >> b & 1))
    return {cpus for cpus in found if cpus}


def unstated_cpu_problems(ref: str, affinities: list[Affinity], host: dict[str, Any]) -> list[str]:
    """``invariant cpus-the-host-states``: each affinity whose ``cpus`` are not CPU sets the host states, whole (one,
    or several together)."""
    sets = host_cpu_sets(host)
    known = frozenset().union(*sets) if sets else frozenset()
    wrong = []
    for affinity in affinities:
        cpus = cpu_set(affinity.cpus or "") or frozenset()
        missing = cpus - frozenset().union(*(s for s in sets if s <= cpus))
        if not missing:
            continue
        states = (f"it states CPUs {canonical_list(known)!r}, in sets none of which the device's CPUs hold whole"
                  if missing <= known else f"it states CPUs {canonical_list(known)!r}" if known
                  else "it states no CPU at all")
        wrong.append(f"invariant cpus-the-host-states, {ref}: {affinity.device}'s cpus {affinity.cpus!r} name CPUs "
                     f"{canonical_list(missing)!r} that no CPU list or mask the host states gives ({states}; a file, "
                     "a library, a tool's output, a CPU's directory or processor line): CPUs computed from an "
                     "assumed layout (cores per NUMA node, the device's position) are another machine's; read the "
                     "device's local CPUs from the host (sysfs local_cpulist, /sys/devices/system/node/node<N>/"
                     "cpulist, the vendor's affinity field), whole, or leave cpus out where it states none")
    return wrong


def with_lone_cpu(mask: MaskWords) -> tuple[list[int], frozenset[int]]:
    """The mask's words with one more CPU set past a gap after its last (a lone CPU ending the list, as a VM's odd
    vCPU does), a word added where it falls past them, and the CPUs they state."""
    lone = max(mask.cpus, default=-2) + 2
    words = list(mask.words) + [0] * max(0, lone // 64 + 1 - len(mask.words))
    words[lone // 64] |= 1 << (lone % 64)
    return words, mask.cpus | {lone}


def masked_host(host: dict[str, Any], mask: MaskWords, words: list[int]) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(json.dumps(host))
    data = state["libraries"][mask.key] if mask.where == "library" else json.loads(
        state["commands"][mask.key]["stdout"])
    inner = data
    for step in mask.path[:-1]:
        inner = inner[step]
    inner[mask.path[-1]] = words
    if mask.where == "command":
        state["commands"][mask.key]["stdout"] = json.dumps(data, indent=1)
    return state


def lone_cpu_differences(subject: Subject, fx: Any, host: dict[str, Any], fam: FamilyInventory,
                         family: str) -> tuple[list[str], str]:
    """The middle device whose affinity is a CPU mask stated as data, given a lone CPU more: what the inventory
    got wrong (empty when right), and what was done."""
    read = {a.device: cpu_set(a.cpus) for a in fam.topology.affinities if a.cpus}
    candidates = [(d, m) for d in fam.devices if d.id in read for m in mask_words(host, d.index)
                  if m.cpus and m.cpus == read[d.id]]
    if not candidates:
        return [], ""
    device, mask = candidates[len(candidates) // 2]
    words, cpus = with_lone_cpu(mask)
    variant = fx.model_copy(update={"host": HostState.model_validate(masked_host(host, mask, words)), "faults": []})
    rebuilt = subject.build(simulated_host(variant), with_metrics=False)
    now = rebuilt.family(family)
    after = {a.device: a.cpus for a in (now.topology.affinities if now else [])}
    where = (f"invariant cpu-mask-read-as-stated, {fx.ref} with {device.id}'s {mask.describe()} given CPU "
             f"{max(cpus)} more (words {words[:4]}{'...' if len(words) > 4 else ''})")
    wrong = []
    if after.get(device.id) != canonical_list(cpus):
        wrong.append(f"{where}: its cpus are {after.get(device.id)!r}, not {canonical_list(cpus)!r}")
    before = {a.device: a.cpus for a in fam.topology.affinities}
    wrong += [f"{where}: {other}'s cpus went from {was!r} to {after.get(other)!r}" for other, was in before.items()
              if other != device.id and after.get(other) != was]
    return subject.blamed(rebuilt, wrong, ""), (f"{device.id}'s mask ({mask.describe()}) given a lone CPU "
                                                f"{max(cpus)}: its cpus followed ({canonical_list(cpus)!r})")


def read_whole_differences(subject: Subject, fx: Any, host: dict[str, Any], fam: FamilyInventory,
                           family: str) -> tuple[list[str], str]:
    """Every CPU list the host states given a lone CPU more past all of them: each affinity whose CPUs were part of
    a stated list must be that whole list now, the lone CPU with it (empty when right), and what was done."""
    texts = cpu_texts(host)
    lones = lone_cpus(texts)
    before = affinity_sets(fam)
    held = {device: [t for t in texts if t.cpus and cpus <= t.cpus] for device, (_, cpus) in before.items() if cpus}
    held = {device: found for device, found in held.items() if found}
    if not held:
        return [], ""
    state = rewritten_host(host, texts, lambda t: with_lone_cpu_text(t, lones[t.cpus]) if t.cpus else t.text)
    variant = fx.model_copy(update={"host": HostState.model_validate(state), "faults": []})
    rebuilt = subject.build(simulated_host(variant), with_metrics=False)
    after = affinity_sets(rebuilt.family(family))
    where = (f"invariant cpu-list-read-whole, {fx.ref} with each of the {len(lones)} CPU sets the host states given "
             "a lone CPU more past all of them")
    index = {d.id: d.index for d in fam.devices}
    wrong = []
    for device, found in held.items():
        now = (after.get(device) or (None, None))[1]
        if now in {t.cpus | {lones[t.cpus]} for t in found}:
            continue
        own = index.get(device)  # the device's own entry first (neuron-ls's list is per device), then the smallest
        text = min(found, key=lambda t: (own not in t.path and str(own) not in t.key, len(t.cpus)))
        whole = before[device][1] == text.cpus
        wrong.append(f"{device}'s cpus are {_shown(now)} (were {_shown(before[device][1])}), not the whole of its "
                     f"{text.describe()} {_short(with_lone_cpu_text(text, lones[text.cpus]))!r}"
                     + (f" ({canonical_list(text.cpus | {lones[text.cpus]})!r})" if text.form == "mask" else "")
                     + ": "
                     + ("the list is not read whole (a part of it, a range or a word, kept)" if not whole else
                        "the CPUs do not follow the list the machine states (kept, computed or cut)"))
    return subject.blamed(rebuilt, wrong, f"{where}: "), (f"each of {len(held)} affinities' CPUs given a lone CPU "
                                                          "more where the host states them: each followed, whole")


def affinity_sets(family: FamilyInventory | None) -> dict[str, tuple[int | None, frozenset[int] | None]]:
    """device -> (NUMA node, CPUs) of each affinity."""
    return {a.device: (a.numa_node, cpu_set(a.cpus) if a.cpus is not None else None)
            for a in (family.topology.affinities if family else [])}


def _short(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:36]}..."


def _shown(cpus: frozenset[int] | None) -> str:
    return "none" if cpus is None else repr(canonical_list(cpus))


@check("RAC257", scope="fixture")
def cpu_lists_in_any_form(subject: Subject, fixture: str | None) -> Evidence:
    """A device's CPU list is written as the kernel writes one, and the same CPUs stated in another of the kernel's
    forms give the same affinities.

    Every affinity's ``cpus`` must be the kernel's list text (``0-3,8-11``: ascending, runs as ``a-b``, a lone
    CPU as itself; `invariant cpu-list-is-the-kernels-text`): consumers (the Slurm exporter's ``Cores``, the node
    picture, an operator's ``taskset``) read and compare it as text. Then every CPU list the host states as text
    (files named ``local_cpulist``/``cpulist``, the kernel's masks ``local_cpus``/``cpumap`` of 32-bit hex words,
    a string under a key naming CPUs in a library's data or a command's JSON, neuron-ls's ``cpu_affinity``) is
    written in the kernel's other form, all at once: a list of ranges one CPU at a time (``0,1,2,3,8,9,10,11``),
    a mask with one more word (``00000000,0000ffff,...``: a kernel built for more CPUs), and the inventory built
    again: every device's NUMA node and CPUs must be as they were (`invariant cpu-list-in-any-form`). Where the
    host states no CPU list as text but a device's affinity is a mask stated as data (64-bit words under a key
    naming CPUs in its own entry: NVML's ``nvmlDeviceGetCpuAffinity``), that mask is given one CPU more past a
    gap after its last (a lone CPU ending the list) and the device's ``cpus`` must be exactly the new CPUs in the
    kernel's text, no other device's moving (`invariant cpu-mask-read-as-stated`). Where the host states CPU lists
    as text, each distinct one is given a lone CPU past every CPU the host states, in its own form, and each device
    whose CPUs were part of a stated list must have that whole list (`invariant cpu-list-read-whole`: a first
    range, a mask's lowest word, is still a CPU list). Last, every affinity's CPUs must be CPU sets the host states,
    whole, one or several together (a list or mask as text, mask words, a word of a tool's output, and each CPU the
    host names on its own, its sysfs directory or a ``processor`` line, as a set of one; `invariant
    cpus-the-host-states`: CPUs from an assumed layout, cores per NUMA node or an even split of the online CPUs, are
    another machine's). Not applicable where no affinity states CPUs and the host states no CPU list as text. Fix:
    read the device's CPUs from the host, whole, or leave them out where it states none; parse a list with every
    range and lone
    CPU (``rayaccel``'s consumers accept any), a mask with any number of words (join them, read as one number),
    and write the CPUs back as ranges (``0-3,8``), never ``5-5`` or one at a time.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    fam = subject.inventory(fixture).family(family.name)
    stated = [a for a in (fam.topology.affinities if fam else []) if a.cpus is not None]
    wrong = [f"invariant cpu-list-is-the-kernels-text, {fx.ref}: {a.device}'s cpus {a.cpus!r}: {problem}"
             for a in stated if (problem := canonical_problem(a.cpus or ""))]
    host = fx.host.model_dump(mode="json")
    # Named after the invariants that perturb what the host states: a list read in part is theirs, more precisely.
    unstated = unstated_cpu_problems(fx.ref, stated, host)
    texts = [t for t in cpu_texts(host) if other_form(t) != t.text]
    if not stated and not texts:
        raise NotApplicable(f"{fx.ref}: no affinity states CPUs and the host states no CPU list as text")
    if wrong:
        raise CheckFailed(wrong[:4] + ([f"... {len(wrong) - 4} more"] if len(wrong) > 4 else []))
    if not texts:
        lone, done = lone_cpu_differences(subject, fx, host, fam, family.name) if fam else ([], "")
        if lone or unstated:
            raise CheckFailed((lone or unstated)[:4])
        return (f"{fx.ref}: {len(stated)} CPU lists, each the kernel's text; the host states none as text"
                + (f"; {done}" if done else ""))
    variant = fx.model_copy(update={"host": HostState.model_validate(rewritten_host(host, texts)), "faults": []})
    rebuilt = subject.build(simulated_host(variant), with_metrics=False)
    now_family = rebuilt.family(family.name)
    before, after = affinity_sets(fam), affinity_sets(now_family)
    where = (f"invariant cpu-list-in-any-form, {fx.ref} with {len(texts)} CPU lists written otherwise ("
             + ", ".join(f"{t.describe()} {t.text!r} -> {_short(other_form(t))!r}" for t in texts[:2]) + ")")
    moved = [f"{device}'s affinity went from node {was[0]}, CPUs {_shown(was[1])} to "
             + (f"node {now[0]}, CPUs {_shown(now[1])}" if now else "none")
             + ": the same CPUs written in another of the kernel's forms"
             for device, was in before.items() if (now := after.get(device)) != was]
    moved += [f"{a.device}'s cpus {a.cpus!r}: {problem}" for a in (now_family.topology.affinities if now_family
                                                                     else []) if a.cpus is not None
              and (problem := canonical_problem(a.cpus))]
    if moved:
        raise CheckFailed(subject.blamed(rebuilt, moved, f"{where}: ")[:4])
    cut, done = read_whole_differences(subject, fx, host, fam, family.name) if fam else ([], "")
    if cut or unstated:
        raise CheckFailed((cut or unstated)[:4])
    return (f"{fx.ref}: {len(stated)} CPU lists, each the kernel's text; {len(texts)} stated on the host written in "
            "the kernel's other form: the affinities did not move" + (f"; {done}" if done else ""))


def _node(value: int | None) -> int | None:
    return None if value is None or value < 0 else value  # Linux's -1: no node


def numa_topology_differences(family: FamilyInventory) -> list[str]:
    """Where the topology's affinities disagree with the devices' NUMA nodes (empty when they agree)."""
    affinities: dict[str, list[Affinity]] = {}
    for affinity in family.topology.affinities:
        affinities.setdefault(affinity.device, []).append(affinity)
    wrong = []
    for device in family.devices:
        own = _node(device.numa_node)
        nodes = sorted({n for a in affinities.get(device.id, []) if (n := _node(a.numa_node)) is not None})
        if own is not None and not nodes:
            said = "an affinity stating no node" if device.id in affinities else "no affinity"
            wrong.append(f"invariant device-node-in-the-topology: {device.id} is on NUMA node {own}, but the topology "
                         f"has {said} for it: a consumer of the topology (rayaccel inspect --json's "
                         "affinities) finds it on no node")
        elif nodes and nodes != ([own] if own is not None else []):
            wrong.append(f"invariant affinity-node-is-the-device-node: {device.id}'s affinity states NUMA node "
                         f"{', '.join(map(str, nodes))}, discovery read {own if own is not None else 'none'}")
    return wrong


@check("RAC258", scope="fixture")
def numa_node_in_the_topology(subject: Subject, fixture: str | None) -> Evidence:
    """Every device's NUMA node is in the topology: an affinity states the node discovery read, and no other.

    The topology's affinities are where the SDK's consumers look for a device's place (``rayaccel inspect
    --json``'s ``affinities``, the node picture's NUMA boxes, which prefer an affinity's node to the device's).
    For every device the plugin discovers on the fixture with a NUMA node (Linux's ``-1`` is none), an affinity
    must state that node (`invariant device-node-in-the-topology`: a filter such as ``if d.numa_node:`` drops
    the devices of node 0); an affinity stating a node must state the device's own (`invariant
    affinity-node-is-the-device-node`: a node computed again in the topology hook, from the PCI bus number or
    the index, disagrees with the one read). Not applicable where no device has a NUMA node and no affinity
    states one (a one-socket machine, a VM, a TPU host). Fix: build each affinity from the device record
    (``Affinity(device=d.id, numa_node=d.numa_node)`` for every device whose ``numa_node is not None``), never
    compute the node twice.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    fam = subject.inventory(fixture).family(family.name)
    placed = [d for d in (fam.devices if fam else []) if _node(d.numa_node) is not None]
    stating = [a for a in (fam.topology.affinities if fam else []) if _node(a.numa_node) is not None]
    if fam is None or not (placed or stating):
        raise NotApplicable(f"{fx.ref}: no device has a NUMA node and no affinity states one")
    wrong = numa_topology_differences(fam)
    if wrong:
        raise CheckFailed([f"{fx.ref}: {w}" for w in wrong[:4]] + ([f"... {len(wrong) - 4} more devices"]
                                                                     if len(wrong) > 4 else []))
    return f"{fx.ref}: the {len(placed)} devices with a NUMA node each have an affinity stating it"
