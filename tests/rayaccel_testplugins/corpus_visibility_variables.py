"""Corpus mutants whose visible env sets a variable that is no visibility variable of the family (issue 46, held-out
round 13's ``c1``: a command-csv bake whose ``rayaccel_visible_env`` also returned ``LD_LIBRARY_PATH``). Every key a
visible env returns was written into each worker before a task and into the raylet's env, so it replaced the
process's own value on the whole node; RAC107 checked only the family's variable and other families'. Now the SDK
sets only the family's variable and the companions it declares, and RAC107's ``sets-only-its-visibility-variables``
names the plugin.

Two shapes: a constant library path (c1's), and a thread count following the units given (``OMP_NUM_THREADS``, which
Ray's worker sets itself from the task's CPUs, ray/_private/utils.py ``set_omp_num_threads_if_unset``).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-visible-env-sets-library-path`` as
``c_visible_env_sets_library_path``).
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel_testplugins.corpus import Healthy, add_import_defect


class VisibleEnvSetsLibraryPath(Healthy):
    DEFECT = ("rayaccel_visible_env also returns LD_LIBRARY_PATH (the runtime's libraries): a task's process loses its "
              "own library path")
    KILLED_BY = ("RAC107", "invariant sets-only-its-visibility-variables")
    LIBRARIES = "/opt/acme/lib"

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        return {**super().rayaccel_visible_env(unit_ids), "LD_LIBRARY_PATH": self.LIBRARIES}


class VisibleEnvSetsThreadCount(Healthy):
    DEFECT = ("rayaccel_visible_env also returns OMP_NUM_THREADS, 8 per unit given (each card's host threads): the "
              "thread count Ray's worker sets from the task's CPUs is replaced")
    KILLED_BY = ("RAC107", "invariant sets-only-its-visibility-variables")
    THREADS_PER_UNIT = 8

    def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
        threads = str(self.THREADS_PER_UNIT * len(unit_ids))
        return {**super().rayaccel_visible_env(unit_ids), **({"OMP_NUM_THREADS": threads} if unit_ids else {})}


MUTANTS = (VisibleEnvSetsLibraryPath, VisibleEnvSetsThreadCount)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
