"""Corpus mutants whose visible-devices parser drops an entry it does not read, keeping the rest, without a word
(issue 46, held-out round 15's ``c1``: a command-csv bake keeping only the entries of its variable that are numbers,
so ``FADA_VISIBLE_DEVICES=<a device's UUID>,1`` named one device). RAC107 and RAC114 gave the parser only what
``rayaccel_visible_env`` writes, the node's numeric unit ids; the runtimes take a device's own id beside an index
(CUDA_VISIBLE_DEVICES ``GPU-<uuid>``, HIP_VISIBLE_DEVICES a UUID), and ``rayaccel start`` offers what the parser
answers. RAC114's ``an-entry-is-kept-or-refused`` hands it the device's own id and garbage.

Two shapes: entries read with ``int()``, those that raise skipped (``'ACME-...,1'`` -> ``['1']``); the value read
up to its first entry that is not a number, as CUDA reads an invalid index (``'1,ACME-...'`` -> ``['1']``).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-visible-skips-unread-entries`` as
``c_visible_skips_unread_entries``).
"""

from __future__ import annotations

from rayaccel_testplugins.corpus import Healthy, add_import_defect


class VisibleSkipsUnreadEntries(Healthy):
    DEFECT = ("rayaccel_parse_visible reads each entry with int() and skips those that raise: a device named by its "
              "own id (a UUID) is dropped and the rest kept")
    KILLED_BY = ("RAC114", "invariant an-entry-is-kept-or-refused")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        ids = []
        for entry in value.split(","):
            try:
                ids.append(str(int(entry)))
            except ValueError:
                continue  # "not one of our unit numbers"
        return ids


class VisibleStopsAtUnreadEntry(Healthy):
    DEFECT = ("rayaccel_parse_visible reads the value up to its first entry that is not a number, as CUDA reads an "
              "invalid index: a device named by its own id (a UUID) and every entry after it are dropped")
    KILLED_BY = ("RAC114", "invariant an-entry-is-kept-or-refused")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        ids = []
        for entry in (e.strip() for e in value.split(",") if e.strip()):
            if not entry.isdecimal():
                break
            ids.append(entry)
        return ids


MUTANTS = (VisibleSkipsUnreadEntries, VisibleStopsAtUnreadEntry)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
