"""Turning a database the writer wrote back into the file an older Credence left.

The writer always migrates a file to the newest schema before it writes, so a test of an old
migration writes its story with today's writer, then undoes the later changes it needs gone
and deletes their records: opening the file again re-runs them, as on an old user's file.
``python -m tools.many_worlds --behind`` makes its world files so, to measure upgrades.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from sidecar.store import MIGRATIONS, migrate

#: The migration that made evidence rows references into the log (``evidence_pieces``,
#: read through the view ``evidence``).
PIECES = "0026_i20_evidence_pieces"


def evidence_table_before_pieces(conn: sqlite3.Connection, *, rowid: bool = False) -> None:
    """Undo migration 0026 on ``conn``: the view's rows (the columns every piece had) go back
    into an ``evidence`` table as 0025 left it, with its indexes; ``rowid``: the table as it
    was before 0006 made it WITHOUT ROWID. Runs in its own transaction."""
    side = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrate(side, upto=[name for name, _ in MIGRATIONS].index(PIECES))
        (table,) = side.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'evidence'"
        ).fetchone()
        indexes = [
            sql
            for (sql,) in side.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'evidence' "
                "AND sql IS NOT NULL ORDER BY name"
            )
        ]
    finally:
        side.close()
    if rowid:
        table = table.rstrip().removesuffix("WITHOUT ROWID").rstrip()
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        re.sub(r'^CREATE TABLE (IF NOT EXISTS )?"?evidence"?', "CREATE TABLE evidence_old", table)
    )
    conn.execute("INSERT INTO evidence_old SELECT * FROM evidence")
    conn.execute("DROP VIEW evidence")
    conn.execute("DROP TABLE evidence_pieces")
    conn.execute("ALTER TABLE evidence_old RENAME TO evidence")
    for sql in indexes:
        conn.execute(sql)
    conn.execute("DELETE FROM _migrations WHERE name = ?", (PIECES,))
    conn.execute("COMMIT")


def before_pieces(path: Path, *, rowid: bool = False) -> None:
    """:func:`evidence_table_before_pieces` on the file at ``path``."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        evidence_table_before_pieces(conn, rowid=rowid)
    finally:
        conn.close()
