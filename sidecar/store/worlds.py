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

import hashlib
import os
import shutil
import sqlite3
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, unquote

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
from .store import (
    EventResult,
    Reader,
    ResultStatus,
    StorageFailure,
    StoreError,
    Writer,
    connect,
)

__all__ = [
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

_SUFFIX = ".db"


def world_file(data_dir: Path, world: str) -> Path:
    """The file of ``world`` under ``data_dir``: its id percent-encoded, so any id is safe.

    An id whose encoding would make too long a file name (ids are at most 200 characters,
    but encoding can make them nine times longer) gets ``~`` and a SHA-256 of the id instead;
    the id itself is always inside the file.
    """
    name = quote(world, safe="-_")
    if name.startswith("."):
        name = "%2E" + name[1:]
    if len(name) > 200:
        name = "~" + hashlib.sha256(world.encode()).hexdigest()
    return data_dir / (name + _SUFFIX)


class DataDir:
    """Each world in its own SQLite file under ``data_dir`` (the ``--data-dir`` mode)."""

    def __init__(
        self, data_dir: Path, *, rules: Rules = DEFAULT_RULES, synchronous: str = "FULL"
    ) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        #: An empty, migrated database: what a world without a file yet reads as.
        self.empty_db = self.data_dir / ".empty.db"
        Writer(self.empty_db, rules=rules).close()
        self.rules_default = rules
        self.synchronous = synchronous
        self._files: dict[str, SingleFile] = {}

    def _file(self, world: str) -> SingleFile:
        store = self._files.get(world)
        if store is None:
            store = SingleFile(
                world_file(self.data_dir, world), rules=self.rules_default,
                synchronous=self.synchronous,
            )  # fmt: skip
            self._files[world] = store
        return store

    def _existing(self, world: str) -> SingleFile:
        if not world_file(self.data_dir, world).exists():
            raise WorldNotFound(f"no world {world!r}")
        return self._file(world)

    pipelined = False  # (a batch spans files: DataDir applies it file by file)

    def finish(self) -> None:
        """Nothing is ever in flight here (see :attr:`pipelined`)."""

    def apply(self, batch: Sequence[tuple[str, WorldEvent]]) -> list[EventResult]:
        """Each world's events go to its own file (one transaction per file, in order)."""
        by_world: dict[str, list[tuple[int, WorldEvent]]] = {}
        for i, (world, event) in enumerate(batch):
            by_world.setdefault(world, []).append((i, event))
        out: list[EventResult | None] = [None] * len(batch)
        for world, items in by_world.items():
            try:
                store = self._file(world)
            except (
                StoreError,
                sqlite3.Error,
                OSError,
            ) as exc:  # this world only: refuse its events
                failure = StorageFailure(f"the file of world {world!r} cannot be opened: {exc}")
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
        for store in self._files.values():
            store.close()
        self._files.clear()

    def ensure_world(self, world: str, rules: Rules) -> None:
        self._file(world).ensure_world(world, rules)

    def db_for(self, world: str) -> Path:
        return world_file(self.data_dir, world)

    def world_ids(self) -> list[str]:
        ids = []
        for path in sorted(self.data_dir.glob("*" + _SUFFIX)):
            if path.name.startswith("."):
                continue  # (world files never start with a dot: it is encoded)
            stem = path.name[: -len(_SUFFIX)]
            if stem.startswith("~"):  # a hashed name: the id is inside
                reader = Reader(path)
                try:
                    ids.extend(reader.worlds())
                finally:
                    reader.close()
            else:
                ids.append(unquote(stem))
        return sorted(ids)

    def worlds(self) -> list[WorldInfo]:
        out = []
        for world in self.world_ids():
            store = self._file(world)
            if store.exists(world):
                out.append(store.info(world))
        return out

    def fork(self, source: str, target: str, at: int | None = None) -> WorldInfo:
        src = self._existing(source)
        return self.import_events(target, src.rules(source), src.log(source, at))

    def import_events(self, world: str, rules: Rules, events: Sequence[WorldEvent]) -> WorldInfo:
        if world_file(self.data_dir, world).exists():
            raise WorldsError(f"world {world!r} already exists")
        return self._file(world).import_events(world, rules, events)

    def delete(self, world: str) -> WorldInfo:
        store = self._existing(world)
        info = store.info(world)
        store.close()
        del self._files[world]
        path = world_file(self.data_dir, world)
        for extra in ("", "-wal", "-shm"):
            with _suppress_missing():
                os.remove(f"{path}{extra}")
        return info


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
    sidecar writes: the copy is one committed state)."""
    src = connect(source, synchronous="NORMAL")
    tmp = target.with_name(target.name + ".part")
    with _suppress_missing():
        os.remove(tmp)
    dst = sqlite3.connect(str(tmp))
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()
    shutil.move(tmp, target)
