"""Every index in the schema is used by a query plan of a realistic workload (issue 20).

An index costs a B-tree insert per row written (several per event on ``evidence``,
``changes`` and ``beliefs``), so one that no query searches is pure write cost. The test runs
a story through the real writer (aging and promise deadlines included), every query kind,
the worlds listing, a rebuild, a fork (in process and through a worker), an import and a
delete, records every statement each of their connections runs (a recording subclass of
``sqlite3.Connection``: the same SQLite, the same SQL, the same parameters), and plans each
one as SQLite plans it at run time: prepared with its parameters unbound, under the fixed
planner statistics every migrated database carries (``install_plan_statistics``). An index
that backs a constraint (a ``PRIMARY KEY`` or ``UNIQUE`` autoindex) stays whether or not a
plan names it.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from protocol import WorldsQuery, parse_client_frame
from sidecar.engine import parse_event
from sidecar.engine.rules import Rules
from sidecar.read.recall import recall_social
from sidecar.server.auth import Role
from sidecar.server.lifecycle import world_reply
from sidecar.server.queries import answer
from sidecar.store import Reader, SingleFile, migrate
from sidecar.store.reader import add_trust_root_function
from sidecar.store.rebuild import rebuild
from sidecar.store.schema import install_plan_statistics
from sidecar.store.worlds import run_build
from tests.read_world import LATE_EVENT_DAYS, WORLD, crowd, story
from tests.test_store_plans import _QUERIES

#: Statements that are not planned (transactions, settings, schema changes).
_UNPLANNED = re.compile(
    r"\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|PRAGMA|ATTACH|DETACH|CREATE|DROP|ALTER|"
    r"ANALYZE|VACUUM)\b",
    re.IGNORECASE,
)

Statement = tuple[str, tuple[Any, ...]]


class _Recording(sqlite3.Connection):
    """A connection that notes each statement it is asked to run, then runs it."""

    seen: ClassVar[list[Statement]] = []

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        _Recording.seen.append((sql, _first(parameters)))
        return super().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        rows = list(parameters)
        _Recording.seen.append((sql, _first(rows[0]) if rows else ()))
        return super().executemany(sql, rows)


def _first(parameters: Any) -> Any:
    """The parameters as bound (a sequence or a mapping), kept for planning later."""
    return dict(parameters) if isinstance(parameters, Mapping) else tuple(parameters)


def _events() -> list[dict[str, Any]]:
    """The read-side story and crowd, then acts, a promise that falls due and one that is
    kept, goals set and reached, talk of trust, and ticks that age hearsay."""
    acts = [
        {"event_id": f"a{i}", "day": 60 + i, "kind": "act", "actor": "alice",
         "action": "fetch_water", "status": "completed"}
        for i in range(3)
    ]  # fmt: skip
    later = [
        {"event_id": "p1", "day": 70, "kind": "promise", "promise": "p1", "promiser": "bob",
         "to": ["alice"], "action": "fetch_water", "subject": "fetch water", "by": 71},
        {"event_id": "p2", "day": 70, "kind": "promise", "promise": "p2", "promiser": "carol",
         "to": ["alice"], "action": "mend_fence", "subject": "mend the fence", "by": 90},
        {"event_id": "g1", "day": 70, "kind": "goal", "resident": "alice", "goal": "g1",
         "op": "set", "subject": "find the truth"},
        {"event_id": "g2", "day": 70, "kind": "goal", "resident": "alice", "goal": "g2",
         "op": "set", "subject": "mend the fence"},
        {"event_id": "t1", "day": 72, "kind": "tick"},
        {"event_id": "a9", "day": 73, "kind": "act", "actor": "carol", "action": "mend_fence",
         "status": "completed", "witnesses": ["alice"]},
        {"event_id": "g3", "day": 74, "kind": "goal", "resident": "alice", "goal": "g2",
         "op": "achieved"},
        {"event_id": "tr1", "day": 75, "kind": "trust", "resident": "alice", "source": "bob",
         "value": 0.8},
        {"event_id": "t2", "day": 110, "kind": "tick"},
    ]  # fmt: skip
    return story() + crowd() + acts + later


def _workload(path: Path) -> None:
    """Everything the sidecar does with a database, once each, through its real code."""
    rules = Rules(late_event_days=LATE_EVENT_DAYS)
    store = SingleFile(path, rules=rules, synchronous="OFF")
    try:
        events = [(WORLD, parse_event(e)) for e in _events()]
        for start in range(0, len(events), 100):
            store.apply(events[start : start + 100])
        reader = Reader(path)
        try:
            cursor = None
            frames: list[Any] = [*_QUERIES, *_MORE_QUERIES]
            for frame in frames:
                replies = answer(reader, WORLD, parse_client_frame({**frame, "rid": 1}))
                cursor = cursor or (replies[0].get("next") if frame.get("limit") else None)
            answer(reader, WORLD, parse_client_frame(
                {"type": "graph", "root": "well:water", "limit": 1, "after": cursor, "rid": 2}
            ))  # fmt: skip
            reader.changes_after(WORLD, 0)
            # a big resident with few doubts reads all but her plain facts (the story's
            # residents are too small for a narrative to take that read)
            recall_social(reader, WORLD, "alice", "en", told=False)
        finally:
            reader.close()
        listing = parse_client_frame({"type": "worlds", "rid": 3})
        assert isinstance(listing, WorldsQuery)
        world_reply(store, WORLD, listing, role=Role.WRITER, role_for=lambda w: Role.WRITER)
        store.fork(WORLD, "copy")
        run_build(store.begin_fork(WORLD, "worker_copy"))
        store.import_events("imported", rules, [e for _, e in events[:50]])
        store.delete("copy")
    finally:
        store.close()
    assert rebuild(path).ok


_MORE_QUERIES: list[dict[str, Any]] = [
    {"type": "residents", "limit": 2},
    {"type": "events", "from": 1, "limit": 10},
    {"type": "trust", "resident": "alice", "source": "bob"},
    {"type": "graph", "root": "well:water", "limit": 1},
    {"type": "promises", "resident": "alice", "state": "pending"},
    {"type": "goals", "resident": "alice", "state": "achieved"},
]


@pytest.fixture(scope="module")
def statements(tmp_path_factory: pytest.TempPathFactory) -> list[Statement]:
    """Every statement the workload ran, on any connection, in order."""
    path = tmp_path_factory.mktemp("indexes") / "world.db"
    connect = sqlite3.connect

    def recording(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = connect(*args, **{**kwargs, "factory": _Recording})
        return conn

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sqlite3, "connect", recording)
        _Recording.seen.clear()
        migrate(sqlite3.connect(path.with_name("migrated.db"), isolation_level=None))
        migrations = {sql for sql, _ in _Recording.seen}  # (a new file's schema: not planned)
        _Recording.seen.clear()
        _workload(path)
    return [(sql, params) for sql, params in _Recording.seen if sql not in migrations]


def _schema(tmp: Path) -> sqlite3.Connection:
    """A migrated database (with its planner statistics), and another attached as ``save``
    (the name a worker's save is attached under while its rows are copied in)."""
    conn = sqlite3.connect(tmp / "plan.db", isolation_level=None)
    migrate(conn)
    other = sqlite3.connect(tmp / "save.db", isolation_level=None)
    migrate(other)
    other.close()
    conn.execute("ATTACH DATABASE ? AS save", (str(tmp / "save.db"),))
    # A focused narrative's ranking calls the reader's focus function (sidecar/read/recall.py):
    # a stand-in of the same name plans the same way.
    conn.create_function("credence_matched", 6, lambda *row: 0, deterministic=True)
    add_trust_root_function(conn)  # (a trust page's join on its counter)
    return conn


def _plans(conn: sqlite3.Connection, statements: list[Statement]) -> Iterator[tuple[str, str]]:
    """(statement, plan step) for every step of every planned statement."""
    for sql, params in {(sql, repr(p)): (sql, p) for sql, p in statements}.values():
        if _UNPLANNED.match(sql):
            continue
        try:
            steps = conn.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
        except sqlite3.Error as exc:
            raise AssertionError(f"cannot plan {sql!r} {params!r}: {exc}") from exc
        for *_, step in steps:
            yield sql, step


def _indexes(conn: sqlite3.Connection) -> dict[str, str]:
    """Every index of the main schema that no constraint needs -> its table."""
    return {
        name: table
        for name, table in conn.execute(
            "SELECT name, tbl_name FROM main.sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        )
    }


def _used(steps: Iterable[tuple[str, str]]) -> set[str]:
    """The indexes some step searches by more than the world.

    A step that narrows an index by ``world`` alone (a save's purge ``DELETE ... WHERE world
    = ?``, "does the world have any belief") takes whichever index of the table is smallest;
    the primary key, which leads with ``world`` on every table, serves it as well.
    """
    used = set()
    for _, step in steps:
        found = re.match(r"SEARCH \w+ USING (?:COVERING )?INDEX (\w+) \((.*)\)", step)
        if found is not None and found[2] != "world=?":
            used.add(found[1])
    return used


def test_the_workload_runs_every_kind_of_statement(statements: list[Statement]) -> None:
    """The recording saw the writer, aging, promises, the read side, saves and a rebuild."""
    text = "\n".join(sql for sql, _ in statements)
    for marker in ("INSERT INTO evidence", "INDEXED BY beliefs_due", "promise_views_due",
                   "promise_views_open", "FROM evidence ev", "INSERT INTO main.", "DELETE FROM",
                   "goals_recent"):  # fmt: skip
        assert marker in text, marker


def _unused(conn: sqlite3.Connection, statements: list[Statement]) -> list[str]:
    """``table.index`` for every index no statement's plan searches (sorted)."""
    used = _used(_plans(conn, statements))
    return sorted(f"{table}.{name}" for name, table in _indexes(conn).items() if name not in used)


def test_every_index_is_used_by_a_traced_plan(statements: list[Statement], tmp_path: Path) -> None:
    """No index in the schema is written on every event and searched by no query."""
    conn = _schema(tmp_path)
    try:
        assert _unused(conn, statements) == [], "indexes no traced query plan searches"
    finally:
        conn.close()


def test_the_audit_names_an_unused_index(statements: list[Statement], tmp_path: Path) -> None:
    """An index added for nothing is reported by name (the audit above is not vacuous), even
    though a save's purge of the world would walk it."""
    conn = _schema(tmp_path)
    try:
        conn.execute("CREATE INDEX evidence_by_source ON evidence_pieces (world, source_resident)")
        install_plan_statistics(conn)
        assert _unused(conn, statements) == ["evidence_pieces.evidence_by_source"]
    finally:
        conn.close()
