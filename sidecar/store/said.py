"""Own words in SQLite: one lean row per utterance, keyed by its speaker (issue 20's lean rows).

A ``said`` row is ``(world, speaker, seq)`` — a reference to the utterance in the world log —
and, only for an announcement to everyone, ``reached``: the residents it reached (JSON list),
the one thing the log cannot tell afterwards. Claim, subject, day, kind and listeners are read
from the logged event when answering, never copied. The primary key is the query's index: a
speaker's words in seq order, paged forwards (the ``said`` query) or read latest first (the
narrative's "What I told others"). Migration 0010 creates the table and fills it from the log
(:func:`backfill`), so an older database rebuilds exactly.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from ..engine import Announce, InvalidEvent, Said, Utterance, parse_event
from ..engine.said import SAID_TO_SHOWN, reached
from .rows import dump_json, load_json

__all__ = [
    "INSERT_SAID",
    "SAID_TO_SHOWN",
    "backfill",
    "create",
    "entry",
    "latest_said",
    "said_page",
    "said_row",
    "said_rows",
]

_TABLE = """
CREATE TABLE said (  -- seq: the utterance's events.seq (no foreign key: the world's
    world    TEXT NOT NULL REFERENCES worlds(world),  -- tables are purged in name order)
    speaker  TEXT NOT NULL,
    seq      INTEGER NOT NULL CHECK (seq > 0),
    reached  TEXT CHECK (reached IS NULL OR (substr(reached, 1, 1) = '['
                                             AND substr(reached, -1, 1) = ']')),
    PRIMARY KEY (world, speaker, seq)
) WITHOUT ROWID
"""

INSERT_SAID = "INSERT INTO said (world, speaker, seq, reached) VALUES (?,?,?,?)"


def said_row(world: str, seq: int, said: Said) -> tuple[Any, ...]:
    """The row of one utterance logged at ``seq``: who spoke, and whom "everyone" reached."""
    return (world, said.speaker, seq, dump_json(list(said.to)) if said.everyone else None)


def create(conn: sqlite3.Connection) -> None:
    """Migration 0010: the table, filled from every world's log."""
    conn.execute(_TABLE)
    backfill(conn)


def backfill(conn: sqlite3.Connection) -> int:
    """Add the rows a replay would write for every utterance already logged; return how many.

    Events are read in log order per world, tracking the residents known before each one (as
    the engine's reader has them), so an announcement to everyone reaches whom it reached.
    """
    rows: list[tuple[Any, ...]] = []
    for (world,) in conn.execute("SELECT world FROM worlds ORDER BY world").fetchall():
        known: set[str] = set()
        for seq, body in conn.execute(
            "SELECT seq, body FROM events WHERE world = ? ORDER BY seq", (world,)
        ):
            try:
                event = parse_event(load_json(body))
            except InvalidEvent:  # (a logged event always parses; never guess otherwise)
                continue
            if isinstance(event, Utterance):
                everyone = isinstance(event, Announce) and event.audience is None
                to = reached(event, known) if isinstance(event, Announce) else ()
                rows.append((world, event.speaker, seq, dump_json(list(to)) if everyone else None))
            known.update(event.mentioned_residents())
    conn.executemany(INSERT_SAID, rows)
    return len(rows)


def entry(row: sqlite3.Row | tuple[Any, ...]) -> dict[str, Any]:
    """One utterance as the ``said`` query and the narrative see it (from its logged event).

    ``to`` is bounded by :data:`SAID_TO_SHOWN`; ``to_count`` counts everyone told.
    """
    seq, event_id, day, kind, body, reached_text = row
    event: Mapping[str, Any] = load_json(body)
    claim = event.get("claim") or {}
    if reached_text is not None:
        to, everyone = list(load_json(reached_text)), True
    else:
        raw = event.get("listeners") if kind == "say" else event.get("audience")
        to, everyone = (list(raw) if isinstance(raw, list) else []), False
    return {
        "seq": int(seq),
        "event_id": event_id,
        "day": float(day),
        "kind": kind,
        "root": claim.get("root"),
        "value": claim.get("value"),
        "subject": event.get("subject"),
        "topic": event.get("topic"),
        "to": to[:SAID_TO_SHOWN],
        "to_count": len(to),
        "everyone": everyone,
    }


_SELECT = (
    "SELECT s.seq, e.event_id, e.day, e.kind, e.body, s.reached FROM said s "
    "JOIN events e ON e.world = s.world AND e.seq = s.seq "
    "WHERE s.world = ? AND s.speaker = ? "
)


def said_page(
    conn: sqlite3.Connection, world: str, speaker: str, *, start: int = 1, limit: int = 100
) -> list[dict[str, Any]]:
    """Up to ``limit`` things ``speaker`` said, from event seq ``start`` on, in log order: one
    primary-key range scan, each row's event by its own primary key."""
    rows = conn.execute(
        _SELECT + "AND s.seq >= ? ORDER BY s.seq LIMIT ?", (world, speaker, start, limit)
    ).fetchall()
    return [entry(r) for r in rows]


def latest_said(
    conn: sqlite3.Connection, world: str, speaker: str, limit: int
) -> list[dict[str, Any]]:
    """The ``limit`` latest things ``speaker`` said, latest first (the same index, backwards)."""
    rows = conn.execute(_SELECT + "ORDER BY s.seq DESC LIMIT ?", (world, speaker, limit)).fetchall()
    return [entry(r) for r in rows]


def said_rows(
    conn: sqlite3.Connection, world: str, after: tuple[str, int] | None = None, limit: int = -1
) -> list[tuple[Any, ...]] | None:
    """The ``said`` rows of ``world`` in (speaker, seq) order, at most ``limit`` of them after
    ``after`` (for ``rebuild --check``, a page at a time); ``None`` if the database predates
    migration 0010."""
    if not conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'said'"
    ).fetchone():
        return None
    where, params = ("", ()) if after is None else (" AND (speaker, seq) > (?, ?)", after)
    return [
        tuple(r)
        for r in conn.execute(
            f"SELECT speaker, seq, reached FROM said WHERE world = ?{where} "
            "ORDER BY speaker, seq LIMIT ?",
            (world, *params, limit),
        )
    ]
