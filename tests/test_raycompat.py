"""The tables of what Ray reserves agree with the installed Ray, so a Ray upgrade cannot drift silently."""

from __future__ import annotations

import ray
import ray._private.accelerators as ray_accelerators
from ray._private import ray_constants

from rayaccel.raycompat import RAY_BUILTIN_FAMILIES, RAY_LABEL_PREFIX, TESTED_RAY_VERSIONS


def test_installed_ray_is_a_tested_version():
    assert ray.__version__ in TESTED_RAY_VERSIONS


def test_builtin_families_match_rays_registry():
    installed = {m.__name__: (m.get_resource_name(), m.get_visible_accelerator_ids_env_var())
                 for m in ray_accelerators.get_all_accelerator_managers()}
    assert installed == RAY_BUILTIN_FAMILIES


def test_label_prefix_matches_ray():
    assert ray_constants.RAY_DEFAULT_LABEL_KEYS_PREFIX == RAY_LABEL_PREFIX
