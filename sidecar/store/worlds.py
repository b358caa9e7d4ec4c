"""Worlds as save games: list, fork, export, import and delete; one file or one file per world.

This is a layer above the store's :class:`~sidecar.store.Writer` and
:class:`~sidecar.store.Reader` (it never reaches into their internals):

* :class:`SingleFile` keeps every world in one SQLite file (``credence serve --db``);
* :class:`DataDir` keeps each world in its own SQLite file under a directory
  (``credence serve --data-dir``), so a world can be moved, backed up, or served by another
  process on its own.

Both offer the writer's ``apply``/``close`` (the server's writer service drives them exactly
like a bare ``Writer``) plus the world lifecycle. Every lifecycle operation that writes runs on
the writer's thread, between batches.

A fork replays the source world's log prefix (events with ``seq <= at``) into a new world
with the source's rules: its beliefs are rebuilt, not copied, and its clock is the day of the
last event kept — so the fork may go on from an earlier day than its source reached.

A fork or an import is a *save*, and a save takes effect whole or not at all. It is built
where nothing sees it, in steps of about :data:`SAVE_STEP_SECONDS` (a chunk of events and
one commit each, so the server's writer can serve other worlds' batches in between, see
:class:`Build`), and switched in by one last commit or one rename:

* in one file (:class:`SingleFile`), the new world's rows are written under its own id while a
  row in ``_saves`` names it: every listing and lookup here treats a world named there as
  absent, and the save's last commit deletes that row. (Renaming a hidden world id into place
  would be one commit too, but it rewrites every row and index entry of the world: 2.7 s for
  20,000 events, a stall for every other world.)
* in a data directory (:class:`DataDir`), the new world is replayed into a temporary file
  (``.save-<pid>-<random>.db``), made self-contained (its WAL folded in), fsynced, and
  ``os.replace``d onto the world's file name; then the directory is fsynced.

The server's fork (:meth:`SingleFile.begin_fork`, :meth:`DataDir.begin_fork`) replays in a
worker process (:func:`replay_into_file`) into a temporary file, so neither the server's
writer nor its event loop does the replay (it holds the GIL: replayed on the writer's thread,
even in 20 ms steps, it took another world's ack p99 from ~30 to 120-300 ms on a busy
2-core machine). A data directory then renames the file into place; one file copies the
world's rows in from it (attached) in hidden steps of plain SQL, then commits once.

A save that fails (an event refused midway, a full disk) removes what it built; one killed
midway (kill -9, power loss) leaves rows or a file that the next open of the store removes.
Either way a retry starts from nothing and works.

An export file (one world as one portable file, :mod:`.export`) is imported as a save too.

No save holds a world's history: a fork and an export read the log a page of
:data:`LOG_PAGE` events at a time as they replay or write it (:class:`StoredLog`), and an
import checks the file in one pass and reads it again as it replays
(:class:`~sidecar.store.export.ExportEvents`). A save of a world of
millions of events takes the memory of one page and one chunk.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import multiprocessing
import os
import secrets
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import orjson

from ..engine import (
    DEFAULT_RULES,
    Rules,
    WorldEvent,
    parse_event,
)
from ..engine.events import MAX_ID_LEN
from .connection import connect
from .errors import CannotOpen, DatabaseInUse, SchemaBehind, StorageFailure, StoreError
from .filenames import SUFFIX, NameKind, Parsed, classify, encode_name
from .lock import data_dir_lock, held, lock_path
from .pool import Availability, HandlePool, open_failure
from .reader import Reader
from .renames import TOMBSTONE, clear_leftovers, migrate_names, needs_migration
from .schema import migrate
from .writer import EventResult, ResultStatus, Writer

__all__ = [
    "DEFAULT_MAX_OPEN_WORLDS",
    "SAVE_CHUNK",
    "SAVE_STEP_SECONDS",
    "Build",
    "DataDir",
    "SingleFile",
    "WorldInfo",
    "WorldNotFound",
    "WorldStore",
    "WorldsError",
    "backup",
    "check_world_id",
    "list_worlds",
    "named_world_files",
    "read_source",
    "run_build",
    "world_file",
]

log = logging.getLogger("credence.worlds")

#: How long one step of a save should take: about the longest another world's batch waits
#: behind a save in the server's writer. A step replays as many events as fit (one commit),
#: sized from the last step's cost per event, between 1 and :data:`SAVE_CHUNK` (one town event
#: can cost 1-4 ms: a tick ages every belief it reaches, an announcement reaches everyone).
SAVE_STEP_SECONDS = 0.02
SAVE_CHUNK = 500
_FIRST_CHUNK = 25

log = logging.getLogger("credence.store")


class WorldsError(StoreError):
    """A lifecycle operation that cannot be done (the message says why)."""


class WorldNotFound(WorldsError):
    """No world of that id."""


@dataclass(frozen=True, slots=True)
class WorldInfo:
    world: str
    day: float
    events: int
    changes: int
    residents: int
    beliefs: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "world": self.world, "day": self.day, "events": self.events,
            "changes": self.changes, "residents": self.residents, "beliefs": self.beliefs,
        }  # fmt: skip


class WorldStore(Protocol):
    """What the server needs of a store: the writer's batch API and the world lifecycle."""

    def apply(self, batch: Sequence[tuple[str, WorldEvent]]) -> list[EventResult]: ...

    def close(self) -> None: ...

    def ensure_world(self, world: str, rules: Rules) -> None: ...

    def db_for(self, world: str) -> Path: ...

    def worlds(self) -> list[WorldInfo]: ...

    def worlds_page(
        self, after: str | None = None, limit: int | None = None
    ) -> tuple[list[WorldInfo], str | None]: ...

    def fork(self, source: str, target: str, at: int | None = None) -> WorldInfo: ...

    def delete(self, world: str) -> WorldInfo: ...

    def import_events(
        self, world: str, rules: Rules, events: Iterable[WorldEvent]
    ) -> WorldInfo: ...

    def begin_import(self, world: str, rules: Rules, events: Iterable[WorldEvent]) -> Build: ...

    def begin_fork(self, source: str, target: str, at: int | None = None) -> Build: ...

    def begin_delete(self, world: str) -> Build: ...


class Build(Protocol):
    """A save under way: a new world being built where nothing sees it.

    :meth:`step` until it answers ``True``, then :meth:`commit` (the world appears, whole); on
    any failure, :meth:`abort` (nothing of it is left). Every call runs on the writer's thread
    and each is short, so the server's writer service runs other worlds' batches between them
    (:func:`run_build` runs one through at once: the command line).

    A delete is a build too, but one that is *settled* when begun: its first commit removed
    the world (whole), its :attr:`settled` is the reply, and the steps only tidy its rows
    away; an abort then leaves the rest for the next open. A save's ``settled`` is ``None``.
    """

    world: str
    settled: WorldInfo | None

    def step(self) -> bool:
        """Replay the next chunk of events (one commit); ``True`` once none is left. Raises
        :class:`WorldsError` if the world refuses an event (then :meth:`abort`)."""
        ...

    def commit(self) -> WorldInfo:
        """Switch the built world in (one commit or one rename) and describe it."""
        ...

    def abort(self) -> None:
        """Remove what was built (what cannot be removed now, the next open removes)."""
        ...


def run_build(build: Build) -> WorldInfo:
    """Run a save to its end: whole, or (on any failure, re-raised) not at all."""
    try:
        while not build.step():
            pass
        return build.commit()
    except BaseException:
        build.abort()
        raise


# --------------------------------------------------------------------------- reading


#: A world's entry in a listing: one primary-key lookup of its row, whose counters the
#: schema's triggers keep (migration 0015), so a listing costs the same after a year of game
#: days as after one. The events are the log's last seq (each event takes the next one).
_INFO = (
    "SELECT day, event_seq, change_seq, resident_count, belief_count FROM worlds WHERE world = ?"
)


def _info(reader: Reader, world: str) -> WorldInfo:
    try:
        rows = reader._rows(_INFO, (world,))
    except StoreError as exc:  # a file not migrated yet (a data directory lists files
        if "no such column" not in str(exc):  # it has not opened): count its rows
            raise
        rows = reader._rows(
            "SELECT day, event_seq, change_seq, "
            "(SELECT count(*) FROM residents WHERE world = ?1), "
            "(SELECT count(*) FROM beliefs WHERE world = ?1) FROM worlds WHERE world = ?1",
            (world,),
        )
    if not rows:
        raise WorldNotFound(f"no world {world!r}")
    day, events, changes, residents, beliefs = rows[0]
    return WorldInfo(world, float(day), int(events), int(changes), int(residents), int(beliefs))


def read_source(reader: Reader, world: str, at: int | None) -> tuple[Rules, StoredLog]:
    """What a fork of ``world`` replays: its rules and its log up to ``at`` (read a page at
    a time as the replay goes: see :class:`StoredLog`)."""
    reader._rows("BEGIN")
    try:
        found = reader._rows(
            "SELECT event_seq FROM worlds WHERE world = ? "
            "AND NOT EXISTS (SELECT 1 FROM _saves WHERE world = ?)",
            (world, world),
        )
        if not found:
            raise WorldNotFound(f"no world {world!r}")
        return reader.rules(world), StoredLog(reader, world, _upto(found[0][0], at))
    finally:
        reader._rows("COMMIT")


def list_worlds(
    reader: Reader, after: str | None = None, limit: int | None = None
) -> tuple[list[WorldInfo], str | None]:
    """The worlds of one database file after ``after`` (by id), at most ``limit`` of them
    (every one without), worlds a save is still building left out; and the id to list on
    from (None: no more). A range of the ``worlds`` primary key and a lookup per world
    listed, on any thread's reader: a page of a file of 10,000 worlds reads its page."""
    rows = reader._rows(
        "SELECT world FROM worlds WHERE world > ? "
        "AND NOT EXISTS (SELECT 1 FROM _saves WHERE _saves.world = worlds.world) "
        "ORDER BY world LIMIT ?",
        (after or "", -1 if limit is None else limit + 1),
    )
    ids = [r[0] for r in rows]
    more = limit is not None and len(ids) > limit
    if more:
        ids = ids[:limit]
    return [_info(reader, w) for w in ids], (ids[-1] if more else None)


def _upto(last: int, at: int | None) -> int:
    return last if at is None else max(0, min(last, at))


class Log(Protocol):
    """Events that say how many they are and are read in order (a list, a :class:`StoredLog`,
    an export file's): what an export writes (its header holds the count)."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[WorldEvent]: ...


#: Events read from a stored log at a time (a page: one primary-key range).
LOG_PAGE = 1000


class StoredLog:
    """A world's log up to seq :attr:`upto`, read a page at a time whenever it is iterated,
    so a save of a world of millions of events holds one page of them, not the log. A
    world's events are numbered 1, 2, 3… with no gap, and the ones logged so far never
    change, so the pages need no one snapshot; a page that comes back short (the world was
    deleted meanwhile) raises :class:`WorldNotFound` rather than end the log early."""

    def __init__(self, reader: Reader, world: str, upto: int) -> None:
        self.reader, self.world, self.upto = reader, world, upto

    def __len__(self) -> int:
        return self.upto

    def __iter__(self) -> Iterator[WorldEvent]:
        after = 0
        while after < self.upto:
            rows = self.reader._rows(
                "SELECT body FROM events WHERE world = ? AND seq > ? AND seq <= ? "
                "ORDER BY seq LIMIT ?",
                (self.world, after, self.upto, LOG_PAGE),
            )
            if len(rows) < min(LOG_PAGE, self.upto - after):
                raise WorldNotFound(f"world {self.world!r} was deleted while it was being read")
            for (body,) in rows:
                yield parse_event(orjson.loads(body))
            after += len(rows)


class _Replay:
    """The events of a save, applied a chunk at a time through a writer (one commit each),
    each chunk sized to take about :data:`SAVE_STEP_SECONDS`. The events are taken from
    their iterator as they are applied (a stored log or an export file, read as it goes),
    one ahead, to tell the last chunk."""

    def __init__(self, writer: Writer, world: str, events: Iterable[WorldEvent]) -> None:
        self.writer, self.world = writer, world
        self.events = iter(events)
        self.ahead: WorldEvent | None = next(self.events, None)
        self.done = 0
        self.chunk = _FIRST_CHUNK

    def step(self) -> bool:
        chunk: list[WorldEvent] = []
        while self.ahead is not None and len(chunk) < self.chunk:
            chunk.append(self.ahead)
            self.ahead = next(self.events, None)
        if chunk:
            start = time.perf_counter()
            results = self.writer.apply([(self.world, e) for e in chunk])
            refused = [r for r in results if r.error is not None]
            if refused:
                raise WorldsError(
                    f"event {refused[0].event_id!r} of world {self.world!r} was refused on "
                    f"replay: {refused[0].error}"
                )
            self.done += len(chunk)
            each = (time.perf_counter() - start) / len(chunk)
            self.chunk = max(1, min(SAVE_CHUNK, int(SAVE_STEP_SECONDS / max(each, 1e-6))))
        return self.ahead is None


#: The saves this process is building, as (database file, world) or (temporary file, ""):
#: what a store opening meanwhile must not take for a killed save's leftovers.
_ACTIVE: set[tuple[str, str]] = set()


def _stale(pid: int, key: tuple[str, str]) -> bool:
    """Whether a save recorded by process ``pid`` was left behind (that process is gone, or it
    is this one and no longer building it)."""
    if pid == os.getpid():
        return key not in _ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False


def _fsync(path: Path, *, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _world_tables(conn: sqlite3.Connection) -> list[str]:
    """Every table with a ``world`` column, children before ``worlds`` itself."""
    names = [
        r[0]
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not r[0].startswith(("sqlite_", "_"))
    ]
    tables = [
        n for n in names
        if n != "worlds" and any(c[1] == "world" for c in conn.execute(f"PRAGMA table_info({n})"))
    ]  # fmt: skip
    return [*sorted(tables), "worlds"]


def _claim(store: SingleFile, world: str, key: tuple[str, str]) -> sqlite3.Connection:
    """Start a save of the new world ``world`` in ``store``: the writer idle, the rows a
    failed save left removed, the id checked free and marked active (``key``); the
    writer's connection, for the caller to hide the world in ``_saves``."""
    writer = store.writer
    conn = writer.conn
    if conn.execute("SELECT 1 FROM _saves WHERE world = ?", (world,)).fetchone():
        store._purge(world)  # a failed save's rows that could not be removed then
    if conn.execute("SELECT 1 FROM worlds WHERE world = ?", (world,)).fetchone():
        raise WorldsError(f"world {world!r} already exists")
    _ACTIVE.add(key)
    return conn


class _RowsBuild:
    """A save into a :class:`SingleFile`: rows under the world's id, hidden by ``_saves``."""

    settled: WorldInfo | None = None  # (a save: see Build)

    def __init__(self, store: SingleFile, world: str, rules: Rules, events: Iterable[WorldEvent]):
        self.store, self.world = store, world
        self.key = (str(store.path), world)
        self.finished = False
        writer = store.writer
        conn = _claim(store, world, self.key)
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("INSERT INTO _saves (world, pid) VALUES (?, ?)", (world, os.getpid()))
            writer.ensure_world(world, rules)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            _ACTIVE.discard(self.key)
            raise
        self.replay = _Replay(writer, world, events)

    def step(self) -> bool:
        # A hidden world's commits need no fsync of their own (lost ones are leftovers, like
        # a kill's); the last commit, at the store's level, makes every one of them durable.
        conn = self.store.writer.conn
        conn.execute("PRAGMA synchronous = NORMAL")
        try:
            return self.replay.step()
        finally:
            conn.execute(f"PRAGMA synchronous = {self.store.synchronous}")

    def commit(self) -> WorldInfo:
        # One commit (autocommit): from here on the world is whole and seen.
        self.store.writer.conn.execute("DELETE FROM _saves WHERE world = ?", (self.world,))
        self.finished = True
        _ACTIVE.discard(self.key)
        return self.store.info(self.world)

    def abort(self) -> None:
        if not self.finished:
            self.finished = True
            _purge_hidden(self.store, self.world, self.key)


def _purge_hidden(
    store: SingleFile, world: str, key: tuple[str, str], before: Callable[[], None] | None = None
) -> None:
    """Remove the hidden rows of an abandoned save (after ``before``, e.g. a detach); on a
    failure (a full disk) they stay hidden and the next open removes them."""
    try:
        if before is not None:
            before()
        store._purge(world)
    except (sqlite3.Error, StoreError) as exc:
        log.info("the rows of the failed save of world %r stay hidden until the "
                 "database is next opened: %s", world, exc)  # fmt: skip
    finally:
        _ACTIVE.discard(key)


_COUNTED = ("resident_count", "belief_count")
#: Tables a trigger fills as the rows they count are copied in (``trust_history``, from the
#: ``changes`` rows, migration 0018): copying them too would count twice.
_TRIGGER_FILLED = ("trust_history",)


@dataclass(frozen=True, slots=True)
class _Copy:
    """How one table's rows of a world are copied from the attached ``save`` file: in
    ranges of its primary key after the world (``keys``), each after the key the last one
    ended at: ``world = ? AND (k, …) > (?, …)``, one index range in key order
    (``tests/test_store_plans.py``)."""

    table: str
    columns: list[str]
    values: list[str]  # (what each column is copied as)
    keys: list[str]  # the primary key's columns after ``world`` (none: one row a world)

    def _keys(self) -> str:
        return ", ".join(f'"{k}"' for k in self.keys)

    def _key_is(self, op: str) -> str:
        return f" AND ({self._keys()}) {op} ({', '.join('?' * len(self.keys))})"

    def _order(self) -> str:
        return f" ORDER BY {self._keys()}" if self.keys else ""

    def last_sql(self, after: bool) -> str:
        """The key of the step's last row (``LIMIT 1 OFFSET rows - 1``, after the key the
        previous step ended at), or no row when fewer are left. Only for a table with
        ``keys``."""
        since = self._key_is(">") if after else ""
        return (
            f"SELECT {self._keys()} FROM save.{self.table} WHERE world = ?{since}"
            f"{self._order()} LIMIT 1 OFFSET ?"
        )

    def insert_sql(self, after: bool, *, bounded: bool) -> str:
        """Copy the rows after the previous step's last key (``after``) up to this step's
        (``bounded``), or all that are left."""
        since = self._key_is(">") if after else ""
        upto = self._key_is("<=") if bounded else ""
        columns = ", ".join(f'"{c}"' for c in self.columns)
        return (
            f"INSERT INTO main.{self.table} ({columns}) SELECT {', '.join(self.values)} "
            f"FROM save.{self.table} WHERE world = ?{since}{upto}{self._order()}"
        )


class _Merge:
    """The end of a worker's save into a :class:`SingleFile`: the world's rows copied from
    the worker's file (attached) in steps of plain SQL (SQLite does it without the GIL), each
    one commit of about :data:`SAVE_STEP_SECONDS`, hidden by ``_saves`` until the last.

    Each step is a range of the table's primary key from where the last one ended (a
    keyset: the key of the step's last row is found from the previous one's, at most
    ``rows`` entries along the index), so a step costs what it copies however deep into the
    table it is. (Pages by ``OFFSET`` walked every row copied before again at each step: a
    fork of a 360,000-event world had copied a quarter of its 1.35 GB after 16 minutes, each
    step slower than the last, and other worlds' batches waited behind each.)"""

    settled: WorldInfo | None = None  # (a save: see Build)

    def __init__(self, store: SingleFile, world: str) -> None:
        self.store, self.world = store, world
        self.key = (str(store.path), world)
        self.tmp: Path | None = None
        conn = _claim(store, world, self.key)
        conn.execute("INSERT INTO _saves (world, pid) VALUES (?, ?)", (world, os.getpid()))
        self.attached = False
        self.plan: list[_Copy] = []
        self.table = 0
        self.after: tuple[Any, ...] | None = None  # the key of the last row copied
        self.rows = 500
        self.finished = False

    def _attach(self, conn: sqlite3.Connection) -> None:
        conn.execute("ATTACH DATABASE ? AS save", (str(self.tmp),))
        self.attached = True
        for table in reversed(_world_tables(conn)):  # (the worlds row before what refers to it)
            if table in _TRIGGER_FILLED:
                continue
            info = conn.execute(f"PRAGMA main.table_info({table})").fetchall()
            # The world's counters start at 0: the schema's triggers count its residents and
            # beliefs again as their rows are copied in (the worlds row comes first).
            values = ["0" if table == "worlds" and c[1] in _COUNTED else f'"{c[1]}"' for c in info]
            keys = [c[1] for c in sorted(info, key=lambda c: c[5]) if c[5]]
            assert keys[:1] == ["world"], f"{table}: its primary key starts with its world"
            self.plan.append(_Copy(table, [c[1] for c in info], values, keys[1:]))

    def step(self) -> bool:
        writer = self.store.writer
        conn = writer.conn
        if not self.attached:
            self._attach(conn)
        if self.table >= len(self.plan):
            return True
        copy = self.plan[self.table]
        start = time.perf_counter()
        conn.execute("PRAGMA synchronous = NORMAL")  # (as _RowsBuild.step)
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                at = (self.world, *(self.after or ()))
                after = self.after is not None
                last = None  # (a table of one row a world is copied in one step)
                if copy.keys:
                    last = conn.execute(copy.last_sql(after), (*at, self.rows - 1)).fetchone()
                conn.execute(copy.insert_sql(after, bounded=last is not None),
                             (*at, *(last or ())))  # fmt: skip
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        finally:
            conn.execute(f"PRAGMA synchronous = {self.store.synchronous}")
        if last is None:  # (what was left of the table fitted in this step)
            self.table, self.after = self.table + 1, None
        else:
            self.after = tuple(last)
        took = max(time.perf_counter() - start, 1e-6)
        self.rows = max(100, min(50_000, int(self.rows * SAVE_STEP_SECONDS / took)))
        return self.table >= len(self.plan)

    def _detach(self) -> None:
        if self.attached:
            self.store.writer.conn.execute("DETACH DATABASE save")
            self.attached = False

    def commit(self) -> WorldInfo:
        writer = self.store.writer
        # One commit (autocommit, at the store's level): the world is whole and seen.
        writer.conn.execute("DELETE FROM _saves WHERE world = ?", (self.world,))
        self.finished = True
        _ACTIVE.discard(self.key)
        self._detach()
        writer.forget_world(self.world)  # (loaded afresh from its rows at its next event)
        return self.store.info(self.world)

    def abort(self) -> None:
        if not self.finished:
            self.finished = True
            _purge_hidden(self.store, self.world, self.key, before=self._detach)


class _Purge:
    """A delete in a :class:`SingleFile`, as a :class:`Build` that is *settled* once begun: its
    first commit names the world in ``_saves`` (every listing and lookup then treats it as
    absent: the delete has taken effect, and :attr:`settled` is its reply), each step then
    removes a chunk of its rows in one commit of about :data:`SAVE_STEP_SECONDS`, children
    before the ``worlds`` row, and the last commit frees the id. Until then the id stays
    taken (the server refuses its events with ``world_busy``); an abort removes the rest
    in one transaction, or if even that fails leaves it hidden for the next open to remove,
    as a killed save's rows are."""

    def __init__(self, store: SingleFile, world: str, info: WorldInfo) -> None:
        self.store, self.world, self.info = store, world, info
        self.settled: WorldInfo | None = info
        self.key = (str(store.path), world)
        conn = store.writer.conn
        conn.execute(  # one commit (autocommit): the world is gone from here on
            "INSERT OR REPLACE INTO _saves (world, pid) VALUES (?, ?)", (world, os.getpid())
        )
        _ACTIVE.add(self.key)
        store.writer.forget_world(world)
        self.tables = [  # (each with its primary key: a chunk is a range of it)
            (table, ", ".join(f'"{c[1]}"' for c in sorted(info, key=lambda c: c[5]) if c[5]))
            for table in _world_tables(conn)
            for info in [conn.execute(f"PRAGMA table_info({table})").fetchall()]
        ]
        self.rows = 500
        self.finished = False

    def step(self) -> bool:
        if not self.tables:
            return True
        conn = self.store.writer.conn
        table, keys = self.tables[0]
        start = time.perf_counter()
        conn.execute("PRAGMA synchronous = NORMAL")  # (hidden rows: as _RowsBuild.step)
        try:
            removed = conn.execute(
                f"DELETE FROM {table} WHERE ({keys}) IN "
                f"(SELECT {keys} FROM {table} WHERE world = ? LIMIT ?)",
                (self.world, self.rows),
            ).rowcount
        finally:
            conn.execute(f"PRAGMA synchronous = {self.store.synchronous}")
        if removed < self.rows:
            self.tables.pop(0)
        took = max(time.perf_counter() - start, 1e-6)
        self.rows = max(100, min(50_000, int(self.rows * SAVE_STEP_SECONDS / took)))
        return not self.tables

    def commit(self) -> WorldInfo:
        # One commit (autocommit, at the store's level): every removal is durable, the id free.
        self.store.writer.conn.execute("DELETE FROM _saves WHERE world = ?", (self.world,))
        self.finished = True
        _ACTIVE.discard(self.key)
        self.store.writer.forget_world(self.world)
        return self.info

    def abort(self) -> None:
        if not self.finished:  # (a step failed, or the server stops: the world stays gone)
            self.finished = True
            _purge_hidden(self.store, self.world, self.key)


# --------------------------------------------------------------------------- one file


class SingleFile:
    """Every world in one SQLite file (the ``--db`` mode)."""

    def __init__(
        self, path: Path, *, rules: Rules = DEFAULT_RULES, synchronous: str = "FULL",
        writer: Writer | None = None, upgrade: bool = True, save_files: bool = True,
    ) -> None:  # fmt: skip
        """Open ``path`` (or use ``writer``, already open on it); ``upgrade``: as
        :class:`~sidecar.store.Writer` has it. ``save_files=False``: the temporary files of
        its own saves (``<file>.save-…``) are not looked for beside it: a data directory,
        which never makes them, opens its world files so (listing a directory of 10,000
        files for them took 7.7 ms of every world file's open)."""
        self.path = Path(path)
        self.synchronous = synchronous
        self.writer = writer or Writer(
            self.path, rules=rules, synchronous=synchronous, upgrade=upgrade
        )
        self._reader: Reader | None = None
        self._workers = _Workers()
        self._purge_leftovers(save_files)

    def _purge_leftovers(self, save_files: bool = True) -> None:
        """Remove the rows and files of saves a killed process left (see the module
        docstring)."""
        if save_files:
            _purge_files(self.path.parent, self.path.name)
        conn = self.writer.conn
        for world, pid in conn.execute("SELECT world, pid FROM _saves").fetchall():
            if _stale(int(pid), (str(self.path), world)):
                log.info("removing the unfinished save of world %r in %s", world, self.path)
                self._purge(world)

    def _purge(self, world: str) -> None:
        """Remove every row of ``world`` and its ``_saves`` row, in one transaction."""
        conn = self.writer.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for table in _world_tables(conn):
                conn.execute(f"DELETE FROM {table} WHERE world = ?", (world,))
            conn.execute("DELETE FROM _saves WHERE world = ?", (world,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        finally:
            self.writer.forget_world(world)

    @property
    def reader(self) -> Reader:
        if self._reader is None:
            self._reader = Reader(self.path)
        return self._reader

    def apply(self, batch: Sequence[tuple[str, WorldEvent]]) -> list[EventResult]:
        return self.writer.apply(batch)

    def close(self) -> None:
        self._workers.close()
        if self._reader is not None:
            self._reader.close()
        self.writer.close()

    def ensure_world(self, world: str, rules: Rules) -> None:
        self.writer.ensure_world(world, rules)

    def db_for(self, world: str) -> Path:
        return self.path

    def exists(self, world: str) -> bool:
        return bool(
            self.reader._rows(
                "SELECT 1 FROM worlds WHERE world = ? "
                "AND NOT EXISTS (SELECT 1 FROM _saves WHERE world = ?)",
                (world, world),
            )
        )

    def info(self, world: str) -> WorldInfo:
        return _info(self.reader, world)

    def worlds(self) -> list[WorldInfo]:
        return self.worlds_page()[0]

    def worlds_page(
        self, after: str | None = None, limit: int | None = None
    ) -> tuple[list[WorldInfo], str | None]:
        """A page of :meth:`worlds` (:func:`list_worlds`) and where the next starts."""
        return list_worlds(self.reader, after, limit)

    def rules(self, world: str) -> Rules:
        return self.reader.rules(world)

    def log(self, world: str, at: int | None = None) -> StoredLog:
        """The log of ``world`` up to ``at``, read a page at a time as it is iterated."""
        if not self.exists(world):
            raise WorldNotFound(f"no world {world!r}")
        return StoredLog(self.reader, world, _upto(self.info(world).events, at))

    def fork(self, source: str, target: str, at: int | None = None) -> WorldInfo:
        events = self.log(source, at)
        return self.import_events(target, self.rules(source), events)

    def import_events(self, world: str, rules: Rules, events: Iterable[WorldEvent]) -> WorldInfo:
        return run_build(self.begin_import(world, rules, events))

    def begin_import(self, world: str, rules: Rules, events: Iterable[WorldEvent]) -> Build:
        """Start a save of ``events`` into the new world ``world`` (see :class:`Build`)."""
        return _RowsBuild(self, world, rules, events)

    def begin_fork(self, source: str, target: str, at: int | None = None) -> Build:
        """Start a fork whose replay runs in a worker process into a file of its own (the
        server's way: see :class:`_WorkerBuild`); its rows are then copied in, hidden, in
        steps of plain SQL, and switched in by one commit."""
        if not self.exists(source):
            raise WorldNotFound(f"no world {source!r}")
        merge = _Merge(self, target)  # (refuses a target that exists)
        tmp = _save_file(self.path.parent, self.path.name)
        done = self._workers.submit(
            replay_into_file, str(tmp), None, str(self.path), source, target, at
        )
        merge.tmp = tmp
        return _WorkerBuild(target, tmp, done, merge)

    def delete(self, world: str) -> WorldInfo:
        """Remove ``world`` (see :meth:`begin_delete`), all its rows before returning."""
        return run_build(self.begin_delete(world))

    def begin_delete(self, world: str) -> Build:
        """Start removing ``world``: one commit hides it (from then on it is gone, whole),
        then its rows go in steps of one commit each, so the server's writer serves other
        worlds between them (one transaction took 2.7 s for a 20,000-event world, and every
        other world waited). A crash midway leaves the rows hidden; the next open removes
        them."""
        if not self.exists(world):
            raise WorldNotFound(f"no world {world!r}")
        return _Purge(self, world, self.info(world))


# --------------------------------------------------------------------------- one file per world

#: How many world files a data directory keeps open at once, unless told otherwise.
DEFAULT_MAX_OPEN_WORLDS = 64


def world_file(data_dir: Path, world: str) -> Path:
    """The file of ``world`` under ``data_dir`` (see :mod:`.filenames`: readable where it can
    be, never shared with another id, even on a case-insensitive file system)."""
    return data_dir / (encode_name(world) + SUFFIX)


def named_world_files(data_dir: Path) -> Iterator[tuple[os.DirEntry[str], Parsed]]:
    """The files of ``data_dir`` whose names may be worlds' (``*.db``), with what each name
    says (:func:`.filenames.classify`). A name starting with a dot is never a world's: the
    directory's own files, a save in progress, a tombstone."""
    for entry in os.scandir(data_dir):
        name = entry.name
        if name.endswith(SUFFIX) and not name.startswith("."):
            yield entry, classify(name[: -len(SUFFIX)])


class DataDir:
    """Each world in its own SQLite file under ``data_dir`` (the ``--data-dir`` mode).

    At most ``max_open_worlds`` world files are open at once (a least-recently-used pool on the
    writer's thread; see :mod:`.pool`): a data directory of 10,000 worlds costs the handles
    and memory of that many, not of every world ever used. Opening it first finishes what an
    interrupted delete or migration left, and renames files of the earlier naming scheme
    (:mod:`.renames`): ``lock_held`` says the caller already holds the directory's writer
    lock; otherwise it is taken for the renaming, which is refused while another process
    holds it.
    """

    def __init__(
        self, data_dir: Path, *, rules: Rules = DEFAULT_RULES, synchronous: str = "FULL",
        max_open_worlds: int = DEFAULT_MAX_OPEN_WORLDS, lock_held: bool = False,
    ) -> None:  # fmt: skip
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._prepare(lock_held)
        #: An empty, migrated database: what a world without a file yet reads as.
        self.empty_db = self.data_dir / ".empty.db"
        Writer(self.empty_db, rules=rules).close()
        self.rules_default = rules
        self.synchronous = synchronous
        #: Worlds whose file could not be opened lately (the health check's ``degraded``).
        self.availability = Availability()
        self._pool: HandlePool[str, SingleFile] = HandlePool(
            max_open_worlds, self._open_file, SingleFile.close, self._close_later
        )
        self._hashed: dict[str, str] = {}  # hashed file name -> the id inside it
        #: world -> its file's upgrade to this version's schema, running in the worker
        #: process (or done, not yet taken up by the world's next open): see
        #: :meth:`apply_or_hold`.
        self._upgrades: dict[str, Future[None]] = {}
        #: world -> its file being opened on the opener thread, for the writer to take up
        #: at the world's next batch (see :meth:`apply_or_hold`).
        self._opening: dict[str, Future[SingleFile]] = {}
        self._opener: ThreadPoolExecutor | None = None
        self._closes = 0  # files handed to the opener thread to close, not closed yet
        self._closes_lock = threading.Lock()
        #: world -> (its files' stat key, its listing entry): what :meth:`worlds` last read.
        #: Kept in ``.credence-worlds`` between runs, so that a restart does not read 10,000
        #: files again for the first listing.
        self._infos: dict[str, tuple[tuple[int, ...], WorldInfo | None]] = _load_listing(
            self.data_dir / _LISTING
        )
        self._listing_lock = threading.Lock()
        self._workers: _Workers = _Workers()
        self._purge_leftovers()

    def _prepare(self, lock_held: bool) -> None:
        """Clear leftovers and migrate names, under the directory's writer lock (a sidecar
        serving the directory did both when it opened it: then only a migration still to
        do is refused, with :class:`DatabaseInUse`)."""
        from .lock import WriterLock

        lock = None if lock_held else WriterLock(data_dir_lock(self.data_dir))
        if lock is not None:
            try:
                lock.acquire()
            except DatabaseInUse:
                if needs_migration(self.data_dir):
                    raise
                return
        try:
            clear_leftovers(self.data_dir)
            if needs_migration(self.data_dir):
                migrate_names(self.data_dir)
        finally:
            if lock is not None:
                lock.release()

    @property
    def max_open_worlds(self) -> int:
        return self._pool.limit

    @property
    def open_worlds(self) -> int:
        """How many world files are open now."""
        return len(self._pool)

    def _open_file(self, world: str) -> SingleFile:
        upgrade = self._upgrades.pop(world, None)
        if upgrade is not None:  # (what cannot wait for it elsewhere, a save or a delete, waits)
            upgrade.result()  # (raises its failure: UpgradeFailed)
        return _open_world_file(
            world_file(self.data_dir, world), self.rules_default, self.synchronous
        )

    def _purge_leftovers(self) -> None:
        """Remove the temporary files of saves a killed process left (see the module
        docstring); a live process's (another server's, a running import's) stay."""
        _purge_files(self.data_dir, "")

    def _file(self, world: str) -> SingleFile:
        """``world``'s open file (opened, and another closed, if need be). Raises
        :class:`CannotOpen` with the reason if it cannot be opened; the world is then
        reported unavailable until it opens again."""
        try:
            try:
                store = self._pool.get(world)
            except UpgradeFailed:
                raise  # (not a lack of handles; an upgrade is retried at its next event)
            except (StoreError, sqlite3.Error, OSError):
                if not len(self._pool):
                    raise
                self._pool.shrink(len(self._pool) // 2)  # out of handles? give some back, retry
                store = self._pool.get(world)
        except (StoreError, sqlite3.Error, OSError) as exc:
            raise self._unavailable(world, exc) from exc
        self.availability.opened(world)
        return store

    def _unavailable(self, world: str, exc: BaseException) -> CannotOpen:
        reason = f"the file of world {world!r} cannot be opened: {open_failure(exc)}"
        self.availability.failed(world, reason)
        log.error("%s", reason)
        return CannotOpen(reason)

    def _ready(self, world: str) -> SingleFile | Future[Any]:
        """``world``'s open file, or the future its events wait for: its file being opened
        on the opener thread (started here) or upgraded in the worker process."""
        if world in self._pool:
            self._forget_opening(world)  # (opened here meanwhile: by a save, say)
            return self._file(world)
        upgrade = self._upgrades.get(world)
        if upgrade is not None:
            if not upgrade.done():
                return upgrade
            del self._upgrades[world]
            failed = upgrade.exception()
            if failed is not None:  # (its next event tries again)
                raise self._unavailable(world, failed) from failed
        opening = self._opening.get(world)
        if opening is None:
            # Files opened but not yet taken up count against the pool's limit, and at
            # most a quarter of the limit are opened so at once (more: opened here, as
            # before), so the handles stay bounded.
            limit = self._pool.limit
            if len(self._opening) >= max(1, limit // 4):
                return self._file(world)
            self._pool.shrink(limit - 1 - len(self._opening))
            opening = self._helper().submit(
                _open_world_file, world_file(self.data_dir, world), self.rules_default,
                self.synchronous, upgrade=False,
            )  # fmt: skip
            self._opening[world] = opening
            return opening  # (held even if already open: taken up by its next batch)
        if not opening.done():
            return opening
        del self._opening[world]
        try:
            store = opening.result()
        except SchemaBehind:
            upgrade = self._upgrade(world)
            return upgrade if upgrade is not None else self._file(world)
        except (StoreError, sqlite3.Error, OSError):
            return self._file(world)  # (here, as before: says why, makes room for handles)
        self._pool.put(world, store)
        self.availability.opened(world)
        return store

    @contextlib.contextmanager
    def pinned(self, world: str) -> Iterator[SingleFile]:
        """``world``'s open file, which no other world's use closes until the block ends
        (for an operation that goes on using it while it opens others)."""
        self._file(world)
        with self._pool.pinned(world) as store:
            yield store

    def close_world(self, world: str) -> None:
        """Close ``world``'s file now if it is open (before its file is replaced or removed:
        the next use opens whatever file then has its name)."""
        self._forget_opening(world)
        self._pool.discard(world)
        self._settle()
        self._infos.pop(world, None)

    def _existing(self, world: str) -> SingleFile:
        if not world_file(self.data_dir, world).exists():
            raise WorldNotFound(f"no world {world!r}")
        return self._file(world)

    def apply(self, batch: Sequence[tuple[str, WorldEvent]]) -> list[EventResult]:
        """Each world's events go to its own file (one transaction per file, in order).

        A file is only closed to make room between two files' transactions."""
        return self._apply(batch, hold=False)[1]

    def apply_or_hold(
        self, batch: Sequence[tuple[str, WorldEvent]],
        committed: Callable[[list[int], list[EventResult]], None] | None = None,
    ) -> tuple[dict[str, Future[None]], list[EventResult]]:  # fmt: skip
        """:meth:`apply`, but the events of a world whose file is not open are not
        applied: its file is opened on the opener thread (:meth:`_ready`), or, if an older
        Credence left it, brought to this version's schema in the worker process. Returned
        are those worlds, each with the future that is done when its file is ready (the
        next call takes it up), and the results of the other events, in order.
        ``committed(indices, results)`` is called as each world's transaction commits, with
        the positions in ``batch`` of its events and their results, so they can be acked
        before the next world is written; the worlds whose file is open go first.

        Opening a file costs milliseconds (more for a new world, whose file is made and
        migrated), and a migration can rewrite a whole file (0026: ~2 s for a 50 MiB world);
        done on the writer's thread, each held every other world's acks for that long. The
        server's writer service holds back only that world's events until its future is
        done (:class:`~sidecar.server.writer.WriterService`). Anything else that opens the
        file meanwhile (a save, a delete) opens it itself, or waits for its upgrade."""
        return self._apply(batch, hold=True, committed=committed)

    def _apply(
        self, batch: Sequence[tuple[str, WorldEvent]], *, hold: bool,
        committed: Callable[[list[int], list[EventResult]], None] | None = None,
    ) -> tuple[dict[str, Future[None]], list[EventResult]]:  # fmt: skip
        by_world: dict[str, list[tuple[int, WorldEvent]]] = {}
        for i, (world, event) in enumerate(batch):
            by_world.setdefault(world, []).append((i, event))
        out: list[EventResult | None] = [None] * len(batch)
        held: dict[str, Future[None]] = {}
        pooled = self._pool
        for world, items in sorted(by_world.items(), key=lambda kv: kv[0] not in pooled):
            try:
                ready = self._ready(world) if hold else self._file(world)
                if isinstance(ready, Future):
                    held[world] = ready
                    continue
                store = ready
            except CannotOpen as exc:  # this world only: refuse its events
                failure = StorageFailure(f"{exc}; the event was not stored, retry later")
                for i, event in items:
                    out[i] = EventResult(
                        world, event.event_id, ResultStatus.REJECTED, error=failure
                    )
                continue
            results = store.apply([(world, e) for _, e in items])
            for (i, _), result in zip(items, results, strict=True):
                out[i] = result
            if committed is not None:
                committed([i for i, _ in items], results)
        return held, [r for r in out if r is not None]

    def _upgrade(self, world: str) -> Future[None] | None:
        """Start bringing ``world``'s file to this version's schema in the worker process;
        None if it cannot be started (then the file is migrated as it opens, as before)."""
        path = world_file(self.data_dir, world)
        try:
            future = self._workers.submit(upgrade_file, str(path), self.synchronous)
        except Exception:
            log.exception("the upgrade of world %r could not be started", world)
            return None
        log.info("upgrading the file of world %r to this version's schema", world)
        self._upgrades[world] = future
        return future

    def close(self) -> None:
        self._workers.close()
        for world in list(self._opening):
            self._forget_opening(world)
        self._pool.clear()
        if self._opener is not None:
            self._opener.shutdown(wait=True)  # (after what it still closes)

    def _helper(self) -> ThreadPoolExecutor:
        """The opener thread: opens world files for :meth:`_ready` and closes those the pool
        gives up (a close folds the WAL in: ~2 ms), in order, off the writer's thread."""
        if self._opener is None:
            self._opener = ThreadPoolExecutor(1, thread_name_prefix="credence-opener")
        return self._opener

    def _close_later(self, store: SingleFile) -> None:
        """Close a file the pool gives up on the opener thread; at once here when an
        eighth of the pool's limit are still waiting there (handles stay bounded)."""
        with self._closes_lock:
            waiting = self._closes >= max(1, self._pool.limit // 8)
            if not waiting:
                self._closes += 1
        if waiting:
            store.close()
            return

        def close() -> None:
            try:
                store.close()
            finally:
                with self._closes_lock:
                    self._closes -= 1

        self._helper().submit(close)

    def _settle(self) -> None:
        """Wait until every open and close handed to the opener thread is done (before a
        file is renamed or removed: a closing connection may still fold in its WAL)."""
        if self._opener is not None:
            self._opener.submit(lambda: None).result()

    def _forget_opening(self, world: str) -> None:
        """Drop the file of ``world`` being opened on the opener thread: closed once open."""
        opening = self._opening.pop(world, None)
        if opening is not None:
            opening.add_done_callback(_close_opened)

    def ensure_world(self, world: str, rules: Rules) -> None:
        self._file(world).ensure_world(world, rules)

    def db_for(self, world: str) -> Path:
        return world_file(self.data_dir, world)

    def world_ids(self) -> list[str]:
        """Every world with a file here, sorted (from the names; a hashed name's id is read
        from inside its file once)."""
        ids = []
        seen = set()
        for entry, parsed in named_world_files(self.data_dir):
            name = entry.name
            seen.add(name)
            if parsed.kind is NameKind.PLAIN and parsed.world is not None:
                ids.append(parsed.world)
            elif parsed.kind is NameKind.HASHED:
                world = self._hashed.get(name)
                if world is None:
                    world = self._id_inside(Path(entry.path))
                if world is not None:
                    self._hashed[name] = world
                    ids.append(world)
        for gone in set(self._hashed) - seen:
            self._hashed.pop(gone, None)
        return sorted(ids)

    def _id_inside(self, path: Path) -> str | None:
        try:
            reader = Reader(path)
        except StoreError as exc:
            log.warning("%s", exc)
            return None
        try:
            inside = reader.worlds()
        finally:
            reader.close()
        if len(inside) == 1 and world_file(self.data_dir, inside[0]) == path:
            return inside[0]
        log.warning("%s does not hold the one world its name stands for: skipped", path)
        return None

    def worlds(self) -> list[WorldInfo]:
        """Every world here with its counts (:meth:`worlds_page` without a limit)."""
        return self.worlds_page()[0]

    def worlds_page(
        self, after: str | None = None, limit: int | None = None
    ) -> tuple[list[WorldInfo], str | None]:
        """The worlds here after ``after`` (by id), at most ``limit`` of them, with their
        counts, and the id to list on from (None: no more); safe on any thread (a reader's,
        so that listing 10,000 worlds never holds the writer up). Each file listed is read on
        a short-lived read-only connection of its own (the pool is left as it was) and its
        counts are remembered until the file or its WAL changes (size, time or inode); a
        page reads only its own files."""
        out = []
        every = self.world_ids()
        gone = set(self._infos) - set(every)  # (files removed by hand: the cache forgets them)
        for world in gone:
            self._infos.pop(world, None)
        ids = every[bisect.bisect_right(every, after) :] if after is not None else every
        more = limit is not None and len(ids) > limit
        if limit is not None:
            ids = ids[:limit]
        read = len(gone)
        for world in ids:
            hit = self._infos.get(world)
            info = self._listed(world)
            read += hit is None or hit[1] is not info
            if info is not None:
                out.append(info)
        if read:
            self._save_listing()
        return out, (ids[-1] if more and ids else None)

    def _save_listing(self) -> None:
        """Write what :meth:`worlds` knows to ``.credence-worlds`` (whole, by a rename)."""
        entries = {w: [list(key), None if i is None else i.to_dict()]
                   for w, (key, i) in list(self._infos.items())}  # fmt: skip
        path = self.data_dir / _LISTING
        tmp = path.with_name(f"{path.name}.{threading.get_ident()}.part")
        with self._listing_lock:
            try:
                tmp.write_bytes(orjson.dumps({"version": 1, "worlds": entries}))
                os.replace(tmp, path)
            except OSError as exc:  # only a cache: the next listing reads the files again
                log.warning("cannot save the worlds listing to %s: %s", path, exc)
                with contextlib.suppress(FileNotFoundError):
                    os.remove(tmp)

    def _listed(self, world: str) -> WorldInfo | None:
        path = world_file(self.data_dir, world)
        try:
            key = _stat_key(path)
        except FileNotFoundError:
            return None
        hit = self._infos.get(world)
        if hit is not None and hit[0] == key:
            return hit[1]
        if not any(key[3:]):  # no WAL: the file alone is the world, if nothing writes now
            quick = _info_unchanged(path, world, key)
            if quick is not None:
                self._infos[world] = (key, quick[0])
                return quick[0]
        try:
            reader = Reader(path)
        except StoreError as exc:
            self._unlisted(world, exc)
            return None
        try:
            info: WorldInfo | None = _info(reader, world)
        except WorldNotFound:
            info = None  # a file without its world yet
        except StoreError as exc:
            self._unlisted(world, exc)
            return None
        finally:
            reader.close()
        with contextlib.suppress(FileNotFoundError):
            if _stat_key(path) == key:  # (not written meanwhile: the entry stays true)
                self._infos[world] = (key, info)
        return info

    def _unlisted(self, world: str, exc: BaseException) -> None:
        reason = f"the file of world {world!r} cannot be read: {exc}"
        self.availability.failed(world, reason)
        log.error("%s", reason)

    def fork(self, source: str, target: str, at: int | None = None) -> WorldInfo:
        src = self._existing(source)
        return self.import_events(target, src.rules(source), src.log(source, at))

    def import_events(self, world: str, rules: Rules, events: Iterable[WorldEvent]) -> WorldInfo:
        return run_build(self.begin_import(world, rules, events))

    def begin_import(self, world: str, rules: Rules, events: Iterable[WorldEvent]) -> Build:
        """Start a save of ``events`` into the new world ``world`` (see :class:`Build`)."""
        return _FileBuild(self, world, rules, events)

    def begin_fork(self, source: str, target: str, at: int | None = None) -> Build:
        """Start a fork whose replay runs in a worker process (the server's way: see
        :class:`_WorkerBuild`); its file is renamed into place at the end."""
        src = world_file(self.data_dir, source)
        if not src.exists():
            raise WorldNotFound(f"no world {source!r}")
        if world_file(self.data_dir, target).exists():
            raise WorldsError(f"world {target!r} already exists")
        tmp = _save_file(self.data_dir)
        done = self._workers.submit(
            replay_into_file, str(tmp), str(self.empty_db), str(src), source, target, at
        )
        return _WorkerBuild(target, tmp, done, _Rename(self, target, tmp))

    def _adopt(self, world: str, tmp: Path) -> WorldInfo:
        """Rename the sealed save file ``tmp`` onto ``world``'s file (the switch), fsync the
        directory, and describe the world."""
        final = world_file(self.data_dir, world)
        if final.exists():  # (nothing in this process creates it meanwhile)
            raise WorldsError(f"world {world!r} already exists")
        for extra in ("-wal", "-shm"):  # a deleted world's, never to be read with this file
            with contextlib.suppress(FileNotFoundError):
                os.remove(f"{final}{extra}")
        self.close_world(world)  # (nothing may still read a file of this name)
        os.replace(tmp, final)
        _fsync(self.data_dir, directory=True)
        return self._existing(world).info(world)

    def begin_delete(self, world: str) -> Build:
        """:meth:`delete` as a :class:`Build` (settled at once: a rename is one short step)."""
        return _Deleted(world, self.delete(world))

    def delete(self, world: str) -> WorldInfo:
        """Close ``world``'s file and remove it, and only it: renamed to a tombstone first
        (one atomic step: the world is gone), then removed with its WAL and shared-memory
        files. A tombstone a crash left behind is removed at the next open."""
        store = self._existing(world)
        info = store.info(world)
        others = [w for w in store.reader.worlds() if w != world]
        if others:
            raise WorldsError(
                f"the file of world {world!r} also holds {others[0]!r}: not deleted "
                "(restart the sidecar to migrate the data directory)"
            )
        self.close_world(world)
        path = world_file(self.data_dir, world)
        tomb = path.with_name(TOMBSTONE + path.name)
        os.replace(path, tomb)
        for extra in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.replace(f"{path}{extra}", f"{tomb}{extra}")
        for extra in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(f"{tomb}{extra}")
        self._hashed.pop(path.name, None)
        self._infos.pop(world, None)
        self.availability.opened(world)
        return info


@dataclass(slots=True)
class _Deleted:
    """A delete already done whole (a data directory's): a :class:`Build` with no steps."""

    world: str
    info: WorldInfo
    settled: WorldInfo | None = None

    def __post_init__(self) -> None:
        self.settled = self.info

    def step(self) -> bool:
        return True

    def commit(self) -> WorldInfo:
        return self.info

    def abort(self) -> None:
        pass


_LISTING = ".credence-worlds"


def _info_unchanged(path: Path, world: str, key: tuple[int, ...]) -> tuple[WorldInfo | None] | None:
    """``world``'s entry read from a file with no WAL as an immutable file (no locks, no WAL
    or shared-memory file made and removed: twice as fast), kept only if the file did not
    change while it was read; ``None`` when that cannot be said (then read it normally)."""
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?immutable=1", uri=True)
    except sqlite3.Error:
        return None
    try:
        info: WorldInfo | None = _info(cast(Reader, _Rows(conn)), world)
    except WorldNotFound:
        info = None
    except StoreError:
        return None
    finally:
        conn.close()
    try:
        return (info,) if _stat_key(path) == key else None
    except FileNotFoundError:
        return None


class _Rows:
    """The one method of a :class:`Reader` that :func:`_info` uses, on a bare connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"query failed: {exc}") from exc


def _load_listing(path: Path) -> dict[str, tuple[tuple[int, ...], WorldInfo | None]]:
    """The listing cache :meth:`DataDir._save_listing` wrote, or nothing if it is unreadable
    (it is only a cache: each entry is used only while its file's stat key still matches)."""
    try:
        data = orjson.loads(path.read_bytes())
        out: dict[str, tuple[tuple[int, ...], WorldInfo | None]] = {}
        for world, (key, info) in data["worlds"].items():
            out[world] = (tuple(int(k) for k in key), None if info is None else WorldInfo(**info))
        return out
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        log.warning("ignoring the worlds listing cache %s: %s", path, exc)
        return {}


def _stat_key(path: Path) -> tuple[int, ...]:
    """What changes when a world file is written: the file's and its WAL's inode, size, time."""
    key = []
    for name in (str(path), f"{path}-wal"):
        try:
            st = os.stat(name)
        except FileNotFoundError:
            if name == str(path):
                raise
            st = None
        if st is None or (name != str(path) and not st.st_size):
            key += [0, 0, 0]  # no WAL, or an empty one (as any connection leaves it)
        else:
            key += [st.st_ino, st.st_size, st.st_mtime_ns]
    return tuple(key)


_SAVE_PREFIX = ".save-"


def _purge_files(directory: Path, prefix: str) -> None:
    """Remove the temporary save files ``<prefix>.save-<pid>-<random>.db*`` in ``directory``
    whose process is gone (see :func:`_stale`)."""
    head = prefix + _SAVE_PREFIX
    for path in directory.glob(head + "*"):
        stem = path.name[len(head) :].split(".", 1)[0]
        pid, _, _ = stem.partition("-")
        key = (str(directory / (head + stem + SUFFIX)), "")
        if pid.isdigit() and _stale(int(pid), key):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


class _Rename:
    """The end of a worker's save into a :class:`DataDir`: one rename."""

    settled: WorldInfo | None = None  # (a save: see Build)

    def __init__(self, store: DataDir, world: str, tmp: Path) -> None:
        self.store, self.world, self.tmp = store, world, tmp

    def step(self) -> bool:
        return True

    def commit(self) -> WorldInfo:
        return self.store._adopt(self.world, self.tmp)

    def abort(self) -> None:
        return None


def _copy_empty(empty: Path, target: Path) -> None:
    """Start ``target`` as a copy of the migrated empty database (SQLite's backup API: a
    consistent copy whatever its WAL holds)."""
    if not empty.exists():
        return  # (the Writer then creates and migrates it)
    src = sqlite3.connect(str(empty))
    dst = sqlite3.connect(str(target))
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def _save_file(directory: Path, prefix: str = "") -> Path:
    """A new temporary save file's name: this process's id in it (see :func:`_stale`)."""
    return directory / f"{prefix}{_SAVE_PREFIX}{os.getpid()}-{secrets.token_hex(8)}{SUFFIX}"


def _remove_file(path: Path) -> None:
    for extra in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(f"{path}{extra}")


class _FileBuild:
    """A save into a :class:`DataDir`: a temporary file of its own, renamed into place."""

    settled: WorldInfo | None = None  # (a save: see Build)

    def __init__(
        self, store: DataDir | None, world: str, rules: Rules, events: Iterable[WorldEvent],
        *, tmp: Path | None = None, empty_db: Path | None = None,
    ) -> None:  # fmt: skip
        """Build into ``tmp`` (default: a new name in ``store``'s directory); with no
        ``store`` (a worker process's build, see :func:`replay_into_file`) only up to the
        seal: the caller's store adopts the file."""
        self.store, self.world = store, world
        if store is not None:
            self.final: Path | None = world_file(store.data_dir, world)
            if self.final.exists():
                raise WorldsError(f"world {world!r} already exists")
            empty_db = store.empty_db
        else:
            self.final = None
        self.tmp = tmp if tmp is not None else _save_file(store.data_dir)  # type: ignore[union-attr]
        self.key = (str(self.tmp), "")
        self.finished = False
        self.sealed = False
        _ACTIVE.add(self.key)
        try:
            if empty_db is not None:
                _copy_empty(empty_db, self.tmp)  # (already migrated: no schema work here)
            # No fsync per commit: a lost one only loses this file, which is thrown away.
            self.writer = Writer(self.tmp, rules=rules, synchronous="NORMAL")
            self.writer.ensure_world(world, rules)
        except BaseException:
            self._remove()
            raise
        self.replay = _Replay(self.writer, world, events)

    def step(self) -> bool:
        if not self.replay.step():
            return False
        if not self.sealed:  # one step of its own: the file made whole on its own, on disk
            self.writer.conn.execute("PRAGMA journal_mode = DELETE")  # (folds the WAL in)
            self.writer.close()
            _fsync(self.tmp)
            self.sealed = True
        return True

    def commit(self) -> WorldInfo:
        assert self.sealed and self.store is not None
        info = self.store._adopt(self.world, self.tmp)
        self.finished = True
        _ACTIVE.discard(self.key)
        return info

    def abort(self) -> None:
        if self.finished:
            return
        self.finished = True
        try:
            self.writer.close()
        except (sqlite3.Error, StoreError) as exc:
            log.warning("closing the failed save of world %r: %s", self.world, exc)
        self._remove()

    def _remove(self) -> None:
        _remove_file(self.tmp)
        _ACTIVE.discard(self.key)


def replay_into_file(
    tmp: str, empty_db: str | None, source_db: str, source: str, target: str, at: int | None
) -> None:
    """In a worker process: replay ``source``'s log up to ``at`` (read from ``source_db``
    in one snapshot) as world ``target`` into the new file ``tmp``, sealed (whole on its
    own, on disk); on any failure nothing of ``tmp`` is left. Raises what the save would."""
    reader = Reader(Path(source_db))
    try:
        rules, events = read_source(reader, source, at)
        build = _FileBuild(
            None, target, rules, events, tmp=Path(tmp),
            empty_db=None if empty_db is None else Path(empty_db),
        )  # fmt: skip
        build.replay.chunk = SAVE_CHUNK  # (alone in its process: big chunks, fewer commits)
        try:
            while not build.step():
                build.replay.chunk = SAVE_CHUNK
        except BaseException:
            build.abort()
            raise
    finally:
        reader.close()


def _open_world_file(
    path: Path, rules: Rules, synchronous: str, *, upgrade: bool = True
) -> SingleFile:
    """A data directory's world file, opened (made, for a new world); ``upgrade=False``: a
    file an older Credence left is refused with :class:`SchemaBehind`, not migrated."""
    if not path.exists():
        for extra in ("-wal", "-shm"):  # an orphan would be replayed into the new file
            with contextlib.suppress(FileNotFoundError):
                os.remove(f"{path}{extra}")
    return SingleFile(path, rules=rules, synchronous=synchronous, upgrade=upgrade, save_files=False)


def _close_opened(opening: Future[SingleFile]) -> None:
    if not opening.cancelled() and opening.exception() is None:
        opening.result().close()


class UpgradeFailed(CannotOpen):
    """A world file's upgrade to this version's schema (:func:`upgrade_file`) failed."""


def upgrade_file(path: str, synchronous: str) -> None:
    """In a worker process: apply to the database at ``path`` every migration it lacks, each
    in a transaction of its own (killed midway, the file is left whole at the last one done,
    and its next open goes on from there). Raises :class:`UpgradeFailed` with the reason."""
    try:
        conn = connect(Path(path), synchronous=synchronous, create=False)
        try:
            migrate(conn)
        finally:
            conn.close()
    except Exception as exc:
        raise UpgradeFailed(
            f"its upgrade to this version's schema failed: {open_failure(exc)}"
        ) from None


class _WorkerBuild:
    """A save whose replay runs in a worker process (:func:`replay_into_file`), so the
    server's writer thread and event loop do no part of it but the switch: it holds neither
    the GIL nor the writer. :attr:`elsewhere` is done once the file is built; then
    :meth:`step` reports it (or raises the worker's error); the store's ``adopt`` finishes."""

    settled: WorldInfo | None = None  # (a save: see Build)

    def __init__(self, world: str, tmp: Path, elsewhere: Future[None], adopt: Any) -> None:
        self.world, self.tmp, self.elsewhere = world, tmp, elsewhere
        self._adopt = adopt  # (the store's: SingleFile merges in steps, DataDir renames)
        self.key = (str(tmp), "")
        self.finished = False
        _ACTIVE.add(self.key)

    def step(self) -> bool:
        if not self.elsewhere.done():
            return False
        self.elsewhere.result()  # (raises the worker's error)
        return bool(self._adopt.step())

    def commit(self) -> WorldInfo:
        info: WorldInfo = self._adopt.commit()
        self.finished = True
        _ACTIVE.discard(self.key)
        _remove_file(self.tmp)
        return info

    def abort(self) -> None:
        if self.finished:
            return
        self.finished = True
        self.elsewhere.cancel()
        try:
            self._adopt.abort()
        finally:
            _remove_file(self.tmp)  # (a worker still writing writes to an unlinked file)
            _ACTIVE.discard(self.key)


def _die_with_parent(parent: int) -> None:
    """In a worker: end with the process that started it (Linux), so a sidecar killed
    midway through a fork leaves no worker writing on (its file is then removed)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return  # (not Linux: an orphaned worker finishes its file, removed at next open)
    if os.getppid() != parent:  # (it died before that took effect)
        os._exit(1)


class _Workers:
    """One worker process for the saves of a store, started on first use (``spawn``: the
    server's threads are not forked), stopped with the store."""

    def __init__(self) -> None:
        self.pool: ProcessPoolExecutor | None = None

    def submit(self, fn: Callable[..., None], *args: Any) -> Future[None]:
        if self.pool is not None:
            try:
                return self.pool.submit(fn, *args)
            except BrokenProcessPool:  # (its worker died: a new one for what comes next)
                self.pool.shutdown(wait=False)
        self.pool = ProcessPoolExecutor(
            1, mp_context=multiprocessing.get_context("spawn"),
            initializer=_die_with_parent, initargs=(os.getpid(),),
        )  # fmt: skip
        return self.pool.submit(fn, *args)

    def close(self) -> None:
        pool, self.pool = self.pool, None
        if pool is None:
            return
        # A save still building is abandoned (its file is removed by whoever opens the store
        # next): stop the worker rather than wait for it.
        for process in list(getattr(pool, "_processes", {}).values()):
            process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)


def check_world_id(world: object, what: str = "world id") -> str:
    """A world id by the ``hello`` rule (SPEC §5): a string of 1 to 200 characters. Worlds
    made any other way (an import, a fork) could never be named by a client."""
    if not isinstance(world, str) or not 0 < len(world) <= MAX_ID_LEN:
        shown = repr(world) if len(repr(world)) <= 60 else repr(world)[:57] + "..."
        raise WorldsError(
            f"{what} must be a string of 1 to {MAX_ID_LEN} characters (what hello accepts), "
            f"not {shown}"
        )
    return world


def backup(source: Path, target: Path) -> None:
    """Copy a live SQLite file consistently with SQLite's online backup API (safe while the
    sidecar writes: the copy is one committed state).

    Refuses (:class:`WorldsError`, nothing written) a target that is the source itself (also
    through a symlink or a hard link) or a database a sidecar serves: one whose writer lock
    (``<target>.lock``, or its data directory's ``.credence.lock``) is held. The copy is
    written to ``<target>.part`` and renamed over the target once complete; on failure the
    part is removed.
    """
    if target.is_dir():
        raise WorldsError(f"{target} is a directory: name the file to write")
    if target.exists() and os.path.samefile(source, target):
        raise WorldsError(f"{target} is the database being copied: choose another file")
    for lock in (lock_path(target), lock_path(data_dir_lock(target.parent))):
        if held(lock):
            raise WorldsError(
                f"{target} is a database a sidecar is serving ({lock} is held): "
                "refusing to overwrite it"
            )
    src = connect(source, synchronous="NORMAL")
    tmp = target.with_name(target.name + ".part")
    with contextlib.suppress(FileNotFoundError):
        os.remove(tmp)
    try:
        dst = sqlite3.connect(str(tmp))
        try:
            src.backup(dst)
        finally:
            dst.close()
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
    finally:
        src.close()
