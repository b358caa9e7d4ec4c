"""``credence rebuild --db FILE --check`` as a real subprocess on a real database file."""

from __future__ import annotations

import importlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from belief_builders import act, announce, intervene, observe, say, tick

from sidecar.engine import parse_event
from sidecar.store import ResultStatus, Writer, rebuild


def credence(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sidecar.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def filled(db_path: Path) -> Path:
    """A database with two worlds and every event kind, written through the Writer."""
    w = Writer(db_path)
    events = [
        say(0, "bo", ["mira", "kai"], "water:well", "poisoned", "the well is poisoned"),
        observe(1, ["mira"], "water:well", "clean", interpretations={"mira": "odd"}),
        observe(2, ["mira"], "water:well", "clean", people=["doctor"], places=["well"]),
        announce(3, "tom", "*", "market:open", True),
        act(4, "kai", "open_door", "interrupted", ["mira"]),
        intervene(5, "kai", "distort", "water:well", "cursed", "the well is cursed"),
        intervene(5, "mira", "soften", "market:open"),
        intervene(6, "tom", "implant", "coins", 2**53 - 1),
        say(6, "kai", ["tom"], "coins", 3),
        intervene(6, "tom", "suppress", "market:open"),  # tom holds none: rejected
        tick(30),
    ]
    results = w.apply([("north", parse_event(e)) for e in events])
    assert [r.status for r in results].count(ResultStatus.REJECTED) == 1
    w.apply([("south", parse_event(say(0, "ann", ["ben"], "theft", "cai")))])
    w.close()
    return db_path


def test_rebuild_check_passes_on_an_untouched_database(filled: Path) -> None:
    """A database written by the Writer replays to exactly the same beliefs and changes: exit 0."""
    proc = credence("rebuild", "--db", str(filled), "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "rebuild matches" in proc.stdout
    assert "in 2 world(s)" in proc.stdout
    assert "DIFFERENT" not in proc.stdout


def test_rebuild_check_fails_when_a_belief_was_tampered_with(filled: Path) -> None:
    """Editing one belief's confidence behind the writer's back: exit 1 and a DIFFERENT line."""
    conn = sqlite3.connect(filled)
    with conn:
        cur = conn.execute(
            "UPDATE beliefs SET confidence = confidence - 1 "
            "WHERE world = 'north' AND resident = 'mira' AND root = 'water:well'"
        )
        assert cur.rowcount == 1
    conn.close()
    proc = credence("rebuild", "--db", str(filled), "--check")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    different = [line for line in proc.stdout.splitlines() if line.startswith("DIFFERENT")]
    assert len(different) == 1
    assert "mira/water:well" in different[0]


def test_rebuild_check_fails_when_a_change_row_was_deleted(filled: Path) -> None:
    """A missing change row is found too (the log replays one more change than is stored)."""
    conn = sqlite3.connect(filled)
    with conn:
        conn.execute("DELETE FROM changes WHERE world = 'south'")
    conn.close()
    proc = credence("rebuild", "--db", str(filled), "--check")
    assert proc.returncode == 1
    assert "DIFFERENT world 'south'" in proc.stdout


def test_rebuild_check_fails_when_a_trust_history_total_was_tampered_with(filled: Path) -> None:
    """The trust_history counters (a trust page's history_total, migration 0018) are checked
    against the change rows: one counted once too often is a DIFFERENT line."""
    conn = sqlite3.connect(filled)
    with conn:
        cur = conn.execute(
            "UPDATE trust_history SET total = total + 1 "
            "WHERE world = 'north' AND resident = 'mira' AND root = 'trust:bo'"
        )
        assert cur.rowcount == 1
    conn.close()
    proc = credence("rebuild", "--db", str(filled), "--check")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    different = [line for line in proc.stdout.splitlines() if line.startswith("DIFFERENT")]
    assert different == [
        "DIFFERENT world 'north': stored trust history totals (trust_history) differ from its "
        "change rows"
    ], proc.stdout


def test_rebuild_without_check_reports_but_exits_0(filled: Path) -> None:
    """Without --check, differences are printed but the exit code stays 0."""
    conn = sqlite3.connect(filled)
    with conn:
        conn.execute("UPDATE beliefs SET confidence = 1 WHERE world = 'south'")
    conn.close()
    proc = credence("rebuild", "--db", str(filled))
    assert proc.returncode == 0
    assert "DIFFERENT" in proc.stdout


def test_rebuild_of_a_missing_database_exits_2(tmp_path: Path) -> None:
    """No database at the path: exit 2 with a message, and no file is created."""
    missing = tmp_path / "nothing.db"
    proc = credence("rebuild", "--db", str(missing), "--check")
    assert proc.returncode == 2
    assert "no database" in proc.stderr
    assert not missing.exists()


def test_rebuild_out_keeps_an_identical_copy(filled: Path, tmp_path: Path) -> None:
    """--out keeps the rebuilt database, and rebuilding that copy matches as well."""
    out = tmp_path / "rebuilt.db"
    proc = credence("rebuild", "--db", str(filled), "--out", str(out), "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.exists()
    report = rebuild(out)
    assert report.ok and report.worlds == 2
    assert report.events == rebuild(filled).events == 11


def test_rebuild_compares_page_by_page_and_finds_every_kind_of_difference(
    filled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With pages of 2 rows, the merge of both databases' beliefs (in resident, root order),
    changes (in seq order) and utterances still finds a belief edited, one deleted and one
    added behind the writer's back, a change row edited, and an utterance removed; and an
    untouched database still matches, every row counted once."""
    module = importlib.import_module("sidecar.store.rebuild")  # (the package names a function so)

    monkeypatch.setattr(module, "PAGE", 2)
    clean = rebuild(filled)
    assert clean.ok and clean.beliefs > 6 and clean.changes > 6, clean.differences
    conn = sqlite3.connect(filled)
    with conn:
        conn.execute(
            "UPDATE beliefs SET confidence = confidence - 1 "
            "WHERE world = 'north' AND resident = 'mira' AND root = 'water:well'"
        )
        gone = conn.execute(
            "SELECT resident, root FROM beliefs WHERE world = 'north' AND resident = 'kai' "
            "ORDER BY root LIMIT 1"
        ).fetchone()
        conn.execute(
            "DELETE FROM beliefs WHERE world = 'north' AND resident = ? AND root = ?", gone
        )
        conn.execute(
            "INSERT INTO beliefs SELECT world, 'zed', root, value, subject, interpretation, "
            "people, places, topics, confidence, state, source_kind, source_resident, "
            "intervention, evidence_refs, heard_from, formed_day, updated_day, "
            "last_evidence_day, next_decay_day, origins, hops, decay_period, value_since, "
            "importance, remembered_day, evidence_count, own_origins FROM beliefs "
            "WHERE world = 'north' AND resident = 'mira' AND root = 'water:well'"
        )
        conn.execute("UPDATE changes SET confidence_after = 1 WHERE world = 'north' AND seq = 3")
        conn.execute("DELETE FROM said WHERE world = 'south'")
    conn.close()
    report = rebuild(filled, max_report=50)
    found = "\n".join(report.differences)
    assert "belief mira/water:well: stored" in found
    assert f"belief {gone[0]}/{gone[1]}: stored None != rebuilt" in found
    assert "belief zed/water:well: stored" in found and "!= rebuilt None" in found
    assert "change seq 3: stored" in found
    assert "world 'south': the own-words records (said) differ" in found
    assert report.beliefs == clean.beliefs  # (one gone, one added)
