"""A corpus mutant whose defect is its import: it starts a non-daemon thread (a telemetry flusher), so every
process that loads the plugin lingers at exit. In a module of its own, so importing the corpus stays clean;
the thread ends after a few seconds, so the test process that imports this module is not held for long."""

from __future__ import annotations

import threading
import time

from rayaccel_testplugins import corpus

threading.Thread(target=time.sleep, args=(4,), name="acme-telemetry-flush").start()


class ImportStartsThread(corpus.Healthy):
    DEFECT = "importing the plugin starts a non-daemon telemetry thread, so every process loading it lingers at exit"
    KILLED_BY = ("RAC112", "a non-daemon thread is still running after import and hooks")


plugin = corpus.add_import_defect(ImportStartsThread)
