"""Trust roots name one entry each (SPEC §8.1): source ``a`` on topic ``b`` and source ``a:b``
in general no longer share the root ``trust:a:b``, their change histories or their counts.

Over a real store (the writer and a reader on a SQLite file), over the real server, for
arbitrary ids (hypothesis), and through migration 0021 on a file the old writer wrote.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from belief_builders import observe, say
from hypothesis import given
from hypothesis import strategies as st
from wsclient import WsClient, rebuild_check, running

from protocol import parse_trust_cursor, trust_cursor
from sidecar.engine import parse_event, parse_trust_root, trust_root
from sidecar.engine.roots import parse_trust_key, trust_key
from sidecar.server.queries import TRUST_HISTORY_SHOWN
from sidecar.store import Reader, Writer

WORLD = "w"
#: (source, topic) pairs whose old roots collide: trust:a:b twice, trust:a:b:c three times.
COLLIDING = [("a", "b"), ("a:b", None), ("a:b", "c"), ("a", "b:c"), ("a:b:c", None)]


def _trust(n: int, source: str, value: float, topic: str | None = None) -> dict[str, Any]:
    return {"event_id": f"t{n}", "day": n, "kind": "trust", "resident": "kai",
            "source": source, "value": value, **({"topic": topic} if topic else {})}  # fmt: skip


def _old_root(source: str, topic: str | None) -> str:
    """The root as the sidecar built it before migration 0021."""
    return f"trust:{source}" + (f":{topic}" if topic else "")


def _write(db: Path, frames: list[dict[str, Any]]) -> None:
    writer = Writer(db, synchronous="OFF")
    try:
        writer.apply([(WORLD, parse_event(f)) for f in frames])
    finally:
        writer.close()


def _colliding_frames() -> list[dict[str, Any]]:
    """Each colliding entry set 1, 2, 3, … times, so every history has its own length."""
    frames: list[dict[str, Any]] = []
    for k, (source, topic) in enumerate(COLLIDING):
        for _ in range(k + 1):
            frames.append(_trust(len(frames), source, round(0.1 * (k + 1), 2), topic))
    return frames


# ------------------------------------------------------------------------ the encoding


def test_roots_without_escapes_are_what_they_always_were() -> None:
    for source, topic in [("bo", None), ("bo", "well"), ("bo", "x:y"), ("s0007", "a%b")]:
        assert trust_root(source, topic) == _old_root(source, topic)
    assert trust_root("a:b", None) == "trust:a%3Ab"
    assert trust_root("a", "b") == "trust:a:b"
    assert trust_root("a%3Ab", None) == "trust:a%253Ab"
    assert trust_root("bo", "") == "trust:bo"  # an empty topic is general trust


def test_the_cursor_is_the_root_without_its_prefix() -> None:
    for source, topic in [*COLLIDING, ("a%b", "x"), ("bo", None)]:
        assert "trust:" + trust_cursor(source, topic) == trust_root(source, topic)
        assert parse_trust_cursor(trust_cursor(source, topic)) == (source, topic or "")


@pytest.mark.parametrize(
    "root", ["trust:", "trust:a:", "trust::b", "trust:a%3ab", "trust:a%2", "trust:%41", "bo:x"]
)
def test_what_is_no_trust_root_parses_to_none(root: str) -> None:
    assert parse_trust_root(root) is None


_IDS = st.text(st.sampled_from("ab:%3A5"), min_size=1, max_size=8) | st.text(min_size=1)
_ENTRIES = st.tuples(_IDS, st.none() | _IDS)


@given(_ENTRIES, _ENTRIES)
def test_the_encoding_is_injective_and_decodes_to_what_it_encoded(
    x: tuple[str, str | None], y: tuple[str, str | None]
) -> None:
    """For arbitrary (source, topic-or-None) pairs: decode(encode(x)) == x, and two pairs
    share a root only if they are the same pair."""
    assert parse_trust_root(trust_root(*x)) == x
    assert parse_trust_key(trust_key(*x)) == x
    assert (trust_root(*x) == trust_root(*y)) == (x == y)


# ------------------------------------------------------------------------ a real store


def test_colliding_entries_keep_their_own_histories_and_counts(tmp_path: Path) -> None:
    """Written through the real writer: each entry's page history holds its own records
    only, its history_total counts those, and the stored roots are the new ones."""
    db = tmp_path / "trust.db"
    _write(db, _colliding_frames())
    reader = Reader(db)
    try:
        table = reader.trust(WORLD, "kai", latest=TRUST_HISTORY_SHOWN)
        got = {(e["source"], e["topic"]): e for e in table}
        assert set(got) == set(COLLIDING)
        for k, key in enumerate(COLLIDING):
            entry = got[key]
            assert entry["history_total"] == k + 1, key
            assert [c.root for c in entry["history"]] == [trust_root(*key)] * (k + 1)
            assert {c.value_after for c in entry["history"]} == {entry["value"]}
    finally:
        reader.close()
    conn = sqlite3.connect(db)
    try:
        totals = dict(conn.execute("SELECT root, total FROM trust_history").fetchall())
    finally:
        conn.close()
    assert totals == {trust_root(*key): k + 1 for k, key in enumerate(COLLIDING)}
    rebuild_check(db)


def test_trust_moved_by_evidence_uses_the_new_roots(tmp_path: Path) -> None:
    """Hearsay from ``a:b`` on topic ``b`` judged firsthand moves trust:a%3Ab:b and
    trust:a%3Ab, never a's entries."""
    db = tmp_path / "trust.db"
    _write(db, [
        say(1, "a:b", ["kai"], "well", "poisoned", topic="b"),
        observe(2, ["kai"], "well", "clean"),
    ])  # fmt: skip
    conn = sqlite3.connect(db)
    try:
        roots = {r[0] for r in conn.execute("SELECT root FROM changes WHERE kind = 'trust'")}
    finally:
        conn.close()
    assert roots == {"trust:a%3Ab:b", "trust:a%3Ab"}
    rebuild_check(db)


async def test_a_trust_page_over_the_server_shows_each_entrys_own_history(
    tmp_path: Path,
) -> None:
    """The `trust` query for source ``a:b`` lists its entries with their own records; a's
    entry on ``b`` has its one record, with a's value."""
    db = tmp_path / "trust.db"
    _write(db, _colliding_frames())
    async with running(tmp_path, db=db) as sc, WsClient(sc.url, WORLD) as c:
        page = await c.request({"type": "trust", "resident": "kai", "source": "a:b"})
        got = {e["topic"]: e for e in page["entries"]}
        assert set(got) == {None, "c"}
        assert got[None]["history_total"] == 2 and len(got[None]["history"]) == 2
        assert got["c"]["history_total"] == 3 and len(got["c"]["history"]) == 3
        assert [h["event_id"] for h in got[None]["history"]] == ["t1", "t2"]
        page = await c.request({"type": "trust", "resident": "kai", "source": "a"})
        got = {e["topic"]: e for e in page["entries"]}
        assert set(got) == {"b", "b:c"}
        assert [h["event_id"] for h in got["b"]["history"]] == ["t0"]
        assert got["b"]["history_total"] == 1 and got["b:c"]["history_total"] == 4


# ------------------------------------------------------------------------ migration 0021


def _rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(db)
    try:
        return {
            "changes": conn.execute("SELECT * FROM changes ORDER BY world, seq").fetchall(),
            "trust_history": conn.execute(
                "SELECT * FROM trust_history ORDER BY world, resident, root"
            ).fetchall(),
            "trust": conn.execute("SELECT * FROM trust ORDER BY 1, 2, 3, 4").fetchall(),
        }
    finally:
        conn.close()


def _as_the_old_writer_wrote_it(db: Path) -> int:
    """Every trust root back to ``trust:<source>[:<topic>]`` unescaped, the counters counted
    over those (collided roots share one), and 0021 not applied; how many roots changed."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        changed = 0
        for seq, root in conn.execute(
            "SELECT seq, root FROM changes WHERE kind = 'trust'"
        ).fetchall():
            entry = parse_trust_root(root)
            assert entry is not None
            if _old_root(*entry) != root:
                changed += 1
                conn.execute("UPDATE changes SET root = ? WHERE seq = ?", (_old_root(*entry), seq))
        conn.execute("DELETE FROM trust_history")
        conn.execute(
            "INSERT INTO trust_history SELECT world, resident, root, count(*) FROM changes "
            "WHERE kind = 'trust' GROUP BY world, resident, root"
        )
        conn.execute("DELETE FROM _migrations WHERE name = '0021_trust_roots'")
    finally:
        conn.close()
    return changed


def _migrated(db: Path) -> None:
    writer = Writer(db, synchronous="OFF")
    try:
        assert writer.migrations_applied == ["0021_trust_roots"]
    finally:
        writer.close()


def test_migration_gives_every_old_record_its_own_root_where_the_file_tells(
    tmp_path: Path,
) -> None:
    """An old file where a on b and a:b share trust:a:b (game sets, a promise deadline moving
    a:b's general trust, a doubt moving a's trust on b), x%y, and topics holding ':': 0021
    rewrites exactly the escaped ids' roots, recounts, and leaves the file as the new
    writer writes it (rebuild --check passes); plain roots are untouched."""
    db = tmp_path / "old.db"
    _write(db, [
        _trust(1, "a", 0.3, "b"), _trust(2, "a:b", 0.5), _trust(3, "a:b", 0.55),
        _trust(4, "a:b", 0.7, "c"), _trust(5, "x%y", 0.4), _trust(6, "bo", 0.2, "x:y"),
        {"event_id": "p1", "day": 7, "kind": "promise", "promise": "fence", "promiser": "a:b",
         "to": ["kai"], "action": "mend_fence", "subject": "mend the fence", "by": 8},
        say(9, "a", ["kai"], "well", "poisoned", topic="b"),
        observe(10, ["kai"], "well", "clean"),  # a's trust on b and in general: contradicted
    ])  # fmt: skip
    written = _rows(db)
    details = {r[16] for r in written["changes"] if r[4] == "trust"}
    assert {"set", "promise_broken", "contradicted"} <= details
    assert _as_the_old_writer_wrote_it(db) == 5  # a:b ×3 (two sets, the deadline), a:b:c, x%y
    old = _rows(db)
    assert ("w", "kai", "trust:a:b", 5) in old["trust_history"]  # a on b's two, a:b's three
    _migrated(db)
    assert _rows(db) == written
    rebuild_check(db)


def test_a_collision_the_rows_cannot_split_goes_to_the_whole_ids_general_trust(
    tmp_path: Path,
) -> None:
    """Kai heard the same thing on topic b from a and from a:b, then saw otherwise: the doubt
    moves a's trust on b and a:b's general trust in one event, both once trust:a:b, with
    nothing in the rows to tell them apart. 0021 puts both on trust:a%3Ab (as documented),
    so rebuild --check reports the difference; rebuild --out replays the log into the exact
    file."""
    from sidecar.store import rebuild

    db = tmp_path / "old.db"
    _write(db, [
        say(1, "a", ["kai"], "well", "poisoned", topic="b"),
        say(2, "a:b", ["kai"], "well", "poisoned", topic="b"),
        observe(3, ["kai"], "well", "clean"),
    ])  # fmt: skip
    written = _rows(db)
    assert _as_the_old_writer_wrote_it(db) == 2  # a:b's general and on-b moves
    _migrated(db)
    migrated = _rows(db)
    assert migrated["trust"] == written["trust"]  # values are never touched
    roots = sorted(r[3] for r in migrated["changes"] if r[4] == "trust")
    assert roots == sorted(["trust:a%3Ab", "trust:a%3Ab", "trust:a", "trust:a%3Ab:b"])
    assert ("w", "kai", "trust:a%3Ab", 2) in migrated["trust_history"]
    report = rebuild(db)
    assert not report.ok
    exact = tmp_path / "exact.db"
    assert rebuild(db, exact).ok is False
    assert _rows(exact)["changes"] == written["changes"]
    assert _rows(exact)["trust_history"] == written["trust_history"]
