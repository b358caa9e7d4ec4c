"""Event ids met while checking an export file, with the line each was first met on.

An import refuses a file that repeats an event id, and says on which two lines. Holding every
id of the file to tell that took memory in proportion to the world's history (2,000,000
events: 343 MiB for the check pass), where every other part of a save holds one page. So
the ids are held in a dict only :data:`SEEN_HELD` at a time; each full dict is checked
against those before it, then moved into a temporary SQLite file (deleted when closed, a
few dozen bytes an id on disk) in one ``executemany`` and two statements.

A repeat within the dict is told at once; one of an id an earlier dict held is told when
the dict is moved. Either way :meth:`SeenIds.first_repeat` names the earliest line that
repeats an id, as a single pass holding every id would have.
"""

from __future__ import annotations

import sqlite3

__all__ = ["SEEN_HELD", "SeenIds"]

#: Ids held in memory at a time (~10 MiB for ids of a few dozen characters).
SEEN_HELD = 50_000


class SeenIds:
    """The ids of one file's events in order, and the first line that repeats one."""

    def __init__(self, held: int | None = None) -> None:
        self.held = SEEN_HELD if held is None else held
        self._recent: dict[str, int] = {}
        self._db: sqlite3.Connection | None = None
        #: ``(line, id, first line)`` of the earliest repeat found so far.
        self._repeat: tuple[int, str, int] | None = None

    def add(self, event_id: str, line: int) -> None:
        """Note ``event_id`` on ``line`` (lines come in increasing order)."""
        first = self._recent.setdefault(event_id, line)
        if first != line:
            self._found(line, event_id, first)
        elif len(self._recent) >= self.held:
            self._spill()

    def first_repeat(self) -> tuple[int, str, int] | None:
        """``(line, event id, the line it was first on)`` of the earliest line that repeats
        an id, or None. Call once every id is added."""
        if self._db is not None and self._recent:
            self._spill()
        return self._repeat

    def close(self) -> None:
        if self._db is not None:
            self._db.close()  # (a temporary database's file goes with its connection)
            self._db = None
        self._recent = {}

    def __enter__(self) -> SeenIds:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _found(self, line: int, event_id: str, first: int) -> None:
        if self._repeat is None or line < self._repeat[0]:
            self._repeat = (line, event_id, first)

    def _spill(self) -> None:
        db = self._db
        if db is None:
            # "": a private temporary database on disk (SQLite's temporary directory). The
            # ids are kept as UTF-8 bytes, compared byte for byte (any character, NUL too).
            db = self._db = sqlite3.connect("", isolation_level=None)
            db.execute("PRAGMA journal_mode = OFF")
            db.execute("PRAGMA synchronous = OFF")
            for table in ("seen", "batch"):
                db.execute(
                    f"CREATE TABLE {table} (id BLOB PRIMARY KEY, line INTEGER) WITHOUT ROWID"
                )
        recent, self._recent = self._recent, {}
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO batch (id, line) VALUES (?, ?)",
            ((event_id.encode(), line) for event_id, line in recent.items()),
        )
        for event_id, first in db.execute(
            "SELECT b.id, s.line FROM batch AS b JOIN seen AS s ON s.id = b.id"
        ):
            text = event_id.decode()
            self._found(recent[text], text, first)
        db.execute("INSERT INTO seen SELECT id, line FROM batch WHERE true ON CONFLICT DO NOTHING")
        db.execute("DELETE FROM batch")
        db.execute("COMMIT")
