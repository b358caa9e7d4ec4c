"""The embedded SQLite store: one writer with group commit, and readers beside it.

:class:`Writer` is the only code that writes. :meth:`Writer.apply` takes a batch of world
events, runs each through the engine's :func:`~sidecar.engine.ingest` inside one
transaction — folded in Python first, then written with one ``executemany`` per table; a bad
event is refused whole while the rest commit (if SQLite itself refuses a row, the batch is
redone with a savepoint per event to find which) — commits once, and only then returns.
Whatever it returns is durable: that return is the commit boundary the server waits on
before it acknowledges.

:class:`Reader` answers queries on its own connection; WAL lets it read while the writer
writes. Raw ``sqlite3`` errors do not leave this module: they become :class:`StoreError`.

Exception tree::

    StoreError
     ├── CannotOpen         the file is not a usable database (corrupt, a directory,
     │                      read-only for a writer, missing for a reader)
     ├── SchemaTooNew       the database was written by a newer Credence
     ├── DatabaseInUse      another process holds the database's writer lock
     ├── StorageFailure     SQLite refused a write we believed valid (a bug or a full disk)
     └── ApplyFailure       one event raised an unexpected error (a bug); it alone is refused
"""

from __future__ import annotations

import dataclasses
import logging
import math
import operator
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from ..engine import (
    DEFAULT_RULES,
    Belief,
    Change,
    EngineError,
    Evidence,
    Intervention,
    Outcome,
    Relation,
    RootSchema,
    Rules,
    RulesError,
    SourceKind,
    State,
    WorldEvent,
    ingest,
    parse_event,
    parse_schema,
    rules_from_stored,
    rules_to_stored,
)
from .rows import (
    BELIEF_COLUMNS,
    CHANGE_COLUMNS,
    belief_from_row,
    belief_to_row,
    change_from_row,
    change_to_row,
    dump_json,
    dump_json_list,
    load_json,
)
from .schema import migrate, unknown_migrations

log = logging.getLogger("credence.store")

__all__ = [
    "ApplyFailure",
    "BeliefFilter",
    "CannotOpen",
    "DatabaseInUse",
    "EventResult",
    "Reader",
    "ResultStatus",
    "SchemaTooNew",
    "StorageFailure",
    "StoreError",
    "WorldRulesInvalid",
    "Writer",
    "connect",
]


class StoreError(Exception):
    """Base of the store's own errors."""


class CannotOpen(StoreError):
    """The file cannot be opened as a Credence database (corrupt, a directory, read-only)."""


class SchemaTooNew(StoreError):
    """The database holds migrations this version does not know."""


class DatabaseInUse(StoreError):
    """Another process (a second ``credence serve``) holds the database's writer lock."""


class WorldRulesInvalid(CannotOpen):
    """A world's stored rules fail the rules' checks (a damaged or hand-edited database): that
    world refuses to open, with this one line; every other world is served as usual."""

    code = "internal_error"


def stored_rules(world: str, text: str | bytes) -> Rules:
    """A world's rules from its row, checked like every other source of rules."""
    try:
        return rules_from_stored(load_json(text), f"world {world!r:.60}: stored rules")
    except (RulesError, ValueError) as exc:  # (ValueError: the JSON itself is damaged)
        raise WorldRulesInvalid(f"{exc}; the world cannot be opened") from None


class StorageFailure(StoreError):
    """SQLite refused a write: an engine bug caught by a CHECK, or the disk failed."""

    code = "internal_error"


class ApplyFailure(StoreError):
    """Applying one event raised an unexpected exception (a bug): that event alone is refused."""

    code = "internal_error"


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


class ResultStatus(StrEnum):
    APPLIED = "applied"
    DUPLICATE = "duplicate"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True)
class EventResult:
    """What became of one event of a batch. ``changes`` carry their committed ``seq``."""

    world: str
    event_id: str
    status: ResultStatus
    changes: tuple[Change, ...] = ()
    error: EngineError | StoreError | None = None
    #: Per-edit verdicts, for a ``propose`` event.
    results: tuple[dict[str, Any], ...] = ()
    #: Warnings for the ack (a root the world's schema does not declare).
    warnings: tuple[str, ...] = ()


@dataclass(slots=True)
class _WorldState:
    """The writer's cached copy of one world's row and resident set."""

    day: float
    event_seq: int
    change_seq: int
    rules: Rules
    residents: set[str] = field(default_factory=set)
    schema: RootSchema | None = None  # the world's root schema, once loaded
    schema_loaded: bool = False


_MISSING: Any = object()

#: Float columns of a belief (SQLite REAL): what a row read back gives for them.
_REAL_FIELDS = ("formed_day", "updated_day", "last_evidence_day", "value_since")
_NULLABLE_REAL_FIELDS = ("next_decay_day", "decay_period", "importance", "remembered_day")
_TUPLE_FIELDS = ("people", "places", "topics", "evidence_refs", "heard_from", "origins", "hops")
_reals = operator.attrgetter(*_REAL_FIELDS)
_nullable_reals = operator.attrgetter(*_NULLABLE_REAL_FIELDS)
_tuples = operator.attrgetter(*_TUPLE_FIELDS)
_copysign = math.copysign


def _real(x: object) -> bool:
    """``x`` is a float that SQLite's REAL column gives back unchanged (no NaN, no -0.0)."""
    if type(x) is not float:  # exactly a float, no subclass
        return False
    return x == x and (x != 0.0 or _copysign(1.0, x) > 0)


def _as_read(b: Belief) -> bool:
    """Whether ``b`` is exactly what reading its stored row back would give (then it may be
    cached in place of that read). Engine output always is; anything unusual (an int day,
    a list, a raw string state) is simply not cached, and is read back from SQLite.
    (Called for every belief the writer stores: kept to plain type tests.)"""
    if type(b.confidence) is not int or type(b.state) is not State:
        return False
    if type(b.source_kind) is not SourceKind or type(b.subject) is not str:
        return False
    if b.intervention is not None and type(b.intervention) is not Intervention:
        return False
    if b.interpretation is not None and type(b.interpretation) is not str:
        return False
    if b.source_resident_id is not None and type(b.source_resident_id) is not str:
        return False
    if type(b.value) not in (str, int, bool):
        return False
    for x in _reals(b):
        if type(x) is not float or x != x or (x == 0.0 and _copysign(1.0, x) < 0):
            return False
    for x in _nullable_reals(b):
        if x is not None and (
            type(x) is not float or x != x or (x == 0.0 and _copysign(1.0, x) < 0)
        ):
            return False
    for t in _tuples(b):  # noqa: SIM110 (a loop: no generator object per belief)
        if type(t) is not tuple:
            return False
    return True


def _weight(b: Belief | None) -> int:
    """A belief's share of the cache budget (see :data:`CACHE_BUDGET`)."""
    if b is None:
        return 2
    return 8 + len(b.evidence_refs) + len(b.heard_from) + len(b.origins) + len(b.hops)


class _Cache:
    """Bounded write-through copies of stored beliefs and trust values, for every world.

    Holds only what SQLite holds *committed or written in the open batch by an event that
    was released*: an entry is filled from a read, or after an event's savepoint is released
    with exactly what was written (a value that would not read back identically is dropped
    instead). A batch that fails clears everything; so does a commit by another connection
    (``PRAGMA data_version``). Bounded by a weight budget (:data:`CACHE_BUDGET`), trimmed
    oldest-first between batches, so memory does not grow with the number of beliefs.

    A world is *complete* while the cache holds every belief and trust row it has: seen empty
    when the writer first loaded it, and nothing of it dropped or evicted since. For a complete
    world a key the cache lacks is known to be absent, without a read.
    """

    def __init__(self, budget: int, trust_limit: int) -> None:
        self.budget = budget
        self.trust_limit = trust_limit
        self.beliefs: dict[tuple[str, str, str], Belief | None] = {}
        self.trust: dict[tuple[str, str, str, str], float | None] = {}
        self.weight = 0
        self.complete: set[str] = set()

    def clear(self) -> None:
        self.beliefs.clear()
        self.trust.clear()
        self.weight = 0
        self.complete.clear()

    def put_belief(self, key: tuple[str, str, str], belief: Belief | None) -> None:
        old = self.beliefs.pop(key, _MISSING)
        if old is not _MISSING:
            self.weight -= _weight(old)
        w = _weight(belief)
        if w * 64 > self.budget:  # one huge belief: not worth a slot
            self.complete.discard(key[0])
            return
        self.beliefs[key] = belief  # (re)inserted last: written entries live longest
        self.weight += w

    def drop_belief(self, key: tuple[str, str, str]) -> None:
        self.complete.discard(key[0])
        old = self.beliefs.pop(key, _MISSING)
        if old is not _MISSING:
            self.weight -= _weight(old)

    def drop_trust(self, key: tuple[str, str, str, str]) -> None:
        self.complete.discard(key[0])
        self.trust.pop(key, None)

    def put_trust(self, key: tuple[str, str, str, str], value: float | None) -> None:
        self.trust.pop(key, None)
        self.trust[key] = value

    def trim(self) -> None:
        """Forget the oldest entries once over budget (down to three quarters of it)."""
        if self.weight > self.budget:
            keep = self.budget * 3 // 4
            items = list(self.beliefs.items())
            cut = 0
            while self.weight > keep and cut < len(items):
                self.weight -= _weight(items[cut][1])
                cut += 1
            self.beliefs = dict(items[cut:])
            self.complete.clear()
        if len(self.trust) > self.trust_limit:
            items_t = list(self.trust.items())
            self.trust = dict(items_t[len(items_t) - self.trust_limit * 3 // 4 :])
            self.complete.clear()


class _Batch:
    """One batch's writes, held in Python until they go to SQLite together.

    The engine reads through it first (beliefs and trust values written by earlier events
    of the batch), then the cache, then SQLite. Each belief and trust value is kept in its
    last version only, so it is written once per batch however many events touched it.
    """

    __slots__ = ("beliefs", "changes", "due", "event_ids", "events", "evidence", "facts",
                 "residents", "swept", "trust")  # fmt: skip

    def __init__(self) -> None:
        self.beliefs: dict[tuple[str, str, str], Belief] = {}
        #: Per world, the staged beliefs that have an aging day (what due_beliefs adds).
        self.due: dict[str, dict[tuple[str, str, str], Belief]] = {}
        #: Per world, the latest day an applied event of the batch swept for due beliefs.
        self.swept: dict[str, float] = {}
        self.trust: dict[tuple[str, str, str, str], float] = {}
        self.facts: dict[tuple[str, str], str] = {}
        self.event_ids: set[tuple[str, str]] = set()
        self.events: list[tuple[Any, ...]] = []
        self.residents: list[tuple[str, str]] = []
        self.evidence: list[tuple[Any, ...]] = []
        self.changes: list[tuple[Any, ...]] = []


class _Fallback(Exception):
    """The batched path met something only the event-by-event path decides exactly."""


def _due_order(b: Belief) -> tuple[float, str, str]:
    return (b.next_decay_day, b.resident, b.root)  # type: ignore[return-value]


class _View:
    """The engine's read access to one world, over the writer's open transaction: the
    batch's own writes first (batched path), then the cache, then SQLite."""

    def __init__(
        self, conn: sqlite3.Connection, world: str, state: _WorldState, cache: _Cache | None,
        batch: _Batch | None = None,
    ) -> None:  # fmt: skip
        self.conn, self.world, self.state, self.cache = conn, world, state, cache
        self.batch = batch
        #: The day this view swept for due beliefs (batched path; kept if the event applies).
        self.swept: float | None = None

    def get_belief(self, resident: str, root: str) -> Belief | None:
        batch = self.batch
        if batch is not None:
            staged = batch.beliefs.get((self.world, resident, root))
            if staged is not None:
                return staged
        cache = self.cache
        if cache is not None:
            key = (self.world, resident, root)
            found = cache.beliefs.get(key, _MISSING)
            if found is not _MISSING:
                return found  # type: ignore[no-any-return]
            if self.world in cache.complete:
                return None
        row = self.conn.execute(
            "SELECT * FROM beliefs WHERE world = ? AND resident = ? AND root = ?",
            (self.world, resident, root),
        ).fetchone()
        belief = None if row is None else belief_from_row(row)
        if cache is not None:
            cache.put_belief(key, belief)
        return belief

    def due_beliefs(self, day: float) -> Iterator[Belief]:
        batch = self.batch
        swept = None if batch is None else batch.swept.get(self.world)
        if swept is None:
            rows = self.conn.execute(_DUE, (self.world, day)).fetchall()
        else:
            rows = self.conn.execute(_DUE_AFTER, (self.world, swept, day)).fetchall()
        if batch is None:
            return (self._stored(row) for row in rows)
        self.swept = day
        # Stored rows the batch has not rewritten, and the batch's own beliefs now due.
        # Stored rows due by an earlier sweep of this batch are not read again: that sweep's
        # event aged them (staged, so they are in ``pending`` if still due) or found nothing
        # to age in them (and would find nothing again), just as the event-by-event path
        # sees them once rewritten or not at all.
        world, staged = self.world, batch.beliefs
        due = [
            self._stored(row) for row in rows
            if (world, row["resident"], row["root"]) not in staged
        ]  # fmt: skip
        pending = batch.due.get(world)
        if pending:
            due += [b for b in pending.values() if b.next_decay_day <= day]  # type: ignore[operator]
            due.sort(key=_due_order)
        return iter(due)

    def _stored(self, row: sqlite3.Row) -> Belief:
        """The belief of a stored row: the cache's copy when it has one (the same value, and
        no conversion), else the row converted (and cached)."""
        cache = self.cache
        if cache is None:
            return belief_from_row(row)
        key = (self.world, row["resident"], row["root"])
        found = cache.beliefs.get(key)
        if found is not None:
            return found
        belief = belief_from_row(row)
        cache.put_belief(key, belief)
        return belief

    def is_known(self, resident: str) -> bool:
        return resident in self.state.residents

    def get_schema(self) -> RootSchema | None:
        """The world's root schema (read once per world, then kept with its state)."""
        state = self.state
        if not state.schema_loaded:
            try:
                row = self.conn.execute(
                    "SELECT body FROM world_schema WHERE world = ?", (self.world,)
                ).fetchone()
            except sqlite3.OperationalError:  # no such table: migration 0005 marked, not run
                row = None
            state.schema = None if row is None else parse_schema(load_json(row[0]))
            state.schema_loaded = True
        return state.schema

    def get_trust(self, resident: str, source: str, topic: str) -> float | None:
        batch = self.batch
        if batch is not None:
            staged = batch.trust.get((self.world, resident, source, topic))
            if staged is not None:
                return staged
        cache = self.cache
        if cache is not None:
            key = (self.world, resident, source, topic)
            found = cache.trust.get(key, _MISSING)
            if found is not _MISSING:
                return found  # type: ignore[no-any-return]
            if self.world in cache.complete:
                return None
        row = self.conn.execute(
            "SELECT value FROM trust WHERE world = ? AND resident = ? AND source = ? AND topic = ?",
            (self.world, resident, source, topic),
        ).fetchone()
        value = None if row is None else float(row[0])
        if cache is not None:
            cache.put_trust(key, value)
        return value

    def known_residents(self) -> list[str]:
        return sorted(self.state.residents)

    def registered_names(self) -> dict[str, dict[str, str]]:
        """Read for a proposal only (rare): a register forces its batch onto the per-event
        path, so this transaction's own registrations are already in the table."""
        rows = self.conn.execute(
            "SELECT resident, names FROM residents WHERE world = ? AND names IS NOT NULL",
            (self.world,),
        ).fetchall()
        return {str(r[0]): load_json(r[1]) for r in rows}


_INSERT_BELIEF = (
    f"INSERT OR REPLACE INTO beliefs ({', '.join(BELIEF_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(BELIEF_COLUMNS))})"
)
# The same row as an upsert: an existing belief is updated in place (its root index entry
# stays put) instead of deleted and re-inserted. The stored row is the same; REPLACE differs
# only for a NULL in a NOT NULL column with a default, which only value_since could be
# handed (every other such column gets JSON text), and then _INSERT_BELIEF is used.
_UPSERT_BELIEF = (
    f"INSERT INTO beliefs ({', '.join(BELIEF_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(BELIEF_COLUMNS))}) "
    "ON CONFLICT (world, resident, root) DO UPDATE SET "
    + ", ".join(
        f"{c} = excluded.{c}" for c in BELIEF_COLUMNS if c not in ("world", "resident", "root")
    )
)
_VALUE_SINCE = BELIEF_COLUMNS.index("value_since")
_INSERT_CHANGE = (
    f"INSERT INTO changes ({', '.join(CHANGE_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(CHANGE_COLUMNS))})"
)
_INSERT_EVENT = "INSERT INTO events (world, seq, event_id, day, kind, body) VALUES (?,?,?,?,?,?)"
_INSERT_EVIDENCE = (
    "INSERT INTO evidence (world, evidence_id, resident, root, value, event_id, day, "
    "source_kind, source_resident, relation, op, subject, origin, hops, trust) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
_INSERT_TRUST = (
    "INSERT OR REPLACE INTO trust (world, resident, source, topic, value) VALUES (?,?,?,?,?)"
)
_DUE = (
    "SELECT * FROM beliefs INDEXED BY beliefs_due WHERE world = ? AND "
    "next_decay_day IS NOT NULL AND next_decay_day <= ? "
    "ORDER BY next_decay_day, resident, root"
)
_DUE_AFTER = (
    "SELECT * FROM beliefs INDEXED BY beliefs_due WHERE world = ? AND "
    "next_decay_day IS NOT NULL AND next_decay_day > ? AND next_decay_day <= ? "
    "ORDER BY next_decay_day, resident, root"
)
_INSERT_RESIDENT = "INSERT INTO residents (world, resident) VALUES (?, ?)"
_INSERT_FACT = "INSERT OR REPLACE INTO facts (world, root, value) VALUES (?,?,?)"


_INSERT_WORLD = "INSERT INTO worlds (world, rules) VALUES (?, ?)"
_EVENT_EXISTS = "SELECT 1 FROM events WHERE world = ? AND event_id = ?"

#: Default cache budget and trust entries kept. A unit is one evidence ref (or origin,
#: hop, source) a belief carries; with the rest of a belief's 8 units, ~120 bytes each in
#: practice: 100 000 units (a 10k-belief town, say) measure about 12 MiB of RSS.
CACHE_BUDGET = 100_000
TRUST_CACHE_LIMIT = 50_000


class Writer:
    """The single writer. Not thread-safe: one thread calls it (the server's writer thread).

    ``cache=False`` turns off the write-through belief and trust cache (every read goes to
    SQLite); ``batched=False`` writes each event in its own savepoint as it goes instead of
    the batch's rows together at the end. Results and tables are the same either way, only
    slower.
    """

    def __init__(
        self, path: str | Path, *, rules: Rules = DEFAULT_RULES, synchronous: str = "FULL",
        cache: bool = True, cache_budget: int = CACHE_BUDGET, batched: bool = True,
    ) -> None:  # fmt: skip
        self.path = Path(path)
        self.rules = rules
        self.batched = batched
        #: Batches the batched path handed to the event-by-event path (see :meth:`apply`).
        self.fallbacks = 0
        if self.path.is_file():  # SQLite would open a read-only file and fail at first write
            try:
                open(self.path, "r+b").close()
            except OSError as exc:
                raise CannotOpen(f"{self.path} is not writable: {exc.strerror}") from exc
        self.conn = _open(self.path, synchronous=synchronous)
        self.db = Database(self.conn)
        try:
            self.migrations_applied = migrate(self.conn)
        except RuntimeError as exc:
            self.conn.close()
            raise SchemaTooNew(f"{self.path}: {exc}") from exc
        except sqlite3.Error as exc:
            self.conn.close()
            raise CannotOpen(f"{self.path}: cannot write the database: {exc}") from exc
        self._worlds: dict[str, _WorldState] = {}
        self._cache = _Cache(cache_budget, TRUST_CACHE_LIMIT) if cache else None
        self._data_version: int | None = self.conn.execute("PRAGMA data_version").fetchone()[0]
        self._savepoint_open = False  # the current event's savepoint, while it is open

    def close(self) -> None:
        self.conn.close()

    def ensure_world(self, world: str, rules: Rules) -> None:
        """Create ``world`` with its own rules (a rebuild keeps the rules it was run with)."""
        if self.conn.execute("SELECT 1 FROM worlds WHERE world = ?", (world,)).fetchone():
            return
        self.conn.execute(
            "INSERT INTO worlds (world, rules) VALUES (?, ?)",
            (world, dump_json(rules_to_stored(rules))),
        )

    def forget_world(self, world: str) -> None:
        """Drop what this writer holds in memory about ``world`` (after it was deleted)."""
        self._worlds.pop(world, None)
        if self._cache is not None:
            self._cache.clear()

    def _world(self, world: str) -> _WorldState:
        """The world's state, loaded once. A new world's row is inserted at once."""
        state = self._worlds.get(world)
        if state is not None:
            return state
        conn = self.conn
        row = conn.execute(
            "SELECT day, event_seq, change_seq, rules FROM worlds WHERE world = ?", (world,)
        ).fetchone()
        if row is None:
            rules = self.rules
            conn.execute(_INSERT_WORLD, (world, dump_json(rules_to_stored(rules))))
            state = _WorldState(0.0, 0, 0, rules)
        else:
            state = _WorldState(
                row["day"],
                row["event_seq"],
                row["change_seq"],
                stored_rules(world, row["rules"]),
            )
            state.residents = {
                r[0] for r in conn.execute(
                    "SELECT resident FROM residents WHERE world = ?", (world,)
                )
            }  # fmt: skip
        if self._cache is not None and not any(
            conn.execute(f"SELECT 1 FROM {table} WHERE world = ? LIMIT 1", (world,)).fetchone()
            for table in ("beliefs", "trust")
        ):
            self._cache.complete.add(world)  # nothing stored yet: the cache will see it all
        self._worlds[world] = state
        return state

    def _check_cache(self) -> None:
        """Inside the write lock: forget cached rows if another connection committed since."""
        cache = self._cache
        if cache is None:
            return
        version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            cache.clear()
            self._data_version = version
        cache.trim()

    def apply(self, batch: Sequence[tuple[str, WorldEvent]]) -> list[EventResult]:
        """Apply ``(world, event)`` pairs in order in one transaction; return after commit.

        The batched path (the default) folds every event in Python first, reading through the
        batch's own writes, and then writes the batch's rows with one ``executemany`` per
        table. An event the engine refuses never reaches those rows, so it is refused alone.
        Anything else unusual — SQLite refusing a row, an unexpected error, a value that would
        not read back as written — rolls the batch's rows back and redoes the batch event by
        event, each in its own savepoint (:meth:`_apply_one`), which decides exactly which
        event fails; so outcomes are those of the event-by-event path in every case.
        """
        results: list[EventResult] = []
        if not batch:
            return results
        snapshot = _copy_worlds(self._worlds)
        staged: _Batch | None = None
        self._savepoint_open = False
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            self._check_cache()
            if self.batched:
                staged, results = self._try_batched(batch, snapshot)
            if staged is None:
                results = [self._apply_one(world, event) for world, event in batch]
            dirty = dict.fromkeys(world for world, _ in batch if world in self._worlds)
            for world in dirty:
                s = self._worlds[world]
                self.conn.execute(
                    "UPDATE worlds SET day = ?, event_seq = ?, change_seq = ? WHERE world = ?",
                    (s.day, s.event_seq, s.change_seq, world),
                )
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rolled_back(snapshot)
            raise StorageFailure(f"could not commit a batch of {len(batch)} events: {exc}") from exc
        except BaseException:
            self._rolled_back(snapshot)
            raise
        cache = self._cache
        if staged is not None and cache is not None:
            # Committed: the batch's rows are now what SQLite holds. Nothing may refuse its
            # events from here on; a fault in the cache update only costs the cache.
            try:
                _cache_batch(cache, staged)
            except Exception:
                log.exception("cache update after a batch of %d events failed; cache cleared",
                              len(batch))  # fmt: skip
                cache.clear()
        return results

    def _try_batched(
        self, batch: Sequence[tuple[str, WorldEvent]], snapshot: dict[str, _WorldState]
    ) -> tuple[_Batch | None, list[EventResult]]:
        """The batched path inside a savepoint; ``(None, [])`` if it handed the batch back."""
        conn = self.conn
        conn.execute("SAVEPOINT batch")
        try:
            staged, results = self._apply_batched(batch)
        except Exception as exc:  # redo event by event: it decides what fails, and how
            # _Fallback is by design (a register or schema event, a value that would not read
            # back as written): DEBUG. Anything else is unexpected: WARNING.
            level = logging.DEBUG if isinstance(exc, _Fallback) else logging.WARNING
            log.log(level, "batch of %d events redone event by event: %r", len(batch), exc)
            conn.execute("ROLLBACK TO batch")
            conn.execute("RELEASE batch")
            # The cache only took reads of committed rows meanwhile: it stays valid.
            self._worlds = _copy_worlds(snapshot)
            self.fallbacks += 1
            return None, []
        conn.execute("RELEASE batch")
        return staged, results

    def _apply_batched(
        self, batch: Sequence[tuple[str, WorldEvent]]
    ) -> tuple[_Batch, list[EventResult]]:
        staged = _Batch()
        results = self._fold(batch, staged)
        self._flush(staged)
        return staged, results

    def _fold(self, batch: Sequence[tuple[str, WorldEvent]], staged: _Batch) -> list[EventResult]:
        """Fold the batch into ``staged`` (nothing written), reading through ``staged``, then
        the cache and the writer's connection."""
        cache, conn = self._cache, self.conn
        results: list[EventResult] = []
        for world, event in batch:
            event_id = event.event_id
            try:
                state = self._world(world)
            except WorldRulesInvalid as exc:  # this world only: its events are refused
                results.append(EventResult(world, event_id, ResultStatus.REJECTED, error=exc))
                continue
            if (world, event_id) in staged.event_ids or conn.execute(
                _EVENT_EXISTS, (world, event_id)
            ).fetchone():
                results.append(EventResult(world, event_id, ResultStatus.DUPLICATE))
                continue
            event_row = _event_row(world, state.event_seq + 1, event)
            view = _View(conn, world, state, cache, staged)
            try:
                outcome = ingest(event, state.day, view, state.rules)
            except EngineError as exc:
                results.append(EventResult(world, event_id, ResultStatus.REJECTED, error=exc))
                continue
            results.append(self._stage(world, state, outcome, event_row, staged))
            if view.swept is not None:
                staged.swept[world] = view.swept
        return results

    def _stage(
        self, world: str, state: _WorldState, out: Outcome, event_row: tuple[Any, ...],
        staged: _Batch,
    ) -> EventResult:  # fmt: skip
        """Add one applied event's rows to the batch and advance the world's counters."""
        if out.schema is not None:  # rare: the world's schema row and state, event by event
            raise _Fallback("a schema event is stored event by event")
        if out.names or out.labels:  # a registration (rare): written by the per-event path
            raise _Fallback("a register event is written event by event")
        staged.event_ids.add((world, out.event.event_id))
        staged.events.append(event_row)
        if out.new_residents:
            staged.residents += [(world, r) for r in out.new_residents]
        if out.evidence:
            staged.evidence += [_evidence_row(world, e, rel) for e, rel in out.evidence]
        if out.beliefs:
            beliefs = staged.beliefs
            due = staged.due.setdefault(world, {})
            for (resident, root), belief in out.beliefs.items():
                if not _as_read(belief):
                    raise _Fallback(f"belief {resident}/{root} would not read back as written")
                key = (world, resident, root)
                beliefs.pop(key, None)  # (re)inserted last: the cache keeps that order
                beliefs[key] = belief
                if belief.next_decay_day is None:
                    due.pop(key, None)
                else:
                    due[key] = belief
        for (resident, source, topic), value in out.trust.items():
            if not _real(value):
                raise _Fallback(f"trust {value!r} would not read back as written")
            tkey = (world, resident, source, topic)
            staged.trust.pop(tkey, None)
            staged.trust[tkey] = value
        for root, value in out.facts.items():
            staged.facts[(world, root)] = dump_json(value)
        changes = self._number(world, state.change_seq, out.changes, staged.changes)
        state.day = out.day
        state.event_seq += 1
        state.change_seq += len(changes)
        state.residents.update(out.new_residents)
        return EventResult(
            world, out.event.event_id, ResultStatus.APPLIED, changes=tuple(changes),
            results=tuple(out.results), warnings=tuple(out.warnings),
        )  # fmt: skip

    def _flush(self, staged: _Batch) -> None:
        """The batch's rows: one ``executemany`` per table."""
        many = self.conn.executemany
        if staged.events:
            many(_INSERT_EVENT, staged.events)
        if staged.residents:
            many(_INSERT_RESIDENT, staged.residents)
        if staged.evidence:
            many(_INSERT_EVIDENCE, staged.evidence)
        if staged.beliefs:  # every staged belief passed _as_read: value_since is a float
            many(_UPSERT_BELIEF, [belief_to_row(k[0], b) for k, b in staged.beliefs.items()])
        if staged.trust:
            many(_INSERT_TRUST, [(*k, v) for k, v in staged.trust.items()])
        if staged.facts:
            many(_INSERT_FACT, [(*k, v) for k, v in staged.facts.items()])
        if staged.changes:
            many(_INSERT_CHANGE, staged.changes)

    @staticmethod
    def _number(
        world: str, last_seq: int, changes: list[Change], rows: list[tuple[Any, ...]]
    ) -> list[Change]:
        """Number an outcome's change records after ``last_seq``, adding their rows.

        The records are the outcome's own, fresh from the engine: numbered in place (``seq``
        takes no part in equality or hashing) rather than copied."""
        seq = last_seq
        numbered: list[Change] = []
        for c in changes:
            seq += 1
            if c.seq is None:
                object.__setattr__(c, "seq", seq)
            else:  # already numbered (the same record listed twice): a copy of its own
                c = dataclasses.replace(c, seq=seq)
            numbered.append(c)
            rows.append(change_to_row(world, seq, c))
        return numbered

    def _rolled_back(self, snapshot: dict[str, _WorldState]) -> None:
        self._worlds = snapshot
        if self._cache is not None:
            self._cache.clear()  # it holds rows of the batch SQLite is about to forget
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    def _apply_one(self, world: str, event: WorldEvent) -> EventResult:
        """Apply one event of the batch in its own savepoint; refuse it alone if it fails.

        The engine refusing it (:class:`EngineError`) or SQLite refusing a row refuses this
        event; so does *any* other exception while applying it (a bug): its savepoint is
        rolled back, the result carries an :class:`ApplyFailure` (``internal_error``) with its
        event id, and the batch goes on. Only a failure of the transaction itself (SQLite
        cannot even roll back to the savepoint) escapes, and fails the whole batch.
        """
        try:
            return self._apply_fast(world, event)
        except Exception as exc:
            if self._savepoint_open:
                self._rollback_event()
            if self._cache is not None:
                self._cache.clear()  # it may hold what the undone savepoint read or wrote
            log.error("event %r in world %r could not be applied", event.event_id, world,
                      exc_info=exc)  # fmt: skip
            failure = ApplyFailure(
                f"event {event.event_id!r} could not be applied: internal error "
                f"({type(exc).__name__}); nothing of it was stored"
            )
            return EventResult(world, event.event_id, ResultStatus.REJECTED, error=failure)

    def _savepoint(self) -> None:
        self.conn.execute("SAVEPOINT event")
        self._savepoint_open = True

    def _release(self) -> None:
        self.conn.execute("RELEASE event")
        self._savepoint_open = False

    def _rollback_event(self) -> None:
        self.conn.execute("ROLLBACK TO event")
        self._release()

    def _apply_fast(self, world: str, event: WorldEvent) -> EventResult:
        """Insert the event's log row first, in the event's savepoint: a new event id (the
        common case) costs no duplicate-check read. Anything unusual (the row fails: a
        duplicate, or SQLite refuses it; or the row cannot be built) rolls that back and takes
        :meth:`_apply_checked`, the read-check-write path, so outcomes stay exactly its own."""
        try:
            state = self._world(world)
        except WorldRulesInvalid as exc:  # this world only: its events are refused
            return EventResult(world, event.event_id, ResultStatus.REJECTED, error=exc)
        conn = self.conn
        try:
            event_row = _event_row(world, state.event_seq + 1, event)
        except Exception:
            return self._apply_checked(world, state, event)
        self._savepoint()
        try:
            conn.execute(_INSERT_EVENT, event_row)
        except sqlite3.Error:
            self._rollback_event()
            return self._apply_checked(world, state, event)
        try:
            outcome = ingest(event, state.day, _View(conn, world, state, self._cache), state.rules)
        except EngineError as exc:
            self._rollback_event()
            return EventResult(world, event.event_id, ResultStatus.REJECTED, error=exc)
        return self._store(world, state, outcome, event_row=None)

    def _apply_checked(self, world: str, state: _WorldState, event: WorldEvent) -> EventResult:
        if self.conn.execute(
            "SELECT 1 FROM events WHERE world = ? AND event_id = ?", (world, event.event_id)
        ).fetchone():
            return EventResult(world, event.event_id, ResultStatus.DUPLICATE)
        try:
            outcome = ingest(
                event, state.day, _View(self.conn, world, state, self._cache), state.rules
            )
        except EngineError as exc:
            return EventResult(world, event.event_id, ResultStatus.REJECTED, error=exc)
        event_row = _event_row(world, state.event_seq + 1, event)
        self._savepoint()
        return self._store(world, state, outcome, event_row=event_row)

    def _store(
        self, world: str, state: _WorldState, outcome: Outcome, event_row: tuple[Any, ...] | None
    ) -> EventResult:
        """Write the outcome inside the open ``event`` savepoint (and the log row, if given)."""
        event = outcome.event
        try:
            if event_row is not None:
                self.conn.execute(_INSERT_EVENT, event_row)
            changes = self._write(world, state, outcome)
        except sqlite3.Error as exc:
            self._rollback_event()
            failure = StorageFailure(f"event {event.event_id!r} could not be stored: {exc}")
            return EventResult(world, event.event_id, ResultStatus.REJECTED, error=failure)
        self._release()
        # From here on the event is stored (it commits with the batch): nothing may refuse it.
        state.day = outcome.day
        state.event_seq += 1
        state.change_seq += len(changes)
        state.residents.update(outcome.new_residents)
        if outcome.schema is not None:
            state.schema, state.schema_loaded = outcome.schema, True
        cache = self._cache
        if cache is not None:  # only now: what a rolled-back savepoint wrote never got here
            try:
                _cache_outcome(cache, world, outcome)
            except Exception:
                log.exception("cache update after event %r failed; cache cleared", event.event_id)
                cache.clear()
        return EventResult(
            world, event.event_id, ResultStatus.APPLIED, changes=tuple(changes),
            results=tuple(outcome.results),
            warnings=tuple(outcome.warnings),
        )  # fmt: skip

    def _write(self, world: str, state: _WorldState, out: Outcome) -> list[Change]:
        """Every row of the outcome but the event's own log row."""
        conn = self.conn
        if out.new_residents:
            conn.executemany(_INSERT_RESIDENT, [(world, r) for r in out.new_residents])
        if out.evidence:
            conn.executemany(
                _INSERT_EVIDENCE, [_evidence_row(world, e, rel) for e, rel in out.evidence]
            )
        if out.beliefs:
            rows = [belief_to_row(world, b) for b in out.beliefs.values()]
            if all(row[_VALUE_SINCE] is not None for row in rows):
                conn.executemany(_UPSERT_BELIEF, rows)
            else:
                conn.executemany(_INSERT_BELIEF, rows)
        if out.trust:
            conn.executemany(
                _INSERT_TRUST, [(world, i, j, t, v) for (i, j, t), v in out.trust.items()]
            )
        if out.schema is not None:
            conn.execute(
                "INSERT INTO world_schema (world, version, body) VALUES (?, 1, ?) "
                "ON CONFLICT (world) DO UPDATE SET version = version + 1, body = excluded.body",
                (world, dump_json(out.schema.to_dict())),
            )
        if out.names:
            conn.executemany(
                "UPDATE residents SET names = ? WHERE world = ? AND resident = ?",
                [(dump_json(names), world, r) for r, names in out.names.items()],
            )
        if out.labels:
            conn.executemany(
                "INSERT OR REPLACE INTO labels (world, kind, key, names) VALUES (?,?,?,?)",
                [(world, "action", a, dump_json(names)) for a, names in out.labels.items()],
            )
        if out.facts:
            conn.executemany(
                _INSERT_FACT, [(world, root, dump_json(v)) for root, v in out.facts.items()]
            )
        if not out.changes:
            return []
        change_rows: list[tuple[Any, ...]] = []
        numbered = self._number(world, state.change_seq, out.changes, change_rows)
        conn.executemany(_INSERT_CHANGE, change_rows)
        return numbered


def _cache_outcome(cache: _Cache, world: str, outcome: Outcome) -> None:
    """Put what an applied event wrote into the cache (or drop what it cannot hold)."""
    for (resident, root), belief in outcome.beliefs.items():
        if _as_read(belief):
            cache.put_belief((world, resident, root), belief)
        else:
            cache.drop_belief((world, resident, root))
    for (resident, source, topic), value in outcome.trust.items():
        key = (world, resident, source, topic)
        if _real(value):
            cache.put_trust(key, value)
        else:
            cache.drop_trust(key)


def _cache_batch(cache: _Cache, staged: _Batch) -> None:
    """Put what a committed batch wrote into the cache (every staged value reads back as
    written: the batched path checked it)."""
    for key, belief in staged.beliefs.items():
        cache.put_belief(key, belief)
    for tkey, value in staged.trust.items():
        cache.put_trust(tkey, value)


def _copy_worlds(worlds: dict[str, _WorldState]) -> dict[str, _WorldState]:
    return {w: dataclasses.replace(s, residents=set(s.residents)) for w, s in worlds.items()}


def _evidence_row(world: str, e: Evidence, rel: Relation) -> tuple[Any, ...]:
    return (
        world, e.evidence_id, e.resident, e.claim.root, dump_json(e.claim.value), e.event_id,
        e.day, str(e.source_kind), e.source_resident_id, str(rel), e.op, e.subject, e.origin,
        dump_json_list(e.hops), e.trust,
    )  # fmt: skip


def _event_row(world: str, seq: int, ev: WorldEvent) -> tuple[Any, ...]:
    return (world, seq, ev.event_id, ev.day, str(ev.kind), dump_json(ev.to_dict()))


@dataclass(frozen=True, slots=True, kw_only=True)
class BeliefFilter:
    """What a ``beliefs`` query may narrow to; every field given must match (AND).

    ``root`` is one exact root; ``prefixes`` match the start of the root (any of them);
    ``states`` any of these states; ``people`` any of these ids in the belief's ``people``,
    or as the actor of an ``action:<id>:`` root or the other of a ``relation:<id>:`` root;
    ``places`` any of these in its ``places``; ``min_confidence`` at least this confidence.
    """

    root: str | None = None
    prefixes: tuple[str, ...] = ()
    states: tuple[str, ...] = ()
    people: tuple[str, ...] = ()
    places: tuple[str, ...] = ()
    min_confidence: int | None = None

    def sql(self) -> tuple[str, list[Any]]:
        """The ``AND ...`` clauses (on table ``beliefs``) and their parameters."""
        parts: list[str] = []
        params: list[Any] = []
        if self.root is not None:
            parts.append("root = ?")
            params.append(self.root)
        if self.prefixes:
            parts.append(
                "(" + " OR ".join("substr(root, 1, length(?)) = ?" for _ in self.prefixes) + ")"
            )
            params.extend(x for p in self.prefixes for x in (p, p))
        if self.states:
            parts.append(f"state IN ({', '.join('?' * len(self.states))})")
            params.extend(self.states)
        if self.people:
            marks = ", ".join("?" * len(self.people))
            roots = [f"{kind}:{p}:" for p in self.people for kind in ("action", "relation")]
            parts.append(
                f"(EXISTS (SELECT 1 FROM json_each(beliefs.people) WHERE value IN ({marks}))"
                + "".join(" OR substr(root, 1, length(?)) = ?" for _ in roots)
                + ")"
            )
            params.extend(self.people)
            params.extend(x for r in roots for x in (r, r))
        if self.places:
            marks = ", ".join("?" * len(self.places))
            parts.append(
                f"EXISTS (SELECT 1 FROM json_each(beliefs.places) WHERE value IN ({marks}))"
            )
            params.extend(self.places)
        if self.min_confidence is not None:
            parts.append("confidence >= ?")
            params.append(self.min_confidence)
        return "".join(f" AND {p}" for p in parts), params


class Reader:
    """Read-only queries on a connection of its own. One thread at a time may use it."""

    def __init__(self, path: str | Path) -> None:
        self.conn = _open(Path(path), synchronous="NORMAL")
        self.db = Database(self.conn)
        try:
            unknown = unknown_migrations(self.conn)
        except sqlite3.Error as exc:
            self.conn.close()
            raise CannotOpen(f"{path}: not a readable Credence database: {exc}") from exc
        if unknown:
            self.conn.close()
            raise SchemaTooNew(
                f"{path}: database has migrations this version does not know: {unknown}; "
                "it was written by a newer Credence"
            )

    def close(self) -> None:
        self.conn.close()

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        try:
            return self.conn.execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"query failed: {exc}") from exc

    def worlds(self) -> list[str]:
        return [r[0] for r in self._rows("SELECT world FROM worlds ORDER BY world")]

    def latest_seq(self, world: str) -> int:
        rows = self._rows("SELECT change_seq FROM worlds WHERE world = ?", (world,))
        return int(rows[0][0]) if rows else 0

    def world_day(self, world: str) -> float:
        rows = self._rows("SELECT day FROM worlds WHERE world = ?", (world,))
        return float(rows[0][0]) if rows else 0.0

    def is_resident(self, world: str, resident: str) -> bool:
        return bool(
            self._rows(
                "SELECT 1 FROM residents WHERE world = ? AND resident = ?", (world, resident)
            )
        )

    def belief(self, world: str, resident: str, root: str) -> Belief | None:
        rows = self._rows(
            "SELECT * FROM beliefs WHERE world = ? AND resident = ? AND root = ?",
            (world, resident, root),
        )
        return belief_from_row(rows[0]) if rows else None

    def beliefs(
        self,
        world: str,
        resident: str,
        *,
        after_root: str | None = None,
        limit: int = -1,
        where: BeliefFilter | None = None,
    ) -> list[Belief]:
        """A resident's beliefs in root order; page with ``after_root``; narrow with ``where``."""
        sql = "SELECT * FROM beliefs WHERE world = ? AND resident = ? AND root > ?"
        params: list[Any] = [world, resident, after_root or ""]
        if where is not None:
            clause, more = where.sql()
            sql += clause
            params.extend(more)
        rows = self._rows(sql + " ORDER BY root LIMIT ?", (*params, limit))
        return [belief_from_row(r) for r in rows]

    def all_beliefs(self, world: str) -> list[Belief]:
        rows = self._rows("SELECT * FROM beliefs WHERE world = ? ORDER BY resident, root", (world,))
        return [belief_from_row(r) for r in rows]

    def on_root(self, world: str, root: str) -> list[Belief]:
        """Every resident's belief on one root (for ``distribution``)."""
        rows = self._rows(
            "SELECT * FROM beliefs WHERE world = ? AND root = ? ORDER BY resident", (world, root)
        )
        return [belief_from_row(r) for r in rows]

    def evidence(
        self,
        world: str,
        resident: str,
        root: str,
        *,
        latest: int | None = None,
        refs: Sequence[str] = (),
    ) -> list[dict[str, Any]]:
        """The evidence behind one belief, oldest first, with its event kind: every piece,
        or the ``latest`` ones.

        ``refs``, the belief's own ``evidence_refs`` (applied in log order), lets the latest
        few be read by key instead of sorting every piece: when every piece on the root is
        one of them (the counts agree) and there are at least ``latest``, the latest pieces
        are the last ``latest`` refs.
        """
        select = (
            "SELECT ev.*, e.kind AS event_kind, e.seq AS event_seq FROM evidence ev "
            "CROSS JOIN events e ON e.world = ev.world AND e.event_id = ev.event_id "
        )
        if (
            latest is not None
            and len(refs) >= latest
            and self.evidence_count(world, resident, root) == len(refs)
        ):
            wanted = list(refs[-latest:])
            marks = ", ".join("?" * len(wanted))
            rows = self._rows(
                select + f"WHERE ev.world = ? AND ev.evidence_id IN ({marks}) "
                "AND ev.resident = ? AND ev.root = ? ORDER BY e.seq DESC",
                (world, *wanted, resident, root),
            )
        else:
            rows = self._rows(
                select + "WHERE ev.world = ? AND ev.resident = ? AND ev.root = ? "
                "ORDER BY e.seq DESC LIMIT ?",
                (world, resident, root, -1 if latest is None else latest),
            )
        out = []
        for r in reversed(rows):
            item = dict(r)
            item["value"] = load_json(item["value"])
            out.append(item)
        return out

    def evidence_count(self, world: str, resident: str, root: str) -> int:
        """How many pieces of evidence bear on one belief (an index count, no row read)."""
        sql = "SELECT count(*) FROM evidence WHERE world = ? AND resident = ? AND root = ?"
        return int(self._rows(sql, (world, resident, root))[0][0])

    def history(
        self, world: str, resident: str, root: str, *, latest: int | None = None
    ) -> list[Change]:
        """One belief's change records, oldest first: every one, or the ``latest`` ones."""
        rows = self._rows(
            "SELECT * FROM changes WHERE world = ? AND resident = ? AND root = ? "
            "ORDER BY seq DESC LIMIT ?",
            (world, resident, root, -1 if latest is None else latest),
        )
        return [change_from_row(r) for r in reversed(rows)]

    def history_count(self, world: str, resident: str, root: str) -> int:
        """How many change records one belief has (an index count)."""
        sql = "SELECT count(*) FROM changes WHERE world = ? AND resident = ? AND root = ?"
        return int(self._rows(sql, (world, resident, root))[0][0])

    def changes_after(self, world: str, seq: int, *, limit: int = 500) -> list[Change]:
        rows = self._rows(
            "SELECT * FROM changes WHERE world = ? AND seq > ? ORDER BY seq LIMIT ?",
            (world, seq, limit),
        )
        return [change_from_row(r) for r in rows]

    def all_changes(self, world: str) -> list[Change]:
        return self.changes_after(world, 0, limit=-1)

    def events(self, world: str) -> Iterator[WorldEvent]:
        """The world log in order, parsed back into events (what a rebuild replays)."""
        cursor = self.conn.execute("SELECT body FROM events WHERE world = ? ORDER BY seq", (world,))
        for (body,) in cursor:
            yield parse_event(load_json(body))

    def event_ids(self, world: str) -> set[str]:
        return {r[0] for r in self._rows("SELECT event_id FROM events WHERE world = ?", (world,))}

    def trust(
        self, world: str, resident: str, source: str | None = None, *, latest: int | None = None
    ) -> list[dict[str, Any]]:
        """A resident's trust table, each entry with the change records that moved it (every
        one, or the ``latest`` ones and ``history_total``, how many there are)."""
        rows = self._rows(
            "SELECT source, topic, value FROM trust WHERE world = ? AND resident = ? "
            "AND (? IS NULL OR source = ?) ORDER BY source, topic",
            (world, resident, source, source),
        )
        out = []
        for r in rows:
            root = f"trust:{r['source']}" + (f":{r['topic']}" if r["topic"] else "")
            out.append(
                {
                    "source": r["source"],
                    "topic": r["topic"] or None,
                    "value": r["value"],
                    "history": self.history(world, resident, root, latest=latest),
                }
            )
            if latest is not None:
                out[-1]["history_total"] = self.history_count(world, resident, root)
        return out

    def registry(self, world: str) -> dict[str, dict[str, Any]]:
        """The world's registry: ``{"residents": {id: {lang: name}}, "actions": {...}}``
        (empty on a database a writer has not yet brought to schema 0005_i10_memory)."""
        if not self._rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'labels'"):
            return {"residents": {}, "actions": {}}
        residents = self._rows(
            "SELECT resident, names FROM residents WHERE world = ? AND names IS NOT NULL "
            "ORDER BY resident",
            (world,),
        )
        labels = self._rows(
            "SELECT key, names FROM labels WHERE world = ? AND kind = 'action' ORDER BY key",
            (world,),
        )
        return {
            "residents": {r[0]: load_json(r[1]) for r in residents},
            "actions": {r[0]: load_json(r[1]) for r in labels},
        }

    def resident_page(
        self, world: str, *, after: str | None = None, limit: int = 500
    ) -> list[tuple[str, dict[str, str]]]:
        """Up to ``limit`` residents after ``after`` in id order, each with its registered
        names (``{}`` when none): the ``residents`` query, one primary-key range scan."""
        # residents.names came with 0005_i10_memory (as the labels table did).
        named = self._rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'labels'")
        rows = self._rows(
            f"SELECT resident, {'names' if named else 'NULL'} FROM residents "
            "WHERE world = ? AND resident > ? ORDER BY resident LIMIT ?",
            (world, after or "", limit),
        )
        return [(r[0], load_json(r[1]) if r[1] else {}) for r in rows]

    def event_page(self, world: str, *, start: int = 1, limit: int = 100) -> list[dict[str, Any]]:
        """Up to ``limit`` events of the log from seq ``start`` on: seq, id, day, kind, and
        who spoke or acted and the game's subject (clipped to 200 characters), read from
        the stored body; one primary-key range scan (the ``events`` query, ``credence log``)."""
        rows = self._rows(
            "SELECT seq, event_id, day, kind, "
            "coalesce(json_extract(body, '$.speaker'), json_extract(body, '$.actor')), "
            "substr(json_extract(body, '$.subject'), 1, 200) "
            "FROM events WHERE world = ? AND seq >= ? ORDER BY seq LIMIT ?",
            (world, start, limit),
        )
        return [
            {"seq": r[0], "event_id": r[1], "day": float(r[2]), "kind": r[3], "by": r[4],
             "subject": r[5]}
            for r in rows
        ]  # fmt: skip

    def event_count(self, world: str) -> int:
        """The world's last event seq (the length of its log)."""
        rows = self._rows("SELECT event_seq FROM worlds WHERE world = ?", (world,))
        return int(rows[0][0]) if rows else 0

    def fact(self, world: str, root: str) -> tuple[bool, Any]:
        """What the world itself observed on ``root`` (found, value)."""
        rows = self._rows("SELECT value FROM facts WHERE world = ? AND root = ?", (world, root))
        return (True, load_json(rows[0][0])) if rows else (False, None)

    def schema(self, world: str) -> tuple[int, RootSchema | None]:
        """The world's root schema and its version (0, None: no schema declared, or a
        database a writer has not yet brought to schema 0005_i12_schema_events)."""
        if not self._rows(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'world_schema'"
        ):
            return 0, None
        rows = self._rows("SELECT version, body FROM world_schema WHERE world = ?", (world,))
        if not rows:
            return 0, None
        return int(rows[0][0]), parse_schema(load_json(rows[0][1]))

    def rules(self, world: str) -> Rules:
        rows = self._rows("SELECT rules FROM worlds WHERE world = ?", (world,))
        return stored_rules(world, rows[0][0]) if rows else DEFAULT_RULES
