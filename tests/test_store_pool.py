"""Bounded pools of open world files: least recently used closed first, never one in use; and
a data directory of many more worlds than handles served through them, end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.store import Availability, HandlePool
from tools.many_worlds import measure


def _pool(limit: int) -> tuple[HandlePool[str, list[str]], list[str]]:
    closed: list[str] = []
    return HandlePool(limit, lambda k: [k], lambda v: closed.append(v[0])), closed


def test_the_least_recently_used_entry_is_closed_first() -> None:
    """Past the limit the entry used longest ago is closed; a use makes an entry recent."""
    pool, closed = _pool(2)
    pool.get("a")
    pool.get("b")
    pool.get("a")
    pool.get("c")
    assert closed == ["b"] and sorted(k for k in ("a", "b", "c") if k in pool) == ["a", "c"]
    assert pool.evictions == 1


def test_a_pinned_entry_is_never_closed_and_the_pool_goes_over_rather() -> None:
    """While pinned an entry survives any number of other opens; with every entry pinned the
    pool grows past its limit, and shrinks back once the pins are released."""
    pool, closed = _pool(1)
    with pool.pinned("a") as a:
        for key in "bcd":
            pool.get(key)
        assert "a" in pool and pool.peek("a") is a and "a" not in closed
        with pool.pinned("e"):
            pool.get("f")
            assert "e" in pool and len(pool) == 3  # a, e pinned, f new: over the limit
    pool.get("g")
    assert len(pool) == 1 and "g" in pool


def test_a_pool_needs_room_for_one() -> None:
    """A limit below one is refused."""
    with pytest.raises(ValueError):
        HandlePool(0, str, print)


def test_availability_counts_worlds_until_they_open_again() -> None:
    """A world that failed is counted (with why) until it opens again."""
    a = Availability()
    a.failed("x", "no handles")
    a.failed("y", "damaged")
    a.opened("x")
    assert len(a) == 1 and a.reason("y") == "damaged" and a.reason("x") is None


def test_many_more_worlds_than_handles_are_served_with_a_fixed_number_of_them(
    tmp_path: Path,
) -> None:
    """Issue 17 defect 4: 1,000 worlds on disk, a child `credence serve --data-dir` with
    RLIMIT_NOFILE 256 and --max-open-worlds 16; clients touch 400 worlds (each world kept
    open would need 2,000 handles): every event is acked, the child's open handles stay
    within what the pools allow, its memory stays bounded (each world kept open cost ~1.15 MB:
    400 would take it past 450 MiB; served through the pools it stays near 60 MiB, ~40 of them
    the idle sidecar), the paged `worlds` listing has every world, health is ok."""
    figures = measure(
        tmp_path / "worlds", worlds=1000, touch=400, max_open=16, nofile=256, clients=16
    )
    assert figures.refused == [] and figures.acked == 400
    # writer pool 16 x (db, WAL, shm) + 2 reader threads x 16 x (db, WAL, shm) + sockets etc.
    assert figures.fds_max <= 16 * 3 * 3 + 16 + 40 < 256
    assert 0 < figures.peak_mib < 120, figures.peak_mib
    assert figures.listed == 1000 + 1  # (and the world of the client timing its acks)
    assert figures.steady  # (acked meanwhile)
    assert figures.health.startswith("200 ") and '"status":"ok"' in figures.health
