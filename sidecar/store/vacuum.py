"""Giving a database's free pages back to the file system (``credence vacuum``).

SQLite reuses the pages that a deleted world, a dropped index or a slimmer row freed
(migrations 0025 and 0026 freed more than a tenth of a long game's file), but it never returns
them: the file keeps the largest size it ever had. ``VACUUM`` rewrites the file compactly in
one transaction, so after a failure (a full disk, a kill) the file is as it was. It needs the
file to itself, so it runs under the writer lock that a sidecar serving the file, or its
data directory, holds: refused with one line while one does.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from .errors import DatabaseInUse, StoreError
from .filenames import NameKind
from .lock import WriterLock, data_dir_lock, held, lock_path
from .worlds import named_world_files, world_file

__all__ = ["Vacuumed", "vacuum"]


@dataclass(frozen=True, slots=True)
class Vacuumed:
    """One file compacted: its bytes (file and WAL) before and after."""

    path: Path
    before: int
    after: int


def _size(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def _vacuum_file(path: Path) -> Vacuumed:
    before = _size(path)
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # (the rewrite went through the WAL)
    finally:
        conn.close()
    return Vacuumed(path, before, _size(path))


def vacuum(
    *, db: Path | None = None, data_dir: Path | None = None, world: str | None = None
) -> list[Vacuumed]:
    """Compact the file ``db``, or every world file of ``data_dir`` (only ``world``'s, if
    given), under its writer lock.

    Raises :class:`~.errors.DatabaseInUse` while a sidecar serves it, and
    :class:`~.errors.StoreError` for a file or world that is not there (nothing is changed
    then); a SQLite error (a full disk) leaves the file being rewritten as it was.
    """
    if (db is None) == (data_dir is None):
        raise ValueError("name one database file or one data directory")
    where = db if data_dir is None else data_dir_lock(data_dir)
    assert where is not None
    if data_dir is None and not where.is_file():
        raise StoreError(f"no database at {where}")
    if data_dir is not None and not data_dir.is_dir():
        raise StoreError(f"no data directory at {data_dir}")
    if data_dir is not None and world is not None and not world_file(data_dir, world).is_file():
        raise StoreError(f"no world {world!r} in {data_dir}")
    served = lock_path(data_dir_lock(where.parent))  # (a --db: a served directory's world?)
    if data_dir is None and held(served):
        raise DatabaseInUse(f"{where} is in use: a world file of a data directory a sidecar "
                            f"serves ({served} is held)")  # fmt: skip
    lock = WriterLock(where)
    left = lock_path(where).exists()  # (a lock file this run makes is removed again)
    lock.acquire()
    try:
        if data_dir is None:
            return [_vacuum_file(where)]
        if world is not None:
            return [_vacuum_file(world_file(data_dir, world))]
        return [_vacuum_file(p) for p in _world_files(data_dir)]
    finally:
        if not left:  # (removed while still held: a sidecar starting now makes its own)
            lock_path(where).unlink(missing_ok=True)
        lock.release()


def _world_files(data_dir: Path) -> list[Path]:
    """The world files of a data directory, by name alone: the directory is left as it is (no
    file of its own is made, none renamed), so a file of the earlier naming scheme is one too."""
    return sorted(
        Path(entry.path)
        for entry, parsed in named_world_files(data_dir)
        if parsed.kind is not NameKind.FOREIGN and entry.is_file()
    )
