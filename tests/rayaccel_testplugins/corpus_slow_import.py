"""A corpus mutant whose defect is its import: it takes 1.5 s (it waits for the vendor library's loader), and
every Ray worker and rayaccel command pays for it. In a module of its own, so importing the corpus stays fast."""

from __future__ import annotations

import time

from rayaccel_testplugins import corpus

time.sleep(1.5)  # as a vendor library's eager initialisation would


class ImportTakesSeconds(corpus.Healthy):
    DEFECT = "importing the plugin takes 1.5 s (eager vendor library initialisation at import)"
    KILLED_BY = ("RAC112", "importing it takes")


plugin = corpus.add_import_defect(ImportTakesSeconds)
