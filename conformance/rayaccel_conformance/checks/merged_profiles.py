"""One partition resource, one profile as the machine names it (RAC216's one-resource-one-profile, issue 46, held-out
round 13's ``n1``).

A partition resource stands for one profile: a task asking for it gets any partition listed under it. Two
partitions of equal size can still be different profiles: NVIDIA's ``1g.10gb+me`` (one NVDEC, JPEG and OFA) and
``1g.10gb`` (none) have the same slices and memory (NVIDIA's MIG user guide, Supported MIG Profiles; ``nvidia-smi mig
-lgip`` lists both, profile ids 20 and 19), so RAC216's sizes cannot tell them apart, but the machine names them
apart. Where each partition's own record on the machine (the library's or a tool's JSON record stating its id, the
files of the directory its id file is in, the output line holding its id) writes its profile as part of one name,
partitions under one resource must be written under one name: a plugin that cuts an option (``+me``) or a
compute-instance prefix (``1c.``) off the vendor's name puts two profiles under one resource. The match allows the
SDK's spelling (``+`` written ``.``, any case). Each helper is pure.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

#: The characters of one name as tools print a profile (``1g.10gb+me``, ``cpx.1xcd``, ``1c.2g.20gb``).
_NAME_CHARS = r"[A-Za-z0-9_.+-]"


def _strings(data: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(data, dict):
        for key, item in data.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(data, list):
        for n, item in enumerate(data):
            yield from _strings(item, f"{path}.{n}")
    elif isinstance(data, str):
        yield path, data


def _index_records(data: Any, path: str, index: dict[str, list[tuple[str, Mapping[str, Any]]]]) -> None:
    """Each record (mapping) of ``data``, with its path, added to ``index`` under each string it holds as one of its
    own values (stripped), in document order."""
    if isinstance(data, dict):
        for value in dict.fromkeys(v.strip() for v in data.values() if isinstance(v, str)):
            index.setdefault(value, []).append((path, data))
        for key, item in data.items():
            _index_records(item, f"{path}.{key}", index)
    elif isinstance(data, list):
        for n, item in enumerate(data):
            _index_records(item, f"{path}.{n}", index)


class MachineRecords:
    """A host state's (``HostState.model_dump(mode='json')``) library and JSON records, indexed once by the values they
    state: asking about one id after another (every device's and partition's) reads each library and parses each
    command's output once, not once per id. Read-only: it holds the state's own mappings."""

    def __init__(self, state: Mapping[str, Any]) -> None:
        self.files: Mapping[str, str] = state.get("files") or {}
        self._libraries: list[dict[str, list[tuple[str, Mapping[str, Any]]]]] = []
        for name, data in (state.get("libraries") or {}).items():
            self._libraries.append({})
            _index_records(data, f"library {name}", self._libraries[-1])
        #: Per command line, in order: its JSON output's records by value, or its text output (not JSON).
        self._commands: list[tuple[str, dict[str, list[tuple[str, Mapping[str, Any]]]] | str]] = []
        for line, answer in (state.get("commands") or {}).items():
            stdout = str((answer or {}).get("stdout") or "")
            try:
                data = json.loads(stdout)
            except ValueError:
                self._commands.append((line, stdout))
                continue
            index: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
            _index_records(data, f"`{line}` output", index)
            self._commands.append((line, index))

    def library_records(self, ident: str) -> list[tuple[str, Mapping[str, Any]]]:
        return [found for index in self._libraries for found in index.get(ident, ())]

    def about(self, ident: str) -> list[tuple[str, Mapping[str, Any]]]:
        """The library and JSON records that state ``ident`` as one of their own values, with where each is."""
        return self.library_records(ident) + [found for _, output in self._commands if not isinstance(output, str)
                                              for found in output.get(ident, ())]

    def texts(self, ident: str) -> list[tuple[str, str]]:
        """See :func:`partition_texts`."""
        found: list[tuple[str, str]] = []
        for path, record in self.library_records(ident):
            found += list(_strings(record, path))
        files = self.files
        folders = {posixpath.dirname(p) for p, text in files.items() if (text or "").strip() == ident}
        folders |= {p.rsplit(f"/{ident}/", 1)[0] + f"/{ident}" for p in files if f"/{ident}/" in p}
        found += [(f"file {p}", text or "") for p, text in files.items() if posixpath.dirname(p) in folders]
        token = re.compile(r"(?<![\w-])" + re.escape(ident) + r"(?![\w-])")
        for line, output in self._commands:
            if isinstance(output, str):
                found += [(f"`{line}` output line {n}", row) for n, row in enumerate(output.splitlines())
                          if token.search(row)]
                continue
            for path, record in output.get(ident, ()):
                found += list(_strings(record, path))
        return found


def machine_records(state: Mapping[str, Any] | MachineRecords) -> MachineRecords:
    """``state`` indexed (once: an index given is taken as it is)."""
    return state if isinstance(state, MachineRecords) else MachineRecords(state)


def records_about(state: Mapping[str, Any] | MachineRecords, ident: str) -> list[tuple[str, Mapping[str, Any]]]:
    """The library and JSON records that state ``ident`` as one of their own values, with where each is."""
    return machine_records(state).about(ident)


def partition_texts(state: Mapping[str, Any] | MachineRecords, ident: str) -> list[tuple[str, str]]:
    """The machine's texts about the partition ``ident``, each with where it is: the strings of every library or
    JSON record that states the id as one of its values, the files of each directory holding a file that states it
    (or named by it), and each line of a tool's text output that holds it."""
    return machine_records(state).texts(ident)


def profile_names(texts: Sequence[tuple[str, str]], profile: str) -> dict[str, str]:
    """Each name in ``texts`` that holds ``profile`` (``+`` matched by ``.``, any case), as the SDK spells a profile
    (lower case, ``+`` as ``.``), with where the first is written."""
    spelled = r"[.+]".join(re.escape(part) for part in profile.split("."))
    pattern = re.compile(rf"(?<!{_NAME_CHARS}){_NAME_CHARS}*?{spelled}{_NAME_CHARS}*(?!{_NAME_CHARS})", re.IGNORECASE)
    names: dict[str, str] = {}
    for where, text in texts:
        for match in pattern.finditer(text):
            names.setdefault(match.group(0).strip(".+-").lower().replace("+", "."), where)
    return names


def merged_profiles(partition_units: Mapping[str, Sequence[str]], profiles: Mapping[str, str],
                    state: Mapping[str, Any] | MachineRecords) -> list[str]:
    """For each partition resource (``partition_units``: resource -> partition ids; ``profiles``: id -> profile), the
    partitions whose own records on the machine write their profile as one name each, and two names among them:
    two profiles the machine tells apart offered under one resource. Empty where the machine writes one name, or
    none, for the partitions of each resource."""
    wrong = []
    records = machine_records(state)
    for resource, ids in sorted(partition_units.items()):
        named: dict[str, tuple[str, str]] = {}  # the machine's name -> (partition, where)
        for ident in ids:
            if ident not in profiles:
                continue
            names = profile_names(records.texts(ident), profiles[ident])
            if len(names) == 1:
                ((name, where),) = names.items()
                named.setdefault(name, (ident, where))
        if len(named) > 1:
            (a, (pa, wa)), (b, (pb, wb)) = sorted(named.items())[:2]
            wrong.append(
                f"invariant one-resource-one-profile: partition resource {resource} stands for partitions the machine "
                f"names apart: {pa} is '{a}' ({wa}) and {pb} is '{b}' ({wb}); a task asking for {resource} gets "
                "either, and one of them is not the profile it asked for (an option such as NVIDIA's '+me', media "
                "extensions, or a compute instance's 'Nc.' prefix cut off the vendor's name). Fix: name each "
                "partition's profile by the vendor's whole name ('+' written '.'), so another profile gets another "
                "resource")
    return wrong
