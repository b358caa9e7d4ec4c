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

An export file is JSON lines: a header ``{"format": "credence-world", "version": 1, "world",
"rules", "events"}``, one canonical event per line (the world log, in order), and a last line
``{"sha256": ...}``, the SHA-256 of every byte before that line. Import checks the whole
file first (:func:`read_export`: line sizes, format, checksum, count, the header's world id and
rules, every event), then replays the events into a new world with the stored rules.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import orjson

from ..engine import (
    DEFAULT_RULES,
    EngineError,
    Rules,
    RulesError,
    WorldEvent,
    parse_event,
    rules_from_stored,
    rules_to_stored,
)
from ..engine.events import MAX_ID_LEN
from .filenames import SUFFIX, NameKind, classify, encode_name
from .lock import held, lock_path
from .pool import Availability, HandlePool, open_failure
from .renames import TOMBSTONE, clear_leftovers, migrate_names, needs_migration
from .store import (
    CannotOpen,
    DatabaseInUse,
    EventResult,
    Reader,
    ResultStatus,
    StorageFailure,
    StoreError,
    Writer,
    connect,
)

__all__ = [
    "DEFAULT_MAX_OPEN_WORLDS",
    "EXPORT_FORMAT",
    "DataDir",
    "SingleFile",
    "WorldInfo",
    "WorldNotFound",
    "WorldStore",
    "WorldsError",
    "backup",
    "check_world_id",
    "export_world",
    "import_world",
    "world_file",
]

EXPORT_FORMAT = "credence-world"
EXPORT_VERSION = 1
REPLAY_BATCH = 500

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

    def fork(self, source: str, target: str, at: int | None = None) -> WorldInfo: ...

    def delete(self, world: str) -> WorldInfo: ...

    def import_events(
        self, world: str, rules: Rules, events: Sequence[WorldEvent]
    ) -> WorldInfo: ...


# --------------------------------------------------------------------------- reading


def _info(reader: Reader, world: str) -> WorldInfo:
    rows = reader._rows("SELECT day, event_seq, change_seq FROM worlds WHERE world = ?", (world,))
    if not rows:
        raise WorldNotFound(f"no world {world!r}")

    def count(table: str) -> int:
        return int(reader._rows(f"SELECT count(*) FROM {table} WHERE world = ?", (world,))[0][0])

    return WorldInfo(
        world, float(rows[0][0]), int(rows[0][1]), int(rows[0][2]),
        count("residents"), count("beliefs"),
    )  # fmt: skip


def _log(reader: Reader, world: str, at: int | None) -> list[WorldEvent]:
    rows = reader._rows(
        "SELECT body FROM events WHERE world = ? AND seq <= ? ORDER BY seq",
        (world, at if at is not None else 2**62),
    )
    return [parse_event(orjson.loads(r[0])) for r in rows]


def _replay(writer: Writer, world: str, rules: Rules, events: Sequence[WorldEvent]) -> None:
    writer.ensure_world(world, rules)
    for i in range(0, len(events), REPLAY_BATCH):
        results = writer.apply([(world, e) for e in events[i : i + REPLAY_BATCH]])
        refused = [r for r in results if r.error is not None]
        if refused:
            raise WorldsError(
                f"event {refused[0].event_id!r} of world {world!r} was refused on replay: "
                f"{refused[0].error}"
            )


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


# --------------------------------------------------------------------------- one file


class SingleFile:
    """Every world in one SQLite file (the ``--db`` mode)."""

    def __init__(
        self, path: Path, *, rules: Rules = DEFAULT_RULES, synchronous: str = "FULL",
        writer: Writer | None = None, pipelined: bool = False,
    ) -> None:  # fmt: skip
        """Open ``path`` (or use ``writer``, already open on it)."""
        self.path = Path(path)
        self.writer = writer or Writer(
            self.path, rules=rules, synchronous=synchronous, pipelined=pipelined
        )
        self._reader: Reader | None = None

    @property
    def pipelined(self) -> bool:
        return self.writer.pipelined

    def start(self, batch: Sequence[tuple[str, WorldEvent]]) -> Future[list[EventResult]]:
        """:meth:`Writer.start`: fold this batch while the previous one commits."""
        return self.writer.start(batch)

    def finish(self) -> None:
        self.writer.finish()

    def pending(self) -> Future[bool] | None:
        return self.writer.pending()

    @property
    def reader(self) -> Reader:
        if self._reader is None:
            self._reader = Reader(self.path)
        return self._reader

    def apply(self, batch: Sequence[tuple[str, WorldEvent]]) -> list[EventResult]:
        return self.writer.apply(batch)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        self.writer.close()

    def ensure_world(self, world: str, rules: Rules) -> None:
        self.writer.ensure_world(world, rules)

    def db_for(self, world: str) -> Path:
        return self.path

    def exists(self, world: str) -> bool:
        return bool(self.reader._rows("SELECT 1 FROM worlds WHERE world = ?", (world,)))

    def info(self, world: str) -> WorldInfo:
        return _info(self.reader, world)

    def worlds(self) -> list[WorldInfo]:
        return [_info(self.reader, w) for w in self.reader.worlds()]

    def rules(self, world: str) -> Rules:
        return self.reader.rules(world)

    def log(self, world: str, at: int | None = None) -> list[WorldEvent]:
        if not self.exists(world):
            raise WorldNotFound(f"no world {world!r}")
        return _log(self.reader, world, at)

    def fork(self, source: str, target: str, at: int | None = None) -> WorldInfo:
        events = self.log(source, at)
        return self.import_events(target, self.rules(source), events)

    def import_events(self, world: str, rules: Rules, events: Sequence[WorldEvent]) -> WorldInfo:
        if self.exists(world):
            raise WorldsError(f"world {world!r} already exists")
        _replay(self.writer, world, rules, events)
        return self.info(world)

    def delete(self, world: str) -> WorldInfo:
        info = self.info(world)
        self.writer.finish()
        conn = self.writer.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for table in _world_tables(conn):
                conn.execute(f"DELETE FROM {table} WHERE world = ?", (world,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        self.writer.forget_world(world)
        return info


# --------------------------------------------------------------------------- one file per world

#: How many world files a data directory keeps open at once, unless told otherwise.
DEFAULT_MAX_OPEN_WORLDS = 64


def world_file(data_dir: Path, world: str) -> Path:
    """The file of ``world`` under ``data_dir`` (see :mod:`.filenames`: readable where it can
    be, never shared with another id, even on a case-insensitive file system)."""
    return data_dir / (encode_name(world) + SUFFIX)


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
            max_open_worlds, self._open_file, SingleFile.close
        )
        self._hashed: dict[str, str] = {}  # hashed file name -> the id inside it
        #: world -> (its files' stat key, its listing entry): what :meth:`worlds` last read.
        #: Kept in ``.credence-worlds`` between runs, so that a restart does not read 10,000
        #: files again for the first listing.
        self._infos: dict[str, tuple[tuple[int, ...], WorldInfo | None]] = _load_listing(
            self.data_dir / _LISTING
        )
        self._listing_lock = threading.Lock()

    def _prepare(self, lock_held: bool) -> None:
        """Clear leftovers and migrate names, under the directory's writer lock (a sidecar
        serving the directory did both when it opened it: then only a migration still to
        do is refused, with :class:`DatabaseInUse`)."""
        from .lock import WriterLock

        lock = None if lock_held else WriterLock(self.data_dir / ".credence")
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
        path = world_file(self.data_dir, world)
        if not path.exists():
            for extra in ("-wal", "-shm"):  # an orphan would be replayed into the new file
                with _suppress_missing():
                    os.remove(f"{path}{extra}")
        return SingleFile(path, rules=self.rules_default, synchronous=self.synchronous)

    def _file(self, world: str) -> SingleFile:
        """``world``'s open file (opened, and another closed, if need be). Raises
        :class:`CannotOpen` with the reason if it cannot be opened; the world is then
        reported unavailable until it opens again."""
        try:
            try:
                store = self._pool.get(world)
            except (StoreError, sqlite3.Error, OSError):
                if not len(self._pool):
                    raise
                self._pool.shrink(len(self._pool) // 2)  # out of handles? give some back, retry
                store = self._pool.get(world)
        except (StoreError, sqlite3.Error, OSError) as exc:
            reason = f"the file of world {world!r} cannot be opened: {open_failure(exc)}"
            self.availability.failed(world, reason)
            log.error("%s", reason)
            raise CannotOpen(reason) from exc
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
        self._pool.discard(world)
        self._infos.pop(world, None)

    def _existing(self, world: str) -> SingleFile:
        if not world_file(self.data_dir, world).exists():
            raise WorldNotFound(f"no world {world!r}")
        return self._file(world)

    pipelined = False  # (a batch spans files: DataDir applies it file by file)

    def finish(self) -> None:
        """Nothing is ever in flight here (see :attr:`pipelined`)."""

    def apply(self, batch: Sequence[tuple[str, WorldEvent]]) -> list[EventResult]:
        """Each world's events go to its own file (one transaction per file, in order).

        A file is only closed to make room between two files' transactions (never one with
        a batch in flight: nothing here is pipelined)."""
        by_world: dict[str, list[tuple[int, WorldEvent]]] = {}
        for i, (world, event) in enumerate(batch):
            by_world.setdefault(world, []).append((i, event))
        out: list[EventResult | None] = [None] * len(batch)
        for world, items in by_world.items():
            try:
                store = self._file(world)
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
        return [r for r in out if r is not None]

    def close(self) -> None:
        self._pool.clear()

    def ensure_world(self, world: str, rules: Rules) -> None:
        self._file(world).ensure_world(world, rules)

    def db_for(self, world: str) -> Path:
        return world_file(self.data_dir, world)

    def world_ids(self) -> list[str]:
        """Every world with a file here, sorted (from the names; a hashed name's id is read
        from inside its file once)."""
        ids = []
        seen = set()
        for entry in os.scandir(self.data_dir):
            name = entry.name
            if not name.endswith(SUFFIX) or name.startswith("."):
                continue
            seen.add(name)
            parsed = classify(name[: -len(SUFFIX)])
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
        """Every world here with its counts; safe on any thread (a reader's, so that listing
        10,000 worlds never holds the writer up). Each file is read on a short-lived
        read-only connection of its own (the pool is left as it was) and its counts are
        remembered until the file or its WAL changes (size, time or inode)."""
        out = []
        ids = self.world_ids()
        gone = set(self._infos) - set(ids)  # (files removed by hand: the cache forgets them)
        for world in gone:
            self._infos.pop(world, None)
        read = len(gone)
        for world in ids:
            hit = self._infos.get(world)
            info = self._listed(world)
            read += hit is None or hit[1] is not info
            if info is not None:
                out.append(info)
        if read:
            self._save_listing()
        return out

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
                with _suppress_missing():
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

    def import_events(self, world: str, rules: Rules, events: Sequence[WorldEvent]) -> WorldInfo:
        if world_file(self.data_dir, world).exists():
            raise WorldsError(f"world {world!r} already exists")
        return self._file(world).import_events(world, rules, events)

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
            with _suppress_missing():
                os.replace(f"{path}{extra}", f"{tomb}{extra}")
        for extra in ("", "-wal", "-shm"):
            with _suppress_missing():
                os.remove(f"{tomb}{extra}")
        self._hashed.pop(path.name, None)
        self._infos.pop(world, None)
        self.availability.opened(world)
        return info


_LISTING = ".credence-worlds"


def _info_unchanged(path: Path, world: str, key: tuple[int, ...]) -> tuple[WorldInfo | None] | None:
    """``world``'s entry read from a file with no WAL as an immutable file (no locks, no WAL
    or shared-memory file made and removed: twice as fast), kept only if the file did not
    change while it was read; ``None`` when that cannot be said (then read it normally)."""
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?immutable=1", uri=True)
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


class _suppress_missing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> bool:
        return kind is not None and issubclass(kind, FileNotFoundError)


# --------------------------------------------------------------------------- export / import


def export_lines(world: str, rules: Rules, events: Sequence[WorldEvent]) -> Iterator[bytes]:
    """The export file's lines (each ending in a newline), the checksum line last."""
    digest = hashlib.sha256()
    header = {
        "format": EXPORT_FORMAT, "version": EXPORT_VERSION, "world": world,
        "rules": rules_to_stored(rules), "events": len(events),
    }  # fmt: skip
    for item in (header, *(e.to_dict() for e in events)):
        line = orjson.dumps(item, option=orjson.OPT_SORT_KEYS) + b"\n"
        digest.update(line)
        yield line
    yield orjson.dumps({"sha256": digest.hexdigest()}) + b"\n"


def export_world(store: SingleFile | DataDir, world: str, out: Path) -> int:
    """Write ``world`` to ``out`` as one portable file; return the number of events."""
    one = store._existing(world) if isinstance(store, DataDir) else store
    events = one.log(world)
    tmp = out.with_name(out.name + ".part")
    with tmp.open("wb") as fh:
        for line in export_lines(world, one.rules(world), events):
            fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(out)
    return len(events)


#: Longest record of an export file (its header, or one event: a frame is at most 64 MiB and
#: a sidecar's default 256 KiB; its canonical JSON a few times that at most).
MAX_EXPORT_LINE = 4 * 1024 * 1024


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


def _export_lines(path: Path) -> list[bytes]:
    """The file's lines (newline kept), each at most :data:`MAX_EXPORT_LINE` bytes."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise WorldsError(f"{path}: {exc.strerror or exc}") from None
    lines: list[bytes] = []
    with fh:
        while line := fh.readline(MAX_EXPORT_LINE + 1):
            if len(line) > MAX_EXPORT_LINE:
                raise WorldsError(
                    f"{path}: line {len(lines) + 1} is longer than {MAX_EXPORT_LINE} bytes: "
                    "not a Credence world export, or a damaged one"
                )
            lines.append(line)
    return lines


def read_export(path: Path) -> tuple[str, Rules, list[WorldEvent]]:
    """Check an export file (format, checksum, count, header, every event) and parse it.

    Every problem is one :class:`WorldsError` line naming the file (and the line, for an
    event): nothing is imported from a file that fails any check.
    """
    lines = _export_lines(path)
    if len(lines) < 2:
        raise WorldsError(f"{path}: not a Credence world export (too short)")
    body, last = lines[:-1], lines[-1]
    try:
        footer, header = orjson.loads(last), orjson.loads(body[0])
    except orjson.JSONDecodeError:
        raise WorldsError(f"{path}: not a Credence world export") from None
    if not isinstance(header, dict) or header.get("format") != EXPORT_FORMAT:
        raise WorldsError(f"{path}: not a Credence world export")
    version = header.get("version")
    if isinstance(version, bool) or version != EXPORT_VERSION:
        raise WorldsError(f"{path}: export version {version!r:.40} is not supported")
    checksum = footer.get("sha256") if isinstance(footer, dict) else None
    if hashlib.sha256(b"".join(body)).hexdigest() != checksum:
        raise WorldsError(f"{path}: checksum does not match: the file is damaged or was edited")
    count = header.get("events")
    if isinstance(count, bool) or count != len(body) - 1:
        raise WorldsError(f"{path}: header says {count!r:.40} events, file holds {len(body) - 1}")
    world = check_world_id(header.get("world"), f"{path}: header world")
    if "rules" not in header:
        raise WorldsError(f"{path}: the header has no rules")
    try:
        rules = rules_from_stored(header["rules"], f"{path}: header rules")
    except RulesError as exc:
        raise WorldsError(str(exc)) from None
    events = []
    seen: dict[str, int] = {}  # event id -> its line (a log never holds an id twice)
    for number, line in enumerate(body[1:], start=2):
        try:
            event = parse_event(orjson.loads(line))
        except orjson.JSONDecodeError:
            raise WorldsError(f"{path}: line {number} is not JSON") from None
        except EngineError as exc:
            raise WorldsError(f"{path}: line {number}: {exc}") from None
        first = seen.setdefault(event.event_id, number)
        if first != number:
            raise WorldsError(
                f"{path}: line {number}: event id {event.event_id!r:.60} is already on line {first}"
            )
        events.append(event)
    return world, rules, events


def import_world(store: SingleFile | DataDir, path: Path, world: str | None = None) -> WorldInfo:
    """Replay an export file into a new world (its own id, or ``world``)."""
    if world is not None:
        check_world_id(world)
    original, rules, events = read_export(path)
    return store.import_events(world or original, rules, events)


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
    for lock in (lock_path(target), target.parent / ".credence.lock"):
        if held(lock):
            raise WorldsError(
                f"{target} is a database a sidecar is serving ({lock} is held): "
                "refusing to overwrite it"
            )
    src = connect(source, synchronous="NORMAL")
    tmp = target.with_name(target.name + ".part")
    with _suppress_missing():
        os.remove(tmp)
    try:
        dst = sqlite3.connect(str(tmp))
        try:
            src.backup(dst)
        finally:
            dst.close()
        os.replace(tmp, target)
    except BaseException:
        with _suppress_missing():
            os.remove(tmp)
        raise
    finally:
        src.close()
