"""The writer service: supervision, per-world fairness, byte bounds, bounded shutdown.

Covers issue 9 items 1 (a dead writer fails loudly), 3 (a failed batch writes nothing) and
6 (a byte-bounded queue with per-world fairness; a bounded SIGTERM).
"""

from __future__ import annotations

import asyncio
import logging
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from wsclient import WsClient, db_rows, observe, running, within

from sidecar.engine import parse_event
from sidecar.server.writer import WriterService
from sidecar.store import EventResult, StorageFailure, Writer, rebuild


def _event(event_id: str, witnesses: list[str], root: str = "water:well", day: float = 1) -> Any:
    return parse_event(
        {"event_id": event_id, "kind": "observe", "day": day, **observe(witnesses, root, "clean")}
    )


def _health(url: str) -> tuple[int, dict[str, Any]]:
    import json

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url.replace("ws://", "http://") + "/", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


async def test_a_dead_writer_fails_loudly_and_stop_still_works(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Writer dies: pending events get internal_error, health 503, ERROR logged, stop() ends."""
    async with running(tmp_path) as sc:
        async with WsClient(sc.url) as c:
            assert (await c.event("observe", **observe(["mira"], "a:b", "x")))["type"] == "ack"
            assert (await asyncio.to_thread(_health, sc.url))[0] == 200

            def broken(batch: object) -> list[EventResult]:
                raise RuntimeError("simulated writer bug")

            sc.writer.writer.apply = broken  # type: ignore[method-assign]
            sc.writer.writer.start = broken  # type: ignore[method-assign,assignment]
            ids = [await c.send_event("observe", **observe(["mira"], f"k{i}", i)) for i in range(5)]
            replies = [await c.ack_of(event_id) for event_id in ids]
            assert [r["type"] for r in replies] == ["error"] * 5
            assert {r["code"] for r in replies} == {"internal_error"}
            later = await c.event("observe", **observe(["kai"], "c:d", "y"))
            assert later["code"] == "internal_error" and later["event_id"]
            status, body = await asyncio.to_thread(_health, sc.url)
            assert status == 503 and body["status"] == "failed"
            query = await c.request({"type": "beliefs", "resident": "mira"})
            assert query["type"] == "beliefs"  # reads still work
        assert sc.failed
    errors = [r for r in caplog.records if r.levelno == logging.ERROR and "writer" in r.name]
    assert errors and "simulated writer bug" in errors[0].getMessage()
    assert db_rows(tmp_path / "x.db", "SELECT count(*) FROM events") == [(1,)]


async def test_a_failed_batch_writes_nothing_and_restores_the_counters(tmp_path: Path) -> None:
    """SQLite refusing the commit: nothing of the batch is stored, and the next batch follows on."""
    db = tmp_path / "x.db"
    writer = Writer(db)
    try:
        writer.apply([("town", _event("e1", ["mira"]))])
        writer.conn.execute(
            "CREATE TRIGGER refuse BEFORE UPDATE ON worlds WHEN NEW.event_seq >= 3 "
            "BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
        )
        with pytest.raises(StorageFailure):
            writer.apply(
                [("town", _event("e2", ["kai"], "a:b")), ("town", _event("e3", ["kai"], "c:d"))]
            )
        assert db_rows(db, "SELECT event_id FROM events") == [("e1",)]
        assert db_rows(db, "SELECT event_seq, change_seq FROM worlds") == [(1, 1)]
        writer.conn.execute("DROP TRIGGER refuse")
        [result] = writer.apply([("town", _event("e4", ["kai"], "e:f"))])
        assert [c.seq for c in result.changes] == [2]
        assert db_rows(db, "SELECT seq, event_id FROM events ORDER BY seq") == [
            (1, "e1"),
            (2, "e4"),
        ]
    finally:
        writer.close()
    assert rebuild(db).ok


async def test_one_worlds_big_backlog_does_not_starve_another_worlds_tick(tmp_path: Path) -> None:
    """Round robin: a tick on world B is committed in the first batches, not after A's backlog."""
    done: list[str] = []
    service = WriterService(Writer(tmp_path / "x.db"), lambda w, r: None, max_batch_bytes=4000)
    task = asyncio.create_task(service.run())
    futures = []
    for i in range(60):
        event = _event(f"a{i}", [f"r{j}" for j in range(50)], f"k:{i}")
        futures.append(await service.submit("a", event, 1000))
    tick = parse_event({"event_id": "t", "kind": "tick", "day": 2})
    futures.append(await service.submit("b", tick, 20))
    for f in futures:
        f.add_done_callback(lambda f: done.append(f.result().event_id))
    await within(asyncio.gather(*futures), 60)
    await service.close(task)
    assert done.index("t") < 8, done  # in the first or second batch of four
    assert [e for e in done if e != "t"] == [f"a{i}" for i in range(60)]  # FIFO per world


async def test_a_full_world_queue_holds_its_sender_until_there_is_room(tmp_path: Path) -> None:
    """Past its byte budget a world's submit waits; another world still gets in; all commit."""
    service = WriterService(
        Writer(tmp_path / "x.db"), lambda w, r: None, world_budget=3000, total_budget=10_000
    )
    first = [await service.submit("a", _event(f"a{i}", ["mira"], f"k:{i}"), 1000) for i in range(3)]
    assert not service.admits("a", 1000) and service.admits("b", 50_000)
    blocked = asyncio.create_task(service.submit("a", _event("a3", ["mira"], "k:3"), 1000))
    other = await service.submit("b", _event("b0", ["kai"]), 50_000)  # empty world: always in
    for _ in range(5):
        await asyncio.sleep(0)
    assert not blocked.done()
    task = asyncio.create_task(service.run())
    last = await within(blocked)
    results = await within(asyncio.gather(*first, last, other))
    await service.close(task)
    assert [r.event_id for r in results] == ["a0", "a1", "a2", "a3", "b0"]


async def test_shutdown_refuses_unstarted_events_with_a_code_and_stores_exactly_the_acked(
    tmp_path: Path,
) -> None:
    """Bounded stop: events not started by the grace deadline get shutting_down, not stored."""
    async with running(tmp_path, commit_grace=0.0) as sc, WsClient(sc.url) as c:
        many = [f"w{i}" for i in range(200)]
        sent = [await c.send_event("observe", **observe(many, f"k:{i}", i)) for i in range(400)]

        async def backlog() -> None:
            while sc.writer.queued < 5:
                await asyncio.sleep(0.005)

        await within(backlog(), 30)  # read and queued, not started
        await within(sc.stop(), 30)
        assert await c.wait_closed() == 1001
        replies = {r.frame["event_id"]: r.frame for r in c.received if "event_id" in r.frame}
    assert set(replies) <= set(sent)
    acked = {e for e, f in replies.items() if f["type"] == "ack"}
    refused = {e for e, f in replies.items() if f["type"] == "error"}
    assert len(refused) >= 5 and {replies[e]["code"] for e in refused} == {"shutting_down"}
    stored = {r[0] for r in db_rows(tmp_path / "x.db", "SELECT event_id FROM events")}
    assert stored == acked
