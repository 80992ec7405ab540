"""The tables of what Ray reserves agree with the installed Ray, so a Ray upgrade cannot drift silently."""

from __future__ import annotations

import ray
import ray._private.accelerators as ray_accelerators
from ray._private import ray_constants

from rayaccel.support.raycompat import (
    RAY_BUILTIN_FAMILIES,
    RAY_LABEL_PREFIX,
    RAY_VISIBLE_ENV_COMPANIONS,
    TESTED_RAY_VERSIONS,
)


def test_installed_ray_is_a_tested_version():
    assert ray.__version__ in TESTED_RAY_VERSIONS


def test_builtin_families_match_rays_registry():
    installed = {m.__name__: (m.get_resource_name(), m.get_visible_accelerator_ids_env_var())
                 for m in ray_accelerators.get_all_accelerator_managers()}
    assert installed == RAY_BUILTIN_FAMILIES


def test_visible_env_companions_are_what_rays_managers_write_beside_their_variable() -> None:
    """Each manager, given one, two and three units, writes its own variable and only the companions listed."""
    import os

    written: dict[str, set[str]] = {}
    for manager in ray_accelerators.get_all_accelerator_managers():
        for units in (["0"], ["0", "1"], ["0", "1", "2"]):
            before = dict(os.environ)
            manager.set_current_process_visible_accelerator_ids(units)
            changed = {key for key, value in os.environ.items() if before.get(key) != value}
            os.environ.clear()
            os.environ.update(before)
            own = manager.get_visible_accelerator_ids_env_var()
            written.setdefault(manager.__name__, set()).update(changed - {own})
    assert {name: tuple(sorted(keys)) for name, keys in written.items() if keys} == RAY_VISIBLE_ENV_COMPANIONS


def test_label_prefix_matches_ray():
    assert ray_constants.RAY_DEFAULT_LABEL_KEYS_PREFIX == RAY_LABEL_PREFIX


def test_what_importing_ray_sets_in_the_environment_is_known() -> None:
    """A plugin importing Ray (a transport) must not be blamed for Ray's own import side effect, and nothing
    else may pass unblamed: the table is exactly what a fresh `import ray` changes."""
    import json
    import subprocess
    import sys

    from rayaccel.support.raycompat import RAY_IMPORT_ENVIRON

    probe = ("import json, os\nbefore = dict(os.environ)\nimport ray\n"
             "print(json.dumps({k: v for k, v in os.environ.items() if before.get(k) != v}))")
    env = {k: v for k, v in __import__("os").environ.items() if k != "RAY_CLIENT_MODE"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == RAY_IMPORT_ENVIRON
