"""Migration 0004 (issue 13): the same CHECKs, cheaper per row.

``col IN ('a', …)`` CHECKs become OR chains and the per-row ``json_valid`` CHECKs go (the
store writes JSON only through orjson). These tests pin that the rewritten tables accept and
refuse exactly what the old ones did for every enumerated column, and that a populated
version-3 database keeps its rows and indexes through the rebuild.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from belief_builders import intervene, observe, say, tick

from sidecar.engine import parse_event
from sidecar.store import MIGRATIONS, Reader, Writer, migrate, schema_version
from sidecar.store.schema import cheap_checks
from tools.old_files import PIECES, before_pieces

_IN = re.compile(r"(\w+) IN \(([^()]*)\)")


def _populated(
    path: Path, upto: int | None = None, pretend: tuple[str, ...] = ("0004_i13_cheap_checks",)
) -> None:
    """A database at schema version ``upto`` (default: current) with every table written."""
    if upto is not None:
        conn = sqlite3.connect(path, isolation_level=None)
        migrate(conn, upto=upto)
        # Pretend the migrations under test ran, so the writer fills the old tables as they
        # are; the others (0005_i10_memory: new columns, widened enumerations) still run.
        for name, _ in MIGRATIONS[upto:]:
            if name in pretend:
                conn.execute("INSERT INTO _migrations (name) VALUES (?)", (name,))
        conn.close()
    w = Writer(path, synchronous="OFF")
    events = [
        observe(0, ["mira", "kai"], "well", "dry", eid="o1"),
        say(1, "bo", ["mira", "kai"], "well", "full", eid="s1"),
        observe(2, ["mira"], "well", "full", eid="o2"),
        intervene(3, "kai", "implant", "mine", "gold", "gold in the mine", eid="i1"),
        tick(20, eid="t1"),
    ]
    results = w.apply([("w", parse_event(e)) for e in events])
    assert all(r.status == "applied" for r in results), results
    w.close()


def _rows(conn: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(f"SELECT * FROM {table}")]
    finally:
        conn.row_factory = None


def _accepts(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> bool:
    conn.execute("SAVEPOINT probe")
    try:
        cols = ", ".join(row)
        conn.execute(
            f"INSERT OR REPLACE INTO {table} ({cols}) VALUES ({', '.join('?' * len(row))})",
            tuple(row.values()),
        )
        return True
    except sqlite3.IntegrityError:
        return False
    finally:
        conn.execute("ROLLBACK TO probe")
        conn.execute("RELEASE probe")


def test_cheap_checks_rewrites_in_lists_and_drops_json_valid() -> None:
    sql = (
        "CREATE TABLE t (a TEXT NOT NULL CHECK (a IN ('x','y')), "
        "b TEXT CHECK (b IS NULL OR json_valid(b)), c TEXT NOT NULL CHECK (json_valid(c)))"
    )
    assert cheap_checks(sql) == (
        "CREATE TABLE t (a TEXT NOT NULL CHECK ((a = 'x' OR a = 'y')), b TEXT, c TEXT NOT NULL)"
    )
    assert cheap_checks(cheap_checks(sql)) == cheap_checks(sql)  # idempotent


@pytest.mark.parametrize(
    ("table", "now"),
    [("events", "events"), ("evidence", "evidence_pieces"), ("beliefs", "beliefs"),
     ("changes", "changes")],
)  # fmt: skip
def test_rewritten_checks_accept_and_refuse_what_the_old_ones_did(
    tmp_path: Path, table: str, now: str
) -> None:
    """For every enumerated column: each allowed value, an unknown one, NULL and the empty
    string give the same verdict on a version-3 table and on its version-4 rebuild (the
    table as it is ``now``: evidence rows are references into the log since 0026, which
    keeps their checks and drops the event columns)."""
    old_db, new_db = tmp_path / "v3.db", tmp_path / "v4.db"
    if table == now:
        _populated(old_db, upto=3)
    else:  # (the table is gone from a file the writer writes: its version-3 form, empty)
        empty = sqlite3.connect(old_db, isolation_level=None)
        migrate(empty, upto=3)
        empty.close()
    _populated(new_db)
    old = sqlite3.connect(old_db, isolation_level=None)
    new = sqlite3.connect(new_db, isolation_level=None)
    old_sql = old.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    new_sql = new.execute("SELECT sql FROM sqlite_master WHERE name = ?", (now,)).fetchone()[0]
    kept = {r[1] for r in new.execute(f"PRAGMA table_info({now})")}
    was = {r[1] for r in old.execute(f"PRAGMA table_info({table})")}
    assert " IN (" not in new_sql and "json_valid" not in new_sql
    enums = {col: re.findall(r"'([^']*)'", values) for col, values in _IN.findall(old_sql)}
    assert enums, old_sql
    verdicts = 0
    rows = _rows(old, table) if table == now else _rows(new, table)  # (its view, the old form)
    for base in rows:
        for col, allowed in enums.items():
            for value in [*allowed, "bogus", "", None, allowed[0].upper()]:
                row = {**base, col: value}
                both = {k: v for k, v in row.items() if k in kept}
                then = {k: v for k, v in row.items() if k in was}
                assert _accepts(old, table, then) == _accepts(new, now, both), (col, value)
                verdicts += 1
    assert verdicts > 20
    old.close()
    new.close()


def test_version_3_database_keeps_rows_and_indexes_through_the_rebuild(tmp_path: Path) -> None:
    db = tmp_path / "v3.db"
    _populated(db, upto=3)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DELETE FROM _migrations WHERE name = '0004_i13_cheap_checks'")
    tables = ("events", "evidence", "beliefs", "changes", "facts", "trust", "residents")
    before = {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    index_sql = "SELECT name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name"
    indexes = conn.execute(index_sql).fetchall()
    assert migrate(conn) == ["0004_i13_cheap_checks"]
    assert schema_version(conn) == len(MIGRATIONS)
    after = {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    assert after == before and before["beliefs"] and before["changes"]
    assert conn.execute(index_sql).fetchall() == indexes
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.close()
    w = Writer(db)  # and the writer carries on on the rebuilt tables
    assert w.migrations_applied == []
    [result] = w.apply([("w", parse_event(observe(21, ["kai"], "well", "full", eid="o3")))])
    assert result.status == "applied" and result.changes
    w.close()
    r = Reader(db)
    kai = r.belief("w", "kai", "well")
    assert kai is not None and kai.value == "full"
    r.close()


def test_lean_tables_keep_every_row_and_the_queries_keep_an_index(tmp_path: Path) -> None:
    """0006: ``changes`` and ``evidence`` become WITHOUT ROWID tables and the redundant
    ``changes_by_resident`` index goes; a populated database keeps every row, and the
    per-resident and per-belief change queries are still served by an index."""
    lean = "0006_i13_lean_tables"
    db = tmp_path / "v6.db"
    _populated(db, upto=[n for n, _ in MIGRATIONS].index(lean), pretend=(lean,))
    before_pieces(db, rowid=True)  # (its evidence a table again, as 0006 found it)
    conn = sqlite3.connect(db, isolation_level=None)
    table_sql = "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?"
    assert all("WITHOUT ROWID" not in conn.execute(table_sql, (t,)).fetchone()[0]
               for t in ("changes", "evidence"))  # fmt: skip
    tables = ("changes", "evidence")
    before = {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    conn.execute("DELETE FROM _migrations WHERE name = ?", (lean,))
    assert migrate(conn) == [lean, PIECES]
    after = {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    assert after == before and before["changes"] and before["evidence"]
    for t in ("changes", "evidence_pieces"):
        assert conn.execute(table_sql, (t,)).fetchone()[0].endswith("WITHOUT ROWID")
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "changes_by_resident" not in indexes
    # (a belief's evidence: 0023's index in log order, which 0025 left as the only one)
    assert {"changes_by_belief", "evidence_by_seq"} <= indexes
    for query in (
        "SELECT * FROM changes WHERE world = 'w' AND resident = 'mira' ORDER BY seq",
        "SELECT * FROM changes WHERE world = 'w' AND resident = 'mira' AND root = 'well'",
        "SELECT * FROM evidence WHERE world = 'w' AND resident = 'mira' AND root = 'well'",
    ):
        plan = " ".join(str(r[-1]) for r in conn.execute("EXPLAIN QUERY PLAN " + query))
        assert "USING INDEX" in plan or "USING PRIMARY KEY" in plan, (query, plan)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert migrate(conn) == []  # once only
    conn.close()
    w = Writer(db)  # and the writer carries on on the rebuilt tables
    [result] = w.apply([("w", parse_event(observe(21, ["kai"], "well", "dry", eid="o3")))])
    assert result.status == "applied" and result.changes
    w.close()
    r = Reader(db)
    assert r.history("w", "kai", "well")[-1].event_id == "o3"
    r.close()
