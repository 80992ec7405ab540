"""ICI topology: the chips of one host form a small grid, and a slice spans hosts.

Within a host, each chip has ICI links to its grid neighbours: 1 chip alone, 2 chips in a 1x2 row
(Ray's ``TPU_CHIPS_PER_HOST_BOUNDS=1,2,1``), 4 chips in 2x2 (v4, v5p, v6e and TPU7x hosts), 8 chips in
2x4 (v5e / v6e single-host slices; GCE's tpu-env says ``CHIPS_PER_HOST_BOUNDS: '2,4,1'``). Chip ``i``
sits at ``(i mod X, i div X)``. Wrap-around links only exist at slice scale, so none are drawn here.
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Device, Domain, Link, report_problem
from rayaccel_tpu.podtype import chips_in_slice, hosts_in_slice
from rayaccel_tpu.slice_info import SliceInfo

#: chips on the host -> (X, Y) bounds of the host's chip grid.
HOST_GRIDS = {1: (1, 1), 2: (1, 2), 4: (2, 2), 8: (2, 4)}


def host_grid(chips: int) -> tuple[int, int]:
    """The (X, Y) grid of a host with this many chips; an unusual count is laid out as one row."""
    return HOST_GRIDS.get(chips, (chips, 1))


def grid_neighbours(chips: int) -> list[tuple[int, int]]:
    """Pairs (i, j), i < j, of chip positions joined by an on-host ICI link."""
    x_bound, y_bound = host_grid(chips)
    pairs = []
    for i in range(chips):
        x, y = i % x_bound, i // x_bound
        if x + 1 < x_bound and i + 1 < chips:
            pairs.append((i, i + 1))
        if y + 1 < y_bound and i + x_bound < chips:
            pairs.append((i, i + x_bound))
    return pairs


def ici_links(devices: Sequence[Device]) -> list[Link]:
    """Links among the chips present. A lost chip takes its links with it."""
    by_index = {d.index: d for d in devices}
    highest = max(by_index, default=-1) + 1
    # The grid is the host's, not what is left of it: a lost chip 7 leaves a 2x4 host with a hole.
    full = next((n for n in sorted(HOST_GRIDS) if n >= highest), highest)
    return [Link(a=by_index[i].id, b=by_index[j].id, kind="ici")
            for i, j in grid_neighbours(full) if i in by_index and j in by_index]


def slice_domain(info: SliceInfo, devices: Sequence[Device]) -> Domain | None:
    """The slice as a scale-up domain, when this host knows which slice it is in."""
    if not info.name or not info.pod_type or not devices:
        return None
    hosts = hosts_in_slice(info.pod_type, len(devices))
    host_index = info.worker_id if info.worker_id is not None and info.worker_id < hosts else None
    if info.worker_id is not None and host_index is None:
        # A worker group of more hosts than the slice has (KubeRay's numOfHosts above the pod type's): worker N of
        # N hosts is no place in the slice, so it is left unknown, and said.
        report_problem("tpu-worker-beyond-slice", f"TPU worker id {info.worker_id} is beyond the {info.pod_type} "
                       f"slice's {hosts} hosts (worker ids 0-{hosts - 1}); this host's place in the slice is unknown",
                       fix="give the slice's hosts worker ids 0 to hosts-1 (KubeRay: numOfHosts as the pod type and "
                       "topology need; TPU_WORKER_ID, or the metadata's agent-worker-number)")
    return Domain(kind="tpu-slice", id=info.name, size=max(chips_in_slice(info.pod_type), len(devices)),
                  members=[d.id for d in devices], hosts=hosts, host_index=host_index)
