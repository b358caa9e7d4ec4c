"""A ``trust`` reply's change records built straight from their rows (issue 17) are the
bytes the Change-object path sends: every record of a real world, and whole trust pages."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import msgpack
import pytest
from belief_builders import intervene, observe, say

from protocol import change_summary
from sidecar.engine import parse_event, trust_root
from sidecar.server.queries import TRUST_HISTORY_SHOWN
from sidecar.store import Reader, Writer
from sidecar.store.rows import CHANGE_SUMMARY_COLUMNS, change_from_row, change_summary_from_row

WORLD = "w"
MAP = {"en": "the well is bad", "zh-Hant": "井水有毒"}


def _trust(n: int, source: str, value: float, topic: str | None = None) -> dict[str, Any]:
    return {"event_id": f"t{n}", "day": n / 10, "kind": "trust", "resident": "kai",
            "source": source, "value": value, **({"topic": topic} if topic else {})}  # fmt: skip


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Kai's trust set by the game (bo 30 times, past the 20 a page shows; sources whose ids
    hold ':'; topics) and moved by hearsay judged firsthand; beliefs with plain and
    language-map subjects, implanted and distorted (a map subject replaced by a plain one),
    and a boolean value replaced by a number."""
    frames = [_trust(i, "bo", round(0.1 + (i % 9) / 10, 2)) for i in range(30)]
    # (a's trust on b, root trust:a:b, and a:b's general trust, root trust:a%3Ab)
    frames += [_trust(30 + i, s, 0.4, t) for i, (s, t) in enumerate(
        [("bo", "well"), ("a:b", None), ("a:b", "x:y"), ("a", "b"), ("ann", None)]
    )]  # fmt: skip
    frames += [
        {**say(4, "bo", ["kai"], "well:water", "poisoned"), "subject": MAP},
        say(4, "ann", ["kai"], "well:water", "poisoned"),
        {
            **observe(5, ["kai"], "well:water", "clean"),
            "subject": {"en": "clean", "zh-Hant": "乾淨"},
        },
        say(5, "ann", ["kai"], "road:state", "open", topic="roads"),
        observe(6, ["kai"], "road:state", "open"),
        {**intervene(7, "kai", "implant", "ring:owner", "dave"), "subject": MAP},
        intervene(8, "kai", "distort", "ring:owner", "erin", subject="erin owns the ring"),
        observe(9, ["kai", "bo"], "count", True),
        observe(10, ["kai"], "count", 4),
        observe(10, ["kai"], "age", 41),
    ]
    path = tmp_path_factory.mktemp("trustrows") / "trust.db"
    writer = Writer(path)
    try:
        writer.apply([(WORLD, parse_event(f)) for f in frames])
    finally:
        writer.close()
    return path


def _packed(value: Any) -> bytes:
    return bytes(msgpack.packb(value, use_bin_type=True))


def test_every_change_row_maps_to_the_summary_of_its_change(db: Path) -> None:
    """For every change record of the world (trust moves and belief changes alike), the dict
    built from the selected columns equals, and packs to the same bytes as,
    ``change_summary(change_from_row(row))``; the world holds the cases that differ in form:
    no previous value or state, no subject, a plain subject, a language map (sent as a map),
    a hearsay source and none, boolean, integer, trust (float) and string values."""
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute("SELECT * FROM changes WHERE world = ? ORDER BY seq", (WORLD,))
        pairs = [
            (change_summary_from_row(tuple(r[c] for c in CHANGE_SUMMARY_COLUMNS)),
             change_summary(change_from_row(r)))
            for r in rows
        ]  # fmt: skip
    finally:
        conn.close()
    assert len(pairs) > 40
    for fast, slow in pairs:
        assert fast == slow
        assert list(fast) == list(slow)  # the same key order: the same bytes
        assert _packed(fast) == _packed(slow)
    sent = [slow for _, slow in pairs]
    assert any(s["prev_value"] is None and s["prev_state"] is None for s in sent)
    assert any(s["prev_value"] is not None and s["prev_state"] is not None for s in sent)
    assert any(s["subject"] is None for s in sent)
    assert any(s["subject"] == MAP for s in sent)
    assert any(s["prev_subject"] == MAP and s["subject"] == "erin owns the ring" for s in sent)
    assert any(s["source"] is not None for s in sent)
    assert {type(s["value"]) for s in sent} >= {bool, int, float, str}
    assert any(s["change"] == "trust" and s["evidence_id"] is not None for s in sent)


def _slow_page(reader: Reader, **kw: Any) -> list[dict[str, Any]]:
    """A page through Change objects, as the reply was built before issue 17's fix."""
    rows = reader.trust_page(WORLD, "kai", latest=TRUST_HISTORY_SHOWN, **kw)
    return [{**r, "history": [change_summary(c) for c in r["history"]]} for r in rows]


def _pages_match(reader: Reader) -> None:
    for kw in (
        {}, {"limit": 2}, {"after": ("a:b", "")}, {"source": "bo"},
        {"source": "a:b", "after": ("a:b", "")}, {"limit": -1},
    ):  # fmt: skip
        fast = reader.trust_page(WORLD, "kai", latest=TRUST_HISTORY_SHOWN, wire=True, **kw)
        assert _packed(fast) == _packed(_slow_page(reader, **kw)), kw


def test_a_wire_trust_page_is_the_bytes_of_the_change_path(db: Path) -> None:
    """Whole pages, from cursors and of one source, with ``history_total`` read with the
    page (bo's general trust: 30 records, the latest 20 sent) pack to the same bytes."""
    reader = Reader(db)
    try:
        _pages_match(reader)
        bo = reader.trust_page(WORLD, "kai", "bo", latest=TRUST_HISTORY_SHOWN, wire=True)
        general = bo[0]
        assert len(general["history"]) == TRUST_HISTORY_SHOWN
        assert general["history_total"] > TRUST_HISTORY_SHOWN
    finally:
        reader.close()


def test_a_file_without_the_trust_counter_counts_on_the_index(db: Path, tmp_path: Path) -> None:
    """On a file from before migration 0018 (no ``trust_history``), the totals are counted
    on ``changes_by_belief`` and the pages are the same bytes."""
    old = tmp_path / "old.db"
    shutil.copyfile(db, old)
    conn = sqlite3.connect(old)
    with conn:
        conn.execute("DROP TRIGGER trust_history_counted")
        conn.execute("DROP TABLE trust_history")
    conn.close()
    reader, before = Reader(old), Reader(db)
    try:
        _pages_match(reader)
        page = reader.trust_page(WORLD, "kai", latest=TRUST_HISTORY_SHOWN, wire=True)
        assert _packed(page) == _packed(
            before.trust_page(WORLD, "kai", latest=TRUST_HISTORY_SHOWN, wire=True)
        )
    finally:
        reader.close()
        before.close()


def test_a_page_reads_each_entrys_history_as_its_own_query_would(db: Path) -> None:
    """The page's one history query gives each entry what :meth:`Reader.history` of its root
    gives: every record (no ``latest``), or the latest few, oldest first."""
    reader = Reader(db)
    try:
        for latest in (None, 1, 3, TRUST_HISTORY_SHOWN):
            table = reader.trust(WORLD, "kai", latest=latest)
            assert len(table) == 7
            for e in table:
                root = trust_root(e["source"], e["topic"])
                assert e["history"] == reader.history(WORLD, "kai", root, latest=latest)
                assert [c.seq for c in e["history"]] == sorted(c.seq for c in e["history"])
        (bo,) = reader.trust(WORLD, "kai", "bo", latest=None)[:1]
        assert len(bo["history"]) > TRUST_HISTORY_SHOWN
    finally:
        reader.close()
