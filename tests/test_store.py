"""The SQLite store: idempotency, refusal, batches, change numbering, constraints, migrations.

Every test writes a real database file through :class:`sidecar.store.Writer` and inspects it
with :class:`sidecar.store.Reader` or plain ``sqlite3``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from belief_builders import act, announce, intervene, observe, say, tick
from test_store_cache import refuse_doomed

from sidecar.engine import ChangeKind, InvalidEvent, SourceKind, State, parse_event
from sidecar.read.queries import evidence_after
from sidecar.store import (
    MIGRATIONS,
    SCHEMA_VERSION,
    CannotOpen,
    Reader,
    ResultStatus,
    SchemaTooNew,
    StorageFailure,
    Writer,
    migrate,
    schema_version,
)
from sidecar.store.connection import connect
from sidecar.store.rows import dump_json_list, load_json
from tools.old_files import PIECES, before_pieces, evidence_table_before_pieces

TABLES = ("worlds", "events", "residents", "evidence", "beliefs", "changes", "trust", "facts")


@pytest.fixture
def writer(db_path: Path) -> Iterator[Writer]:
    w = Writer(db_path, synchronous="OFF")
    yield w
    w.close()


def put(writer: Writer, *events: dict[str, Any], world: str = "w") -> list[ResultStatus]:
    """Apply events as one batch to ``world``; return their statuses."""
    return [r.status for r in writer.apply([(world, parse_event(e)) for e in events])]


def dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, in a stable order, read over a separate connection."""
    conn = sqlite3.connect(path)
    try:
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in TABLES}
    finally:
        conn.close()


def reader(path: Path) -> Reader:
    return Reader(path)


# --------------------------------------------------------------------------- idempotency


def test_duplicate_event_id_is_reported_and_changes_nothing(writer: Writer, db_path: Path) -> None:
    """Re-sending an event id (even with new content) is DUPLICATE; every table stays as it was."""
    assert put(writer, say(0, "bo", ["mira"], "r", 1, eid="e1")) == [ResultStatus.APPLIED]
    before = dump(db_path)
    results = writer.apply([("w", parse_event(observe(9, ["mira"], "r", 2, eid="e1")))])
    assert [r.status for r in results] == [ResultStatus.DUPLICATE]
    assert results[0].changes == ()
    assert dump(db_path) == before


def test_duplicate_within_one_batch(writer: Writer) -> None:
    """The second copy of an event id inside the same batch is a DUPLICATE too."""
    statuses = put(
        writer, observe(1, ["mira"], "r", 1, eid="x"), observe(1, ["mira"], "r", 1, eid="x")
    )
    assert statuses == [ResultStatus.APPLIED, ResultStatus.DUPLICATE]
    r = reader(writer.path)
    assert r.belief("w", "mira", "r").confidence == 78  # type: ignore[union-attr]
    r.close()


def test_same_event_id_in_two_worlds_is_two_events(writer: Writer) -> None:
    """Event ids are unique per world, not globally."""
    assert put(writer, observe(1, ["mira"], "r", 1, eid="x"), world="a") == [ResultStatus.APPLIED]
    assert put(writer, observe(1, ["mira"], "r", 1, eid="x"), world="b") == [ResultStatus.APPLIED]


# --------------------------------------------------------------------------- refusal


def test_rejected_event_stores_nothing(writer: Writer, db_path: Path) -> None:
    """A refused event (soften, no belief) leaves no event row, evidence, change or belief."""
    put(writer, say(0, "bo", ["mira"], "r", 1))
    before = dump(db_path)
    # 30 days later: aging would be due, and kai is a new resident; none of it may be stored.
    [result] = writer.apply([("w", parse_event(intervene(30, "kai", "soften", "r", eid="bad")))])
    assert result.status is ResultStatus.REJECTED
    assert isinstance(result.error, InvalidEvent)
    assert dump(db_path) == before
    r = reader(db_path)
    assert "bad" not in r.event_ids("w")
    assert not r.is_resident("w", "kai")
    assert r.world_day("w") == 0
    r.close()


def test_rejected_event_id_can_be_sent_again_once_valid(writer: Writer) -> None:
    """A refused event is not recorded, so its id is free for a corrected resend."""
    bad = intervene(1, "mira", "suppress", "r", eid="e")
    assert put(writer, bad) == [ResultStatus.REJECTED]
    assert put(writer, observe(1, ["mira"], "r", 1, eid="e")) == [ResultStatus.APPLIED]


def test_batch_with_rejected_event_in_the_middle_commits_the_others(
    writer: Writer, db_path: Path
) -> None:
    """APPLIED, REJECTED, APPLIED: the good events of the batch are committed, with gapless seqs."""
    statuses = put(
        writer,
        observe(1, ["mira"], "key", "counter", eid="a"),
        intervene(2, "kai", "distort", "key", "floor", eid="b"),
        observe(3, ["kai"], "key", "counter", eid="c"),
    )
    assert statuses == [ResultStatus.APPLIED, ResultStatus.REJECTED, ResultStatus.APPLIED]
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT seq, event_id FROM events ORDER BY seq").fetchall() == [
        (1, "a"),
        (2, "c"),
    ]
    assert conn.execute("SELECT count(*) FROM evidence WHERE event_id = 'b'").fetchone() == (0,)
    conn.close()
    r = reader(db_path)
    assert [b.resident for b in r.on_root("w", "key")] == ["kai", "mira"]
    assert r.latest_seq("w") == 2
    r.close()


def test_sqlite_refusing_one_event_rolls_back_only_that_event(
    writer: Writer, db_path: Path
) -> None:
    """If SQLite refuses an event's rows (a trigger here), only that event is undone: REJECTED."""
    refuse_doomed(db_path)
    results = writer.apply(
        [
            ("w", parse_event(observe(1, ["mira"], "r", 1, eid="a"))),
            ("w", parse_event(observe(2, ["kai", "doomed"], "r", 1, eid="b"))),
            ("w", parse_event(observe(3, ["kai"], "r", 1, eid="c"))),
        ]
    )
    assert [r.status for r in results] == [
        ResultStatus.APPLIED,
        ResultStatus.REJECTED,
        ResultStatus.APPLIED,
    ]
    assert isinstance(results[1].error, StorageFailure)
    assert [c.seq for c in results[2].changes] == [2]
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT event_id FROM events ORDER BY seq").fetchall() == [("a",), ("c",)]
    assert conn.execute("SELECT count(*) FROM evidence WHERE event_id = 'b'").fetchone() == (0,)
    assert conn.execute("SELECT resident FROM residents ORDER BY 1").fetchall() == [
        ("kai",),
        ("mira",),
    ]
    conn.close()
    r = reader(db_path)
    kai = r.belief("w", "kai", "r")
    assert kai is not None and kai.confidence == 78 and len(kai.evidence_refs) == 1
    r.close()


# --------------------------------------------------------------------------- numbering


def test_change_seq_is_gapless_and_independent_per_world(writer: Writer) -> None:
    """Change seqs run 1..N in each world, however events of two worlds interleave in batches.

    North: the say gives mira and kai hearsay on r and a firsthand belief on believes:bo:r
    (4), the tick ages both hearsay beliefs (2), mira's look doubts hers (1) and lowers her
    trust in bo (1): 8. South: 3 firsthand formations.
    """
    writer.apply(
        [
            ("north", parse_event(say(0, "bo", ["mira", "kai"], "r", 1))),
            ("south", parse_event(observe(0, ["tom"], "r", 1))),
            ("north", parse_event(tick(7))),
        ]
    )
    writer.apply(
        [
            ("south", parse_event(observe(1, ["tom", "ann"], "r", 2))),
            ("north", parse_event(observe(8, ["mira"], "r", 2))),
        ]
    )
    r = reader(writer.path)
    north = [c.seq for c in r.all_changes("north")]
    south = [c.seq for c in r.all_changes("south")]
    assert north == list(range(1, len(north) + 1)) and len(north) == 8
    assert south == [1, 2, 3]
    assert (r.latest_seq("north"), r.latest_seq("south")) == (8, 3)
    r.close()


def test_apply_returns_committed_changes_with_their_seq(writer: Writer) -> None:
    """The changes an event returns carry the seq under which they were committed."""
    put(writer, observe(0, ["a"], "r", 1))
    [result] = writer.apply([("w", parse_event(say(0, "a", ["b", "c"], "r", 1)))])
    assert [(c.seq, c.resident, c.root, c.kind) for c in result.changes] == [
        (2, "b", "r", ChangeKind.FORMED),
        (3, "b", "believes:a:r", ChangeKind.FORMED),
        (4, "c", "r", ChangeKind.FORMED),
        (5, "c", "believes:a:r", ChangeKind.FORMED),
    ]
    r = reader(writer.path)
    assert r.changes_after("w", 1) == list(result.changes)
    r.close()


def test_writer_reopened_continues_clock_seqs_and_residents(db_path: Path) -> None:
    """A new Writer on an existing file continues the world clock, seq counters and residents."""
    w = Writer(db_path)
    put(w, observe(0, ["mira", "kai"], "r", 1), say(0, "bo", ["mira"], "q", 1))
    w.close()
    w = Writer(db_path)
    put(w, announce(7, "tom", "*", "news", "fair"))  # reaches residents known before reopening
    w.close()
    r = reader(db_path)
    holders = [b.resident for b in r.on_root("w", "news")]
    assert holders == ["bo", "kai", "mira"]
    assert r.belief("w", "mira", "q").confidence == 50  # type: ignore[union-attr]  # aged at day 7
    # 2 observations, the say (q and believes:bo:q), one aging step, the announcement to
    # three residents (news and believes:tom:news each): 11 changes, numbered on from 1.
    assert [c.seq for c in r.all_changes("w")] == list(range(1, 12))
    assert [e.event_id for e in r.events("w")][-1].startswith("ann")
    r.close()


def test_evidence_ids_do_not_collide_when_ids_contain_slashes(writer: Writer) -> None:
    """Event 'a/b' seen by 'c' and event 'a' seen by 'b/c' are both stored (ids do not clash)."""
    statuses = put(
        writer,
        observe(1, ["c"], "r", 1, eid="a/b"),
        observe(1, ["b/c"], "r", 1, eid="a"),
    )
    assert statuses == [ResultStatus.APPLIED, ResultStatus.APPLIED]


def test_correction_keeps_old_value_in_history(writer: Writer) -> None:
    """After a correction the belief holds the new value and the change history the old one."""
    put(
        writer,
        say(0, "bo", ["mira"], "well", "poisoned"),
        observe(1, ["mira"], "well", "clean"),
        observe(2, ["mira"], "well", "clean"),
    )
    r = reader(writer.path)
    belief = r.belief("w", "mira", "well")
    assert belief is not None and (belief.value, belief.state) == ("clean", State.CORRECTED)
    history = r.history("w", "mira", "well")
    assert [(c.kind, c.value_before, c.value_after) for c in history] == [
        (ChangeKind.FORMED, None, "poisoned"),
        (ChangeKind.DOUBTED, "poisoned", "poisoned"),
        (ChangeKind.CORRECTED, "poisoned", "clean"),
    ]
    evidence = r.evidence("w", "mira", "well")
    assert [(e["relation"], e["event_kind"]) for e in evidence] == [
        ("forms", "say"),
        ("contradicts", "observe"),
        ("contradicts", "observe"),
    ]
    r.close()


def test_bool_and_int_values_survive_the_database(writer: Writer) -> None:
    """True and 1 stay distinct through JSON columns: observing 1 doubts a belief in True."""
    put(writer, observe(1, ["mira"], "door", True), observe(2, ["mira"], "door", 1))
    r = reader(writer.path)
    belief = r.belief("w", "mira", "door")
    assert belief is not None and belief.value is True and belief.state is State.DOUBTFUL
    r.close()


# --------------------------------------------------------------------------- constraints


def _belief_row(db_path: Path) -> tuple[sqlite3.Connection, dict[str, Any]]:
    w = Writer(db_path)
    put(w, say(0, "bo", ["mira"], "r", 1))
    w.close()
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    row = dict(conn.execute("SELECT * FROM beliefs WHERE root = 'r'").fetchone())
    return conn, row


def _insert(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> None:
    cols = ", ".join(row)
    marks = ", ".join("?" * len(row))
    conn.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", tuple(row.values()))


def test_check_constraint_rejects_confidence_101(db_path: Path) -> None:
    """The beliefs table itself refuses confidence 101 (a valid copy of the row inserts fine)."""
    conn, row = _belief_row(db_path)
    _insert(conn, "beliefs", {**row, "root": "copy"})  # control: the row as such is valid
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        _insert(conn, "beliefs", {**row, "root": "bad", "confidence": 101})
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        conn.execute("UPDATE beliefs SET confidence = -1 WHERE root = 'copy'")
    conn.close()


def test_check_constraint_rejects_hearsay_without_source(db_path: Path) -> None:
    """A hearsay belief row without source_resident is refused by SQLite."""
    conn, row = _belief_row(db_path)
    assert row["source_kind"] == "hearsay"
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        _insert(conn, "beliefs", {**row, "root": "bad", "source_resident": None})
    conn.close()


def test_check_constraint_rejects_decay_schedule_on_firsthand(db_path: Path) -> None:
    """Only influencing hearsay may carry a next_decay_day."""
    conn, row = _belief_row(db_path)
    firsthand = {**row, "root": "bad", "source_kind": "firsthand", "source_resident": None}
    assert firsthand["next_decay_day"] is not None
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        _insert(conn, "beliefs", firsthand)
    _insert(conn, "beliefs", {**firsthand, "next_decay_day": None})  # without it: fine
    conn.close()


def test_check_constraint_rejects_bad_change_rows(db_path: Path) -> None:
    """Change rows: an unknown kind, or a 'formed' that has a state before, are refused."""
    conn, _ = _belief_row(db_path)
    change = dict(conn.execute("SELECT * FROM changes WHERE root = 'r'").fetchone())
    assert change["kind"] == "formed"
    free = conn.execute("SELECT max(seq) FROM changes").fetchone()[0] + 1
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        _insert(conn, "changes", {**change, "seq": free, "kind": "forgotten"})
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        _insert(conn, "changes", {**change, "seq": free, "state_before": "influencing"})
    _insert(conn, "changes", {**change, "seq": free})  # control
    conn.close()


# --------------------------------------------------------------------------- migrations


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def test_version_1_database_is_migrated_by_opening_a_writer(db_path: Path) -> None:
    """A database at schema version 1 is brought to SCHEMA_VERSION when a Writer opens it."""
    conn = connect(db_path)
    assert migrate(conn, upto=1) == ["0001_initial"]
    assert schema_version(conn) == 1
    assert "subject_before" not in _columns(conn, "changes")
    conn.close()
    assert SCHEMA_VERSION > 1
    w = Writer(db_path)
    assert w.migrations_applied == [name for name, _ in MIGRATIONS[1:]]
    assert schema_version(w.conn) == SCHEMA_VERSION
    put(w, observe(1, ["mira"], "r", "x", subject="the thing"))
    w.close()
    conn = connect(db_path)
    assert {"subject_before", "subject_after"} <= _columns(conn, "changes")
    assert conn.execute("SELECT subject_after FROM changes").fetchone()[0] == "the thing"
    conn.close()
    w = Writer(db_path)  # a second open applies nothing
    assert w.migrations_applied == []
    w.close()


def test_trust_history_totals_are_backfilled_and_kept_by_the_trigger(db_path: Path) -> None:
    """0018 counts the trust change records of a file written before it, per (resident,
    root), and its trigger counts every one written after: the totals always equal a count
    of the change rows, and a trust page reads them by key."""
    events = [
        {"event_id": f"t{i}", "day": i, "kind": "trust", "resident": "kai",
         "source": "bo" if i % 3 else "ann", "value": 0.1 * (i % 9 + 1),
         **({"topic": "well"} if i % 2 else {})}
        for i in range(30)
    ]  # fmt: skip
    w = Writer(db_path)
    put(w, *events[:20], say(20, "bo", ["mira"], "water:well", "poisoned"),
        observe(21, ["mira"], "water:well", "clean"))  # fmt: skip
    w.close()
    conn = sqlite3.connect(db_path)
    with conn:  # as a file from before 0018 is
        conn.execute("DROP TRIGGER trust_history_counted")
        conn.execute("DROP TABLE trust_history")
        conn.execute("DELETE FROM _migrations WHERE name = '0018_i17trust_trust_history'")
    conn.close()
    w = Writer(db_path)
    assert w.migrations_applied == ["0018_i17trust_trust_history"]
    put(w, *events[20:])
    w.close()
    conn = sqlite3.connect(db_path)
    try:
        totals = conn.execute(
            "SELECT resident, root, total FROM trust_history ORDER BY resident, root"
        ).fetchall()
        counted = conn.execute(
            "SELECT resident, root, count(*) FROM changes WHERE kind = 'trust' "
            "GROUP BY resident, root ORDER BY resident, root"
        ).fetchall()
    finally:
        conn.close()
    assert totals == counted
    assert ("kai", "trust:bo:well", 10) in totals and ("mira", "trust:bo", 1) in totals
    r = reader(db_path)
    try:
        table = r.trust("w", "kai", latest=4)
        assert [(e["source"], e["topic"], e["history_total"]) for e in table] == [
            (root.split(":")[1], [*root.split(":"), None][2], total)
            for resident, root, total in counted if resident == "kai"
        ]  # fmt: skip
        assert len(table) == 4 and all(len(e["history"]) == 4 for e in table)
    finally:
        r.close()


def test_database_from_a_newer_version_is_refused(db_path: Path) -> None:
    """A database holding a migration this version does not know raises SchemaTooNew."""
    Writer(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO _migrations (name) VALUES ('9999_from_the_future')")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaTooNew):
        Writer(db_path)


# --------------------------------------------------------------------------- aging by index


def test_aging_reads_due_beliefs_through_the_beliefs_due_index(writer: Writer) -> None:
    """The due-beliefs query the writer actually runs on a clock advance uses index beliefs_due."""
    put(writer, *(say(0, "bo", [f"r{i}"], f"root{i % 7}", i) for i in range(40)))
    put(writer, *(observe(0, [f"f{i}"], "seen", i) for i in range(40)))
    statements: list[str] = []
    writer.conn.set_trace_callback(statements.append)
    try:
        put(writer, tick(7))
    finally:
        writer.conn.set_trace_callback(None)
    due = [s for s in statements if s.startswith("SELECT") and "next_decay_day" in s]
    assert len(due) == 1, statements
    plan = writer.conn.execute(f"EXPLAIN QUERY PLAN {due[0]}").fetchall()
    details = " | ".join(row["detail"] for row in plan)
    assert "SEARCH beliefs USING INDEX beliefs_due" in details, details
    assert "next_decay_day<?" in details, details  # a range on the due day, not the whole world
    assert not any(row["detail"].startswith("SCAN") for row in plan), details
    r = reader(writer.path)
    aged = [c for c in r.all_changes("w") if c.kind is ChangeKind.DECAYED]
    assert len(aged) == 40
    assert all(c.source_kind is SourceKind.HEARSAY for c in aged)
    r.close()


def test_resident_and_event_pages_read_one_primary_key_range(writer: Writer) -> None:
    """The residents and events listings search their primary keys: no scan of the world."""
    put(writer, *(say(i, "bo", [f"r{i}"], f"root{i}", i) for i in range(30)))
    r = reader(writer.path)
    statements: list[str] = []
    r.conn.set_trace_callback(statements.append)
    try:
        page = r.resident_page("w", after="r1", limit=5)
        events = r.event_page("w", start=10, limit=5)
    finally:
        r.conn.set_trace_callback(None)
    assert [p[0] for p in page] == ["r10", "r11", "r12", "r13", "r14"]
    assert [e["seq"] for e in events] == [10, 11, 12, 13, 14] and events[0]["by"] == "bo"
    listings = [s for s in statements if " FROM residents " in s or " FROM events " in s]
    assert len(listings) == 2, statements
    for sql in listings:
        plan = r.conn.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall()
        details = " | ".join(row["detail"] for row in plan)
        assert "USING PRIMARY KEY" in details or "USING INDEX sqlite_autoindex" in details, details
        assert not any(row["detail"].startswith("SCAN") for row in plan), details
        assert "TEMP B-TREE" not in details, details  # the key's own order: no sort


def test_neutral_text_migration_strips_the_old_english_and_rebuilds_exactly(db_path: Path) -> None:
    """0012: a database written with the old English correction note and "bo said: …"
    subjects of believes: roots is rewritten to the language-neutral text a replay gives."""
    from wsclient import rebuild_check

    w = Writer(db_path)
    put(w, say(1, "bo", ["mira"], "water:well", "poisoned", subject="the well is poisoned"))
    put(w, observe(2, ["mira"], "water:well", "clean", subject="the well is clean"))
    put(w, observe(3, ["mira"], "water:well", "clean", subject="the well is clean"))
    w.close()
    conn = connect(db_path)  # as the old code wrote it
    note = "Later firsthand evidence corrected my earlier understanding: the well is poisoned"
    conn.execute("UPDATE beliefs SET interpretation = ? WHERE root = 'water:well'", (note,))
    evidence_table_before_pieces(conn)
    for table in ("beliefs", "evidence"):
        conn.execute(
            f"UPDATE {table} SET subject = 'bo said: ' || subject WHERE root LIKE 'believes:%'"
        )
    conn.execute("DELETE FROM _migrations WHERE name = '0012_i18_neutral_text'")
    conn.commit()
    conn.close()
    w = Writer(db_path)
    assert w.migrations_applied == ["0012_i18_neutral_text", PIECES]
    w.close()
    conn = connect(db_path)
    assert (
        conn.execute("SELECT interpretation FROM beliefs WHERE root = 'water:well'").fetchone()[0]
        is None
    )
    subjects = {
        r[0] for r in conn.execute("SELECT subject FROM beliefs WHERE root LIKE 'believes:%'")
    }
    assert subjects == {"the well is poisoned"}
    conn.close()
    rebuild_check(db_path)


# --------------------------------------------------------------------------- bounded refs


def _full_refs(conn: sqlite3.Connection, resident: str, root: str) -> list[str]:
    """Every evidence id on a belief in log order: the list a belief row held before 0018."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT ev.evidence_id FROM evidence ev JOIN events e "
            "ON e.world = ev.world AND e.event_id = ev.event_id "
            "WHERE ev.resident = ? AND ev.root = ? ORDER BY e.seq",
            (resident, root),
        )
    ]


def _late_story(count: int, late: float, seed: int) -> list[dict[str, Any]]:
    """Observations of one root by mira (and some by bo, some of another root), each dated
    anywhere the clock allows: up to ``late`` days before the latest day seen."""
    import random

    rng = random.Random(seed)
    clock, out = 0.0, []
    for i in range(count):
        day = max(0.0, clock - rng.choice([0.0, 0.0, late / 3, late])) + rng.choice([0, 0, 1])
        clock = max(clock, day)
        who = ["mira"] if i % 4 else ["mira", "bo"]
        root = "well" if i % 7 else "gate"
        out.append(observe(day, who, root, "clean", eid=f"s{i}"))
    return out


def test_latest_evidence_with_late_events_is_the_log_order_tail(db_path: Path) -> None:
    """explain's latest pieces (read from a day range of the index, widened by
    late_event_days) are exactly the last ones logged, though late events make the day
    order differ from the log order."""
    from sidecar.engine import Rules

    w = Writer(db_path, synchronous="OFF", rules=Rules(late_event_days=3.0))
    assert set(put(w, *_late_story(300, 3.0, seed=7))) == {ResultStatus.APPLIED}
    w.close()
    r = reader(db_path)
    every = [e["evidence_id"] for e in r.evidence("w", "mira", "well")]
    by_day = [e["evidence_id"] for e in sorted(r.evidence("w", "mira", "well"),
                                               key=lambda e: (e["day"], e["event_seq"]))]  # fmt: skip
    assert len(every) == r.evidence_count("w", "mira", "well") > 200
    assert by_day != every  # late events: the index's day order is not the log order
    for n in (1, 2, 5, 9, 10, 11, 37, 100, len(every) - 1, len(every), len(every) + 5):
        latest = r.evidence("w", "mira", "well", latest=n)
        assert [e["evidence_id"] for e in latest] == every[-n:], n
    r.close()


def test_a_belief_keeps_its_first_and_latest_refs_and_counts_all(db_path: Path) -> None:
    """Stored and read back, a belief seen 23 times keeps the first 5 and latest 5 of its
    evidence ids in log order and counts 23; every piece stays in the evidence table."""
    from sidecar.engine import Rules

    w = Writer(db_path, synchronous="OFF", rules=Rules(late_event_days=3.0))
    put(w, *_late_story(30, 3.0, seed=3))
    w.close()
    conn = sqlite3.connect(db_path)
    every = _full_refs(conn, "mira", "well")
    row = conn.execute(
        "SELECT evidence_refs, evidence_count FROM beliefs WHERE resident = 'mira' AND root = 'well'"
    ).fetchone()
    conn.close()
    assert len(every) == 25 and row[1] == 25
    assert row[0] == dump_json_list((*every[:5], *every[-5:]))
    belief = reader(db_path).belief("w", "mira", "well")
    assert belief is not None and belief.evidence_refs == (*every[:5], *every[-5:])


def _beliefs_schema_before(db_path: Path, migration: str) -> str:
    """The ``beliefs`` table as the migrations before ``migration`` leave it (a fresh file
    beside ``db_path``): what a test turning a database back into an old one compares with."""
    conn = sqlite3.connect(db_path.with_name("old.db"), isolation_level=None)
    try:
        migrate(conn, upto=[name for name, _ in MIGRATIONS].index(migration))
        return str(
            conn.execute("SELECT sql FROM sqlite_master WHERE name = 'beliefs'").fetchone()[0]
        )
    finally:
        conn.close()


def _list_own_origins(conn: sqlite3.Connection) -> int:
    """Rewrite every belief row as the writer wrote it before 0020 (its own sightings and
    implants listed among its origins, not counted), then drop the count; how many rows
    changed. The migration keeps the other origins' order and only removes the own ones, so
    where they sit in the list does not change what it gives."""
    changed = conn.execute(
        "SELECT world, resident, root, origins, own_origins FROM beliefs WHERE own_origins > 0"
    ).fetchall()
    for world, resident, root, text, n in changed:
        first, *rest = load_json(text)
        own = [
            r[0]
            for r in conn.execute(
                "SELECT evidence_id FROM evidence WHERE world = ? AND resident = ? AND root = ? "
                "AND origin = evidence_id AND evidence_id <> ? ORDER BY day DESC LIMIT ?",
                (world, resident, root, first, n),
            )
        ]
        assert len(own) == n
        conn.execute(
            "UPDATE beliefs SET origins = ? WHERE world = ? AND resident = ? AND root = ?",
            (dump_json_list((first, *own, *rest)), world, resident, root),
        )
    conn.execute("ALTER TABLE beliefs DROP COLUMN own_origins")
    conn.execute("DELETE FROM _migrations WHERE name = '0020_i17_own_origins'")
    return len(changed)


def test_own_origins_migration_counts_an_old_databases_listed_sightings(db_path: Path) -> None:
    """0020 on a database with 0019's schema whose belief rows list every sighting among
    their origins (and rumours' origins between them): each own one after the first moves
    to the count, the rest keep their order; the rows are then byte for byte what the
    writer writes, and a rebuild checks exact."""
    from wsclient import rebuild_check

    w = Writer(db_path, synchronous="OFF")
    put(w, *(observe(1 + i, ["mira", "bo"], "well", "clean", eid=f"s{i}") for i in range(30)))
    put(w, say(40, "bo", ["kai"], "well", "clean"), say(41, "kai", ["mira"], "well", "clean"))
    put(w, say(42, "ann", ["mira"], "well", "clean"), observe(43, ["mira"], "well", "clean"))
    w.close()
    written = dump(db_path)
    old_beliefs = _beliefs_schema_before(db_path, "0020_i17_own_origins")
    conn = sqlite3.connect(db_path, isolation_level=None)
    ((mira,),) = conn.execute(
        "SELECT origins FROM beliefs WHERE resident = 'mira' AND root = 'well'"
    ).fetchall()
    # her first sighting, bo's (kai heard it from bo) and ann's rumour; 30 more counted
    assert len(load_json(mira)) == 3
    assert _list_own_origins(conn) >= 2
    assert conn.execute("SELECT sql FROM sqlite_master WHERE name = 'beliefs'").fetchone()[0] == (
        old_beliefs
    )
    ((longest,),) = conn.execute("SELECT max(json_array_length(origins)) FROM beliefs").fetchall()
    assert longest == 33  # as the old writer listed hers
    conn.close()
    assert dump(db_path) != written
    w = Writer(db_path)
    assert w.migrations_applied == ["0020_i17_own_origins"]
    w.close()
    assert dump(db_path) == written
    rebuild_check(db_path)


def test_evidence_seq_migration_gives_each_piece_its_events_place_in_the_log(
    db_path: Path,
) -> None:
    """0023 on a database from before it (evidence without its event's log position): every
    piece gets its event's ``seq``, the rows are then byte for byte what the writer writes,
    and a rebuild checks exact. ``explain`` with a limit gives the latest pieces logged, in
    log order, the same on the old file (sorting them) as on the new one (its index), here
    for a belief seen 40 times on one game day, with event ids that do not sort as logged.
    Graph pages walk the old file's evidence by day, the migrated one's in log order (0025)."""
    from wsclient import rebuild_check

    w = Writer(db_path, synchronous="OFF")
    put(w, *(observe(3, ["mira", "bo"], "well", "clean", eid=f"s{40 - i}") for i in range(40)))
    put(w, say(3, "bo", ["mira"], "well", "foul", eid="z0"), observe(3, ["mira"], "well", "clean"))
    w.close()
    written = dump(db_path)
    logged = [r[0] for r in sqlite3.connect(db_path).execute(
        "SELECT event_id FROM events WHERE world = 'w' ORDER BY seq"
    )]  # fmt: skip
    latest = reader(db_path).evidence("w", "mira", "well", latest=5)
    assert [e["event_id"] for e in latest] == logged[-5:]
    assert [e["event_seq"] for e in latest] == list(range(len(logged) - 4, len(logged) + 1))
    conn = sqlite3.connect(db_path, isolation_level=None)
    evidence_table_before_pieces(conn)
    conn.execute("DROP INDEX evidence_acts")  # (0024's, on the column)
    conn.execute("DROP INDEX evidence_by_seq")
    conn.execute("ALTER TABLE evidence DROP COLUMN event_seq")
    conn.execute("DELETE FROM _migrations WHERE name >= '0023'")
    conn.execute("CREATE INDEX evidence_by_belief ON evidence (world, resident, root, day)")
    conn.close()
    assert reader(db_path).evidence("w", "mira", "well", latest=5) == latest  # (sorted)
    # A graph page of the old file walks the belief's evidence by day, then evidence id
    # (its only order); once migrated, in log order, on the one index 0025 keeps.
    by_day = sorted(e["evidence_id"] for e in reader(db_path).evidence("w", "mira", "well"))
    assert [e["evidence_id"] for e in evidence_after(reader(db_path), "w", "mira", "well",
                                                     limit=100)] == by_day  # fmt: skip
    w = Writer(db_path)
    assert w.migrations_applied == [
        "0023_i17_evidence_seq",
        "0024_i17_evidence_acts",
        "0025_i20_one_evidence_order",
        PIECES,
    ]
    w.close()
    assert dump(db_path) == written
    assert reader(db_path).evidence("w", "mira", "well", latest=5) == latest
    paged = evidence_after(reader(db_path), "w", "mira", "well", limit=100)
    assert [e["event_seq"] for e in paged] == sorted(e["event_seq"] for e in paged)
    assert [e["event_id"] for e in paged] == logged
    indexes = sqlite3.connect(db_path).execute(
        "SELECT name FROM sqlite_master WHERE type = 'index'"
    )
    assert "evidence_by_belief" not in {name for (name,) in indexes}
    rebuild_check(db_path)


def _before_act_index(db_path: Path) -> None:
    """Turn the file back into one from before 0024 (no index of act episodes)."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    evidence_table_before_pieces(conn)
    conn.execute("DROP INDEX evidence_acts")
    conn.execute("DELETE FROM _migrations WHERE name = '0024_i17_evidence_acts'")
    conn.close()


def test_evidence_acts_migration_indexes_an_old_files_episodes(db_path: Path) -> None:
    """0024 on a file written before it: its narrative reads every episode of an act (the
    old way) and says the same as after the migration, which only adds the index of the
    episodes (the rows are untouched) that the narrative then counts them on."""
    from sidecar.read.narrative import project
    from sidecar.read.recall import act_histories

    w = Writer(db_path, synchronous="OFF")
    put(w, *(
        {"event_id": f"a{i}", "day": 1 + i, "kind": "act", "actor": "mira", "action": "fetch",
         "status": ("completed", "rejected")[i % 3 == 0], "witnesses": ["bo"]}
        for i in range(30)
    ))  # fmt: skip
    w.close()
    written = dump(db_path)
    _before_act_index(db_path)
    old = reader(db_path)
    assert not old.has_act_index()
    before = project(old, "w", "bo").to_dict()
    history = act_histories(old, "w", "bo")["action:mira:fetch"]
    assert history.counts == {"rejected": 10, "completed": 20} and history.last.day == 30
    w = Writer(db_path)
    assert w.migrations_applied == ["0024_i17_evidence_acts", PIECES]
    w.close()
    assert dump(db_path) == written
    new = reader(db_path)
    assert new.has_act_index()
    assert act_histories(new, "w", "bo")["action:mira:fetch"] == history
    assert project(new, "w", "bo").to_dict() == before


def _pieces_story() -> list[dict[str, Any]]:
    """Every kind of evidence and every way a piece's subject can stand to its event's."""
    return [
        observe(1, ["mira", "bo"], "well", "clean", subject="the well is clean"),
        say(2, "bo", ["mira"], "well", "foul", subject="bo says the well is foul"),  # (+ believes:)
        announce(3, "kai", "*", "festival", "friday", subject="the festival is on friday"),
        act(4, "mira", "fetch_water", "completed", ["bo"]),  # a subject the engine makes up
        act(5, "bo", "fetch_water", "rejected", ["mira"], subject="bo could not fetch water"),
        observe(
            6, ["mira"], "mood:bo", "sad", subject={"en": "bo is sad", "zh-Hant": "阿波很難過"}
        ),
        observe(7, ["bo"], "sign", "odd", subject="{curly} is not a map"),
        intervene(8, "mira", "implant", "mine", "gold", "gold in the mine"),
        intervene(9, "mira", "suppress", "festival"),  # no subject at all
        say(10, "mira", ["bo"], "well", "clean", subject="mira says the well is clean", eid="x'1"),
    ]


def test_evidence_pieces_give_each_piece_what_the_engine_derived_from_its_event(
    db_path: Path,
) -> None:
    """0026: evidence rows are references into the log. Read through the view ``evidence``,
    every piece still has the event id, day and subject the engine derived for it; the table
    stores a subject only where its event's logged one is not the piece's (an act's made-up
    one, a language map, a text that merely starts like one, an intervention without one)."""
    from sidecar.engine import MemoryWorld

    story = _pieces_story()
    w = Writer(db_path)
    assert set(put(w, *story)) == {ResultStatus.APPLIED}
    w.close()
    memory = MemoryWorld()
    derived = {}
    for raw in story:
        out = memory.apply(parse_event(raw))
        assert out is not None
        for e, _ in out.evidence:
            derived[e.evidence_id] = (e.resident, e.claim.root, e.event_id, e.day, e.subject)
    conn = sqlite3.connect(db_path)
    try:
        viewed = {
            r[0]: tuple(r[1:])
            for r in conn.execute(
                "SELECT evidence_id, resident, root, event_id, day, subject FROM evidence"
            )
        }
        kept = dict(conn.execute("SELECT evidence_id, subject FROM evidence_pieces"))
    finally:
        conn.close()
    assert viewed == derived and len(viewed) > 15
    stored = {derived[k][4] for k, subject in kept.items() if subject is not None}
    assert stored == {
        "mira did fetch water",  # (the act's, made up)
        '{"en":"bo is sad","zh-Hant":"阿波很難過"}',
        "{curly} is not a map",
        "",  # (the suppression's)
    }
    # (every other piece reads its subject from its event's log row)
    assert all(v is None for k, v in kept.items() if derived[k][4] not in stored)


def test_evidence_pieces_migration_keeps_every_piece_and_refuses_a_stray_one(
    db_path: Path,
) -> None:
    """0026 on a file from before it: every piece reads through the view as the old table
    held it (byte for byte, ``dump``), the table is what the writer writes, the file is
    smaller once vacuumed, and a rebuild checks exact. A piece that does not match its
    event (a damaged file) stops the migration with one line, the file left as it was."""
    from wsclient import rebuild_check

    w = Writer(db_path, synchronous="OFF")
    put(w, *_pieces_story())
    put(w, *(say(11 + i, "bo", ["mira", "kai"], "well", "foul") for i in range(200)))
    w.close()
    written = dump(db_path)
    conn = sqlite3.connect(db_path)
    pieces = sorted(conn.execute("SELECT * FROM evidence_pieces").fetchall(), key=repr)
    conn.close()
    before_pieces(db_path)
    old = sqlite3.connect(db_path, isolation_level=None)
    old.execute("VACUUM")
    size = db_path.stat().st_size
    assert old.execute("SELECT type FROM sqlite_master WHERE name = 'evidence'").fetchone() == (
        "table",
    )
    old.execute("UPDATE evidence SET day = day + 1 WHERE evidence_id = (SELECT min(evidence_id) "
                "FROM evidence)")  # fmt: skip
    old.close()
    damaged = dump(db_path)
    with pytest.raises(CannotOpen, match="1 pieces of evidence do not match the logged event"):
        Writer(db_path)
    assert dump(db_path) == damaged  # (rolled back whole)
    old = sqlite3.connect(db_path, isolation_level=None)
    old.execute("UPDATE evidence SET day = day - 1 WHERE evidence_id = (SELECT min(evidence_id) "
                "FROM evidence)")  # fmt: skip
    old.close()
    w = Writer(db_path)
    assert w.migrations_applied == [PIECES]
    w.close()
    assert dump(db_path) == written
    conn = sqlite3.connect(db_path, isolation_level=None)
    assert sorted(conn.execute("SELECT * FROM evidence_pieces").fetchall(), key=repr) == pieces
    conn.execute("VACUUM")
    conn.close()
    assert db_path.stat().st_size < size
    rebuild_check(db_path)


def test_a_reader_answers_the_same_while_its_file_is_migrated_to_evidence_pieces(
    db_path: Path,
) -> None:
    """A reader opened on a file from before 0026 (a data directory's world file read before
    its writer opens it) keeps answering, and the same, once a writer has migrated the file
    under it: explain's latest pieces, a graph page and the narrative."""
    from protocol import parse_client_frame
    from sidecar.server.queries import answer

    w = Writer(db_path, synchronous="OFF")
    put(w, *_pieces_story())
    put(w, *(say(11 + i, "bo", ["mira", "kai"], "well", "foul") for i in range(30)))
    w.close()
    before_pieces(db_path)
    old = reader(db_path)
    frames = [
        {"type": "explain", "resident": "mira", "root": "well", "limit": 5},
        {"type": "graph", "resident": "mira", "root": "well", "limit": 10},
        {"type": "narrative", "resident": "mira"},
    ]

    def replies() -> list[Any]:
        return [answer(old, "w", parse_client_frame({**f, "rid": 1})) for f in frames]

    first = replies()
    assert old.evidence("w", "mira", "well", latest=5)  # (the file still has the table)
    Writer(db_path).close()  # migrates it: 0026
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT type FROM sqlite_master WHERE name = 'evidence'").fetchone() == (
        "view",
    )
    conn.close()
    assert replies() == first
    old.close()


def test_a_reader_sees_a_migration_made_under_it(db_path: Path) -> None:
    """What a reader knows of its file's schema (which later indexes it has) follows a
    migration a writer makes while the reader is open: its act counts move to the index
    0024 adds, with the same answer."""
    from sidecar.read.recall import act_histories

    w = Writer(db_path, synchronous="OFF")
    put(w, *(act(1 + i, "mira", "fetch", ("completed", "rejected")[i % 3 == 0], ["bo"])
             for i in range(9)))  # fmt: skip
    w.close()
    _before_act_index(db_path)
    old = reader(db_path)
    assert not old.has_act_index()
    before = act_histories(old, "w", "bo")
    Writer(db_path).close()  # adds the index again (0024, then 0026)
    assert old.has_act_index()
    assert act_histories(old, "w", "bo") == before
    old.close()


def test_bounded_refs_migration_counts_and_trims_an_old_database(db_path: Path) -> None:
    """0018 on a database with 0017's schema whose belief rows list every evidence id: the
    count is filled, long lists are trimmed to the first and latest 5, short ones kept; the
    rows are then byte for byte what the writer writes, and a rebuild checks exact."""
    from wsclient import rebuild_check

    from sidecar.engine import Rules

    w = Writer(db_path, synchronous="OFF", rules=Rules(late_event_days=3.0))
    put(w, *_late_story(40, 3.0, seed=5))
    put(w, say(50, "bo", ["kai"], "rumour", "yes"))
    w.close()
    written = dump(db_path)
    old_beliefs = _beliefs_schema_before(db_path, "0019_i17refs_bounded_refs")
    conn = sqlite3.connect(db_path, isolation_level=None)
    _list_own_origins(conn)
    keys = conn.execute("SELECT resident, root FROM beliefs").fetchall()
    for resident, root in keys:  # as the old writer wrote it: every id, in log order
        conn.execute(
            "UPDATE beliefs SET evidence_refs = ? WHERE resident = ? AND root = ?",
            (dump_json_list(tuple(_full_refs(conn, resident, root))), resident, root),
        )
    conn.execute("ALTER TABLE beliefs DROP COLUMN evidence_count")
    conn.execute("DELETE FROM _migrations WHERE name = '0019_i17refs_bounded_refs'")
    assert (
        conn.execute("SELECT sql FROM sqlite_master WHERE name = 'beliefs'").fetchone()[0]
        == old_beliefs  # the schema 0017 leaves
    )
    lengths = conn.execute("SELECT max(json_array_length(evidence_refs)) FROM beliefs").fetchone()
    assert lengths[0] > 10  # a long list to trim
    conn.close()
    assert dump(db_path) != written
    w = Writer(db_path)
    assert w.migrations_applied == ["0019_i17refs_bounded_refs", "0020_i17_own_origins"]
    w.close()
    assert dump(db_path) == written
    rebuild_check(db_path)


def test_a_migration_script_splits_where_sqlite_says_a_statement_ends() -> None:
    """A semicolon inside a literal (a root range's upper bound) or a trigger's body does not
    end a statement; comment lines are left out; the last may lack its semicolon."""
    from sidecar.store.schema import _statements

    script = """
-- an index on one range of roots
CREATE INDEX a ON t (x) WHERE x >= 'action:' AND x < 'action;';
CREATE TRIGGER b AFTER INSERT ON t
    BEGIN UPDATE u SET n = n + 1; END;
DROP INDEX c
"""
    assert _statements(script) == [
        "CREATE INDEX a ON t (x) WHERE x >= 'action:' AND x < 'action;'",
        "CREATE TRIGGER b AFTER INSERT ON t\n    BEGIN UPDATE u SET n = n + 1; END",
        "DROP INDEX c",
    ]
