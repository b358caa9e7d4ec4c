"""Promises and goals in SQLite (sidecar/store/promises.py): both write paths and the
in-memory fold give the same outcomes, a rebuild is exact, the CHECKs mirror the lifecycle,
and every promise read — the engine's and the queries' — searches an index."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_store_cache import apply_history, dump
from test_store_plans import _bad_steps

from sidecar.engine import InvalidEvent, MemoryWorld, WorldEvent, parse_event
from sidecar.store import Reader, Writer, migrate
from sidecar.store.rebuild import rebuild

PEOPLE = ("bo", "kai", "lena", "mira")
ACTIONS = ("mend_fence", "fix_roof")
TABLES = ("events", "changes", "trust", "promises", "promise_views", "goals", "beliefs")


@st.composite
def one_event(draw: st.DrawFn, eid: str, day: float, made: list[str]) -> dict[str, Any]:
    kind = draw(st.sampled_from(["promise", "promise", "act", "act", "report", "tick", "goal"]))
    base = {"event_id": eid, "day": day, "kind": kind}
    if kind == "promise":
        promiser = draw(st.sampled_from(PEOPLE))
        to = draw(st.lists(st.sampled_from([p for p in PEOPLE if p != promiser]), min_size=1,
                           max_size=3, unique=True))  # fmt: skip
        pid = draw(st.sampled_from([f"p{len(made)}", *made[-1:]]))  # sometimes a repeat id
        made.append(pid)
        by = draw(st.sampled_from([None, 0, 1, 3, 10]))
        out = base | {"promise": pid, "promiser": promiser, "to": to,
                      "action": draw(st.sampled_from(ACTIONS)), "subject": "do it"}  # fmt: skip
        return out | ({} if by is None else {"by": day + by})
    if kind == "act":
        return base | {
            "actor": draw(st.sampled_from(PEOPLE)), "action": draw(st.sampled_from(ACTIONS)),
            "status": draw(st.sampled_from(["completed", "completed", "rejected"])),
            "witnesses": draw(st.lists(st.sampled_from(PEOPLE), max_size=3, unique=True)),
        }  # fmt: skip
    if kind == "report":
        speaker = draw(st.sampled_from(PEOPLE))
        listeners = draw(st.lists(st.sampled_from([p for p in PEOPLE if p != speaker]),
                                  min_size=1, max_size=2, unique=True))  # fmt: skip
        pid = draw(st.sampled_from(made or ["p0"]))
        return base | {"kind": "say", "speaker": speaker, "listeners": listeners,
                       "claim": {"root": f"promise:{pid}",
                                 "value": draw(st.sampled_from(["kept", "broken"]))},
                       "subject": "about the promise"}  # fmt: skip
    if kind == "goal":
        op = draw(st.sampled_from(["set", "set", "changed", "achieved", "abandoned"]))
        return base | {"resident": draw(st.sampled_from(PEOPLE[:2])), "goal": "g",
                       "op": op, "subject": draw(st.sampled_from(["x", "y"]))}  # fmt: skip
    return base


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[tuple[str, WorldEvent]], list[int], int | None]:
    events: list[tuple[str, WorldEvent]] = []
    made: list[str] = []
    day = 0.0
    for i in range(draw(st.integers(1, 30))):
        day += draw(st.sampled_from([0, 0, 1, 2, 5]))
        try:
            events.append(("w", parse_event(draw(one_event(f"e{i}", day, made)))))
        except InvalidEvent:
            continue
    sizes, left = [], len(events)
    while left:
        size = draw(st.integers(1, min(left, 8)))
        sizes.append(size)
        left -= size
    reopen = draw(st.one_of(st.none(), st.integers(0, max(0, len(sizes) - 1))))
    return events, sizes, reopen


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_batched_event_by_event_and_memory_agree_on_promises(
    history: tuple[list[tuple[str, WorldEvent]], list[int], int | None],
) -> None:
    """Any promises, acts, reports, deadlines and goals in any batches, with a reopen: the
    two write paths give the same results and rows, the in-memory fold the same changes
    and views, and a rebuild of the log is exact."""
    events, sizes, reopen = history
    with tempfile.TemporaryDirectory(prefix="credence-promises-") as tmp:
        seen: dict[bool, list[tuple[Any, ...]]] = {}
        paths = {True: Path(tmp) / "batched.db", False: Path(tmp) / "plain.db"}
        for batched, path in paths.items():
            w, got = apply_history(
                lambda: Writer(path, synchronous="OFF", batched=batched),  # noqa: B023
                events, sizes, reopen,
            )  # fmt: skip
            w.close()
            if batched:  # promise and goal rows stay on the batched path
                assert w.fallbacks == 0
            seen[batched] = got
        assert seen[True] == seen[False]
        assert dump(paths[True], TABLES) == dump(paths[False], TABLES)
        memory = MemoryWorld()
        for _, event in events:
            try:
                memory.apply(event)
            except InvalidEvent:
                pass
        reader = Reader(paths[True])
        try:
            assert reader.all_changes("w") == memory.changes
            stored = {
                (v.resident, v.promise): v
                for v in (
                    view for p in PEOPLE for view, _ in reader.promise_page("w", p, limit=1000)
                )
            }
            assert stored == memory.views
        finally:
            reader.close()
        assert rebuild(paths[True]).differences == []


def _world(path: Path, events: list[dict[str, Any]]) -> Path:
    w = Writer(path, synchronous="OFF")
    try:
        results = w.apply([("w", parse_event(e)) for e in events])
        assert all(r.error is None for r in results), results
    finally:
        w.close()
    return path


def _promise(
    i: int, promiser: str = "bo", to: str = "kai", by: float | None = 20
) -> dict[str, Any]:
    out = {"event_id": f"p{i}", "day": 1, "kind": "promise", "promise": f"p{i:03}",
           "promiser": promiser, "to": [to], "action": f"job{i % 3}", "subject": f"job {i}"}  # fmt: skip
    return out | ({} if by is None else {"by": by})


def test_a_rebuild_that_differs_in_a_view_is_reported(tmp_path: Path) -> None:
    """`rebuild --check` compares promise, view and goal rows: a tampered row is a difference."""
    path = _world(tmp_path / "w.db", [_promise(1), {"event_id": "t", "day": 30, "kind": "tick"}])
    assert rebuild(path).differences == []
    conn = sqlite3.connect(path)
    conn.execute("UPDATE promise_views SET state = 'kept', how = 'seen' WHERE resident = 'kai'")
    conn.commit()
    conn.close()
    differences = rebuild(path).differences
    assert differences and "promise_views" in differences[0]


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE promise_views SET how = 'made' WHERE state = 'overdue'",  # overdue only by deadline
        "UPDATE promise_views SET source = NULL, how = 'told' WHERE resident = 'kai'",
        "UPDATE promise_views SET state = 'late' WHERE resident = 'kai'",
        "UPDATE promise_views SET due = 3 WHERE state = 'overdue'",
        "UPDATE goals SET state = 'done'",
        "UPDATE goals SET day = set_day - 1",
        "UPDATE promises SET by_day = made_day - 1",
    ],
)
def test_checks_refuse_rows_the_lifecycle_cannot_make(tmp_path: Path, sql: str) -> None:
    """The CHECK constraints mirror the engine's lifecycle: an impossible row is refused."""
    events = [
        _promise(1),
        {"event_id": "t", "day": 30, "kind": "tick"},
        {"event_id": "g", "day": 30, "kind": "goal", "resident": "kai", "goal": "g", "op": "set",
         "subject": "x"},
    ]  # fmt: skip
    path = _world(tmp_path / "w.db", events)
    conn = sqlite3.connect(path)
    try:
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(sql)
    finally:
        conn.close()


def test_an_older_database_migrates_to_the_promise_tables(tmp_path: Path) -> None:
    """Migration 0011 adds the tables and widens the event and change kinds of a file
    written before it, keeping its rows."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    migrate(conn, upto=10)
    conn.execute("INSERT INTO worlds (world, rules) VALUES ('w', '{}')")
    conn.commit()
    assert "0011_i18_promises_goals" in migrate(conn)
    conn.close()
    _world(path, [{**_promise(1), "event_id": "px"}])
    reader = Reader(path)
    try:
        assert [v.state for v, _ in reader.promise_page("w", "kai")] == ["pending"]
    finally:
        reader.close()


def _plans(path: Path, run: Any, conn: sqlite3.Connection) -> list[str]:
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        run()
    finally:
        conn.set_trace_callback(None)
    return [s for s in seen if "promise" in s or "goals" in s]


def test_every_promise_read_searches_an_index(tmp_path: Path) -> None:
    """The engine's reads (act matching, deadlines, lookups) and the queries' (pages, the
    narrative's ranked reads) never scan a world's promises."""
    events = [_promise(i, to=("kai", "lena")[i % 2]) for i in range(30)]
    events += [{"event_id": "g", "day": 1, "kind": "goal", "resident": "kai", "goal": "g",
                "op": "set", "subject": "x"}]  # fmt: skip
    path = _world(tmp_path / "w.db", events)
    w = Writer(path, synchronous="OFF")
    check = sqlite3.connect(path)
    try:
        statements = _plans(
            path,
            lambda: w.apply([
                ("w", parse_event({"event_id": "a", "day": 25, "kind": "act", "actor": "bo",
                                   "action": "job1", "status": "completed", "witnesses": ["kai"]})),
                ("w", parse_event({"event_id": "g2", "day": 26, "kind": "goal", "resident": "kai",
                                   "goal": "g", "op": "achieved"})),
            ]),
            w.conn,
        )  # fmt: skip
        reader = Reader(path)
        statements += _plans(
            path,
            lambda: (
                reader.promise_page("w", "kai"),
                reader.promise_page("w", "kai", state="overdue", after="p005"),
                reader.promises_ranked("w", "kai"),
                reader.goal_page("w", "kai", state="achieved"),
                reader.goals_ranked("w", "kai"),
            ),
            reader.conn,
        )
        reader.close()
        selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
        assert len(selects) >= 8
        for sql in selects:
            assert _bad_steps(check, sql) == [], sql
    finally:
        check.close()
        w.close()
