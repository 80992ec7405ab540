"""Corpus mutants that make a number out of vendor text that is none (issue 46, lane D), two shapes: the first
number found in the text (a garbled field or an error message gives one), and ``float()`` (which takes ``nan``,
``inf`` and ``1e309``, and a number past any counter) (RAC256). Both read acme-4's sensor files as the healthy
control does, which takes the file's whole text as an integer or reports it.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-first-number-in-text`` as ``c_first_number_in_text``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import re

from rayaccel import Host, report_problem
from rayaccel_testplugins.corpus import Healthy, add_import_defect

_FIRST_NUMBER = re.compile(r"-?\d+")


def _text(host: Host, path: str) -> str | None:
    try:
        return host.read_text(path)
    except (FileNotFoundError, IsADirectoryError):
        report_problem("unreadable-attribute", f"{path} is missing; read as unknown")
        return None


class FirstNumberInText(Healthy):
    DEFECT = ("a sensor file is read as the first number in its text (re.search(r'-?\\d+')), 'to skip a unit or "
              "padding': a garbled field or an error message ('[Error 15: ...]') gives a number the card never read")
    KILLED_BY = ("RAC256", "invariant text-that-is-no-number-is-unknown")

    def number(self, host: Host, path: str) -> float | None:
        text = _text(host, path)
        match = _FIRST_NUMBER.search(text or "")
        return int(match.group()) if match else None


class SensorsReadByFloat(Healthy):
    DEFECT = ("a sensor file is read with float(), which takes 'nan', 'inf' and '1e309' (inf), and a number of 23 "
              "digits: the card reports a NaN or infinite temperature, power or utilization")
    KILLED_BY = ("RAC256", "invariant text-that-is-no-number-is-unknown")

    def number(self, host: Host, path: str) -> float | None:
        text = _text(host, path)
        try:
            return float(text or "")
        except ValueError:
            report_problem("unreadable-attribute", f"{path} is not a number; read as unknown")
            return None


for _cls in (FirstNumberInText, SensorsReadByFloat):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
