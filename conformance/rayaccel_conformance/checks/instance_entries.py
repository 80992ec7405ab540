"""An instance type's hint is its own entry's (RAC222's ``invariant a-hint-is-its-own-entry``, issue 46).

A plugin's instance-type table trails the cloud: a provider launches a new size of a family the table lists
(AWS added ``p5.4xlarge``, one H100, to a family whose only size had been ``p5.48xlarge`` with eight), and until the
vendor's next release the table has no row for it. An autoscaler asking then must get no hint, never another
size's: a plugin that answers an unlisted size with its family's first entry (or its nearest name) passes on
today's table, where every real size of a listed family is listed, and starts a machine counted 8 GPUs that has 1
on the day a size launches. The SDK reads the table (:func:`rayaccel.plugins.instance_types.load_instance_types`),
so the suite can hand the plugin its own table as it stood before a size was added: each entry left out in
turn, the plugin must answer that instance type with no hint, or as it did with the entry (a rule that
derives it), and never with another answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from rayaccel.plugins import instance_types
from rayaccel.plugins.instance_types import InstanceTypeTable
from rayaccel.records import CloudHint

Ask = Callable[[str, str], CloudHint | None]


@contextmanager
def tables_read(instead: dict[str, InstanceTypeTable] | None = None) -> Iterator[set[str]]:
    """While open: the paths of the instance-type tables the SDK's loader is asked for (the set yielded), and
    each path of ``instead`` answered with its table there rather than the file's."""
    real = instance_types.load_instance_types
    seen: set[str] = set()

    def load(path: Path) -> InstanceTypeTable:
        seen.add(str(path))
        return (instead or {}).get(str(path)) or real(path)

    with mock.patch.object(instance_types, "load_instance_types", load):
        yield seen


def without(table: InstanceTypeTable, provider: str, name: str) -> InstanceTypeTable:
    """``table`` as it stood before ``provider``'s instance type ``name`` was added to it."""
    kept = {p: {n: e for n, e in entries.items() if (p, n) != (provider, name)}
            for p, entries in table.instance_types.items()}
    return table.model_copy(update={"instance_types": kept})


def _facts(hint: CloudHint) -> tuple[Any, ...]:
    return hint.count, hint.accelerator_type, sorted(hint.extra_resources.items())


def _said(hint: CloudHint) -> str:
    extra = f" and {dict(sorted(hint.extra_resources.items()))}" if hint.extra_resources else ""
    return f"{hint.count:g} x {hint.accelerator_type or 'no accelerator type'}{extra}"


def hints_from_other_entries(ask: Ask, asked: list[tuple[str, str]]) -> tuple[list[str], int]:
    """``invariant a-hint-is-its-own-entry`` over the tables the plugin reads through the SDK while answering
    ``asked``: the failures, and how many entries were left out."""
    with tables_read() as seen:
        for provider, name in asked:
            ask(provider, name)
    wrong, tried = [], 0
    for path in sorted(seen):
        table = instance_types.load_instance_types(Path(path))
        entries = table.hints()
        for entry in entries:
            full = ask(entry.provider, entry.instance_type)
            with tables_read({path: without(table, entry.provider, entry.instance_type)}):
                left = ask(entry.provider, entry.instance_type)
            tried += 1
            if left is None or (full is not None and _facts(left) == _facts(full)):
                continue
            donors = [e.instance_type for e in entries if e.provider == entry.provider
                      and e.instance_type != entry.instance_type and _facts(e) == _facts(left)]
            whose = f", {' and '.join(donors[:2])}'s entry" if donors else ""
            own = _said(full) if full is not None else "no hint"
            wrong.append(f"invariant a-hint-is-its-own-entry: with {entry.provider} {entry.instance_type} left out of "
                         f"the instance-type table {path} (as a table stands before the cloud adds that size), the "
                         f"plugin still hints it: {_said(left)}{whose}, where its own entry gives {own}: a hint for "
                         "an instance type the table does not list is taken from another entry, which starts a "
                         "machine counted otherwise than it is; answer no hint for an instance type the table does "
                         "not list")
    return wrong, tried
