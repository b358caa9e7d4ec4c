"""Opening a database file: one connection's settings, and every way a file can be unusable."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .errors import CannotOpen

__all__ = ["connect"]

# Binding a parameter that is not exactly an int, float, str or bytearray sends sqlite3
# through its adapter protocol: a registry lookup keyed by a freshly built tuple, then a
# ``__adapt__`` and a ``__conform__`` attribute probe, before it binds the value unchanged.
# ``None`` (NULL) is most of the columns of a change or belief row, so that detour was ~5% of
# the writer's instructions. A registered adapter is found at the first step; ``{}.get`` is a
# C-level one-argument callable that returns ``None`` (NULL, as before), so it costs about as
# much as binding an int. ``bool`` likewise binds through ``int`` (1 or 0, exactly what
# sqlite3 binds it as without an adapter). Process-wide, and the same values as before.
_NO_ENTRIES: dict[object, None] = {}
sqlite3.register_adapter(type(None), _NO_ENTRIES.get)
sqlite3.register_adapter(bool, int)


def connect(
    path: str | Path, *, synchronous: str = "FULL", create: bool = True
) -> sqlite3.Connection:
    """Open a connection in autocommit mode (we issue BEGIN/COMMIT ourselves), WAL on.

    ``create=False`` (readers) never makes a file: a reader racing a delete must not leave
    an empty database where the world's file was."""
    target = str(path) if create else Path(path).resolve().as_uri() + "?mode=rw"
    conn = sqlite3.connect(target, check_same_thread=False, isolation_level=None, uri=not create)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _open(path: Path, *, synchronous: str, create: bool = True) -> sqlite3.Connection:
    """:func:`connect`, with every way the file can be unusable as one :class:`CannotOpen`."""
    if path.is_dir():
        raise CannotOpen(f"{path} is a directory, not a database file")
    if not create and not path.exists():
        raise CannotOpen(f"{path}: no such database file")
    try:
        conn = connect(path, synchronous=synchronous, create=create)
    except sqlite3.Error as exc:
        raise CannotOpen(f"{path}: not a usable SQLite database: {exc}") from exc
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        conn.close()
        raise CannotOpen(f"{path}: not a usable SQLite database: {exc}") from exc
    return conn
