"""Ports for Ray nodes started beside others: outside the kernel's ephemeral range and Ray's worker ports,
free when handed out, never handed out twice."""

from __future__ import annotations

import socket
from pathlib import Path

from rayaccel.support.ports import (
    DEFAULT_EPHEMERAL,
    RAY_WORKER_PORTS,
    candidate_ports,
    ephemeral_range,
    free_ports,
)


def test_candidates_avoid_the_ephemeral_range_ray_worker_ports_and_well_known_ports() -> None:
    pool = candidate_ports((32768, 60999))
    assert pool, "no candidate port at Linux's default ephemeral range"
    assert all(port >= 20000 and not 32768 <= port <= 60999 and port not in RAY_WORKER_PORTS for port in pool)
    assert 20000 in pool and 32767 in pool and 61000 in pool and 32768 not in pool and 60999 not in pool


def test_the_kernels_range_is_read_and_an_unreadable_or_odd_one_means_linuxs_default(tmp_path: Path) -> None:
    good = tmp_path / "range"
    good.write_text("40000\t50000\n")
    assert ephemeral_range(good) == (40000, 50000)
    for text in ("garbage\n", "50000 40000\n", "0 10\n"):
        good.write_text(text)
        assert ephemeral_range(good) == DEFAULT_EPHEMERAL, text
    assert ephemeral_range(tmp_path / "missing") == DEFAULT_EPHEMERAL


def test_ports_are_distinct_free_outside_the_ephemeral_range_and_never_handed_out_twice() -> None:
    low, high = ephemeral_range()
    first, second = free_ports(8), free_ports(8)
    assert len(set(first + second)) == 16
    assert not any(low <= port <= high for port in first + second)
    for port in first:
        with socket.socket() as s:
            s.bind(("", port))  # free when handed out


def test_a_port_someone_holds_is_never_handed_out() -> None:
    with socket.socket() as held, socket.socket() as spare:
        held.bind(("", 0))
        spare.bind(("", 0))
        taken, other = held.getsockname()[1], spare.getsockname()[1]
        spare.close()
        assert free_ports(1, pool=[taken, other]) == [other]
