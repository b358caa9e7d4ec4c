"""The SQLite schema as an ordered list of named forward migrations.

Each migration runs once, inside a transaction, and is recorded in ``_migrations``; the
schema version is the number of migrations applied. CHECK constraints mirror the engine's
rules so that even a bug in the engine cannot store an impossible belief.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable

from ..engine import EVIDENCE_REFS_KEPT, trust_root
from . import said
from .rows import dump_json_list, load_json

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "cheap_checks",
    "install_plan_statistics",
    "migrate",
    "missing_migrations",
    "schema_version",
    "unknown_migrations",
]

_STATES = "('influencing','past','doubtful','anomalous','corrected')"
_SOURCES = "('firsthand','hearsay','implanted')"
_KINDS = "('formed','reinforced','doubted','anomaly','corrected','decayed','faded','intervened')"
_EVENT_KINDS = "('observe','say','announce','act','intervene','tick')"
_KINDS_V3 = _KINDS[:-1] + ",'updated','trust')"
_EVENT_KINDS_V3 = _EVENT_KINDS[:-1] + ",'trust','propose')"

_INITIAL = f"""
CREATE TABLE worlds (
    world       TEXT PRIMARY KEY,
    day         REAL NOT NULL DEFAULT 0 CHECK (day >= 0),
    event_seq   INTEGER NOT NULL DEFAULT 0 CHECK (event_seq >= 0),
    change_seq  INTEGER NOT NULL DEFAULT 0 CHECK (change_seq >= 0),
    rules       TEXT NOT NULL CHECK (json_valid(rules))
);

-- The world log: the source of truth. body is the canonical event as JSON.
CREATE TABLE events (
    world     TEXT NOT NULL REFERENCES worlds(world),
    seq       INTEGER NOT NULL CHECK (seq > 0),
    event_id  TEXT NOT NULL,
    day       REAL NOT NULL CHECK (day >= 0),
    kind      TEXT NOT NULL CHECK (kind IN {_EVENT_KINDS}),
    body      TEXT NOT NULL CHECK (json_valid(body)),
    PRIMARY KEY (world, seq),
    UNIQUE (world, event_id)
);

CREATE TABLE residents (
    world     TEXT NOT NULL REFERENCES worlds(world),
    resident  TEXT NOT NULL,
    PRIMARY KEY (world, resident)
) WITHOUT ROWID;

CREATE TABLE evidence (
    world            TEXT NOT NULL REFERENCES worlds(world),
    evidence_id      TEXT NOT NULL,
    resident         TEXT NOT NULL,
    root             TEXT NOT NULL,
    value            TEXT NOT NULL CHECK (json_valid(value)),
    event_id         TEXT NOT NULL,
    day              REAL NOT NULL,
    source_kind      TEXT NOT NULL CHECK (source_kind IN {_SOURCES}),
    source_resident  TEXT,
    relation         TEXT NOT NULL CHECK (relation IN ('forms','supports','contradicts','intervenes')),
    op               TEXT CHECK (op IN ('implant','distort','suppress','soften')),
    subject          TEXT NOT NULL,
    PRIMARY KEY (world, evidence_id),
    CHECK ((source_kind = 'hearsay') = (source_resident IS NOT NULL)),
    CHECK ((source_kind = 'implanted') = (op IS NOT NULL))
);
CREATE INDEX evidence_by_belief ON evidence (world, resident, root);

CREATE TABLE beliefs (
    world              TEXT NOT NULL REFERENCES worlds(world),
    resident           TEXT NOT NULL,
    root               TEXT NOT NULL,
    value              TEXT NOT NULL CHECK (json_valid(value)),
    subject            TEXT NOT NULL,
    interpretation     TEXT,
    people             TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(people)),
    places             TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(places)),
    topics             TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(topics)),
    confidence         INTEGER NOT NULL CHECK (confidence BETWEEN 0 AND 100),
    state              TEXT NOT NULL CHECK (state IN {_STATES}),
    source_kind        TEXT NOT NULL CHECK (source_kind IN {_SOURCES}),
    source_resident    TEXT,
    intervention       TEXT CHECK (intervention IN ('implanted','distorted')),
    evidence_refs      TEXT NOT NULL CHECK (json_valid(evidence_refs)),
    heard_from         TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(heard_from)),
    formed_day         REAL NOT NULL,
    updated_day        REAL NOT NULL,
    last_evidence_day  REAL NOT NULL,
    next_decay_day     REAL,
    PRIMARY KEY (world, resident, root),
    CHECK ((source_kind = 'hearsay') = (source_resident IS NOT NULL)),
    CHECK (next_decay_day IS NULL OR (source_kind = 'hearsay' AND state = 'influencing'))
) WITHOUT ROWID;
-- Aging reads only what is due: a range scan on this partial index, never a full scan.
CREATE INDEX beliefs_due ON beliefs (world, next_decay_day, resident, root)
    WHERE next_decay_day IS NOT NULL;
CREATE INDEX beliefs_by_root ON beliefs (world, root);

CREATE TABLE changes (
    world              TEXT NOT NULL REFERENCES worlds(world),
    seq                INTEGER NOT NULL CHECK (seq > 0),
    resident           TEXT NOT NULL,
    root               TEXT NOT NULL,
    kind               TEXT NOT NULL CHECK (kind IN {_KINDS}),
    confidence_before  INTEGER CHECK (confidence_before BETWEEN 0 AND 100),
    confidence_after   INTEGER NOT NULL CHECK (confidence_after BETWEEN 0 AND 100),
    state_before       TEXT CHECK (state_before IN {_STATES}),
    state_after        TEXT NOT NULL CHECK (state_after IN {_STATES}),
    value_before       TEXT CHECK (value_before IS NULL OR json_valid(value_before)),
    value_after        TEXT NOT NULL CHECK (json_valid(value_after)),
    source_kind        TEXT NOT NULL CHECK (source_kind IN {_SOURCES}),
    source_resident    TEXT,
    event_id           TEXT NOT NULL,
    evidence_id        TEXT,
    day                REAL NOT NULL,
    detail             TEXT,
    PRIMARY KEY (world, seq),
    CHECK ((source_kind = 'hearsay') = (source_resident IS NOT NULL)),
    CHECK ((kind = 'formed') = (state_before IS NULL))
);
CREATE INDEX changes_by_belief ON changes (world, resident, root, seq);
"""

# Version 2 keeps the text of a belief before and after each change, so a player's
# `distort` (which rewrites the subject) has a full audit trail.
_AUDIT_SUBJECTS = """
ALTER TABLE changes ADD COLUMN subject_before TEXT;
ALTER TABLE changes ADD COLUMN subject_after TEXT;
CREATE INDEX changes_by_resident ON changes (world, resident, seq);
"""

# Version 3: social epistemics. Trust per (resident, source, topic); rumour chains on
# evidence; independent origins on beliefs; new change kinds (updated, trust) and event
# kinds (trust, propose) — SQLite cannot alter a CHECK, so those two tables are rebuilt.
_SOCIAL = f"""
CREATE TABLE trust (
    world     TEXT NOT NULL REFERENCES worlds(world),
    resident  TEXT NOT NULL,
    source    TEXT NOT NULL,
    topic     TEXT NOT NULL DEFAULT '',
    value     REAL NOT NULL CHECK (value BETWEEN 0 AND 1),
    CHECK (resident <> source),
    PRIMARY KEY (world, resident, source, topic)
) WITHOUT ROWID;
CREATE TABLE facts (
    world     TEXT NOT NULL REFERENCES worlds(world),
    root      TEXT NOT NULL,
    value     TEXT NOT NULL CHECK (json_valid(value)),
    PRIMARY KEY (world, root)
) WITHOUT ROWID;
ALTER TABLE evidence ADD COLUMN origin TEXT;
ALTER TABLE evidence ADD COLUMN hops TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(hops));
ALTER TABLE evidence ADD COLUMN trust REAL CHECK (trust IS NULL OR trust BETWEEN 0 AND 1);
ALTER TABLE beliefs ADD COLUMN origins TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(origins));
ALTER TABLE beliefs ADD COLUMN hops TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(hops));
ALTER TABLE beliefs ADD COLUMN decay_period REAL CHECK (decay_period IS NULL OR decay_period > 0);
ALTER TABLE beliefs ADD COLUMN value_since REAL NOT NULL DEFAULT 0;
CREATE TABLE events_v3 (
    world     TEXT NOT NULL REFERENCES worlds(world),
    seq       INTEGER NOT NULL CHECK (seq > 0),
    event_id  TEXT NOT NULL,
    day       REAL NOT NULL CHECK (day >= 0),
    kind      TEXT NOT NULL CHECK (kind IN {_EVENT_KINDS_V3}),
    body      TEXT NOT NULL CHECK (json_valid(body)),
    PRIMARY KEY (world, seq),
    UNIQUE (world, event_id)
);
INSERT INTO events_v3 SELECT world, seq, event_id, day, kind, body FROM events;
DROP TABLE events;
ALTER TABLE events_v3 RENAME TO events;
CREATE TABLE changes_v3 (
    world              TEXT NOT NULL REFERENCES worlds(world),
    seq                INTEGER NOT NULL CHECK (seq > 0),
    resident           TEXT NOT NULL,
    root               TEXT NOT NULL,
    kind               TEXT NOT NULL CHECK (kind IN {_KINDS_V3}),
    confidence_before  INTEGER CHECK (confidence_before BETWEEN 0 AND 100),
    confidence_after   INTEGER NOT NULL CHECK (confidence_after BETWEEN 0 AND 100),
    state_before       TEXT CHECK (state_before IN {_STATES}),
    state_after        TEXT NOT NULL CHECK (state_after IN {_STATES}),
    value_before       TEXT CHECK (value_before IS NULL OR json_valid(value_before)),
    value_after        TEXT NOT NULL CHECK (json_valid(value_after)),
    source_kind        TEXT NOT NULL CHECK (source_kind IN {_SOURCES}),
    source_resident    TEXT,
    event_id           TEXT NOT NULL,
    evidence_id        TEXT,
    day                REAL NOT NULL,
    detail             TEXT,
    subject_before     TEXT,
    subject_after      TEXT,
    PRIMARY KEY (world, seq),
    CHECK ((source_kind = 'hearsay') = (source_resident IS NOT NULL)),
    CHECK ((kind = 'formed') = (state_before IS NULL))
);
INSERT INTO changes_v3 SELECT world, seq, resident, root, kind, confidence_before,
    confidence_after, state_before, state_after, value_before, value_after, source_kind,
    source_resident, event_id, evidence_id, day, detail, subject_before, subject_after
    FROM changes;
DROP TABLE changes;
ALTER TABLE changes_v3 RENAME TO changes;
CREATE INDEX changes_by_belief ON changes (world, resident, root, seq);
CREATE INDEX changes_by_resident ON changes (world, resident, seq);
"""

# Version 4 (issue 13): the same constraints, cheaper per row. SQLite evaluates
# ``col IN ('a', 'b', …)`` in a CHECK by building a small ephemeral index for every row it
# checks (~2.5 µs per constraint per row); ``col = 'a' OR col = 'b' …`` accepts and refuses
# exactly the same values (NULL included) at a fraction of the cost. ``json_valid`` CHECKs
# go: every JSON column is written by the store's own orjson encoder (rows.py), so the text
# is valid by construction, checked once in Python rather than again per row in SQLite.
# SQLite cannot alter a CHECK, so each such table is rebuilt from its own current definition
# (read back from sqlite_master, so columns other migrations added come along) with its
# data and indexes. Idempotent: a table with nothing to rewrite is left alone.
_IN_LIST = re.compile(r"\b(\w+) IN \(('[^'()]*'(?:\s*,\s*'[^'()]*')*)\)")
_JSON_CHECK = re.compile(r"\s*CHECK \((?:(\w+) IS NULL OR )?json_valid\((\w+)\)\)")
_REBUILT = ("events", "evidence", "beliefs", "changes", "facts")


def cheap_checks(sql: str) -> str:
    """``sql`` with every ``col IN ('a', …)`` as an OR chain and no ``json_valid`` CHECK."""

    def or_chain(m: re.Match[str]) -> str:
        col, values = m[1], re.findall(r"'[^']*'", m[2])
        return "(" + " OR ".join(f"{col} = {v}" for v in values) + ")"

    return _JSON_CHECK.sub("", _IN_LIST.sub(or_chain, sql))


def _cheap_checks(conn: sqlite3.Connection) -> None:
    for table in _REBUILT:
        row = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        if row is None:
            continue
        old_sql = str(row[0])
        new_sql = cheap_checks(old_sql)
        if new_sql == old_sql:
            continue
        _rebuild_table(conn, table, new_sql)


def _rebuild_table(conn: sqlite3.Connection, table: str, new_sql: str) -> None:
    """Recreate ``table`` as ``new_sql`` (same columns) with its data and indexes."""
    indexes = [
        str(r[0])
        for r in conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
            "AND sql IS NOT NULL ORDER BY name",
            (table,),
        )
    ]
    columns = ", ".join(r[1] for r in conn.execute(f"PRAGMA table_info({table})"))
    temp = f"{table}_i13"
    head = re.match(r"CREATE TABLE\s+(\"?\w+\"?)", new_sql)
    assert head is not None, new_sql
    conn.execute(f"CREATE TABLE {temp}" + new_sql[head.end() :])
    conn.execute(f"INSERT INTO {temp} ({columns}) SELECT {columns} FROM {table}")
    conn.execute(f"DROP TABLE {table}")
    # A view on the table (0026's ``evidence`` reads ``events``) names it by the name it gets
    # back: the rename must neither rewrite nor check views meanwhile left without it.
    conn.execute("PRAGMA legacy_alter_table = ON")
    try:
        conn.execute(f"ALTER TABLE {temp} RENAME TO {table}")
    finally:
        conn.execute("PRAGMA legacy_alter_table = OFF")
    for index_sql in indexes:
        conn.execute(index_sql)


def _allow(conn: sqlite3.Connection, table: str, column: str, value: str) -> None:
    """Widen the CHECK on ``table.column`` (an ``IN (…)`` list or an ``= … OR`` chain, as
    the table has it) to allow ``value`` too; nothing else of the table changes."""
    row = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    old_sql = str(row[0])
    in_list = re.compile(rf"\b{column} IN \(('[^'()]*'(?:\s*,\s*'[^'()]*')*)\)")
    chain = re.compile(rf"\(({column} = '[^']*'(?: OR {column} = '[^']*')*)\)")
    found = in_list.search(old_sql) or chain.search(old_sql)
    assert found is not None, f"no CHECK on {table}.{column} to widen"
    if f"'{value}'" in found[1]:
        return
    if found.re is in_list:
        widened = f"{column} IN ({found[1]},'{value}')"
    else:
        widened = f"({found[1]} OR {column} = '{value}')"
    _rebuild_table(conn, table, old_sql[: found.start()] + widened + old_sql[found.end() :])


# Issue 10: what the NPC's LLM reads. Importance is stored on beliefs (the narrative ranks
# by it) and the day a resident remembers a belief from (misremembering can move it); the
# resident registry (display names per language, from logged ``register`` events) lives
# beside the residents, action labels in ``labels``. ``register`` joins the event kinds
# and ``misremembered`` the change kinds (their CHECKs are widened: the table is rebuilt).
def _i10_memory(conn: sqlite3.Connection) -> None:
    for statement in (
        "ALTER TABLE beliefs ADD COLUMN importance REAL "
        "CHECK (importance IS NULL OR importance >= 0)",
        "ALTER TABLE beliefs ADD COLUMN remembered_day REAL",
        "ALTER TABLE residents ADD COLUMN names TEXT",
        "CREATE TABLE labels (world TEXT NOT NULL REFERENCES worlds(world), "
        "kind TEXT NOT NULL CHECK (kind = 'action'), key TEXT NOT NULL, names TEXT NOT NULL, "
        "PRIMARY KEY (world, kind, key)) WITHOUT ROWID",
    ):
        conn.execute(statement)
    _allow(conn, "events", "kind", "register")
    _allow(conn, "changes", "kind", "misremembered")


def _schema_events(conn: sqlite3.Connection) -> None:
    """0005 (i12): the ``schema`` event kind, and each world's current root schema.

    The events table's kind CHECK gains ``'schema'`` (in the IN-list or OR-chain form it has
    now; SQLite cannot alter a CHECK, so the table is rebuilt from its own definition, with its
    data and indexes). Idempotent.
    """
    row = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'"
    ).fetchone()
    old_sql = str(row[0])
    if "'schema'" not in old_sql:
        last = "register" if "'register'" in old_sql else "propose"  # after 0005_i10_memory
        if f"kind = '{last}'" in old_sql:
            new_sql = old_sql.replace(f"kind = '{last}'", f"kind = '{last}' OR kind = 'schema'", 1)
        else:
            new_sql = re.sub(rf"'{last}'(\s*)\)", rf"'{last}', 'schema'\1)", old_sql, count=1)
        assert new_sql != old_sql, old_sql
        indexes = [
            str(r[0])
            for r in conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' "
                "AND sql IS NOT NULL ORDER BY name"
            )
        ]
        columns = ", ".join(r[1] for r in conn.execute("PRAGMA table_info(events)"))
        head = re.match(r"CREATE TABLE\s+(\"?\w+\"?)", new_sql)
        assert head is not None, new_sql
        conn.execute("CREATE TABLE events_i12" + new_sql[head.end() :])
        conn.execute(f"INSERT INTO events_i12 ({columns}) SELECT {columns} FROM events")
        conn.execute("DROP TABLE events")
        conn.execute("ALTER TABLE events_i12 RENAME TO events")
        for index_sql in indexes:
            conn.execute(index_sql)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS world_schema ("
        " world TEXT PRIMARY KEY REFERENCES worlds(world),"
        " version INTEGER NOT NULL CHECK (version > 0),"
        " body TEXT NOT NULL)"
    )


#: 0006 (issue 13): the two tables that take several rows per event keep each row once.
#: ``changes`` (4.6 rows per event) and ``evidence`` (3.6) were rowid tables whose primary
#: key is a separate index; WITHOUT ROWID stores the row in the primary key's own B-tree,
#: one B-tree insert fewer per row. ``changes_by_resident`` served no query that the
#: ``changes_by_belief`` index (same leading columns) does not: one more insert per change.
_LEAN_TABLES = ("changes", "evidence")


def _lean_tables(conn: sqlite3.Connection) -> None:
    for table in _LEAN_TABLES:
        row = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        if row is None or "WITHOUT ROWID" in str(row[0]).upper():
            continue
        _rebuild_table(conn, table, str(row[0]).rstrip() + " WITHOUT ROWID")
    conn.execute("DROP INDEX IF EXISTS changes_by_resident")


#: 0008 (issue 17): every query of the read side searches by resident (or root), never the
#: whole world. SQLite without statistics takes any index's first column as selective, so
#: for ``WHERE world = ? AND resident = ?`` it would as soon walk the primary key's
#: ``(world, …)`` prefix — every row of the world — as the ``(world, resident, …)`` index.
#: The migration installs fixed planner statistics (``sqlite_stat1``) that describe the
#: shape of Credence's data instead of a sample of it: a world is a tenth of the rows, a
#: resident or root a hundredth of that, every further column a tenth; partial indexes hold
#: a hundredth of their table. Two partial indexes hold the few rows the narrative picks
#: out of a resident's history: contradicting evidence and corrections. The test pins the
#: plans (``EXPLAIN QUERY PLAN``).
_QUERY_INDEXES = """
CREATE INDEX IF NOT EXISTS evidence_contradicting ON evidence (world, resident, root)
    WHERE relation = 'contradicts';
CREATE INDEX IF NOT EXISTS changes_corrected ON changes (world, resident, root, seq)
    WHERE kind = 'corrected';
"""
_PLANNED_TABLES: tuple[str, ...] = (
    "events", "residents", "evidence", "evidence_pieces", "beliefs", "changes", "trust", "facts",
    "said",  # 0010 (i18): own words, by speaker
    "promises", "promise_views", "goals",  # 0011 (i18)
)  # fmt: skip
_TABLE_ROWS = 1_000_000
_SELECTIVITY = {"world": 10, "resident": 100, "root": 100, "speaker": 100}


def _index_stat(conn: sqlite3.Connection, index: str, unique: bool, partial: bool) -> str:
    """One ``sqlite_stat1.stat``: the rows, then the rows per key of each column prefix."""
    columns = [r[2] for r in conn.execute(f"PRAGMA index_xinfo('{index}')") if r[5]]
    rows = _TABLE_ROWS // (100 if partial else 1)
    figures = [rows]
    for n, column in enumerate(columns):
        rows = max(1, rows // _SELECTIVITY.get(column, 10))
        figures.append(1 if unique and n == len(columns) - 1 else rows)
    return " ".join(str(f) for f in figures)


def install_plan_statistics(conn: sqlite3.Connection) -> None:
    """Replace ``sqlite_stat1`` with the fixed statistics described above and load them.

    Run by migration 0008 and again after any later migration (a rebuilt table loses its
    rows in ``sqlite_stat1``).
    """
    conn.execute("ANALYZE sqlite_schema")  # creates sqlite_stat1 if it is missing
    conn.execute("DELETE FROM sqlite_stat1")
    for table in _PLANNED_TABLES:
        if not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone():
            continue
        rowid = (
            "WITHOUT ROWID"
            not in str(
                conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
            ).upper()
        )
        for _, name, unique, origin, partial in conn.execute(f"PRAGMA index_list('{table}')"):
            stat_name = table if origin == "pk" and not rowid else name
            stat = _index_stat(conn, name, bool(unique), bool(partial))
            conn.execute(
                "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)",
                (table, stat_name, stat),
            )
    conn.execute("ANALYZE sqlite_schema")  # load them into this connection's planner


def _query_indexes(conn: sqlite3.Connection) -> None:
    for statement in _statements(_QUERY_INDEXES):
        conn.execute(statement)
    install_plan_statistics(conn)


def _intervention_lifecycle(conn: sqlite3.Connection) -> None:
    """0007 (i18): an intervention has a lifecycle: ``discovered`` once an anomaly exposed it,
    ``suppressed`` while the player keeps a memory hidden (beliefs.intervention widened)."""
    for value in ("discovered", "suppressed"):
        _allow(conn, "beliefs", "intervention", value)


#: Saves under way (issue 17): a world named here is being built by a fork or an import (its
#: rows are not yet whole) and is invisible until its row goes, in the save's last commit. A
#: row left by a killed process marks rows to remove when the file is next opened.
_SAVES = """
CREATE TABLE _saves (
    world TEXT PRIMARY KEY,
    pid   INTEGER NOT NULL  -- the process building it: a live one's save is not a leftover
) WITHOUT ROWID;
"""

#: 0011 (issue 18): promises and goals, in compact tables keyed by what they are about
#: (sidecar/store/promises.py). CHECKs mirror the lifecycle of sidecar/engine/promises.py:
#: only a pending view has a deadline to check, a told view names its teller, a view is
#: overdue only by its deadline. The event kinds ``promise`` and ``goal`` and the change
#: kinds ``promise`` and ``goal`` join their tables' CHECKs (those tables are rebuilt).
_PROMISES = """
CREATE TABLE promises (
    world         TEXT NOT NULL REFERENCES worlds(world),
    promise       TEXT NOT NULL,
    promiser      TEXT NOT NULL,
    to_residents  TEXT NOT NULL,
    action        TEXT NOT NULL,
    subject       TEXT NOT NULL,
    made_day      REAL NOT NULL CHECK (made_day >= 0),
    by_day        REAL CHECK (by_day IS NULL OR by_day >= made_day),
    event_id      TEXT NOT NULL,
    PRIMARY KEY (world, promise)
) WITHOUT ROWID;
CREATE TABLE promise_views (
    world     TEXT NOT NULL REFERENCES worlds(world),
    resident  TEXT NOT NULL,
    promise   TEXT NOT NULL,
    promiser  TEXT NOT NULL,
    action    TEXT NOT NULL,
    state     TEXT NOT NULL CHECK (state = 'pending' OR state = 'kept' OR state = 'overdue'
                                   OR state = 'broken'),
    how       TEXT NOT NULL CHECK (how = 'made' OR how = 'seen' OR how = 'told'
                                   OR how = 'deadline'),
    source    TEXT,
    since     REAL NOT NULL CHECK (since >= 0),
    due       REAL,
    CHECK ((how = 'told') = (source IS NOT NULL)),
    CHECK (due IS NULL OR state = 'pending'),
    CHECK ((state = 'pending') = (how = 'made')),
    CHECK (state <> 'overdue' OR how = 'deadline'),
    CHECK (source IS NULL OR source <> resident),
    PRIMARY KEY (world, resident, promise)
) WITHOUT ROWID;
CREATE INDEX promise_views_due ON promise_views (world, due, resident, promise)
    WHERE due IS NOT NULL;
CREATE INDEX promise_views_open ON promise_views (world, promiser, action)
    WHERE state <> 'kept' AND resident = promiser;
CREATE INDEX promise_views_by_state ON promise_views (world, resident, state, promise);
CREATE INDEX promise_views_recent ON promise_views (world, resident, state, since);
CREATE TABLE goals (
    world     TEXT NOT NULL REFERENCES worlds(world),
    resident  TEXT NOT NULL,
    goal      TEXT NOT NULL,
    subject   TEXT NOT NULL,
    state     TEXT NOT NULL CHECK (state = 'active' OR state = 'achieved' OR state = 'abandoned'),
    set_day   REAL NOT NULL CHECK (set_day >= 0),
    day       REAL NOT NULL CHECK (day >= set_day),
    prev_subject TEXT,
    PRIMARY KEY (world, resident, goal)
) WITHOUT ROWID;
CREATE INDEX goals_recent ON goals (world, resident, state, day);
"""


def _promises_goals(conn: sqlite3.Connection) -> None:
    for statement in _statements(_PROMISES):
        conn.execute(statement)
    for kind in ("promise", "goal"):
        _allow(conn, "events", "kind", kind)
        _allow(conn, "changes", "kind", kind)


#: 0012 (i18): the sidecar stores no text of its own, which would be in one language only.
#: A correction no longer notes "Later firsthand evidence corrected my earlier understanding:
#: ..." in the interpretation (the change record keeps what was believed; the narrative words
#: it in the language asked), and a ``believes:A:k`` subject is what A said, not "A said: ...".
_NOTE = "Later firsthand evidence corrected my earlier understanding: "
_SPEAKER = "substr(root, 10, instr(substr(root, 10), ':') - 1)"
_NEUTRAL_TEXT = f"""
UPDATE beliefs SET interpretation = CASE
    WHEN interpretation LIKE '{_NOTE}%' THEN NULL
    ELSE substr(interpretation, 1, instr(interpretation, ' ({_NOTE}') - 1) END
WHERE interpretation LIKE '%{_NOTE}%';
UPDATE beliefs SET subject = substr(subject, length({_SPEAKER}) + 8)
WHERE root LIKE 'believes:%' AND subject LIKE {_SPEAKER} || ' said: %';
UPDATE evidence SET subject = substr(subject, length({_SPEAKER}) + 8)
WHERE root LIKE 'believes:%' AND subject LIKE {_SPEAKER} || ' said: %';
UPDATE changes SET subject_before = substr(subject_before, length({_SPEAKER}) + 8)
WHERE root LIKE 'believes:%' AND subject_before LIKE {_SPEAKER} || ' said: %';
UPDATE changes SET subject_after = substr(subject_after, length({_SPEAKER}) + 8)
WHERE root LIKE 'believes:%' AND subject_after LIKE {_SPEAKER} || ' said: %';
"""

#: 0013 (i17): the narrative reads a big resident in bounded steps (sidecar/read/recall.py,
#: ``recall_bounded``). ``beliefs_shown`` holds the beliefs a narrative section can show (not
#: acts, not "what I think Bo believes", not suppressed memories) with every column a section
#: and a rank depend on: sections are counted, and contested and corrected beliefs ranked,
#: on it without reading a row (its WHERE is ``recall._SHOWN``, word for word, so the
#: planner can use it). The memories the player is still tampering with are on a partial
#: index of the few that carry an active intervention.
_NARRATIVE_INDEXES = """
CREATE INDEX IF NOT EXISTS beliefs_shown ON beliefs
    (world, resident, state, source_kind, confidence, root, updated_day, importance,
    intervention)
    WHERE NOT (root >= 'action:' AND root < 'action;')
    AND NOT (root >= 'believes:' AND root < 'believes;')
    AND (intervention IS NULL OR intervention <> 'suppressed');
CREATE INDEX IF NOT EXISTS beliefs_intervened ON beliefs
    (world, resident, state, source_kind, confidence, root, updated_day, importance,
    intervention)
    WHERE intervention IN ('implanted', 'distorted');
"""


#: 0015 (issue 17): a belief's evidence in day order, for the paged ``graph`` query. The index
#: on a belief's evidence gains ``day``: a page of one belief's evidence is then a range of it
#: from the cursor (``day``, then the primary key ``evidence_id`` that every entry of an index
#: on this WITHOUT ROWID table ends with), its first page and its last cost the same, and no
#: query sorts or reads the belief's other evidence. The index keeps its name and its leading
#: columns, so every query that searched ``(world, resident, root)`` still does, and the
#: table keeps one index on a belief's evidence (one B-tree insert per row, as before).
_GRAPH_PAGES = """
DROP INDEX IF EXISTS evidence_by_belief;
CREATE INDEX evidence_by_belief ON evidence (world, resident, root, day);
"""

#: 0016 (i17): the ``worlds`` listing reads each world's counts from its own row instead of
#: counting its residents and beliefs (``count(*)`` walked every belief of the world: its p99
#: grew 4.1 -> 18.2 ms over a long game). Triggers keep the counters, so every writer of these
#: tables (the writer, a save's copy, a purge, a rebuild) keeps them exact in the same
#: transaction. They count inserted rows: an upsert that updates fires no insert trigger, and
#: nothing here writes beliefs or residents with ``INSERT OR REPLACE`` (its delete of an
#: existing row fires no trigger, so its insert would count that row again); ``credence
#: rebuild --check`` compares the counters with the rows.
_COUNTERS = [
    "ALTER TABLE worlds ADD COLUMN resident_count INTEGER NOT NULL DEFAULT 0 "
    "CHECK (resident_count >= 0)",
    "ALTER TABLE worlds ADD COLUMN belief_count INTEGER NOT NULL DEFAULT 0 "
    "CHECK (belief_count >= 0)",
    "UPDATE worlds SET "
    "resident_count = (SELECT count(*) FROM residents r WHERE r.world = worlds.world), "
    "belief_count = (SELECT count(*) FROM beliefs b WHERE b.world = worlds.world)",
    """CREATE TRIGGER residents_counted AFTER INSERT ON residents
    BEGIN UPDATE worlds SET resident_count = resident_count + 1 WHERE world = NEW.world; END""",
    """CREATE TRIGGER residents_uncounted AFTER DELETE ON residents
    BEGIN UPDATE worlds SET resident_count = resident_count - 1 WHERE world = OLD.world; END""",
    """CREATE TRIGGER beliefs_counted AFTER INSERT ON beliefs
    BEGIN UPDATE worlds SET belief_count = belief_count + 1 WHERE world = NEW.world; END""",
    """CREATE TRIGGER beliefs_uncounted AFTER DELETE ON beliefs
    BEGIN UPDATE worlds SET belief_count = belief_count - 1 WHERE world = OLD.world; END""",
]


def _world_counters(conn: sqlite3.Connection) -> None:
    for statement in _COUNTERS:  # (whole statements: a trigger's body holds a semicolon)
        conn.execute(statement)


#: 0017 (i17): what moved a resident's trust in a source last, with its reason, is read by key
#: (the narrative's trust line). A trust root's history is mostly ``set``s and promise moves,
#: thousands over a long game; the moves from evidence are few. This partial index holds only
#: those, so the latest is found without walking the rest (``sidecar/read/recall.py``). The
#: condition is an OR chain, not ``IN (...)``: it is evaluated for every change row written
#: (``0004_i13_cheap_checks``), and the reading query repeats it word for word.
TRUST_MOVES = (
    "(detail = 'confirmed' OR detail = 'contradicted' OR detail = 'corrected') "
    "AND evidence_id IS NOT NULL"
)
_TRUST_MOVES_INDEX = (
    f"CREATE INDEX IF NOT EXISTS changes_trust_moves ON changes (world, resident, root, seq) "
    f"WHERE {TRUST_MOVES};"
)

#: 0018 (i17trust): how many ``trust`` change records each trust root has, kept by a trigger
#: as the change rows are written (so a replay, a fork and a rebuild count them the same
#: way), read by key. A ``trust`` query page sends each entry's ``history_total``; a count
#: over ``changes_by_belief`` walks every record of the root (thousands over a long game, in
#: promise moves and the game's own sets), so a page's cost grew with its sources' pasts.
#: ``credence rebuild --check`` compares the counts with the change rows.
_TRUST_HISTORY = """
CREATE TABLE trust_history (
    world     TEXT NOT NULL REFERENCES worlds(world),
    resident  TEXT NOT NULL,
    root      TEXT NOT NULL,
    total     INTEGER NOT NULL CHECK (total > 0),
    PRIMARY KEY (world, resident, root)
) WITHOUT ROWID;
INSERT INTO trust_history (world, resident, root, total)
    SELECT world, resident, root, count(*) FROM changes WHERE kind = 'trust'
    GROUP BY world, resident, root;
"""
_TRUST_HISTORY_COUNTED = """CREATE TRIGGER trust_history_counted AFTER INSERT ON changes
    WHEN NEW.kind = 'trust'
    BEGIN
        INSERT INTO trust_history (world, resident, root, total)
            VALUES (NEW.world, NEW.resident, NEW.root, 1)
            ON CONFLICT (world, resident, root) DO UPDATE SET total = total + 1;
    END"""


def _trust_history(conn: sqlite3.Connection) -> None:
    for statement in _statements(_TRUST_HISTORY):
        conn.execute(statement)
    conn.execute(_TRUST_HISTORY_COUNTED)  # (a whole statement: the body holds semicolons)


#: 0019 (issues 17 and 20): a belief keeps its first and its latest
#: ``EVIDENCE_REFS_KEPT`` evidence ids and counts every piece (``evidence_count``). The row
#: held the id of every piece that ever touched the belief, so each supporting event rewrote
#: a list as long as the belief's life (a 120 KB row at 10,000 pieces, written to the WAL at
#: every commit). The count is filled from the lists, then the long lists are trimmed to what
#: the engine keeps (written as the writer writes a list, so a rebuild reproduces the row).
def _bounded_refs(conn: sqlite3.Connection) -> None:
    kept = EVIDENCE_REFS_KEPT
    conn.execute(
        "ALTER TABLE beliefs ADD COLUMN evidence_count INTEGER NOT NULL DEFAULT 0 "
        "CHECK (evidence_count >= 0)"
    )
    conn.execute("UPDATE beliefs SET evidence_count = json_array_length(evidence_refs)")
    long = conn.execute(
        "SELECT world, resident, root, evidence_refs FROM beliefs WHERE evidence_count > ?",
        (2 * kept,),
    ).fetchall()
    for world, resident, root, text in long:
        refs = load_json(text)
        conn.execute(
            "UPDATE beliefs SET evidence_refs = ? WHERE world = ? AND resident = ? AND root = ?",
            (dump_json_list((*refs[:kept], *refs[-kept:])), world, resident, root),
        )


#: 0020 (issue 17): a belief lists its first origin and those of the rumours that counted,
#: and counts its own sightings and implants after the first (``own_origins``): no rumour
#: can carry one of those (a rumour's origin is some belief's first), so listing them only
#: grew the row and the fold by one id per sighting (a belief seen 20,000 times: 20,000 ids
#: copied, searched and written at every event). Each listed origin after the first that is
#: the id of the resident's own evidence (its evidence row's origin is itself; another's
#: sighting, passed on by a rumour, stays listed) moves to the count, as the engine now
#: folds it, so a rebuild reproduces the row.
def _own_origins(conn: sqlite3.Connection) -> None:
    conn.execute(
        "ALTER TABLE beliefs ADD COLUMN own_origins INTEGER NOT NULL DEFAULT 0 "
        "CHECK (own_origins >= 0)"
    )
    listed = conn.execute(
        "SELECT world, resident, root, origins FROM beliefs WHERE json_array_length(origins) > 1"
    ).fetchall()
    for world, resident, root, text in listed:
        first, *rest = load_json(text)
        own = {
            row[0]
            for row in conn.execute(
                "SELECT evidence_id FROM evidence WHERE world = ? AND evidence_id IN "
                "(SELECT value FROM json_each(?)) AND origin = evidence_id AND resident = ?",
                (world, dump_json_list(tuple(rest)), resident),
            )
        }
        if own:
            kept = (first, *(o for o in rest if o not in own))
            conn.execute(
                "UPDATE beliefs SET origins = ?, own_origins = ? "
                "WHERE world = ? AND resident = ? AND root = ?",
                (dump_json_list(kept), len(own), world, resident, root),
            )


#: 0021 (trust roots): a ``trust`` change's root names one trust entry
#: (:func:`sidecar.engine.trust_root`: the source with ``%`` and ``:`` escaped, so the first
#: ``:`` ends it). Before, the root was ``trust:<source>[:<topic>]`` as they were, so source
#: ``a`` on topic ``b`` and source ``a:b`` in general both had ``trust:a:b``: one history, one
#: count. Every stored trust root whose id part holds a ``:`` or a ``%`` is rewritten to the
#: root of the entry it was written for; a root of no such id is byte for byte what it was.
#:
#: The entry of a record is one of those whose old root it is (every split of the id part at
#: a ``:``, or none) that the resident's ``trust`` table holds (a trust change always stores
#: its entry). One such entry: exact. Several (a real collision): each record is attributed
#: by what caused it, exactly where that says — a ``set`` by its ``trust`` event (the log names
#: source and topic), a promise move (``promise_kept``, ``promise_broken``) moves only
#: general trust — and a move from evidence (``confirmed``, ``contradicted``, ``corrected``) by
#: the judged belief as it is now: its topic (a move is on that topic or general), then its
#: sources (``heard_from``). What still cannot be told apart from the rows (a move from
#: evidence when both ``a`` on ``b`` and ``a:b`` were sources of a belief on topic ``b``) goes
#: to the general trust in the whole id (``a:b``): such a file's ``rebuild --check`` reports
#: the difference, and ``credence rebuild --db FILE --out NEW`` replays the world log (the
#: source of truth) into a file with every record under its own root. ``trust_history`` is
#: recounted for every root a record left or joined.
_NOT_PROMISE_MOVES = ("set", "confirmed", "contradicted", "corrected")


def _trust_roots(conn: sqlite3.Connection) -> None:
    rows = conn.execute(
        "SELECT world, seq, resident, root, event_id, evidence_id, detail FROM changes "
        "WHERE kind = 'trust' AND (instr(root, '%') > 0 OR instr(substr(root, 7), ':') > 0)"
    ).fetchall()
    held: dict[tuple[str, str, str], list[tuple[str, str | None]]] = {}
    moved: dict[tuple[str, str], set[str]] = {}  # (world, resident): the roots left or joined
    for world, seq, resident, old, event_id, evidence_id, detail in rows:
        key = (world, resident, old)
        if key not in held:
            held[key] = _held_entries(conn, world, resident, old[len("trust:") :])
        entries = held[key]
        if not entries:  # (no entry holds it: a file edited by hand) the whole id, in general
            entries = [(old[len("trust:") :], None)]
        if len(entries) > 1:
            entries = _narrowed(conn, world, entries, event_id, evidence_id, detail)
        new = trust_root(*entries[0])
        if new != old:
            conn.execute(
                "UPDATE changes SET root = ? WHERE world = ? AND seq = ?", (new, world, seq)
            )
            moved.setdefault((world, resident), set()).update((old, new))
    for (world, resident), changed in sorted(moved.items()):
        marks = ", ".join("?" * len(changed))
        conn.execute(
            f"DELETE FROM trust_history WHERE world = ? AND resident = ? AND root IN ({marks})",
            (world, resident, *changed),
        )
        conn.execute(
            "INSERT INTO trust_history (world, resident, root, total) "
            "SELECT world, resident, root, count(*) FROM changes WHERE world = ? "
            f"AND resident = ? AND kind = 'trust' AND root IN ({marks}) "
            "GROUP BY world, resident, root",
            (world, resident, *changed),
        )


def _held_entries(
    conn: sqlite3.Connection, world: str, resident: str, body: str
) -> list[tuple[str, str | None]]:
    """The entries of ``resident``'s trust table whose pre-0021 root was ``trust:<body>``,
    general trust in the whole id first, then by the length of the source."""
    splits: list[tuple[str, str | None]] = [(body, None)]
    splits += [
        (body[:i], body[i + 1 :])
        for i, ch in enumerate(body)
        if ch == ":" and 0 < i < len(body) - 1
    ]
    return [
        (source, topic)
        for source, topic in splits
        if conn.execute(
            "SELECT 1 FROM trust WHERE world = ? AND resident = ? AND source = ? AND topic = ?",
            (world, resident, source, topic or ""),
        ).fetchone()
    ]


def _narrowed(
    conn: sqlite3.Connection,
    world: str,
    entries: list[tuple[str, str | None]],
    event_id: str,
    evidence_id: str | None,
    detail: str | None,
) -> list[tuple[str, str | None]]:
    """Of several entries sharing a pre-0021 root, those the record's cause allows (at least
    one: the first of ``entries``, general trust in the whole id, when nothing tells)."""

    def keep(allowed: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
        return allowed if allowed else entries

    if detail == "set":
        row = conn.execute(
            "SELECT body FROM events WHERE world = ? AND event_id = ? AND kind = 'trust'",
            (world, event_id),
        ).fetchone()
        if row is not None:
            body = load_json(row[0])
            return keep(
                [e for e in entries if e == (body.get("source"), body.get("topic") or None)]
            )
        return entries
    if detail not in _NOT_PROMISE_MOVES:  # a promise moves general trust only
        return keep([e for e in entries if e[1] is None])
    if evidence_id is None:
        return entries
    belief = conn.execute(
        "SELECT b.topics, b.heard_from FROM evidence e JOIN beliefs b ON b.world = e.world "
        "AND b.resident = e.resident AND b.root = e.root "
        "WHERE e.world = ? AND e.evidence_id = ?",
        (world, evidence_id),
    ).fetchone()
    if belief is None:
        return entries
    topics, heard_from = load_json(belief[0]), load_json(belief[1])
    topic = topics[0] if topics else None
    on_topic = [e for e in entries if e[1] is None or e[1] == topic]
    entries = keep(on_topic)
    return keep([e for e in entries if e[0] in heard_from])


#: 0022 (issue 17): the beliefs told by several people, and those the player suppressed: a
#: partial index, so the narrative of a big resident with few doubts (its social read,
#: ``sidecar/read/recall.py``) finds them without walking every row it holds. Every other
#: belief that read needs is on ``beliefs_shown``, ``beliefs_intervened`` or a primary-key
#: range. Few beliefs are either (``heard_from`` lists who told the value held), so the index
#: is small and costs a write only on theirs.
_BELIEFS_SOURCED = """
CREATE INDEX beliefs_sourced ON beliefs (world, resident, root)
    WHERE (heard_from <> '[]' AND json_array_length(heard_from) > 1)
    OR intervention = 'suppressed';
"""


#: 0023 (issue 17): each piece of evidence keeps the log position of its event, and a
#: belief's evidence is indexed in log order: ``explain`` with a ``limit`` (the latest pieces)
#: is then one backward range of that index, whatever the belief's size. Before, it sorted
#: every piece dated within ``late_event_days`` of the latest ones: all of them for a belief
#: seen thousands of times in a game whose clock barely moves (a page of 100 of 10,000
#: pieces seen on one day: ~33 ms, and linear in them). The column is filled from the log for
#: existing rows; every writer path sets it (a NULL, never written, passes the CHECK only so
#: the column could be added to a table with rows).
def _evidence_seq(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE evidence ADD COLUMN event_seq INTEGER CHECK (event_seq > 0)")
    conn.execute(
        "UPDATE evidence SET event_seq = (SELECT e.seq FROM events e "
        "WHERE e.world = evidence.world AND e.event_id = evidence.event_id)"
    )
    conn.execute("CREATE INDEX evidence_by_seq ON evidence (world, resident, root, event_seq)")


#: 0024 (issue 17): the pieces of evidence an ``act`` gave a resident, by act, status and log
#: position, in a covering partial index: a narrative counts what each act it did or saw
#: done came to (how often each way, the first and latest episodes) on it without reading a
#: row, however many times the act was done in a long game, and reads the bodies of only
#: the few episodes a line names (``sidecar/read/recall.py``). An ``action:`` root's firsthand
#: evidence comes from ``act`` events only (an observation of one is refused, an implant is
#: ``implanted``, what was said is hearsay), so the index holds exactly the episodes; it ends
#: in ``source_kind`` only so SQLite can check its own condition without the row.
_EVIDENCE_ACTS = """
CREATE INDEX evidence_acts ON evidence (world, resident, root, value, event_seq, source_kind)
    WHERE source_kind = 'firsthand' AND root >= 'action:' AND root < 'action;';
"""


#: 0025 (issue 20): a belief's evidence is indexed once, in log order. ``evidence_by_belief``
#: (world, resident, root, day) served only graph pages, which walked a belief's evidence in
#: day order; they now walk it in log order on ``evidence_by_seq`` (a later page can no longer
#: miss a piece logged between two pages but dated before the cursor). Every piece of evidence
#: a resident is given dirtied one more page of that index: for an announcement heard by 50
#: residents, ~100 of the ~560 WAL frames its commit writes.
_ONE_EVIDENCE_ORDER = "DROP INDEX IF EXISTS evidence_by_belief;"


#: 0026 (issue 20): a piece of evidence is a reference into the log. Its event id and day are
#: its event's (by construction: the engine derives every piece from one event), and its
#: subject is almost always the event's own: each was stored again with every piece, more
#: than a quarter of the bytes of the evidence rows, which are about a fifth of a long game's
#: file. ``evidence_pieces`` keeps what the log cannot give: who
#: holds it (resident, root), the value it bears (the act index and the tellings of a value
#: search by it), the event's place in the log, its relation, source, trust, origin and
#: hops, and a subject only where the event's logged one is not the piece's (a default
#: subject an act derives, a language map, an intervention without one). The view
#: ``evidence`` gives the old columns back, each event column read by the log's primary key
#: only when a query names it (a correlated subquery, so a count or the covering act index
#: never touches the log), and every query of the read side reads it unchanged, as it reads
#: the table of a file no writer has opened since. Built with SQL rather than
#: ``table.transform()``: the new table drops columns, renames, and computes the kept
#: subjects from a join with the log.
_EVIDENCE_PIECES_TABLE = """
CREATE TABLE evidence_pieces (
    world            TEXT NOT NULL REFERENCES worlds(world),
    evidence_id      TEXT NOT NULL,
    resident         TEXT NOT NULL,
    root             TEXT NOT NULL,
    value            TEXT NOT NULL,
    event_seq        INTEGER NOT NULL CHECK (event_seq > 0),
    source_kind      TEXT NOT NULL CHECK ((source_kind = 'firsthand' OR source_kind = 'hearsay'
                     OR source_kind = 'implanted')),
    source_resident  TEXT,
    relation         TEXT NOT NULL CHECK ((relation = 'forms' OR relation = 'supports'
                     OR relation = 'contradicts' OR relation = 'intervenes')),
    op               TEXT CHECK ((op = 'implant' OR op = 'distort' OR op = 'suppress'
                     OR op = 'soften')),
    subject          TEXT,
    origin           TEXT,
    hops             TEXT NOT NULL DEFAULT '[]',
    trust            REAL CHECK (trust IS NULL OR trust BETWEEN 0 AND 1),
    PRIMARY KEY (world, evidence_id),
    CHECK ((source_kind = 'hearsay') = (source_resident IS NOT NULL)),
    CHECK ((source_kind = 'implanted') = (op IS NOT NULL))
) WITHOUT ROWID
"""
#: The columns both forms share, in the view's (and the old table's) order.
_EVIDENCE_VIEW = """
CREATE VIEW evidence AS SELECT
    ev.world AS world, ev.evidence_id AS evidence_id, ev.resident AS resident,
    ev.root AS root, ev.value AS value,
    (SELECT e.event_id FROM events e WHERE e.world = ev.world AND e.seq = ev.event_seq)
        AS event_id,
    (SELECT e.day FROM events e WHERE e.world = ev.world AND e.seq = ev.event_seq) AS day,
    ev.source_kind AS source_kind, ev.source_resident AS source_resident,
    ev.relation AS relation, ev.op AS op,
    coalesce(ev.subject, (SELECT json_extract(e.body, '$.subject') FROM events e
        WHERE e.world = ev.world AND e.seq = ev.event_seq)) AS subject,
    ev.origin AS origin, ev.hops AS hops, ev.trust AS trust, ev.event_seq AS event_seq
FROM evidence_pieces AS ev
"""
#: A piece's subject is left to the log where the logged event's subject is the same plain
#: text (a language map is kept: its stored and logged forms may be spelled differently).
_SUBJECT_KEPT = (
    "CASE WHEN NOT json_valid(e.body) THEN ev.subject "
    "WHEN ev.subject = json_extract(e.body, '$.subject') AND substr(ev.subject, 1, 1) <> '{' "
    "THEN NULL ELSE ev.subject END"
)
_EVIDENCE_PIECES_INDEXES = """
CREATE INDEX evidence_contradicting ON evidence_pieces (world, resident, root)
    WHERE relation = 'contradicts';
CREATE INDEX evidence_by_seq ON evidence_pieces (world, resident, root, event_seq);
CREATE INDEX evidence_acts ON evidence_pieces (world, resident, root, value, event_seq, source_kind)
    WHERE source_kind = 'firsthand' AND root >= 'action:' AND root < 'action;';
"""


def _evidence_pieces(conn: sqlite3.Connection) -> None:
    stray = conn.execute(
        "SELECT count(*) FROM evidence ev LEFT JOIN events e "
        "ON e.world = ev.world AND e.seq = ev.event_seq "
        "WHERE e.seq IS NULL OR e.event_id <> ev.event_id OR e.day <> ev.day"
    ).fetchone()[0]
    if stray:  # (the writer reports it as a file it cannot write)
        raise sqlite3.IntegrityError(
            f"{stray} pieces of evidence do not match the logged event they came from; "
            "rebuild the database from its log (credence rebuild)"
        )
    conn.execute(_EVIDENCE_PIECES_TABLE.strip())
    conn.execute(
        "INSERT INTO evidence_pieces (world, evidence_id, resident, root, value, event_seq, "
        "source_kind, source_resident, relation, op, subject, origin, hops, trust) "
        "SELECT ev.world, ev.evidence_id, ev.resident, ev.root, ev.value, ev.event_seq, "
        "ev.source_kind, ev.source_resident, ev.relation, ev.op, "
        f"{_SUBJECT_KEPT}, ev.origin, ev.hops, ev.trust "
        "FROM evidence ev JOIN events e ON e.world = ev.world AND e.seq = ev.event_seq"
    )
    conn.execute("DROP TABLE evidence")
    for statement in _statements(_EVIDENCE_PIECES_INDEXES):
        conn.execute(statement)
    conn.execute(_EVIDENCE_VIEW.strip())


Migration = str | Callable[[sqlite3.Connection], None]

MIGRATIONS: list[tuple[str, Migration]] = [
    ("0001_initial", _INITIAL),
    ("0002_audit_subjects", _AUDIT_SUBJECTS),
    ("0003_social_epistemics", _SOCIAL),
    ("0004_i13_cheap_checks", _cheap_checks),
    ("0005_i10_memory", _i10_memory),
    ("0005_i12_schema_events", _schema_events),
    ("0006_i13_lean_tables", _lean_tables),
    ("0007_i18_intervention_lifecycle", _intervention_lifecycle),
    ("0008_i17_query_plans", _query_indexes),
    ("0009_i17_saves", _SAVES),
    ("0010_i18_said", said.create),  # own words: sidecar/store/said.py
    ("0011_i18_promises_goals", _promises_goals),
    ("0012_i18_neutral_text", _NEUTRAL_TEXT),
    ("0013_i17_narrative_indexes", _NARRATIVE_INDEXES),
    ("0015_i17_graph_pages", _GRAPH_PAGES),
    ("0016_i17_world_counters", _world_counters),
    ("0017_i17_trust_moves", _TRUST_MOVES_INDEX),
    ("0018_i17trust_trust_history", _trust_history),
    ("0019_i17refs_bounded_refs", _bounded_refs),
    ("0020_i17_own_origins", _own_origins),
    ("0021_trust_roots", _trust_roots),
    ("0022_i17_beliefs_sourced", _BELIEFS_SOURCED),
    ("0023_i17_evidence_seq", _evidence_seq),
    ("0024_i17_evidence_acts", _EVIDENCE_ACTS),
    ("0025_i20_one_evidence_order", _ONE_EVIDENCE_ORDER),
    ("0026_i20_evidence_pieces", _evidence_pieces),
]
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
    ).fetchone()
    if not exists:
        return 0
    return int(conn.execute("SELECT count(*) FROM _migrations").fetchone()[0])


def unknown_migrations(conn: sqlite3.Connection) -> list[str]:
    """Migrations recorded in the database that this version does not know (sorted)."""
    if schema_version(conn) == 0:
        return []
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    return sorted(done - {name for name, _ in MIGRATIONS})


def missing_migrations(conn: sqlite3.Connection) -> list[str]:
    """The migrations of this version a database that has some lacks, in order (none for a
    new, empty file: its migrations are quick; none for a file holding migrations this
    version does not know: :func:`migrate` refuses it)."""
    if schema_version(conn) == 0:
        return []
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    known = [name for name, _ in MIGRATIONS]
    if not done <= set(known):
        return []
    return [name for name in known if name not in done]


def migrate(conn: sqlite3.Connection, *, upto: int = SCHEMA_VERSION) -> list[str]:
    """Apply every migration not yet applied, up to ``upto``; return the names applied."""
    unknown = unknown_migrations(conn)
    if unknown:
        raise RuntimeError(
            f"database has migrations this version does not know: {unknown}; "
            "it was written by a newer Credence"
        )
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY)")
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    applied = []
    for name, sql in MIGRATIONS[:upto]:
        if name in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if callable(sql):
                sql(conn)
            else:
                for statement in _statements(sql):
                    conn.execute(statement)
            conn.execute("INSERT INTO _migrations (name) VALUES (?)", (name,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        applied.append(name)
    if applied and any(name == "0008_i17_query_plans" for name, _ in MIGRATIONS[:upto]):
        conn.execute("BEGIN IMMEDIATE")
        install_plan_statistics(conn)
        conn.execute("COMMIT")
    return applied


def _statements(sql: str) -> list[str]:
    """Split a migration into statements, one per run of lines SQLite calls complete
    (``sqlite3.complete_statement``): a semicolon inside a literal, such as the upper bound
    of a root range (``'action;'``), does not end one. Comment lines are left out."""
    out: list[str] = []
    pending: list[str] = []
    for line in sql.splitlines():
        if line.lstrip().startswith("--"):
            continue
        pending.append(line)
        text = "\n".join(pending)
        if sqlite3.complete_statement(text):
            out.append(text.strip().removesuffix(";").strip())
            pending = []
    out.append("\n".join(pending).strip())  # (a last statement without its semicolon)
    return [statement for statement in out if statement]
