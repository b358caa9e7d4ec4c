"""The batched write path (issue 13) changes nothing but speed.

``Writer.apply`` folds a batch in Python, reading through the batch's own writes, and then
writes its rows with one ``executemany`` per table, each belief once. These tests pin that
it gives the results and tables of the event-by-event path (savepoint per event, no cache)
for any history, that one event refused by the engine or by SQLite is refused alone, and
that it really writes each belief once per batch.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from belief_builders import intervene, observe, say, tick
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_store_cache import (
    apply_history,
    assert_cache_matches_sqlite,
    dump,
    histories,
    outcome,
    refuse_doomed,
)

from sidecar.engine import WorldEvent, parse_event
from sidecar.store import ResultStatus, StorageFailure, Writer
from sidecar.store.writer import _LOGGED, EventResult
from tools.town import deal


def apply(writer: Writer, *events: dict[str, Any], world: str = "w") -> list[EventResult]:
    return writer.apply([(world, parse_event(e)) for e in events])


def traced(writer: Writer, batch: list[tuple[str, WorldEvent]]) -> tuple[list[str], Any]:
    """The statements SQLite ran for one batch (an executemany runs one per row).

    A trigger's run is traced as its statement's text again (the ``worlds`` counters'
    insert triggers, migration 0015): an entry repeating the one before it is dropped."""
    statements: list[str] = []

    def seen(sql: str) -> None:
        if not statements or statements[-1] != sql:
            statements.append(sql)

    writer.conn.set_trace_callback(seen)
    try:
        results = writer.apply(batch)
    finally:
        writer.conn.set_trace_callback(None)
    return statements, results


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.booleans())
def test_batched_and_event_by_event_writers_agree(
    history: tuple[list[tuple[str, WorldEvent]], list[int], int | None], cached: bool
) -> None:
    """Any events over two worlds (duplicates, refusals, aging, trust, proposals), any
    batches, a reopen: the same results and tables as the event-by-event path."""
    events, sizes, reopen = history
    with tempfile.TemporaryDirectory(prefix="credence-batch-") as tmp:
        seen: dict[bool, list[tuple[Any, ...]]] = {}
        paths = {True: Path(tmp) / "batched.db", False: Path(tmp) / "plain.db"}
        for batched, path in paths.items():

            def open_writer() -> Writer:
                return Writer(
                    path, synchronous="OFF", batched=batched,  # noqa: B023
                    cache=cached and batched,  # noqa: B023
                )  # fmt: skip

            w, got = apply_history(open_writer, events, sizes, reopen)
            if batched:
                assert w.fallbacks == 0  # engine refusals and duplicates stay on this path
                if cached:
                    assert_cache_matches_sqlite(w)
            w.close()
            seen[batched] = got
        assert seen[True] == seen[False]
        assert dump(paths[True]) == dump(paths[False])


def test_town_workload_in_large_batches_matches_event_by_event(tmp_path: Path) -> None:
    """The bench's town, 600 events in batches of 256: same results and tables."""
    streams = deal(30, 600, seed=5, clients=3)
    events = [parse_event(streams[k % 3][k // 3]) for k in range(600)]
    got = {}
    for batched in (True, False):
        w = Writer(tmp_path / f"{batched}.db", synchronous="OFF", batched=batched)
        got[batched] = [
            outcome(w.apply([("town", e) for e in events[s : s + 256]]))
            for s in range(0, len(events), 256)
        ]
        assert w.fallbacks == 0
        w.close()
    assert got[True] == got[False]
    assert dump(tmp_path / "True.db") == dump(tmp_path / "False.db")


def test_each_table_written_once_per_batch_and_each_belief_once(db_path: Path) -> None:
    """Five events on the same two beliefs: one upsert per belief, no savepoint per event,
    one executemany per table (its rows, in event order), one commit."""
    w = Writer(db_path, synchronous="OFF")
    apply(w, observe(0, ["kai", "mira"], "well", "dry", eid="seed"))
    batch = [
        ("w", parse_event(e))
        for e in (
            observe(1, ["kai", "mira"], "well", "dry", eid="a"),
            say(2, "bo", ["kai", "mira"], "well", "dry", eid="b"),
            observe(3, ["kai"], "well", "full", eid="c"),
            observe(4, ["kai", "mira"], "well", "full", eid="d"),
            tick(30, eid="e"),
        )
    ]
    statements, results = traced(w, batch)
    assert [r.status for r in results] == [ResultStatus.APPLIED] * 5
    upserts = [s for s in statements if s.startswith("INSERT INTO beliefs")]
    touched = {
        (c.resident, c.root) for r in results for c in r.changes if not c.root.startswith("trust")
    }
    assert len(upserts) == len(touched) == 4  # kai/mira on well and on believes:bo:well
    assert not any(s.startswith("SAVEPOINT event") for s in statements)
    assert sum(s == "COMMIT" for s in statements) == 1
    kinds = [s.split("(")[0].strip() for s in statements if s.startswith("INSERT")]
    runs = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]
    assert len(runs) == len(set(runs)), runs  # each table's rows in one run
    w.close()


def test_a_batch_is_written_without_a_savepoint_and_journals_stay_in_memory(
    db_path: Path,
) -> None:
    """A batch's rows are the transaction's first writes, with no savepoint around them
    (SQLite would journal every page the batch changes and walk that journal at every row);
    what a row's statement or an event's savepoint journals is held in memory
    (``temp_store = MEMORY``, 2), not in a temporary file written page by page: together
    ~1.35x on ``Writer.apply`` (tools/PERFORMANCE.md). A new file and one opened again
    alike."""
    for opened in range(2):  # (the second open finds the schema in place)
        w = Writer(db_path, synchronous="OFF")
        try:
            assert w.conn.execute("PRAGMA temp_store").fetchone()[0] == 2
            day = 10 * opened
            town = [say(day + i, "bo", ["kai", "mira"], f"k:{i}", i, eid=f"t{opened}-{i}")
                    for i in range(5)]  # fmt: skip
            statements, results = traced(w, [("w", parse_event(e)) for e in town])
            assert all(r.status is ResultStatus.APPLIED for r in results)
            assert statements[0] == "BEGIN IMMEDIATE" and statements[-1] == "COMMIT"
            assert not any(s.startswith(("SAVEPOINT", "RELEASE", "ROLLBACK")) for s in statements)
        finally:
            w.close()


def test_aging_in_a_batch_sees_beliefs_formed_earlier_in_it(db_path: Path) -> None:
    """Hearsay formed and then aged within one batch: the tick ages the staged belief."""
    w = Writer(db_path, synchronous="OFF")
    results = apply(
        w,
        say(0, "bo", ["kai"], "mill", "burnt", eid="a"),
        tick(30, eid="b"),
        observe(31, ["kai"], "mill", "burnt", eid="c"),
    )
    assert [c.kind for c in results[1].changes] and all(
        c.resident == "kai" and c.root == "mill" for c in results[1].changes
    )
    plain = Writer(db_path.with_name("plain.db"), synchronous="OFF", batched=False)
    expected = apply(
        plain,
        say(0, "bo", ["kai"], "mill", "burnt", eid="a"),
        tick(30, eid="b"),
        observe(31, ["kai"], "mill", "burnt", eid="c"),
    )
    assert outcome(results) == outcome(expected)
    w.close()
    plain.close()


def test_aging_in_a_batch_sweeps_past_its_floor(db_path: Path) -> None:
    """Sweeps before a staged belief's aging day skip it; a later sweep of the same batch
    ages it, also after a refused event that moved no clock, and after the belief was
    restaged with a later day (its floor left low), exactly as event by event."""
    events = [
        say(0, "bo", ["kai", "mira"], "mill", "burnt", eid="a"),
        say(1, "bo", ["kai"], "well", "dry", eid="b"),
        tick(3, eid="c"),  # before every aging day: nothing due
        say(4, "ana", ["kai"], "mill", "burnt", eid="d"),  # kai's mill: a later aging day
        intervene(8, "kai", "soften", "nothing", eid="x"),  # refused
        tick(8, eid="e"),  # mira's mill and kai's well are due, not kai's mill
        tick(40, eid="f"),
    ]
    w = Writer(db_path, synchronous="OFF")
    results = apply(w, *events)
    plain = Writer(db_path.with_name("plain.db"), synchronous="OFF", batched=False)
    expected = apply(plain, *events)
    assert outcome(results) == outcome(expected)
    aged = {(c.resident, c.root) for c in results[5].changes}
    assert ("mira", "mill") in aged and ("kai", "mill") not in aged
    assert w.fallbacks == 0
    w.close()
    plain.close()
    assert dump(db_path) == dump(db_path.with_name("plain.db"))


def test_engine_refusal_and_duplicates_stay_on_the_batched_path(db_path: Path) -> None:
    """A soften with no belief and a repeated id are refused alone, without a fallback."""
    w = Writer(db_path, synchronous="OFF")
    results = apply(
        w,
        observe(1, ["kai"], "r", 1, eid="a"),
        intervene(2, "kai", "soften", "nothing", eid="x"),
        observe(3, ["kai"], "r", 1, eid="a"),
        observe(4, ["kai"], "r", 1, eid="b"),
    )
    assert [r.status for r in results] == [
        ResultStatus.APPLIED, ResultStatus.REJECTED, ResultStatus.DUPLICATE, ResultStatus.APPLIED,
    ]  # fmt: skip
    assert w.fallbacks == 0
    assert [c.seq for c in results[3].changes] == [2]
    w.close()


def test_ids_already_logged_are_found_by_one_read_per_world(db_path: Path) -> None:
    """Ids logged by earlier batches are duplicates, found by one read per world and batch
    that searches the log's (world, event_id) index (no read per event)."""
    w = Writer(db_path, synchronous="OFF")
    apply(w, observe(1, ["kai"], "r", 1, eid="a"), observe(1, ["kai"], "r", 1, eid="b/x"))
    apply(w, observe(1, ["kai"], "r", 1, eid="a"), world="v")
    batch = [("w", parse_event(observe(2, ["kai"], "r", 1, eid=e))) for e in ("c", "b/x", "a")]
    batch.append(("v", parse_event(observe(2, ["kai"], "r", 1, eid="b/x"))))
    statements, results = traced(w, batch)
    assert [r.status for r in results] == [
        ResultStatus.APPLIED, ResultStatus.DUPLICATE, ResultStatus.DUPLICATE, ResultStatus.APPLIED,
    ]  # fmt: skip
    assert w.fallbacks == 0
    reads = [s for s in statements if " events " in s and s.startswith("SELECT")]
    assert len(reads) == 2, reads  # one per world
    plan = w.conn.execute("EXPLAIN QUERY PLAN " + _LOGGED, ("[]", "w")).fetchall()
    assert any("SEARCH e USING COVERING INDEX" in row[3] for row in plan), plan
    w.close()


def test_sqlite_refusing_rows_hands_the_batch_to_the_event_by_event_path(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite refusing a row of the batch rolls the batch's rows back, redoes it event by
    event (only that event refused), and the next batch is batched again."""
    w = Writer(db_path, synchronous="OFF")
    apply(w, observe(0, ["kai"], "seed", 1, eid="s"))
    refuse_doomed(db_path)
    results = apply(
        w,
        observe(1, ["kai"], "r", 1, eid="a"),
        observe(2, ["kai", "doomed"], "r", 2, eid="b"),
        observe(3, ["kai"], "r", 2, eid="c"),
    )
    assert [r.status for r in results] == [
        ResultStatus.APPLIED, ResultStatus.REJECTED, ResultStatus.APPLIED,
    ]  # fmt: skip
    assert isinstance(results[1].error, StorageFailure)
    assert w.fallbacks == 1
    assert "batch of 3 events redone event by event" in caplog.text
    assert_cache_matches_sqlite(w)
    statements, later = traced(w, [("w", parse_event(observe(4, ["kai"], "r", 2, eid="d")))])
    assert later[0].status is ResultStatus.APPLIED and w.fallbacks == 1
    assert not any(s.startswith("SAVEPOINT event") for s in statements)
    w.close()


def test_a_full_database_midway_through_a_batch_reports_that_and_keeps_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """When SQLite rolls the whole transaction back mid-batch (the file cannot grow), the
    batch is not 'redone' against a savepoint that is gone: the failure names the real
    cause, nothing is logged as a redo, nothing of the batch is stored, and the writer goes
    on once there is room."""
    w = Writer(tmp_path / "full.db", synchronous="OFF")
    try:
        apply(w, observe(1, ["ann"], "door:shop", "open", "the shop door is open"))
        pages = w.conn.execute("PRAGMA page_count").fetchone()[0]
        w.conn.execute(f"PRAGMA max_page_count = {pages + 20}")
        big = [
            ("w", parse_event(observe(
                2, [f"r{j}" for j in range(20)], f"k:{i}", i, "x" * 200, eid=f"full{i}"
            )))
            for i in range(400)
        ]  # fmt: skip
        with pytest.raises(StorageFailure, match="database or disk is full"):
            w.apply(big)
        assert not [r for r in caplog.records if "redone event by event" in r.getMessage()]
        assert not w.conn.in_transaction
        assert w.conn.execute("SELECT count(*) FROM events").fetchone()[0] == 1
        w.conn.execute("PRAGMA max_page_count = 1073741823")
        assert all(r.status is ResultStatus.APPLIED for r in w.apply(big[:50]))
    finally:
        w.close()


def test_a_writer_keeps_a_bounded_number_of_worlds_loaded_and_the_same_tables(
    tmp_path: Path,
) -> None:
    """Twelve worlds in one file, batches mixing them, through a writer that keeps 3 worlds'
    states loaded: it never holds more than 3 beside a batch's own, a world dropped and
    loaded again goes on from its clock and seqs, and a batch SQLite refuses whole (a full
    file) puts back only its own worlds. Results and tables equal a writer that keeps all."""
    streams = deal(30, 480, seed=7, clients=1)
    events = [parse_event(e) for e in streams[0]]
    pairs = [(f"w{(k // 10) % 12}", e) for k, e in enumerate(events)]  # (2 worlds a batch)
    got = {}
    for states in (3, 1024):
        w = Writer(tmp_path / f"{states}.db", synchronous="OFF", world_states=states)
        got[states] = []
        for s in range(0, len(pairs), 20):
            batch = pairs[s : s + 20]
            got[states].append(outcome(w.apply(batch)))
            assert len(w._worlds) <= min(12, states + 2)  # (+ the batch's two worlds)
        pages = w.conn.execute("PRAGMA page_count").fetchone()[0]
        w.conn.execute(f"PRAGMA max_page_count = {pages + 2}")
        big = [
            (f"w{i % 12}", parse_event(observe(
                1e6, [f"r{j}" for j in range(20)], f"k:{i}", i, "x" * 200, eid=f"full{i}"
            )))
            for i in range(200)
        ]  # fmt: skip
        with pytest.raises(StorageFailure):
            w.apply(big)
        w.conn.execute("PRAGMA max_page_count = 1073741823")
        got[states].append(outcome(w.apply(big[:30])))
        w.close()
    assert got[3] == got[1024]
    assert dump(tmp_path / "3.db") == dump(tmp_path / "1024.db")
