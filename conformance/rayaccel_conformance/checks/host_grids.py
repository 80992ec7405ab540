"""RAC267's ``invariant links-join-grid-neighbours``: a TPU host's ICI links join neighbours of the chip grid the
node itself states.

A TPU host's chips sit in a small grid, and each ICI link joins two chips one step apart along one axis (no
wrap-around inside a host: that is a slice's). The node states the grid's bounds: ``TPU_CHIPS_PER_HOST_BOUNDS`` in
its environment, which libtpu reads and Ray's TPU manager writes for a task's chips (``1,2,1`` for two:
``ray/_private/accelerators/tpu.py``), or on a TPU VM the ``CHIPS_PER_HOST_BOUNDS`` of the metadata server's
``tpu-env``, the attribute Ray's manager reads the slice's topology from (``2,4,1`` on a v5litepod-8, ``2,2,1`` on a
v4 or v3-8 host). Chip ``i`` sits at ``(i mod X, (i div X) mod Y, i div XY)``: the order jax lists a host's TPU
devices in, x first (``TpuDevice(id=1, coords=(1,0,0))``, ``id=2, coords=(0,1,0)`` on a 2x2 host:
huggingface/transformers#20252, skypilot-org/skypilot#3947). A plugin laying the chips out otherwise (a transposed
table of grids) reports as many links between other pairs, which a count of links or of link ends cannot tell.
"""

from __future__ import annotations

import re
from typing import Any

from rayaccel.records import FamilyInventory
from rayaccel.support.raycompat import ray_family_for

#: Ray's manager whose nodes state a chip grid.
TPU_MANAGER = "TPUAcceleratorManager"
#: The node's own statement of its chip grid: the environment's variable, else the TPU VM's tpu-env entry.
BOUNDS_ENV = "TPU_CHIPS_PER_HOST_BOUNDS"
TPU_ENV_URL = "http://metadata.google.internal/computeMetadata/v1/instance/attributes/tpu-env"
METADATA_HEADERS = {"Metadata-Flavor": "Google"}
_TPU_ENV_BOUNDS = re.compile(r"^\s*CHIPS_PER_HOST_BOUNDS:\s*'?([0-9]+(?:,[0-9]+)*)'?\s*$", re.MULTILINE)
_BOUNDS = re.compile(r"^[0-9]+(,[0-9]+){1,2}$")
#: The ICI kind of the link vocabulary.
ICI = "ici"
METADATA_TIMEOUT_S = 1.0


def stated_bounds(host: Any) -> tuple[tuple[int, int, int], str] | None:
    """The chip grid's (X, Y, Z) bounds the node states, and where it states them; None where it states none."""
    value = host.environ().get(BOUNDS_ENV)
    where = f"{BOUNDS_ENV} in the node's environment"
    if value is None:
        try:
            response = host.http_get(TPU_ENV_URL, headers=METADATA_HEADERS, timeout=METADATA_TIMEOUT_S)
        except Exception:  # no metadata server (not a TPU VM): the node states no grid there
            return None
        found = _TPU_ENV_BOUNDS.search(response.body) if response.status == 200 else None
        if found is None:
            return None
        value, where = found.group(1), "CHIPS_PER_HOST_BOUNDS in the metadata server's tpu-env"
    if not _BOUNDS.match(value.strip()):
        return None
    dims = [int(d) for d in value.strip().split(",")] + [1]
    if 0 in dims:
        return None
    return (dims[0], dims[1], dims[2]), where


def _place(index: int, bounds: tuple[int, int, int]) -> tuple[int, int, int]:
    x, y, _ = bounds
    return index % x, (index // x) % y, index // (x * y)


def grid_link_problems(family: Any, inventory: FamilyInventory, host: Any, ref: str) -> tuple[list[str], str | None]:
    """Problems with the ICI links between this host's chips against the grid the node states, and a line of
    evidence where they were compared (None: not compared: no TPU family, no grid stated, chips beyond it)."""
    if ray_family_for(family.resource_name, family.visible_devices_env_var) != TPU_MANAGER:
        return [], None
    stated = stated_bounds(host)
    if stated is None:
        return [], None
    bounds, where = stated
    by_id = {d.id: d for d in inventory.devices}
    size = bounds[0] * bounds[1] * bounds[2]
    if not by_id or max(d.index for d in by_id.values()) >= size:
        return [], None  # chips the stated grid has no place for: it says nothing of their links
    links = [ln for ln in inventory.topology.links if ln.kind == ICI and ln.a in by_id and ln.b in by_id]
    apart = []
    for link in links:
        a, b = _place(by_id[link.a].index, bounds), _place(by_id[link.b].index, bounds)
        if sum(abs(p - q) for p, q in zip(a, b, strict=True)) != 1:
            apart.append(f"{by_id[link.a].index}-{by_id[link.b].index} ({a[:2]}-{b[:2]})")
    grid = ",".join(str(d) for d in bounds)
    if apart:
        return [f"invariant links-join-grid-neighbours, {ref}: the node states its chip grid {grid} ({where}; chip i "
                f"at (i mod {bounds[0]}, i div {bounds[0]}), the order jax lists a host's TPU devices in), but "
                f"{len(apart)} of its {len(links)} ICI links join chips that are not neighbours in it: "
                f"{', '.join(apart[:4])}{' ...' if len(apart) > 4 else ''}; an ICI link inside a host joins chips one "
                f"step apart along one axis (no wrap-around: that is a slice's), so these links do not exist and "
                f"the grid's real ones are missing: lay the chips out by the bounds the node states"], None
    return [], f"{len(links)} ICI links join neighbours of the chip grid {grid} the node states ({where})"
