"""Bringing a data directory to the current file names (see :mod:`.filenames`), crash-safely.

Run when a :class:`~sidecar.store.DataDir` opens, before any world file is used:

1. leftovers of an interrupted delete or migration are cleared: tombstones
   (``.deleted-<name>``, a delete's first and atomic step), half-made copies
   (``.migrating-<name>``), and WAL/shared-memory files whose database is gone (SQLite would
   replay an orphaned WAL into a new file of the same name: another world's pages);
2. once per directory (until the marker file ``.credence-names`` says it was done), every
   world file is opened and the worlds inside it read, because the earlier scheme could put
   two worlds in one file (a world named ``~`` + SHA-256 of another's long id, or ``Town``
   and ``town`` on a case-insensitive file system); later opens only look at names, for a
   file of the earlier scheme copied in.

A file whose one world has another name now is checkpointed (its WAL folded in and removed,
so the database file is the whole world) and renamed: one atomic step. A file holding several
worlds is split: each world is copied into a temporary file, the other worlds' rows deleted
from the copy, and the copy renamed into place; only when every world has its own file is
the shared one removed (or, if it is one of the worlds' own file, the others' rows deleted
from it). Every step either leaves the old file whole or completes a world's new file, so a
crash at any point leaves a state the next open finishes.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from .connection import connect
from .errors import CannotOpen
from .filenames import SUFFIX, NameKind, classify, encode_name

__all__ = ["MARKER", "TOMBSTONE", "clear_leftovers", "migrate_names", "needs_migration"]

log = logging.getLogger("credence.store")

MARKER = ".credence-names"
MARKER_TEXT = "2\n"
TOMBSTONE = ".deleted-"
_COPY = ".migrating-"
_SIDE = ("-wal", "-shm")


def _remove(path: str | Path) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _remove_db(path: str | Path) -> None:
    """A database and its side files; the database first (it is what makes a world exist)."""
    for extra in ("", *_SIDE):
        _remove(f"{path}{extra}")


def clear_leftovers(data_dir: Path) -> None:
    """Step 1 of the module docstring (cheap: one directory listing)."""
    names = os.listdir(data_dir)
    present = set(names)
    for name in names:
        if name.startswith((TOMBSTONE, _COPY)) or (
            name.startswith(".credence-") and name.endswith(".part")
        ):
            _remove(data_dir / name)
        elif name.endswith(tuple(SUFFIX + s for s in _SIDE)):
            db = name[: -len(_SIDE[0])]
            if db not in present and not db.startswith((TOMBSTONE, _COPY)):
                _remove(data_dir / name)  # an orphan: its database was deleted


def _world_files(data_dir: Path) -> list[Path]:
    names = sorted(n for n in os.listdir(data_dir) if n.endswith(SUFFIX) and n[0] != ".")
    return [data_dir / n for n in names]


def needs_migration(data_dir: Path) -> bool:
    """Whether :func:`migrate_names` has anything to do (no marker, or a file of old name)."""
    if not (data_dir / MARKER).is_file():
        return True
    old = (NameKind.OLD, NameKind.OLD_HASHED)
    names = (n for n in os.listdir(data_dir) if n.endswith(SUFFIX) and n[0] != ".")
    return any(classify(n[: -len(SUFFIX)]).kind in old for n in names)


def _ids_in(path: Path) -> list[str]:
    """The worlds inside ``path``, after folding its WAL in (so the file alone is complete)."""
    try:
        conn = connect(path, synchronous="FULL")
    except sqlite3.Error as exc:
        raise CannotOpen(f"{path}: cannot open it to migrate its name: {exc}") from exc
    try:
        ids = [r[0] for r in conn.execute("SELECT world FROM worlds ORDER BY world")]
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    except sqlite3.Error as exc:
        raise CannotOpen(f"{path}: cannot read it to migrate its name: {exc}") from exc
    finally:
        conn.close()
    if busy:
        raise CannotOpen(f"{path} is in use by another process: cannot migrate its name now")
    return ids


def _holds(path: Path, world: str) -> bool:
    return path.exists() and world in _ids_in(path)


def _copy_one(source: Path, world: str, target: Path, others: list[str]) -> None:
    """``target`` := ``source`` with only ``world``'s rows, made in a temporary file."""
    from .worlds import _world_tables

    tmp = target.with_name(_COPY + target.name)
    _remove_db(tmp)
    src = connect(source, synchronous="FULL")
    dst = sqlite3.connect(str(tmp), isolation_level=None)
    try:
        src.backup(dst)
        dst.execute("BEGIN IMMEDIATE")
        for table in _world_tables(dst):
            for other in others:
                dst.execute(f"DELETE FROM {table} WHERE world = ?", (other,))
        dst.execute("COMMIT")
        dst.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        dst.close()
        src.close()
    os.replace(tmp, target)


def _migrate_file(data_dir: Path, path: Path, target_of: Callable[[str], Path]) -> None:
    stem = path.name[: -len(SUFFIX)]
    parsed = classify(stem)
    try:
        ids = _ids_in(path)
    except CannotOpen as exc:  # a damaged file: its world reports it when it is used
        log.warning("%s; its name is left as it is", exc)
        return
    if not ids:
        if parsed.world is None:
            log.warning("%s holds no world and its name says none: left alone", path)
            return
        ids = [parsed.world]
    if len(ids) == 1:
        target = target_of(ids[0])
        if target.name == path.name:
            return
        if target.exists() and not os.path.samefile(target, path):
            raise CannotOpen(
                f"{path} (world {ids[0]!r}) cannot be renamed to {target.name}: that file exists"
            )
        os.replace(path, target)
        _remove_db_side(path)
        log.info("renamed world file %s to %s", path.name, target.name)
        return
    keeper = next((w for w in ids if _same_name(target_of(w), path)), None)
    for world in ids:
        if world == keeper:
            continue
        target = target_of(world)
        if _holds(target, world):
            continue  # done by an earlier, interrupted run
        if target.exists():
            raise CannotOpen(f"{path}: world {world!r} cannot move to {target.name}: it exists")
        _copy_one(path, world, target, [w for w in ids if w != world])
        log.info("moved world %r out of shared file %s into %s", world, path.name, target.name)
    if keeper is None:
        _remove_db(path)
        return
    from .worlds import _world_tables

    conn = connect(path, synchronous="FULL")
    try:
        conn.execute("BEGIN IMMEDIATE")
        for table in _world_tables(conn):
            for other in ids:
                if other != keeper:
                    conn.execute(f"DELETE FROM {table} WHERE world = ?", (other,))
        conn.execute("COMMIT")
    finally:
        conn.close()
    if path.name != target_of(keeper).name:  # (case-insensitive file system: fix the case)
        os.replace(path, target_of(keeper))


def _remove_db_side(path: Path) -> None:
    for extra in _SIDE:
        _remove(f"{path}{extra}")


def _same_name(a: Path, b: Path) -> bool:
    return a.name == b.name or (a.exists() and b.exists() and os.path.samefile(a, b))


def migrate_names(data_dir: Path) -> None:
    """Step 2 of the module docstring. The caller holds the directory's writer lock."""
    full = not (data_dir / MARKER).is_file()

    def target_of(world: str) -> Path:
        return data_dir / (encode_name(world) + SUFFIX)

    for path in _world_files(data_dir):
        kind = classify(path.name[: -len(SUFFIX)]).kind
        if full or kind in (NameKind.OLD, NameKind.OLD_HASHED):
            _migrate_file(data_dir, path, target_of)
    if full:
        tmp = data_dir / (MARKER + ".part")
        tmp.write_text(MARKER_TEXT, encoding="utf-8")
        os.replace(tmp, data_dir / MARKER)
