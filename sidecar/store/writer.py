"""The single writer: group commit of a batch of world events, and its results.

:class:`Writer` is the only code that writes. :meth:`Writer.apply` takes a batch of world
events, runs each through the engine's :func:`~sidecar.engine.ingest` inside one
transaction — folded in Python first, then written with one ``executemany`` per table; a bad
event is refused whole while the rest commit (if SQLite itself refuses a row, the batch is
rolled back and redone with a savepoint per event to find which) — commits once, and only
then returns.
Whatever it returns is durable: that return is the commit boundary the server waits on
before it acknowledges. The engine reads through the batch's overlay (:mod:`.overlay`) and
the write-through cache (:mod:`.cache`); raw ``sqlite3`` errors become the store's own
(:mod:`.errors`).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from ..engine import (
    DEFAULT_RULES,
    Change,
    EngineError,
    Outcome,
    Rules,
    WorldEvent,
    ingest,
    rules_to_stored,
)
from ..engine.model import positional
from .cache import (
    CACHE_BUDGET,
    TRUST_CACHE_LIMIT,
    _as_read,
    _Cache,
    _cache_batch,
    _cache_outcome,
    _real,
)
from .connection import _open
from .errors import (
    ApplyFailure,
    CannotOpen,
    SchemaBehind,
    SchemaTooNew,
    StorageFailure,
    StoreError,
    WorldRulesInvalid,
)
from .overlay import _Batch, _View, _WorldState
from .promises import write_promise_rows
from .rows import (
    BELIEF_COLUMNS,
    CHANGE_COLUMNS,
    _event_row,
    belief_to_row,
    change_to_row,
    dump_json,
    evidence_row,
    logged_subject,
    stored_rules,
)
from .said import INSERT_SAID, said_row
from .schema import migrate, missing_migrations

log = logging.getLogger("credence.store")

__all__ = ["CACHE_BUDGET", "TRUST_CACHE_LIMIT", "EventResult", "ResultStatus", "Writer"]


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


#: (the slot's own setter: ``object.__setattr__`` looks the name up at every call)
_set_seq = Change.__dict__["seq"].__set__
#: An applied event's result, every field given in order (one per event of every batch).
_applied = positional(EventResult, (
    "world", "event_id", "status", "changes", "error", "results", "warnings",
))  # fmt: skip
_APPLIED = ResultStatus.APPLIED


class _Fallback(Exception):
    """The batched path met something only the event-by-event path decides exactly."""


# A belief's row as an upsert: an existing belief is updated in place (its root index entry
# stays put) instead of deleted and re-inserted, and only a new belief fires the ``worlds``
# counter's insert trigger (migration 0015: an ``INSERT OR REPLACE`` of an existing row would
# count it again, so nothing writes beliefs that way). A ``value_since`` of ``None`` is
# stored as the column's default, 0, as a REPLACE stored it (see :func:`_stored_rows`).
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
    "INSERT INTO evidence_pieces (world, evidence_id, resident, root, value, event_seq, "
    "source_kind, source_resident, relation, op, subject, origin, hops, trust) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
_INSERT_TRUST = (
    "INSERT OR REPLACE INTO trust (world, resident, source, topic, value) VALUES (?,?,?,?,?)"
)
_INSERT_RESIDENT = "INSERT INTO residents (world, resident) VALUES (?, ?)"
_INSERT_FACT = "INSERT OR REPLACE INTO facts (world, root, value) VALUES (?,?,?)"


_INSERT_WORLD = "INSERT INTO worlds (world, rules) VALUES (?, ?)"
_EVENT_EXISTS = "SELECT 1 FROM events WHERE world = ? AND event_id = ?"
#: Which of a JSON array of event ids one world's log already holds: one statement per
#: world and batch (the log's (world, event_id) index, searched once per id) instead of one
#: per event; almost always it finds none.
_LOGGED = (
    "SELECT j.value FROM json_each(?) AS j JOIN events AS e ON e.world = ? AND e.event_id = j.value"
)


#: How many worlds' states (clock, seqs, rules, resident ids) a writer keeps loaded: one file
#: may hold thousands of worlds, and a batch touches few. Past this, the least recently used
#: are dropped and loaded again (a few indexed reads) at their next event.
WORLD_STATES = 1024


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
        world_states: int = WORLD_STATES, upgrade: bool = True,
    ) -> None:  # fmt: skip
        """Open (or create) the database at ``path`` and apply the migrations it lacks;
        ``upgrade=False``: a file an older Credence left is not migrated here, but refused
        with :class:`SchemaBehind` (nothing changed in it)."""
        self.path = Path(path)
        self.rules = rules
        self.batched = batched
        #: Batches the batched path handed to the event-by-event path (see :meth:`apply`).
        self.fallbacks = 0
        if self.path.is_file() and not os.access(self.path, os.W_OK):
            # (SQLite would open a read-only file and fail at first write. Asked, not tried:
            # opening and closing the file here would drop every POSIX lock this process
            # holds on it, a reader's too, and another process could then write under it.)
            raise CannotOpen(f"{self.path} is not writable: permission denied")
        self.conn = _open(self.path, synchronous=synchronous)
        self.db = Database(self.conn)
        try:
            if not upgrade and (missing := missing_migrations(self.conn)):
                self.conn.close()
                raise SchemaBehind(f"{self.path} lacks {len(missing)} migrations: {missing}")
            self.migrations_applied = migrate(self.conn)
        except RuntimeError as exc:
            self.conn.close()
            raise SchemaTooNew(f"{self.path}: {exc}") from exc
        except sqlite3.Error as exc:
            self.conn.close()
            raise CannotOpen(f"{self.path}: cannot write the database: {exc}") from exc
        # Each row's statement keeps a journal of the pages it changes (to undo just that
        # statement), and so does an event's savepoint on the event-by-event path: by default
        # a temporary file once past 64 KiB, one write() per page. In memory (set after the
        # migrations, whose index builds may sort far more): one row's or one event's pages
        # bound it (tools/PERFORMANCE.md).
        self.conn.execute("PRAGMA temp_store = MEMORY")
        self._worlds: dict[str, _WorldState] = {}  # (least recently used first)
        self.world_states = max(1, world_states)
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
        snapshot = self._snapshot(batch)
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
        self, batch: Sequence[tuple[str, WorldEvent]], snapshot: dict[str, _WorldState | None]
    ) -> tuple[_Batch | None, list[EventResult]]:
        """The batched path, the transaction's first writes; ``(None, [])`` if it handed the
        batch back, in a new transaction.

        Not in a savepoint: SQLite would copy every page the batch first changes into a
        statement journal (a temporary file past 64 KiB), and, since each row's statement
        truncates that journal back to where the statement began, an in-memory one is walked
        from its start at every row. A batch that cannot be written is rolled back whole
        instead, and the write lock taken again (``tools/PERFORMANCE.md``)."""
        conn = self.conn
        try:
            staged, results = self._apply_batched(batch)
        except Exception as exc:  # redo event by event: it decides what fails, and how
            if not conn.in_transaction:  # SQLite rolled the whole transaction back (a full
                raise  # disk, an I/O error): nothing to redo; apply reports this error
            # _Fallback is by design (a register or schema event, a value that would not read
            # back as written): DEBUG. Anything else is unexpected: WARNING.
            level = logging.DEBUG if isinstance(exc, _Fallback) else logging.WARNING
            log.log(level, "batch of %d events redone event by event: %r", len(batch), exc)
            conn.execute("ROLLBACK")
            conn.execute("BEGIN IMMEDIATE")
            # The cache only took reads of committed rows meanwhile: it stays valid, unless
            # another connection wrote while the lock was let go.
            self._check_cache()
            self._restore(snapshot)
            self.fallbacks += 1
            return None, []
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
        logged = self._logged(batch)
        horizon = staged.horizon
        for world, event in batch:
            if horizon.get(world, -1.0) < event.day:
                horizon[world] = event.day
        for world, event in batch:
            event_id = event.event_id
            try:
                state = self._world(world)
            except WorldRulesInvalid as exc:  # this world only: its events are refused
                results.append(EventResult(world, event_id, ResultStatus.REJECTED, error=exc))
                continue
            if (world, event_id) in staged.event_ids or (world, event_id) in logged:
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

    def _logged(self, batch: Sequence[tuple[str, WorldEvent]]) -> set[tuple[str, str]]:
        """The batch's ``(world, event id)`` pairs the log already holds (duplicates)."""
        ids: dict[str, list[str]] = {}
        for world, event in batch:
            ids.setdefault(world, []).append(event.event_id)
        conn = self.conn
        return {
            (world, row[0])
            for world, wanted in ids.items()
            for row in conn.execute(_LOGGED, (dump_json(wanted), world))
        }

    def _stage(
        self, world: str, state: _WorldState, out: Outcome, event_row: tuple[Any, ...],
        staged: _Batch,
    ) -> EventResult:  # fmt: skip
        """Add one applied event's rows to the batch and advance the world's counters."""
        if out.schema is not None:  # rare: the world's schema row and state, event by event
            raise _Fallback("a schema event is stored event by event")
        if out.names or out.labels:  # a registration (rare): written by the per-event path
            raise _Fallback("a register event is written event by event")
        if out.touches_promises:  # written now, in the batch's transaction: the fold's
            write_promise_rows(self.conn, world, out)  # next reads of them see these rows
            staged.promises_due.pop(world, None)  # (and the batch's read of due views goes)
        staged.event_ids.add((world, out.event.event_id))
        staged.events.append(event_row)
        if out.new_residents:
            staged.residents += [(world, r) for r in out.new_residents]
        if out.evidence:
            seq, logged = event_row[1], logged_subject(out.event)
            staged.evidence += [evidence_row(world, e, rel, seq, logged) for e, rel in out.evidence]
        if out.said is not None:
            staged.said.append(said_row(world, state.event_seq + 1, out.said))
        if out.beliefs:
            beliefs = staged.beliefs
            due = staged.due.setdefault(world, {})
            floors = staged.due_floor
            for (resident, root), belief in out.beliefs.items():
                if not _as_read(belief):
                    raise _Fallback(f"belief {resident}/{root} would not read back as written")
                key = (world, resident, root)
                beliefs.pop(key, None)  # (re)inserted last: the cache keeps that order
                beliefs[key] = belief
                when = belief.next_decay_day
                if when is None:
                    due.pop(key, None)
                else:
                    due[key] = belief
                    floor = floors.get(world)
                    if floor is None or when < floor:
                        floors[world] = when
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
        return _applied(
            world, out.event.event_id, _APPLIED, tuple(changes), None, tuple(out.results),
            tuple(out.warnings),
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
        if staged.said:
            many(INSERT_SAID, staged.said)

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
                _set_seq(c, seq)
            else:  # already numbered (the same record listed twice): a copy of its own
                c = dataclasses.replace(c, seq=seq)
            numbered.append(c)
            rows.append(change_to_row(world, seq, c))
        return numbered

    def _snapshot(self, batch: Sequence[tuple[str, WorldEvent]]) -> dict[str, _WorldState | None]:
        """A copy of the state of each world of ``batch`` (``None``: not loaded yet), to put
        back if the batch is undone. Only the batch's worlds: copying every world loaded so far
        cost a batch 2 -> 76 ms with 10,000 worlds in one file. Also where the loaded states
        are bounded: the least recently used beyond :attr:`world_states` are dropped (their
        rows hold all of it; a world dropped is loaded again at its next event)."""
        worlds = self._worlds
        snapshot: dict[str, _WorldState | None] = {}
        for world, _ in batch:
            if world not in snapshot:
                state = worlds.pop(world, None)  # (re-inserted: most recently used last)
                if state is not None:
                    worlds[world] = state
                    state = dataclasses.replace(state, residents=set(state.residents))
                snapshot[world] = state
        for world in list(itertools.islice(worlds, max(0, len(worlds) - self.world_states))):
            if world not in snapshot:
                del worlds[world]
        return snapshot

    def _restore(self, snapshot: dict[str, _WorldState | None]) -> None:
        """Put the batch's worlds back as :meth:`_snapshot` found them (copies: a snapshot
        may be restored twice, after a fallback and then a failed commit)."""
        for world, state in snapshot.items():
            if state is None:
                self._worlds.pop(world, None)
            else:
                self._worlds[world] = dataclasses.replace(state, residents=set(state.residents))

    def _rolled_back(self, snapshot: dict[str, _WorldState | None]) -> None:
        self._restore(snapshot)
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
            seq = state.event_seq + 1  # (the event's log row, written just before)
            logged = logged_subject(out.event)
            conn.executemany(
                _INSERT_EVIDENCE,
                [evidence_row(world, e, rel, seq, logged) for e, rel in out.evidence],
            )
        if out.beliefs:
            conn.executemany(
                _UPSERT_BELIEF, _stored_rows(belief_to_row(world, b) for b in out.beliefs.values())
            )
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
        if out.said is not None:
            conn.execute(INSERT_SAID, said_row(world, state.event_seq + 1, out.said))
        if out.touches_promises:
            write_promise_rows(conn, world, out)
        if not out.changes:
            return []
        change_rows: list[tuple[Any, ...]] = []
        numbered = self._number(world, state.change_seq, out.changes, change_rows)
        conn.executemany(_INSERT_CHANGE, change_rows)
        return numbered


def _stored_rows(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """Belief rows as stored: a ``value_since`` of ``None`` (the column is ``NOT NULL DEFAULT
    0``) becomes 0.0, the value the column's default gives."""
    for row in rows:
        if row[_VALUE_SINCE] is None:
            row = (*row[:_VALUE_SINCE], 0.0, *row[_VALUE_SINCE + 1 :])
        yield row
