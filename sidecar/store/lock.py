"""The writer lock: one ``credence serve`` per database file, for the life of the process.

Two writers on one file would each keep their own in-memory counters (``event_seq``,
``change_seq``) and corrupt the world log between them, so the sidecar takes an exclusive
``flock`` on ``<db>.lock`` before it opens the database, and holds it until it stops.
A second ``credence serve`` on the same file is refused at start (:class:`DatabaseInUse`).

Why a lock file and not SQLite's ``locking_mode = EXCLUSIVE``: the exclusive mode would also
shut out the sidecar's own reader connections and every read command (``credence
narrative``, ``rebuild --check``) while the server runs; the lock file stops only a second
writer. ``flock`` locks are released by the kernel when the process dies, even by
``kill -9``, so a stale lock file never blocks a restart. Readers never take the lock.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

from .errors import CannotOpen, DatabaseInUse

try:
    import fcntl
except ImportError:  # pragma: no cover - not Unix: no lock (documented in the README)
    fcntl = None  # type: ignore[assignment]

__all__ = ["WriterLock", "data_dir_lock", "held", "lock_path"]


def lock_path(db: str | Path) -> Path:
    """The lock file of database ``db``: the same path with ``.lock`` appended."""
    db = Path(db)
    return db.with_name(db.name + ".lock")


def data_dir_lock(data_dir: str | Path) -> Path:
    """What a data directory's writer locks (:class:`WriterLock`): one lock for all its world
    files, ``<data_dir>/.credence.lock``; backup and vacuum refuse a world file while it is
    held."""
    return Path(data_dir) / ".credence"


class WriterLock:
    """An exclusive, non-blocking lock on ``<db>.lock``; :meth:`release` (or exit) frees it."""

    def __init__(self, db: str | Path) -> None:
        self.path = lock_path(db)
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`DatabaseInUse` (held) / :class:`CannotOpen`."""
        try:
            f = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - kept open while held
        except OSError as exc:
            raise CannotOpen(f"cannot create the lock file {self.path}: {exc.strerror}") from exc
        if fcntl is not None:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                f.seek(0)
                holder = f.read().strip() or "?"
                f.close()
                raise DatabaseInUse(
                    f"{self.path.with_suffix('')} is in use by another credence serve "
                    f"(pid {holder} holds {self.path})"
                ) from None
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        self._file = f

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing the descriptor drops the flock
            self._file = None

    @property
    def held(self) -> bool:
        return self._file is not None


def held(lock: str | Path) -> bool:
    """Whether a process holds the lock file ``lock`` now (a file that does not exist is not
    held, and is not created: asking leaves nothing behind)."""
    try:
        f = open(lock, encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError:
        return False
    try:
        if fcntl is None:  # pragma: no cover - not Unix
            return False
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
        return False
    finally:
        f.close()
