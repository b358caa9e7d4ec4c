"""Opening a database file: one connection's settings, and every way a file can be unusable."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .errors import CannotOpen

__all__ = ["connect"]


def connect(path: str | Path, *, synchronous: str = "FULL") -> sqlite3.Connection:
    """Open a connection in autocommit mode (we issue BEGIN/COMMIT ourselves), WAL on."""
    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _open(path: Path, *, synchronous: str) -> sqlite3.Connection:
    """:func:`connect`, with every way the file can be unusable as one :class:`CannotOpen`."""
    if path.is_dir():
        raise CannotOpen(f"{path} is a directory, not a database file")
    try:
        conn = connect(path, synchronous=synchronous)
    except sqlite3.Error as exc:
        raise CannotOpen(f"{path}: not a usable SQLite database: {exc}") from exc
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        conn.close()
        raise CannotOpen(f"{path}: not a usable SQLite database: {exc}") from exc
    return conn
