"""Saves never stall other worlds (issue 17, defect 6): the writer service builds a fork in
steps between other worlds' batches, over the wire, in one file and in a data directory.
Meanwhile the world being built refuses what is sent to it with ``world_busy``; the
``forked`` reply comes once it is whole; a shutdown midway leaves nothing of it."""

from __future__ import annotations

import asyncio
import itertools
import signal
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from wsclient import WsClient, guard, observe, running, within

from sidecar.engine import DEFAULT_RULES, parse_event
from sidecar.server import Sidecar
from sidecar.store import DataDir, SingleFile
from tools.harness import ServerProcess
from tools.town import Town

MODES = ["db", "data_dir"]
#: The source world's size. The issue's figure is 20,000 events (``python -m
#: tools.save_figures`` measures that); a step costs the same whatever the world's size, so
#: a few thousand events make a fork long enough for dozens of acks of another world.
EVENTS = 2000


def config(tmp_path: Path, mode: str) -> dict[str, Any]:
    if mode == "data_dir":
        return {"data_dir": tmp_path / "worlds"}
    return {"db": tmp_path / "x.db"}


def seed_town(tmp_path: Path, mode: str, n: int = EVENTS) -> None:
    """World ``town`` with ``n`` synthetic town events, written before the sidecar starts."""
    events = [parse_event(e) for _, e in itertools.islice(Town(50, seed=1), n)]
    store = DataDir(tmp_path / "worlds") if mode == "data_dir" else SingleFile(tmp_path / "x.db")
    try:
        store.import_events("town", DEFAULT_RULES, events)
    finally:
        store.close()


async def until_saving(sc: Sidecar, world: str) -> None:
    """Wait until the writer service has taken the save into ``world``."""
    while world not in sc.writer.saving:
        await asyncio.sleep(0.005)


_ids = itertools.count()


async def one_ack(c: WsClient, day: float) -> float:
    """Send one event on ``c`` and return how long its ack took (seconds)."""
    start = time.perf_counter()
    ack = await c.event("observe", day, event_id=f"p{next(_ids)}", **observe(["ann"], "k", 1))
    assert ack["type"] == "ack", ack
    return time.perf_counter() - start


class Acks:
    """One client's events, each sent once the previous one is acked, 0.01 day apart: how
    long each ack took (another world's, measured before and while a save runs)."""

    def __init__(self, client: WsClient) -> None:
        self.client, self.day = client, 1.0

    async def count(self, n: int) -> list[float]:
        return [await self._one() for _ in range(n)]

    async def meanwhile(self, going: Callable[[], bool]) -> list[float]:
        """Acks timed one after another for as long as ``going()`` says so."""
        samples = []
        while going():
            samples.append(await self._one())
        return samples

    async def _one(self) -> float:
        took = await one_ack(self.client, self.day)
        self.day += 0.01
        return took


def p99(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=100)[98] if len(samples) > 1 else samples[0]


@pytest.mark.parametrize("mode", MODES)
async def test_a_world_being_built_refuses_everything_with_world_busy(
    tmp_path: Path, mode: str
) -> None:
    """While a fork builds `slot`: an event for it (not stored), a query of it, a delete of
    it and a second fork into it are `world_busy`; the source and other worlds go on; after
    the `forked` reply `slot` holds the whole log and takes events."""
    seed_town(tmp_path, mode, 2 * EVENTS)  # (a fork long enough for every check)
    async with (
        running(tmp_path, **config(tmp_path, mode)) as sc,
        WsClient(sc.url, "town") as town,
        WsClient(sc.url, "town") as town2,
        WsClient(sc.url, "slot") as slot,
        WsClient(sc.url, "other") as other,
    ):
        await town.send({"type": "fork", "into": "slot", "rid": "f"})
        await within(until_saving(sc, "slot"), 30)
        listed = [w["world"] for w in (await town2.request({"type": "worlds"}))["worlds"]]
        assert "slot" not in listed  # not whole yet: not seen (the worker has barely begun)
        busy = await slot.event("observe", 1, event_id="early", **observe(["ann"], "k", 1))
        assert busy["type"] == "error" and busy["code"] == "world_busy", busy
        assert busy["event_id"] == "early"
        query = await slot.request({"type": "beliefs", "resident": "ann"})
        assert query["code"] == "world_busy"
        assert (await town2.request({"type": "delete", "world": "slot"}))["code"] == "world_busy"
        again = await town2.request({"type": "fork", "into": "slot"})
        assert again["code"] == "world_busy"
        async with WsClient(sc.url, "slot") as late:
            refused = late.hello_error
            assert refused is not None and refused["code"] == "world_busy", late.welcome
            assert await late.wait_closed() == 1013  # (no seq to tell of a world not whole)
        assert (await other.event("tick", 1, event_id="t1"))["type"] == "ack"
        forked = await town.next_where(lambda f: f.get("rid") == "f", guard(120))
        assert forked["type"] == "forked" and forked["events"] == 2 * EVENTS, forked
        ack = await slot.event("observe", 1e6, event_id="early", **observe(["ann"], "k", 1))
        assert ack["type"] == "ack" and ack["seq"] > 0  # the refused event was not stored
        info = {w["world"]: w for w in (await town2.request({"type": "worlds"}))["worlds"]}
        assert info["slot"]["events"] == 2 * EVENTS + 1


@pytest.mark.alone
@pytest.mark.parametrize("mode", MODES)
async def test_other_worlds_acks_keep_their_latency_while_a_long_world_forks(
    tmp_path: Path, mode: str
) -> None:
    """Another world's acks during a fork of a 2,000-event world: p99 ≤ 100 ms (the issue's
    bound), and many of them, not a stall.

    Robust on a shared 2-core machine: the same client's acks are first measured without a
    save, in the same test, and the bound is ``max(100 ms, 3 × that baseline p99)``, so a
    loaded machine slows both phases alike and does not fail the test, while a stall (the
    old writer held other worlds for the whole fork: 2 acks in 14 s, worst 4.8 s) fails both
    assertions. Acks are sequential (each waits for the previous), so their count during
    the fork says how much the fork held them back.
    """
    seed_town(tmp_path, mode)
    async with (
        running(tmp_path, **config(tmp_path, mode)) as sc,
        WsClient(sc.url, "town") as town,
        WsClient(sc.url, "other") as other,
    ):
        acks = Acks(other)
        baseline = await acks.count(200)
        await town.send({"type": "fork", "into": "slot", "rid": "f"})
        await within(until_saving(sc, "slot"), 30)
        started = time.perf_counter()
        during = await acks.meanwhile(lambda: "slot" in sc.writer.saving)
        took = time.perf_counter() - started
        forked = await town.next_where(lambda f: f.get("rid") == "f", guard(120))
        assert forked["type"] == "forked" and forked["events"] == EVENTS, forked
    assert_not_held(f"{mode}: fork of {EVENTS} events", baseline, during, took, least=20)


def assert_not_held(
    what: str, baseline: list[float], during: list[float], took: float, *, least: int
) -> None:
    """Another world's acks during a save: at least ``least`` of them, p99 within
    max(100 ms, 3 × the same client's baseline p99) (robust on a loaded machine, failed by a
    stall); the figures are printed."""
    bound = max(0.100, 3 * p99(baseline))
    print(
        f"{what} {took:.2f} s; other world's acks: baseline "
        f"p50 {statistics.median(baseline) * 1e3:.1f} p99 {p99(baseline) * 1e3:.1f} ms; "
        f"during n={len(during)} p50 {statistics.median(during) * 1e3:.1f} "
        f"p99 {p99(during) * 1e3:.1f} max {max(during) * 1e3:.1f} ms (bound {bound * 1e3:.0f})"
    )
    assert len(during) >= least, (len(during), took)
    assert p99(during) <= bound


async def test_a_shutdown_midway_through_a_fork_refuses_it_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    """Stopping the sidecar during a fork answers it `shutting_down`; the store then holds no
    trace of the new world, and the same fork works after a restart."""
    seed_town(tmp_path, "db")
    async with running(tmp_path) as sc, WsClient(sc.url, "town") as town:
        await town.send({"type": "fork", "into": "slot", "rid": "f"})
        await within(until_saving(sc, "slot"), 30)
        await asyncio.sleep(0.2)
        stopping = asyncio.ensure_future(sc.stop())
        reply = await town.next_where(lambda f: f.get("rid") == "f", guard(30))
        assert reply["type"] == "error" and reply["code"] == "shutting_down", reply
        await within(stopping, 30)
    store = SingleFile(tmp_path / "x.db")
    try:
        assert [w.world for w in store.worlds()] == ["town"]
        conn = store.writer.conn
        assert conn.execute("SELECT count(*) FROM events WHERE world = 'slot'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM _saves").fetchone()[0] == 0
    finally:
        store.close()
    async with running(tmp_path) as sc, WsClient(sc.url, "town") as town:
        await town.send({"type": "fork", "into": "slot", "rid": "g"})
        forked = await town.next_where(lambda f: f.get("rid") == "g", guard(120))
        assert forked["type"] == "forked" and forked["events"] == EVENTS


def worker_progress(tmp_path: Path, mode: str) -> int:
    """Events in the worker's temporary save file so far (0 before it has any)."""
    files = (
        tmp_path.glob("x.db.save-*.db")
        if mode == "db"
        else (tmp_path / "worlds").glob(".save-*.db")
    )
    total = 0
    for path in files:
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
            try:
                total += conn.execute("SELECT count(*) FROM events").fetchone()[0]
            finally:
                conn.close()
        except sqlite3.Error:
            continue
    return total


@pytest.mark.parametrize("mode", MODES)
async def test_kill_9_of_the_sidecar_midway_through_a_fork_leaves_nothing(
    tmp_path: Path, mode: str
) -> None:
    """SIGKILL `credence serve` while its worker has replayed part of a fork: once the store
    is next opened nothing of the new world is left (no rows, no file, not listed), and the
    same fork then makes the whole world."""
    seed_town(tmp_path, mode)
    where = ["--db", str(tmp_path / "x.db")] if mode == "db" else [
        "--data-dir", str(tmp_path / "worlds")
    ]  # fmt: skip

    def argv(port: int) -> list[str]:
        return [sys.executable, "-m", "sidecar.cli", "serve", "--port", str(port), *where]

    server = ServerProcess(argv_for=argv).start()
    try:
        async with WsClient(server.url, "town") as town:
            await town.send({"type": "fork", "into": "slot", "rid": "f"})
            deadline = time.monotonic() + guard(60)
            while worker_progress(tmp_path, mode) < 300 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            assert worker_progress(tmp_path, mode) >= 300
            server.signal(signal.SIGKILL)
            assert server.proc is not None and server.proc.wait(guard(10)) == -signal.SIGKILL
    finally:
        server.close()
    deadline = time.monotonic() + guard(10)
    while time.monotonic() < deadline:  # its worker ends with it (PR_SET_PDEATHSIG)
        before = worker_progress(tmp_path, mode)
        await asyncio.sleep(0.2)
        if worker_progress(tmp_path, mode) == before:
            break
    store = DataDir(tmp_path / "worlds") if mode == "data_dir" else SingleFile(tmp_path / "x.db")
    try:
        assert [w.world for w in store.worlds()] == ["town"]
        assert worker_progress(tmp_path, mode) == 0  # the worker's file is gone
        info = store.fork("town", "slot")
        assert info.events == EVENTS
    finally:
        store.close()


# --------------------------------------------------------------------------- delete


def world_rows(path: Path, world: str) -> int:
    """The rows of ``world`` left in the one-file database ``path`` (its changes and events)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        return sum(
            conn.execute(f"SELECT count(*) FROM {table} WHERE world = ?", (world,)).fetchone()[0]
            for table in ("changes", "events", "evidence", "beliefs")
        )
    finally:
        conn.close()


@pytest.mark.alone
async def test_other_worlds_acks_keep_their_latency_while_a_long_world_is_deleted(
    tmp_path: Path,
) -> None:
    """One file: a delete of a 2,000-event world is answered `deleted` at its first commit
    (the world is gone: not listed, a second delete is `not_found`); its rows then go in
    steps between other worlds' batches, so another world's acks keep p99 ≤ max(100 ms,
    3 × their baseline) — one transaction held every world for the whole delete. Its id is
    `world_busy` (a hello to it too) until its rows are gone, then a new world of that id
    starts empty."""
    seed_town(tmp_path, "db", 2 * EVENTS)
    async with (
        running(tmp_path, db=tmp_path / "x.db") as sc,
        WsClient(sc.url, "other") as other,
        WsClient(sc.url, "town") as town,
    ):
        acks = Acks(other)
        baseline = await acks.count(200)
        deleted = await other.request({"type": "delete", "world": "town"})
        assert deleted["type"] == "deleted" and deleted["events"] == 2 * EVENTS, deleted
        assert await town.wait_closed() == 1001
        assert "town" in sc.writer.saving  # (its rows are still going)
        again = await other.request({"type": "delete", "world": "town"})
        assert again["code"] == "not_found", again
        listed = [w["world"] for w in (await other.request({"type": "worlds"}))["worlds"]]
        assert listed == ["other"]
        async with WsClient(sc.url, "town") as refused:
            assert refused.hello_error and refused.hello_error["code"] == "world_busy"
        started = time.perf_counter()
        during = await acks.meanwhile(lambda: "town" in sc.writer.saving)
        took = time.perf_counter() - started
        assert world_rows(tmp_path / "x.db", "town") == 0
        async with WsClient(sc.url, "town") as fresh:
            assert fresh.welcome and fresh.welcome["seq"] == 0, fresh.hello_error
            ack = await fresh.event("observe", 1, event_id="n1", **observe(["ann"], "k", 1))
            assert ack["type"] == "ack" and ack["seq"] == 1, ack
    assert_not_held(f"delete of {2 * EVENTS} events: rows gone in", baseline, during, took, least=5)


async def test_a_save_slot_deleted_and_forked_into_at_once_waits_for_the_old_rows(
    tmp_path: Path,
) -> None:
    """One file: `delete` of a 2,000-event world then, at once, a `fork` into its id (a save
    slot overwritten): the fork waits for the old rows to go instead of being refused, and
    the slot then holds the fork's log only."""
    seed_town(tmp_path, "db")
    async with running(tmp_path, db=tmp_path / "x.db") as sc, WsClient(sc.url, "other") as other:
        for i in range(3):
            await one_ack(other, 1.0 + i)
        await other.send({"type": "delete", "world": "town", "rid": "d"})
        await other.send({"type": "fork", "into": "town", "rid": "f"})
        deleted = await other.next_where(lambda f: f.get("rid") == "d", guard(60))
        assert deleted["type"] == "deleted" and deleted["events"] == EVENTS, deleted
        forked = await other.next_where(lambda f: f.get("rid") == "f", guard(120))
        assert forked["type"] == "forked" and forked["events"] == 3, forked
        assert not sc.writer.saving
    assert world_rows(tmp_path / "x.db", "town") > 0
    conn = sqlite3.connect(tmp_path / "x.db")
    try:
        assert conn.execute("SELECT count(*) FROM events WHERE world = 'town'").fetchone() == (3,)
    finally:
        conn.close()
