"""Every query a reply runs searches an index by resident or root: none reads a whole world."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import orjson
import pytest

from protocol import parse_client_frame
from sidecar.server.queries import answer
from sidecar.store import Reader, migrate
from sidecar.store.reader import add_trust_root_function
from tests.read_world import WORLD, build, crowd, story

_WHOLE_WORLD_OK = (
    "worlds", "residents", "labels", "world_schema", "json_each", "sqlite_master", "tampered",
)  # fmt: skip
_QUERIES = [
    {"type": "narrative", "resident": "alice"},
    {"type": "narrative", "resident": "alice", "budget": 300, "lang": "zh-Hant",
     "focus": {"people": ["bob"], "places": ["cafe"]}},
    {"type": "beliefs", "resident": "alice"},
    {"type": "beliefs", "resident": "alice", "after": "item1", "prefix": ["item"], "states":
     ["influencing"], "people": ["bob"], "places": ["cafe"], "min_confidence": 50},
    {"type": "explain", "resident": "alice", "root": "well:water"},
    {"type": "distribution", "root": "well:water"},
    {"type": "trust", "resident": "alice"},
    {"type": "graph", "resident": "alice"},
    {"type": "graph", "resident": "alice", "root": "well:water"},
    {"type": "graph", "root": "well:water", "limit": 2},
    {"type": "said", "resident": "alice", "from": 2, "limit": 5},
    {"type": "promises", "resident": "alice"},
    {"type": "promises", "resident": "alice", "state": "overdue", "after": "p1", "limit": 5},
    {"type": "goals", "resident": "alice"},
    {"type": "goals", "resident": "alice", "state": "active", "after": "g1"},
]  # fmt: skip


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A world with every kind of memory (doubts, corrections, acts, trust, bulk facts,
    promises and goals)."""
    path = tmp_path_factory.mktemp("plans") / "plans.db"
    acts = [
        {"event_id": f"a{i}", "day": 60 + i, "kind": "act", "actor": "alice",
         "action": "fetch_water", "status": "completed"}
        for i in range(3)
    ]  # fmt: skip
    promises = [
        {"event_id": "p1", "day": 70, "kind": "promise", "promise": "p1", "promiser": "bob",
         "to": ["alice"], "action": "fetch_water", "subject": "fetch water", "by": 71},
        {"event_id": "g1", "day": 70, "kind": "goal", "resident": "alice", "goal": "g1",
         "op": "set", "subject": "find the truth"},
        {"event_id": "t1", "day": 72, "kind": "tick"},
    ]  # fmt: skip
    return build(path, story() + crowd() + acts + promises)


#: A read of one piece's event by the log's primary key: the view ``evidence`` (migration
#: 0026) reads a piece's event id, day or subject so, and only where a query names them.
_EVENT_BY_KEY = "SEARCH e USING INDEX sqlite_autoindex_events_1 (world=? AND seq=?)"


def _pieces(steps: list[str]) -> list[str]:
    """A plan's steps without the view's reads of each piece's event by key (every other
    step, the evidence's own, stays pinned)."""
    out: list[str] = []
    for step in steps:
        if step == _EVENT_BY_KEY and out and out[-1].startswith("CORRELATED SCALAR SUBQUERY"):
            out.pop()
            continue
        out.append(step)
    return out


def _traced(db: Path, frame: dict[str, object]) -> list[str]:
    reader = Reader(db)
    seen: list[str] = []
    reader.conn.set_trace_callback(seen.append)
    try:
        answer(reader, WORLD, parse_client_frame({**frame, "rid": 1}))
    finally:
        reader.conn.set_trace_callback(None)
        reader.close()
    return [s for s in seen if s.lstrip().upper().startswith(("SELECT", "WITH"))]


def _connect(db: Path) -> sqlite3.Connection:
    """A connection to plan traced statements on, with a stand-in for the function a
    focused narrative registers for its own queries (``recall.MATCHED_SQL``), and the trust
    root function every reader has (a trust page's join on its counter)."""
    conn = sqlite3.connect(db)
    conn.create_function("credence_matched", 6, lambda *row: 0, deterministic=True)
    add_trust_root_function(conn)
    return conn


def _bad_steps(conn: sqlite3.Connection, sql: str) -> list[str]:
    """Plan steps that read a table without narrowing it past the world.

    Rows per world, not per event, may be read whole: the world row, its root schema, and
    the registry's ``residents`` and ``labels`` (one row per resident or action, for their
    names); ``json_each`` scans one row's list, ``sqlite_master`` the schema, ``tampered`` the
    few tampered-with beliefs of one resident a focused narrative ranks (``recall.py``).
    """
    bad = []
    for *_, step in conn.execute("EXPLAIN QUERY PLAN " + sql):
        found = re.match(r"(SCAN|SEARCH) (\w+)", step)
        if found is None or found[2] in _WHOLE_WORLD_OK:
            continue
        if found[1] == "SCAN" or re.search(r"\(world=\?\)", step):
            bad.append(step)
    return bad


@pytest.mark.parametrize("frame", _QUERIES, ids=lambda f: str(f["type"]))
def test_every_reply_query_searches_by_resident_or_root(db: Path, frame: dict[str, object]) -> None:
    """The SQL behind each query kind (traced as it runs) never scans a world's rows."""
    statements = _traced(db, frame)
    assert statements, "the query ran no SQL?"
    conn = _connect(db)
    try:
        for sql in statements:
            assert _bad_steps(conn, sql) == [], sql
    finally:
        conn.close()


def test_the_checker_sees_a_world_scan(db: Path) -> None:
    """The plan check above does catch a query that reads every event of the world."""
    conn = sqlite3.connect(db)
    try:
        world_scan = f"SELECT body FROM events WHERE world = '{WORLD}' AND kind = 'act'"
        assert _bad_steps(conn, world_scan)
        assert _bad_steps(conn, "SELECT * FROM evidence WHERE relation = 'contradicts'")
    finally:
        conn.close()


def test_plan_statistics_survive_a_reopen_and_later_migrations(db: Path, tmp_path: Path) -> None:
    """Migration 0008's fixed statistics are in the file (every connection plans with them)
    and are installed again when a database is migrated from an older schema."""
    conn = sqlite3.connect(db)
    stats = dict(((t, i), s) for t, i, s in conn.execute("SELECT * FROM sqlite_stat1"))
    conn.close()
    assert stats[("evidence_pieces", "evidence_contradicting")].split()[0] == "10000"
    assert stats[("beliefs", "beliefs")] == "1000000 100000 1000 1"
    old = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    migrate(old, upto=8)  # through 0007_i18, before the plan statistics
    assert (
        old.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone()[0]
        == 0
    )
    assert migrate(old)[:1] == ["0008_i17_query_plans"]  # (0009_i17_saves follows)
    plan = " ".join(r[-1] for r in old.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM evidence WHERE world = 'w' AND resident = 'r' AND root = 'x'"
    ))  # fmt: skip
    assert "evidence_by_seq" in plan, plan  # (a belief's: the one index 0025 keeps)
    old.close()


def test_own_words_are_read_on_the_said_primary_key_in_order(db: Path) -> None:
    """The said query (forwards from a seq) and the narrative's latest-first read both search
    the ``said`` primary key by (world, speaker), each utterance's event by its own key, and
    need no sort: a resident who said 10,000 things is read a page at a time."""
    from sidecar.store.said import _SELECT

    conn = sqlite3.connect(db)
    try:
        for sql in (
            _SELECT + "AND s.seq >= ? ORDER BY s.seq LIMIT ?",
            _SELECT + "ORDER BY s.seq DESC LIMIT ?",
        ):
            steps = [
                r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, ["w"] * sql.count("?"))
            ]
            assert steps[0].startswith("SEARCH s USING PRIMARY KEY (world=? AND speaker=?"), steps
            assert "(world=? AND seq=?)" in steps[1] and steps[1].startswith("SEARCH e"), steps
            assert not any("TEMP B-TREE" in step for step in steps), steps
    finally:
        conn.close()


def test_what_moved_trust_last_is_read_on_its_partial_index(db: Path) -> None:
    """The narrative's trust line finds the latest move with a reason on the partial index
    ``changes_trust_moves`` (migration 0017), backwards from a seq and without a sort: the
    thousands of ``set`` and promise moves of a long game are never walked."""
    from sidecar.read.recall import _MOVES

    conn = sqlite3.connect(db)
    try:
        steps = [r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + _MOVES, ["w"] * 6)]
    finally:
        conn.close()
    assert steps == [
        "SEARCH changes USING INDEX changes_trust_moves (world=? AND resident=? AND root=?)"
    ], steps


def test_a_graph_page_is_one_index_range_from_its_cursor(db: Path) -> None:
    """A graph page reads a belief's evidence as a range of ``evidence_by_seq`` from the
    cursor (log position, evidence id), in index order (no sort), each piece's event by its
    key; the cursor by the evidence primary key; a root's holders on ``beliefs_by_root`` after
    the cursor's resident. So a deep page costs what the first costs (tools/querybench.py)."""
    from sidecar.read.queries import _evidence_page

    page = _evidence_page(Reader(db))

    first = answer(Reader(db), WORLD, parse_client_frame(
        {"type": "graph", "root": "well:water", "limit": 1, "rid": 1}
    ))  # fmt: skip
    cursor = first[0]["next"]
    assert cursor
    statements = _traced(db, {"type": "graph", "root": "well:water", "limit": 1, "after": cursor})
    assert any("(ev.event_seq, ev.evidence_id) > (" in sql for sql in statements), statements
    conn = sqlite3.connect(db)
    try:
        for sql in statements:
            assert _bad_steps(conn, sql) == [], sql

        def plan(sql: str) -> list[str]:
            return _pieces([
                r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, ["w"] * sql.count("?"))
            ])  # fmt: skip

        deep = plan(page + "AND (ev.event_seq, ev.evidence_id) > (?, ?) "
                    "ORDER BY ev.event_seq, ev.evidence_id LIMIT ?")  # fmt: skip
        assert deep[0] == (
            "SEARCH ev USING INDEX evidence_by_seq "
            "(world=? AND resident=? AND root=? AND (event_seq,evidence_id)>(?,?))"
        ), deep
        assert deep[1].startswith("SEARCH e USING INDEX sqlite_autoindex_events"), deep
        start = plan(page + "ORDER BY ev.event_seq, ev.evidence_id LIMIT ?")
        assert start[0].startswith("SEARCH ev USING INDEX evidence_by_seq"), start
        for steps in (deep, start):
            assert not any("TEMP B-TREE" in step for step in steps), steps
        assert plan(
            "SELECT resident, root, event_seq FROM evidence WHERE world = ? AND evidence_id = ?"
        ) == ["SEARCH ev USING PRIMARY KEY (world=? AND evidence_id=?)"]
        holders = plan("SELECT * FROM beliefs WHERE world = ? AND root = ? AND resident > ? "
                       "ORDER BY resident LIMIT ?")  # fmt: skip
        assert holders == [
            "SEARCH beliefs USING INDEX beliefs_by_root (world=? AND root=? AND resident>?)"
        ]
    finally:
        conn.close()


def test_the_worlds_listing_reads_each_world_row_and_nothing_it_counts(db: Path) -> None:
    """``worlds`` (its reply, traced as it runs) reads only the rows of ``worlds`` and
    ``_saves``: each world's counts come from its row by primary key (migration 0016's
    counters), not from a ``count(*)`` over its beliefs or residents, which grew with the
    game (p99 4.1 -> 18.2 ms over a year of a 50-resident town)."""
    from sidecar.server.auth import Role
    from sidecar.server.lifecycle import world_reply
    from sidecar.store import SingleFile

    store = SingleFile(db)
    seen: list[str] = []
    store.reader.conn.set_trace_callback(seen.append)
    try:
        (reply,) = world_reply(
            store, WORLD, parse_client_frame({"type": "worlds", "rid": 1}),
            role=Role.WRITER, role_for=lambda w: Role.WRITER,
        )  # fmt: skip
    finally:
        store.reader.conn.set_trace_callback(None)
        store.close()
    assert [w["world"] for w in reply["worlds"]] == [WORLD] and reply["worlds"][0]["beliefs"] > 0
    statements = [s for s in seen if s.lstrip().upper().startswith("SELECT")]
    conn = sqlite3.connect(db)
    try:
        steps = [
            (sql, r[-1]) for sql in statements for r in conn.execute("EXPLAIN QUERY PLAN " + sql)
        ]
    finally:
        conn.close()
    assert steps
    for sql, step in steps:
        if step.startswith("CORRELATED SCALAR SUBQUERY"):
            continue  # (a world a save is building: its _saves row, by primary key, below)
        table = re.match(r"(?:SCAN|SEARCH) (\w+)", step)
        assert table is not None and table[1] in ("worlds", "_saves"), (sql, step)
        assert not step.startswith("SCAN"), (sql, step)  # (a page reads its range)
    lookups = [step for sql, step in steps if "day, event_seq" in sql]
    assert lookups and all(re.match(r"SEARCH worlds USING .*\(world=\?\)", s) for s in lookups), (
        lookups
    )


@pytest.mark.parametrize("focus", [None, {"people": ["bob"], "topics": ["cafe"]}], ids=str)
def test_a_big_residents_narrative_reads_sections_on_their_indexes(
    db: Path, focus: dict[str, list[str]] | None
) -> None:
    """Migration 0013: the bounded narrative read counts every section on the covering index
    ``beliefs_shown`` (no row read), ranks contested and corrected beliefs per state on
    it, and finds tampered-with memories on the partial index ``beliefs_intervened``. With a
    focus, the same ranges of the same indexes, each row's lists read for the terms it
    matches (``recall.MATCHED_SQL``), and no other statement."""
    frame: dict[str, object] = {"type": "narrative", "resident": "alice", "budget": 200}
    statements = _traced(db, frame if focus is None else {**frame, "focus": focus})
    assert any("credence_matched(" in s for s in statements) == (focus is not None)
    conn = _connect(db)
    try:

        def plan(marker: str) -> list[str]:
            found = [s for s in statements if marker in s]
            assert found, f"no statement with {marker!r}"
            return [" ".join(r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + s)) for s in found]

        assert all("COVERING INDEX beliefs_shown" in p for p in plan("GROUP BY state, source_kind"))
        # the sure ones on a range of it, the people on their primary-key range
        sure = "(world=? AND resident=? AND state=? AND source_kind=? AND confidence>?)"
        assert all(
            f"COVERING INDEX beliefs_shown {sure}" in p
            for p in plan("'influencing' AND source_kind = 'firsthand' AND confidence >= 85")
        )
        people = "PRIMARY KEY (world=? AND resident=? AND root>? AND root<?)"
        assert all(people in p for p in plan("GROUP BY source_kind"))
        for state in ("doubtful", "anomalous", "corrected"):
            (found,) = plan(f"resident = 'alice' AND state = '{state}'")
            assert "INDEX beliefs_shown (world=? AND resident=? AND state=?)" in found, found
            assert ("COVERING" in found) == (focus is None), found
        assert all(
            "beliefs_intervened" in p
            for p in plan("intervention IN ('implanted', 'distorted') AND state NOT IN")
        )
        # the chosen rows, their corrections and contradictions: one index probe per root
        assert all("root=?)" in p for p in plan("root IN (SELECT value FROM json_each("))
        for sql in statements:
            assert _bad_steps(conn, sql) == [], sql
    finally:
        conn.close()


@pytest.mark.parametrize("focused", [False, True], ids=["unfocused", "focused"])
def test_a_calm_residents_narrative_reads_all_but_its_plain_facts_on_indexes(
    db: Path, focused: bool
) -> None:
    """The social read of a big resident with few doubts (``recall.recall_social``) counts
    notable plain facts on the covering index ``beliefs_shown`` (no row read) and reads the
    other beliefs each on a range of an index (migration 0022: ``beliefs_sourced`` holds
    those told by several people and the suppressed ones), never the whole of her rows nor
    the world's; with a focus, in one pass over her primary-key range, the plain facts that
    match it too."""
    from sidecar.read import Focus
    from sidecar.read.recall import recall_social

    reader = Reader(db)
    seen: list[str] = []
    reader.conn.set_trace_callback(seen.append)
    try:
        focus = Focus(people=("bob",), places=("market",)) if focused else None
        recall_social(reader, WORLD, "alice", "en", focus=focus)
    finally:
        reader.conn.set_trace_callback(None)
        reader.close()
    assert any("credence_matched(" in s for s in seen) == focused
    conn = sqlite3.connect(db)
    conn.create_function("credence_matched", 6, lambda *row: 0, deterministic=True)
    try:

        def plan(marker: str) -> str:
            found = [s for s in seen if marker in s]
            assert found, marker
            return " | ".join(
                " ".join(r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + one)) for one in found
            )

        counted = plan("importance >= 0.5")
        assert "COVERING INDEX beliefs_shown (world=? AND resident=? AND state=?)" in counted
        read = plan("OR (root >= 'relation:'")
        if focused:
            # the matching plain facts are anywhere in her range: one pass over it, on both
            # sides of the believes: roots, each in root order (no sort); those told by
            # several on beliefs_sourced
            for part in (
                "SEARCH beliefs USING PRIMARY KEY (world=? AND resident=? AND root<?)",
                "SEARCH beliefs USING PRIMARY KEY (world=? AND resident=? AND root>?)",
                "SEARCH beliefs USING INDEX beliefs_sourced (world=? AND resident=?)",
            ):
                assert part in read, (part, read)
            assert "TEMP B-TREE" not in read, read
        else:  # each part of what it keeps on a range of an index, never her whole range
            for part in (
                "INDEX beliefs_shown (world=? AND resident=? AND state=?)",
                "INDEX beliefs_shown (world=? AND resident=? AND state=? AND source_kind=?)",
                "INDEX beliefs_intervened (world=? AND resident=?)",
                "INDEX beliefs_sourced (world=? AND resident=?)",
                "PRIMARY KEY (world=? AND resident=? AND root>? AND root<?)",
            ):
                assert part in read, (part, read)
            assert "PRIMARY KEY (world=? AND resident=?)" not in read, read
            # the parts one after another (UNION ALL), put in root order in Python: no
            # part sorted in a temporary B-tree to be merged
            assert "TEMP B-TREE" not in read and "UNION ALL" in read, read
    finally:
        conn.close()


def test_a_trust_page_is_one_primary_key_range_from_its_cursor(db: Path) -> None:
    """A trust page reads the table as a range of its primary key from the cursor (source,
    topic), or within one source from its topic, in key order (no sort), each entry's
    history_total by the key of ``trust_history`` (migration 0018) joined to it; then every
    entry's latest changes in one query, each root's one range of ``changes_by_belief`` from
    its 20th latest seq (found walking back 20 entries of the same index): no entry's whole
    history is walked."""
    statements = _traced(db, {"type": "trust", "resident": "alice", "after": "bob:well"})
    statements += _traced(db, {"type": "trust", "resident": "alice", "source": "bob",
                               "after": "bob", "limit": 1})  # fmt: skip
    conn = _connect(db)
    try:

        def plan(sql: str) -> list[str]:
            return _pieces([
                r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, ["w"] * sql.count("?"))
            ])  # fmt: skip

        pages = [plan(s) for s in statements if " FROM trust " in s]
        total = "SEARCH h USING PRIMARY KEY (world=? AND resident=? AND root=?) LEFT-JOIN"
        assert pages == [
            ["SEARCH t USING PRIMARY KEY (world=? AND resident=? AND (source,topic)>(?,?))",
             total],
            ["SEARCH t USING PRIMARY KEY (world=? AND resident=? AND source=? AND topic>?)",
             total],
        ], pages  # fmt: skip
        first = _traced(db, {"type": "trust", "resident": "alice"})  # (her one entry: bob)
        (histories,) = [plan(s) for s in first if " changes c " in s]
        # The page's roots in their order; each root's latest records one range of the
        # index, from the seq found walking back ``latest`` entries of it (no other scan).
        walk = "SEARCH l USING COVERING INDEX changes_by_belief (world=? AND resident=? AND root=?)"
        seek = (
            "SEARCH c USING INDEX changes_by_belief (world=? AND resident=? AND root=? AND seq>?)"
        )
        assert seek in histories and walk in histories, histories
        scans = [s for s in histories if s.startswith("SCAN")]
        assert len(scans) == 1 and scans[0].startswith("SCAN json_each "), histories
    finally:
        conn.close()


def test_an_explain_page_reads_the_latest_evidence_backwards_on_its_log_order_index(
    db: Path,
) -> None:
    """explain with a limit reads the belief's latest evidence as one backward range of
    ``evidence_by_seq`` (migration 0023: its evidence in log order), stopped after the limit:
    no sort, so not every piece of a belief seen thousands of times on one day; each piece's
    event by its key."""
    statements = _traced(
        db, {"type": "explain", "resident": "alice", "root": "well:water", "limit": 1}
    )
    conn = sqlite3.connect(db)
    try:
        plans = [
            _pieces([r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + sql)])
            for sql in statements
            if "FROM evidence" in sql
        ]
    finally:
        conn.close()
    assert plans == [
        [
            "SEARCH ev USING INDEX evidence_by_seq (world=? AND resident=? AND root=?)",
            _EVENT_BY_KEY,  # (its event's kind)
        ]
    ], plans


def test_a_calm_residents_rumours_are_counted_and_ranked_on_an_index_range(db: Path) -> None:
    """The social read that holds her rumours back (``recall_social`` with ``told=False``)
    counts them and finds the best one's score on a range of the covering index
    ``beliefs_shown`` (no row read); the rumours themselves come from its one read of the
    resident's primary-key range, never read twice. The places and people they merge under
    (where a first layout asks) are read on the same range, each row looked up: the groups
    the pipe gives the rumours held back."""
    from sidecar.read.items import belief_items
    from sidecar.read.recall import recall_social, told_ceiling, told_groups

    reader = Reader(db)
    seen: list[str] = []
    reader.conn.set_trace_callback(seen.append)
    try:
        recalled = recall_social(reader, WORLD, "alice", "en", told=False)
        assert recalled is not None
        told_ceiling(reader, WORLD, "alice", recalled.day)
        groups = told_groups(reader, WORLD, "alice")
    finally:
        reader.conn.set_trace_callback(None)
        reader.close()
    held = belief_items(recalled, recalled.held)
    assert sorted(groups, key=str) == sorted((i.group for i in held), key=str)
    assert all(i.section == "told" for i in held)
    conn = sqlite3.connect(db)
    try:

        def plan(*markers: str) -> str:
            (found,) = [s for s in seen if all(m in s for m in markers)]
            return " ".join(r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + found))

        rumours = "AND source_kind = 'hearsay' AND NOT (root >= 'relation:'"
        rank = "(world=? AND resident=? AND state=? AND source_kind=?)"
        assert f"COVERING INDEX beliefs_shown {rank}" in plan("count(*), max(pow(", rumours)
        grouped = plan("SELECT root, people, places", rumours)
        assert f"SEARCH beliefs USING INDEX beliefs_shown {rank}" in grouped, grouped
        assert not [s for s in seen if "SELECT resident, root" in s and rumours in s]
        read = plan("OR (state = 'influencing' AND root >= 'relation:'")
        assert "SEARCH beliefs USING PRIMARY KEY (world=? AND resident=?" in read, read
    finally:
        conn.close()


def _plans(db: Path, statements: list[str]) -> set[str]:
    """The distinct query plans of traced ``statements`` (their values inlined), each as
    one line of its steps (:func:`_pieces`: but the view's reads of a piece's event)."""
    conn = _connect(db)
    try:
        return {
            " ".join(_pieces([r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + s)]))
            for s in statements
        }
    finally:
        conn.close()


def test_a_narratives_tellings_are_read_in_the_order_heard_without_a_sort(db: Path) -> None:
    """The tellers of a belief told by several people (``read/sources.py``) are its first
    hearsay pieces in log order: a range of ``evidence_by_seq`` (migration 0023) stopped
    after the first 50, so thousands of tellings on one game day are never all read and
    sorted (by day and event id, they were)."""
    traced = {
        r: _traced(db, {"type": "narrative", "resident": r}) for r in ("alice", "bob", "carol")
    }
    statements = [
        s for seen in traced.values() for s in seen if "source_kind = 'hearsay' AND value = " in s
    ]
    assert statements, "no narrative of the world read the tellings of a belief"
    assert _plans(db, statements) == {
        "SEARCH ev USING INDEX evidence_by_seq (world=? AND resident=? AND root=?)"
    }
    # and what first made her doubt one: the first logged of its contradicting pieces, in
    # one pass over them on the partial index (min(event_seq)), not a sort of them all
    doubts = [
        s for s in traced["alice"] if "min(event_seq)" in s and "relation = 'contradicts'" in s
    ]
    assert doubts, "the narrative did not read what first made her doubt a belief"
    assert _plans(db, doubts) == {
        "SEARCH ev USING INDEX evidence_contradicting (world=? AND resident=? AND root=?)"
    }


def test_a_narratives_contradictions_are_one_row_per_belief_in_index_order(db: Path) -> None:
    """The latest contradiction of each of a resident's contested beliefs (the only ones a
    line words it for) is found in SQL (the piece with the greatest ``event_seq``, migration
    0023) on the partial index ``evidence_contradicting``, one probe per belief: no join to
    the log (the chosen piece's event is read by key, once per belief: 0026), no sort, and
    none of every piece that ever contradicted what she held."""
    statements = [
        s
        for s in _traced(db, {"type": "narrative", "resident": "alice"})
        if "relation = 'contradicts'" in s and "max(ev.event_seq)" in s
    ]
    assert statements, "the narrative did not read the latest contradictions"
    plans = _plans(db, statements)
    assert all(p.startswith("SEARCH ev USING INDEX evidence_contradicting (") for p in plans)
    assert not any("TEMP B-TREE" in p or "events" in p for p in plans), plans


def test_a_narratives_acts_and_corrections_cost_what_they_show(db: Path) -> None:
    """What each act came to is counted on the covering partial index ``evidence_acts``
    (migration 0024: no row read, however often the act was done), and only the episodes a
    line names are read from the log, by key; each corrected belief's latest correction is
    found on ``changes_corrected`` and read by key, not every correction of its history."""
    traced = _traced(db, {"type": "narrative", "resident": "alice"})
    counts = [s for s in traced if "count(*), min(event_seq), max(event_seq)" in s]
    assert counts, "the narrative did not count her acts"
    assert _plans(db, counts) == {
        "SEARCH ev USING COVERING INDEX evidence_acts "
        "(world=? AND resident=? AND root>? AND root<?)"
    }
    episodes = [s for s in traced if s.startswith("SELECT seq, body FROM events")]
    assert _plans(db, episodes) == {
        "SEARCH events USING INDEX sqlite_autoindex_events_1 (world=? AND seq=?) "
        "LIST SUBQUERY 1 SCAN json_each VIRTUAL TABLE INDEX 1:"
    }
    fixes = [s for s in traced if "l.kind = 'corrected'" in s]
    assert fixes, "the narrative did not read her corrections"
    assert _plans(db, fixes) == {
        "SEARCH c USING PRIMARY KEY (world=? AND seq=?) LIST SUBQUERY 2 "
        "SEARCH l USING INDEX changes_corrected (world=? AND resident=?) "
        "SEARCH p USING PRIMARY KEY (world=? AND seq=?) LEFT-JOIN CORRELATED SCALAR SUBQUERY 1 "
        "SEARCH q USING COVERING INDEX changes_by_belief "
        "(world=? AND resident=? AND root=? AND seq<?)"
    }


def test_the_bound_on_plain_lines_reads_her_subjects_on_her_primary_key_range(db: Path) -> None:
    """What bounds a plain memory's line (``recall.plain_subjects``: the fewest characters
    of the subjects worded as stored, and the others) reads the resident's primary-key
    range, her rows in place: not ``beliefs_shown`` (which holds no subject) with a lookup
    of every row, and nothing sorted."""
    from sidecar.read.recall import plain_subjects

    reader = Reader(db)
    seen: list[str] = []
    reader.conn.set_trace_callback(seen.append)
    try:
        plain_subjects(reader, WORLD, "alice", 60, ("Alice",))
        # and the rows it words itself: a subject past the cut is one of them
        _, others = plain_subjects(reader, WORLD, "alice", 1, ("Alice",))
    finally:
        reader.conn.set_trace_callback(None)
        reader.close()
    assert others, "a pass for the rows it words"
    plans = _plans(db, [s for s in seen if "FROM beliefs" in s])
    assert len(plans) == 2, plans
    for one in plans:
        assert "SEARCH beliefs USING PRIMARY KEY (world=? AND resident=?)" in one, one
        assert "beliefs_shown" not in one and "TEMP B-TREE" not in one, one


def test_the_bound_on_a_few_plain_lines_reads_each_sections_range_of_beliefs_shown(
    db: Path,
) -> None:
    """Asked of a plain section or two that hold few of her rows (``few``), the bound reads
    each section's own range of ``beliefs_shown`` (its state, source kind and confidence:
    a sure fact is one range of the index), looking up each row's subject by primary key,
    nothing sorted; asked of them otherwise, her primary-key range (once for the shortest
    subject worded as stored, once for the rows it words itself)."""
    from sidecar.read.recall import plain_subjects

    reader = Reader(db)
    seen: list[str] = []
    reader.conn.set_trace_callback(seen.append)
    try:
        plain_subjects(reader, WORLD, "alice", 60, ("Alice",), ("sure", "faded"), few=True)
        few = [s for s in seen if "FROM beliefs" in s]
        seen.clear()
        plain_subjects(reader, WORLD, "alice", 60, ("Alice",), ("sure", "faded"))
        apart = [s for s in seen if "FROM beliefs" in s]
    finally:
        reader.conn.set_trace_callback(None)
        reader.close()
    searched = "SEARCH beliefs USING INDEX beliefs_shown (world=? AND resident=? AND state=?"
    sure, faded = f"{searched} AND source_kind=? AND confidence>?)", f"{searched})"
    # the shortest subject worded as stored, then the rows it words itself: only the faded
    # range holds one ("the fair is in spring", an event's date: put in the past)
    assert _plans(db, few) == {
        f"CO-ROUTINE (subquery-1) {sure} SCAN (subquery-1)",
        f"CO-ROUTINE (subquery-1) {faded} SCAN (subquery-1)",
        faded,
    }
    assert len(few) == 3, few
    plans = _plans(db, apart)
    assert len(plans) == 2, plans
    for plan in plans:
        assert "SEARCH beliefs USING PRIMARY KEY (world=? AND resident=?)" in plan, plan
        assert "beliefs_shown" not in plan and "TEMP B-TREE" not in plan, plan


def test_plain_rows_and_the_beliefs_they_build_are_read_on_the_primary_key(db: Path) -> None:
    """The plain memories a social read lays out from their rows (``recall.plain_rows``)
    are read on the resident's primary-key range in root order, nothing sorted and no other
    index; the few it then builds (``recall.beliefs_of``) each by primary key."""
    from sidecar.read.recall import beliefs_of, plain_rows

    reader = Reader(db)
    seen: list[str] = []
    reader.conn.set_trace_callback(seen.append)
    try:
        rows = plain_rows(reader, WORLD, "alice", 30.0)
        assert rows, "alice holds plain memories"
        built = beliefs_of(reader, WORLD, "alice", [r[0] for r in rows[:3]])
        assert [b.root for b in built] == sorted(r[0] for r in rows[:3])
    finally:
        reader.conn.set_trace_callback(None)
        reader.close()
    plans = _plans(db, [s for s in seen if "FROM beliefs" in s])
    assert len(plans) == 2, plans
    scan, keyed = sorted(plans, key=lambda p: "json_each" in p)
    assert scan == "SEARCH beliefs USING PRIMARY KEY (world=? AND resident=?)", scan
    assert "SEARCH beliefs USING PRIMARY KEY (world=? AND resident=? AND root=?)" in keyed, keyed
    assert "TEMP B-TREE" not in keyed and "SCAN beliefs" not in keyed, keyed


def test_the_rows_a_merged_line_is_completed_from_are_read_on_the_primary_key(db: Path) -> None:
    """What completes a read unit's merged line with unread plain memories reads those that
    may name its group (``recall.plain_rows(naming=…)``) on the resident's primary-key range in
    root order, then the members of their families (``recall.plain_families``) as one
    primary-key range per family: nothing sorted, no other index, the rows of
    ``plain_rows`` that name it and those under the families."""
    from sidecar.read.recall import plain_families, plain_rows

    reader = Reader(db)
    seen: list[str] = []
    try:
        rows = plain_rows(reader, WORLD, "alice", 30.0)
        named = [r for r in rows if r[6] != "[]"]
        assert named, "alice holds plain memories at a place"
        place = orjson.loads(named[0][6])[0]
        families = sorted({r[0].rpartition(":")[0] for r in rows if ":" in r[0]})[:3]
        reader.conn.set_trace_callback(seen.append)
        naming = plain_rows(reader, WORLD, "alice", 30.0, naming=place)
        members = plain_families(reader, WORLD, "alice", families)
    finally:
        reader.conn.set_trace_callback(None)
        reader.close()
    quoted = orjson.dumps(place).decode()
    assert list(naming) == [r for r in rows if quoted in r[5] or quoted in r[6]]
    under = [(r[0], r[1]) for r in rows if any(r[0].startswith(f + ":") for f in families)]
    assert sorted(tuple(m) for m in members) == sorted(under) and under
    plans = _plans(db, [s for s in seen if "FROM beliefs" in s or "JOIN beliefs" in s])
    assert len(plans) == 2, plans
    scan, ranges = sorted(plans, key=lambda p: "json_each" in p)
    assert scan == "SEARCH beliefs USING PRIMARY KEY (world=? AND resident=?)", scan
    assert (
        "SEARCH beliefs USING PRIMARY KEY (world=? AND resident=? AND root>? AND root<?)" in ranges
    ), ranges
    assert "TEMP B-TREE" not in ranges and "SCAN beliefs" not in ranges, ranges


def test_a_backlog_page_is_one_primary_key_range_of_the_log_of_changes(db: Path) -> None:
    """A resume's backlog (``Reader.changes_after``), with a window and the residents its
    filters name, walks the primary key (world, seq) from the cursor and tells the residents
    apart as it goes, with no sort: never a resident's whole history on ``changes_by_belief``
    (its changes of every root since the game began)."""
    reader = Reader(db)
    seen: list[str] = []
    reader.conn.set_trace_callback(seen.append)
    try:
        reader.changes_after(WORLD, 3, limit=5, upto=40, residents={"alice", "bob"})
    finally:
        reader.conn.set_trace_callback(None)
        reader.close()
    conn = sqlite3.connect(db)
    try:
        (page,) = ([r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + sql)] for sql in seen)
    finally:
        conn.close()
    assert page[0] == "SEARCH changes USING PRIMARY KEY (world=? AND seq>? AND seq<?)", page
    assert not any("TEMP B-TREE" in step or "changes_by" in step for step in page), page


def test_a_fork_copies_each_table_in_ranges_of_its_primary_key(db: Path, tmp_path: Path) -> None:
    """A fork into one file copies the world's rows from the worker's file in steps
    (``worlds._Merge``): each step finds its last key and copies up to it as one range of the
    table's primary key after the previous step's, in key order with no sort, so a step deep
    into a table of millions of rows costs what the first does (pages by ``OFFSET`` walked
    every row copied before, at every step)."""
    from sidecar.store.worlds import _TRIGGER_FILLED, _Copy, _world_tables

    conn = sqlite3.connect(db)
    conn.execute("ATTACH DATABASE ? AS save", (str(db),))
    try:
        tables = [t for t in _world_tables(conn) if t not in _TRIGGER_FILLED]
        assert {"beliefs", "changes", "events", "evidence_pieces"} <= set(tables)
        for table in tables:
            info = conn.execute(f"PRAGMA main.table_info({table})").fetchall()
            keys = [c[1] for c in sorted(info, key=lambda c: c[5]) if c[5]]
            assert keys[0] == "world", table
            copy = _Copy(table, [c[1] for c in info], [f'"{c[1]}"' for c in info], keys[1:])
            sqls = [(copy.insert_sql(False, bounded=False), False)]
            if copy.keys:  # (a table of one row a world is copied whole, in one step)
                sqls += [(copy.last_sql(True), True), (copy.insert_sql(True, bounded=True), True)]
            for sql, ranged in sqls:
                args = [None] * sql.count("?")
                steps = [r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, args)]
                assert len(steps) == 1 and steps[0].startswith(f"SEARCH save.{table} USING "), steps
                assert "(world=?" in steps[0] and ("world=? AND" in steps[0]) == ranged, steps
    finally:
        conn.close()
