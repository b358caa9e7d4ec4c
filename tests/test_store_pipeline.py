"""The pipelined writer (issue 13) changes nothing but speed.

``Writer.start`` folds batch N+1 while batch N commits on the writer's commit thread, reading
through N's rows in flight and a read-only connection that sees only committed rows. These
tests pin that any sequence of batches gives the results and tables of plain ``apply``
(duplicates and aging across batch boundaries, register and schema events that take the
event-by-event path), that a commit SQLite refuses is redone as ``apply`` would do it while
the batch folded behind it is folded again, and that nothing answered as applied is lost.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from belief_builders import observe, say, tick
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_store_cache import (
    TABLES,
    assert_cache_matches_sqlite,
    batching,
    one_event,
    outcome,
    refuse_doomed,
)
from test_store_cache import (
    dump as store_dump,
)
from wsclient import WsClient, db_rows, running
from wsclient import observe as wobserve
from wsclient import say as wsay

from sidecar.engine import InvalidEvent, WorldEvent, parse_event
from sidecar.store import ResultStatus, StorageFailure, Writer, rebuild
from sidecar.store.store import EventResult

Batch = list[tuple[str, WorldEvent]]
ALL_TABLES = (*TABLES, "world_schema", "labels")


def dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    return store_dump(path, ALL_TABLES)  # the registry and schema tables too


def seen(results: list[EventResult] | BaseException) -> list[tuple[Any, ...]] | str:
    """Outcome of one batch (with warnings), or the name of the error that refused it."""
    if isinstance(results, BaseException):
        return type(results).__name__
    return [(*o, r.warnings) for o, r in zip(outcome(results), results, strict=True)]


def settled(future: Future[list[EventResult]]) -> list[EventResult] | BaseException:
    exc = future.exception(timeout=30)
    return exc if exc is not None else future.result()


def pipelined(w: Writer, batches: list[Batch]) -> list[Future[list[EventResult]]]:
    futures = [w.start(b) for b in batches]
    w.finish()
    assert all(f.done() for f in futures)
    return futures


REGISTER = {
    "kind": "register",
    "residents": [{"resident": "ana", "names": {"en": "Ana"}}],
    "actions": [{"action": "fetch", "names": {"en": "fetch"}}],
}
SCHEMA = {"kind": "schema", "undeclared": "warn", "roots": [{"prefix": "mut:", "mutable": True}]}


@st.composite
def pipeline_histories(draw: st.DrawFn) -> tuple[Batch, list[int], int | None]:
    """Events over two worlds (re-sent ids, aging, trust, proposals, now and then a register
    or schema event), cut into batches, maybe a reopen."""
    events: Batch = []
    days = {"north": 0.0, "south": 0.0}
    for i in range(draw(st.integers(1, 40))):
        world = draw(st.sampled_from(["north", "north", "south"]))
        days[world] = max(0.0, days[world] + draw(st.sampled_from([0, 0, 1, 3, 7, 14, -1])))
        resend = events and draw(st.integers(0, 8)) == 0
        eid = draw(st.sampled_from([e.event_id for _, e in events])) if resend else f"e{i}"
        rare = draw(st.integers(0, 25))
        if rare == 0:
            body: dict[str, Any] = {"event_id": eid, "day": days[world], **REGISTER}
        elif rare == 1:
            body = {"event_id": eid, "day": days[world], **SCHEMA}
        else:
            body = draw(one_event(eid, days[world]))
        try:
            events.append((world, parse_event(body)))
        except InvalidEvent:
            continue
    return (events, *batching(draw, len(events)))


def run(
    path: Path, batches: list[Batch], reopen: int | None, *, pipeline: bool, cached: bool
) -> tuple[list[Any], int]:
    def open_writer() -> Writer:
        return Writer(path, synchronous="OFF", cache=cached, pipelined=pipeline)

    w = open_writer()
    got: list[Any] = []
    fallbacks = 0
    for n, batch in enumerate(batches):
        if pipeline:
            got.append(w.start(batch))
        else:
            got.append(w.apply(batch))
        if n == reopen:
            fallbacks += w.fallbacks
            w.close()
            w = open_writer()
    w.finish()
    if cached:
        assert_cache_matches_sqlite(w)
    fallbacks += w.fallbacks
    w.close()
    return [seen(settled(r)) if pipeline else seen(r) for r in got], fallbacks


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pipeline_histories(), st.booleans())
def test_pipelined_and_plain_writers_agree(
    history: tuple[Batch, list[int], int | None], cached: bool
) -> None:
    """Any batches over two worlds, any reopen: the pipeline gives the results (statuses,
    change records with their seqs, warnings) and the tables of plain ``apply``."""
    events, sizes, reopen = history
    batches, start = [], 0
    for size in sizes:
        batches.append(events[start : start + size])
        start += size
    with tempfile.TemporaryDirectory(prefix="credence-pipe-") as tmp:
        piped = Path(tmp) / "piped.db"
        plain = Path(tmp) / "plain.db"
        got = run(piped, batches, reopen, pipeline=True, cached=cached)
        expected = run(plain, batches, reopen, pipeline=False, cached=cached)
        assert got == expected
        assert dump(piped) == dump(plain)


def town(n: int, start: int = 0) -> Batch:
    """A batch of hearsay and aging on a few beliefs, each event touching what the last did."""
    out: Batch = []
    for i in range(start, start + n):
        if i % 7 == 6:
            body = tick(i, eid=f"t{i}")
        elif i % 2:
            body = say(i, "bo", ["kai", "mira"], f"r{i % 3}", i % 4, eid=f"s{i}")
        else:
            body = observe(i, ["kai"], f"r{i % 3}", i % 5, eid=f"o{i}")
        out.append(("w", parse_event(body)))
    return out


def test_long_runs_of_batches_agree_and_the_commits_overlap(tmp_path: Path) -> None:
    """Forty batches of chained events, started back to back: the same results and tables
    as plain apply, re-sent ids in the next batch are duplicates, nothing falls back."""
    batches = [town(10, 10 * k) for k in range(40)]
    batches[5] = batches[5] + batches[4][:3]  # re-sent while batch 4 may still be in flight
    piped = Writer(tmp_path / "piped.db", synchronous="OFF", pipelined=True)
    futures = pipelined(piped, batches)
    plain = Writer(tmp_path / "plain.db", synchronous="OFF")
    expected = [seen(plain.apply(b)) for b in batches]
    assert [seen(settled(f)) for f in futures] == expected
    assert [r.status for r in futures[5].result()[-3:]] == [ResultStatus.DUPLICATE] * 3
    assert piped.fallbacks == plain.fallbacks == 0
    assert_cache_matches_sqlite(piped)
    piped.close()
    plain.close()
    assert dump(tmp_path / "piped.db") == dump(tmp_path / "plain.db")


def test_a_commit_sqlite_refuses_is_redone_and_the_next_batch_folded_again(
    tmp_path: Path,
) -> None:
    """Batch N's rows break a trigger the engine cannot foresee: its commit fails, N is
    redone as apply does (only the doomed event refused) and N+1, folded over N's rows in
    flight, is folded again from what was committed. Same results and tables as apply;
    after a reopen every event answered applied is there."""
    seed = [("w", parse_event(observe(0, ["kai"], "r", 1, eid="seed")))]
    n = [
        ("w", parse_event(observe(1, ["kai"], "r", 2, eid="a"))),
        ("w", parse_event(observe(2, ["kai", "doomed"], "r", 3, eid="b"))),
        ("w", parse_event(say(3, "kai", ["mira"], "r", 3, eid="c"))),
    ]
    n1 = [
        ("w", parse_event(say(4, "mira", ["kai"], "r", 9, eid="d"))),
        ("w", parse_event(observe(5, ["doomed"], "q", 1, eid="e"))),
        ("w", parse_event(tick(40, eid="f"))),
        ("w", parse_event(observe(41, ["kai"], "r", 3, eid="b"))),  # b was refused: new
    ]
    outcomes = {}
    for pipeline in (True, False):
        path = tmp_path / f"{pipeline}.db"
        w = Writer(path, synchronous="OFF", pipelined=pipeline)
        w.apply(seed)
        refuse_doomed(path)
        w.apply([("w", parse_event(observe(0, ["kai"], "z", 1, eid="settle")))])
        if pipeline:
            futures = pipelined(w, [n, n1])
            assert w.fallbacks == 2  # N and N+1 each redone: batched, then event by event
            got = [settled(f) for f in futures]
        else:
            got = [w.apply(n), w.apply(n1)]
        outcomes[pipeline] = [seen(r) for r in got]
        w.close()
        statuses = [r.status for r in got[0]] + [r.status for r in got[1]]  # type: ignore[union-attr]
        assert statuses == [ResultStatus.APPLIED, ResultStatus.REJECTED, ResultStatus.APPLIED,
                            ResultStatus.APPLIED, ResultStatus.REJECTED, ResultStatus.APPLIED,
                            ResultStatus.APPLIED]  # fmt: skip
        assert isinstance(got[0][1].error, StorageFailure)  # type: ignore[index]
        stored = {r[0] for r in sqlite3.connect(path).execute("SELECT event_id FROM events")}
        applied = {r.event_id for rs in got for r in rs if r.status is ResultStatus.APPLIED}  # type: ignore[union-attr]
        assert applied <= stored and "e" not in stored
    assert outcomes[True] == outcomes[False]
    assert dump(tmp_path / "True.db") == dump(tmp_path / "False.db")


def test_a_commit_by_another_connection_redoes_the_batch_from_fresh_rows(
    tmp_path: Path,
) -> None:
    """Another connection commits while a batch is folded: its commit notices (PRAGMA
    data_version), redoes it against fresh rows, and the results are those of apply."""
    outcomes = {}
    for pipeline in (True, False):
        path = tmp_path / f"{pipeline}.db"
        w = Writer(path, synchronous="OFF", pipelined=pipeline)
        w.apply([("w", parse_event(observe(0, ["kai"], "r", 1, eid="seed")))])
        first = w.start([("w", parse_event(observe(1, ["kai"], "r", 2, eid="a")))])
        w.finish()
        other = sqlite3.connect(path)
        other.execute("UPDATE beliefs SET confidence = 11 WHERE resident = 'kai' AND root = 'r'")
        other.commit()
        other.close()
        second = w.start([("w", parse_event(say(2, "mira", ["kai"], "r", 5, eid="b")))])
        w.finish()
        outcomes[pipeline] = [seen(settled(first)), seen(settled(second))]
        if pipeline:
            assert_cache_matches_sqlite(w)
        w.close()
    assert outcomes[True] == outcomes[False]
    assert dump(tmp_path / "True.db") == dump(tmp_path / "False.db")


def test_a_full_disk_refuses_the_batch_and_the_next_is_applied_from_what_is_stored(
    tmp_path: Path,
) -> None:
    """A disk that fills (a tiny max_page_count on the write connection) refuses batch N's
    events as apply would; once there is room, N+1 is applied from the committed state;
    after a reopen, what was answered applied is there and nothing else."""
    answers: dict[bool, list[Any]] = {}
    for pipeline in (True, False):
        path = tmp_path / f"{pipeline}.db"
        w = Writer(path, synchronous="OFF", pipelined=pipeline)
        w.apply(town(5))
        pages = w.conn.execute("PRAGMA page_count").fetchone()[0]
        w.conn.execute(f"PRAGMA max_page_count = {pages}")
        big = town(200, 5)
        first = w.start(big)
        w.finish()
        w.conn.execute("PRAGMA max_page_count = 1000000")
        second = w.start(town(10, 205))
        w.finish()
        answers[pipeline] = [seen(settled(first)), seen(settled(second))]
        w.close()
        reopened = Writer(path, synchronous="OFF")
        stored = {r[0] for r in reopened.conn.execute("SELECT event_id FROM events")}
        reopened.close()
        for future in (first, second):
            result = settled(future)
            if isinstance(result, BaseException):
                assert isinstance(result, StorageFailure)
                assert not {e.event_id for _, e in big} & stored
                continue
            for r in result:
                assert (r.event_id in stored) == (r.status is not ResultStatus.REJECTED)
        assert all(r.status is ResultStatus.APPLIED for r in second.result())
    assert answers[True] == answers[False]
    assert dump(tmp_path / "True.db") == dump(tmp_path / "False.db")


def test_apply_and_world_changes_between_pipelined_batches(tmp_path: Path) -> None:
    """apply, ensure_world and close each finish the batch in flight first."""
    w = Writer(tmp_path / "db", synchronous="OFF", pipelined=True)
    f = w.start(town(5))
    again: Callable[[], list[EventResult]] = lambda: w.apply(town(5, 5))  # noqa: E731
    assert [r.status for r in again()] == [ResultStatus.APPLIED] * 5
    assert f.done() and [r.status for r in f.result()] == [ResultStatus.APPLIED] * 5
    w.start(town(5, 10))
    w.close()
    r = Writer(tmp_path / "db", synchronous="OFF")
    assert r.conn.execute("SELECT count(*) FROM events").fetchone()[0] == 15
    r.close()


# --------------------------------------------------------------------------- the server


async def test_the_pipelined_server_refuses_a_batch_sqlite_refuses_and_acks_the_next(
    tmp_path: Path,
) -> None:
    """Through the real server (pipeline on): a batch whose commit SQLite refuses is answered
    internal_error and nothing of it is stored; the events after it are acked, stored, and
    numbered after what was committed; a reopen finds exactly the acked events."""
    db = tmp_path / "x.db"
    async with running(tmp_path, db=db, pipelined=True) as sc:
        assert sc.store.pipelined
        async with WsClient(sc.url) as c:
            first = [await c.send_event("observe", i, **wobserve(["mira"], f"k{i}", i))
                     for i in range(20)]  # fmt: skip
            assert {(await c.ack_of(e))["type"] for e in first} == {"ack"}
            conn = sqlite3.connect(db)
            conn.execute(
                "CREATE TRIGGER refuse BEFORE UPDATE ON worlds WHEN NEW.event_seq > 20 "
                "BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
            )
            conn.commit()
            refused = await c.event("observe", 21, **wobserve(["kai"], "a:b", "x"))
            assert refused["type"] == "error" and refused["code"] == "internal_error"
            conn.execute("DROP TRIGGER refuse")
            conn.commit()
            conn.close()
            later = [await c.send_event("say", 22 + i, **wsay("kai", ["mira"], "a:b", i))
                     for i in range(30)]  # fmt: skip
            acks = [await c.ack_of(e) for e in later]
            assert {a["type"] for a in acks} == {"ack"}
    assert db_rows(db, "SELECT count(*) FROM events") == [(50,)]
    assert db_rows(db, "SELECT event_seq FROM worlds") == [(50,)]
    assert rebuild(db).ok


def test_serve_flag_and_config_key_switch_the_pipeline(tmp_path: Path) -> None:
    """Off by default; ``pipeline = true`` in the config file turns it on, and the flags
    override the file either way."""
    from test_config import serve_args

    from sidecar.commands.serve import server_config

    cfg = tmp_path / "credence.toml"
    cfg.write_text("pipeline = true\n")
    off = tmp_path / "off.toml"
    off.write_text("pipeline = false\n")
    assert server_config(serve_args())[0].pipelined is False
    assert server_config(serve_args("--config", str(cfg)))[0].pipelined is True
    assert server_config(serve_args("--config", str(cfg), "--no-pipeline"))[0].pipelined is False
    assert server_config(serve_args("--config", str(off), "--pipeline"))[0].pipelined is True
