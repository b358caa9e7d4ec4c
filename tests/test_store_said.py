"""Own words in SQLite: lean ``said`` rows (a reference to the logged utterance), written alike
by both write paths, filled from the log by migration 0010, rebuilt exactly from the log."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from belief_builders import announce, observe, say

from sidecar.engine import parse_event
from sidecar.store import Reader, ResultStatus, Writer, migrate
from sidecar.store.rebuild import rebuild
from sidecar.store.said import SAID_TO_SHOWN, latest_said, said_page

STORY = [
    observe(1, ["mira"], "well", "dry", "the well is dry", eid="o1"),
    say(2, "mira", ["kai", "lena"], "well", "fine", "the well is fine", eid="s1",
        overhearers=["bo"]),
    announce(3, "mayor", "*", "fest", 12, "the festival is on day 12", eid="a1"),
    say(4, "mira", ["bo"], "bridge", "open", "the bridge is open", eid="s2"),
    announce(5, "mira", ["kai"], "well", "fine", "the well is fine", eid="a2"),
]  # fmt: skip


def write(path: Path, events: list[dict[str, Any]], *, batched: bool = True) -> None:
    w = Writer(path, synchronous="OFF", batched=batched)
    try:
        results = w.apply([("w", parse_event(e)) for e in events])
        assert all(r.status is ResultStatus.APPLIED for r in results)
    finally:
        w.close()


def rows(path: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT * FROM said ORDER BY world, speaker, seq").fetchall()
    finally:
        conn.close()


def test_rows_reference_the_log_and_keep_only_whom_everyone_reached(db_path: Path) -> None:
    """One row per utterance: (world, speaker, event seq); ``reached`` only for an
    announcement to everyone, the residents known then."""
    write(db_path, STORY)
    assert rows(db_path) == [
        ("w", "mayor", 3, '["bo","kai","lena","mira"]'),
        ("w", "mira", 2, None),
        ("w", "mira", 4, None),
        ("w", "mira", 5, None),
    ]


@pytest.mark.parametrize("batched", [True, False])
def test_a_page_reads_claim_subject_and_listeners_from_the_event(
    db_path: Path, batched: bool
) -> None:
    """Either write path gives the same page: the said entries with claim, subject, day, kind
    and whom it was told, a lie included (Mira saw the well dry, said it was fine)."""
    write(db_path, STORY, batched=batched)
    reader = Reader(db_path)
    try:
        page = said_page(reader.conn, "w", "mira")
        assert [(e["seq"], e["kind"], e["root"], e["value"], e["to"]) for e in page] == [
            (2, "say", "well", "fine", ["kai", "lena"]),
            (4, "say", "bridge", "open", ["bo"]),
            (5, "announce", "well", "fine", ["kai"]),
        ]
        assert page[0]["subject"] == "the well is fine" and page[0]["day"] == 2.0
        assert said_page(reader.conn, "w", "mira", start=3, limit=1)[0]["seq"] == 4
        assert [e["seq"] for e in latest_said(reader.conn, "w", "mira", 2)] == [5, 4]
        mayor = said_page(reader.conn, "w", "mayor")[0]
        assert mayor["everyone"] and mayor["to_count"] == 4
        belief = reader.belief("w", "mira", "well")
        assert belief is not None and belief.value == "dry"  # her words are not her belief
    finally:
        reader.close()


def test_an_entry_lists_a_bounded_number_of_those_told(db_path: Path) -> None:
    """An announcement to a town of hundreds lists the first SAID_TO_SHOWN and counts all."""
    crowd = [f"r{i:03}" for i in range(SAID_TO_SHOWN + 50)]
    write(db_path, [observe(0, crowd, "x", 1, eid="o"), announce(1, "mayor", "*", "x", 2, eid="a")])
    reader = Reader(db_path)
    try:
        (entry,) = said_page(reader.conn, "w", "mayor")
        assert len(entry["to"]) == SAID_TO_SHOWN and entry["to_count"] == len(crowd)
    finally:
        reader.close()


def test_migration_0010_fills_the_table_from_an_older_log(db_path: Path) -> None:
    """A database written before own words gets the rows a replay would write."""
    write(db_path, STORY)
    expected = rows(db_path)
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("DROP TABLE said")
    conn.execute("DELETE FROM _migrations WHERE name = '0010_i18_said'")
    assert migrate(conn) == ["0010_i18_said"]
    conn.close()
    assert rows(db_path) == expected


def test_rebuild_check_rebuilds_the_rows_exactly_and_sees_a_tampered_one(
    db_path: Path, tmp_path: Path
) -> None:
    """``rebuild --check`` passes on the stored rows and reports a row that the log does not
    give."""
    write(db_path, STORY)
    assert rebuild(db_path, tmp_path / "r1.db").ok
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("UPDATE said SET reached = '[\"kai\"]' WHERE speaker = 'mayor'")
    conn.close()
    report = rebuild(db_path, tmp_path / "r2.db")
    assert not report.ok and "said" in report.differences[0]


def test_the_check_constraint_refuses_a_reached_that_is_no_list(db_path: Path) -> None:
    """``reached`` is a JSON list or NULL; anything else is refused by SQLite itself."""
    write(db_path, STORY)
    conn = sqlite3.connect(db_path)
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO said VALUES ('w', 'kai', 9, 'kai')")
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO said VALUES ('w', 'kai', 0, NULL)")
    conn.close()
