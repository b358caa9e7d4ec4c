"""What the engine reads through while the writer folds a batch: the batch's own writes
(:class:`_Batch`), then the cache, then SQLite (:class:`_View`), and the writer's copy of
each world's row (:class:`_WorldState`)."""

from __future__ import annotations

import sqlite3
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..engine import Belief, RootSchema, Rules, parse_schema
from ..engine.promises import PromiseView
from .cache import _MISSING, _Cache
from .promises import PromiseReads
from .rows import belief_from_row, load_json

__all__: list[str] = []


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


class _Batch:
    """One batch's writes, held in Python until they go to SQLite together.

    The engine reads through it first (beliefs and trust values written by earlier events
    of the batch), then the cache, then SQLite. Each belief and trust value is kept in its
    last version only, so it is written once per batch however many events touched it.
    """

    __slots__ = ("beliefs", "changes", "due", "due_floor", "event_ids", "events", "evidence",
                 "facts", "horizon", "promises_due", "residents", "said", "swept",
                 "trust")  # fmt: skip

    def __init__(self) -> None:
        self.beliefs: dict[tuple[str, str, str], Belief] = {}
        #: Per world, the staged beliefs that have an aging day (what due_beliefs adds).
        self.due: dict[str, dict[tuple[str, str, str], Belief]] = {}
        #: Per world, a day at or before every aging day in ``due`` (a lower bound: a belief
        #: leaving ``due`` may leave it low): a sweep to an earlier day finds none of them.
        self.due_floor: dict[str, float] = {}
        #: Per world, the latest day an applied event of the batch swept for due beliefs.
        self.swept: dict[str, float] = {}
        self.trust: dict[tuple[str, str, str, str], float] = {}
        self.facts: dict[tuple[str, str], str] = {}
        self.event_ids: set[tuple[str, str]] = set()
        self.events: list[tuple[Any, ...]] = []
        self.residents: list[tuple[str, str]] = []
        self.evidence: list[tuple[Any, ...]] = []
        self.changes: list[tuple[Any, ...]] = []
        self.said: list[tuple[Any, ...]] = []  # own words (sidecar/store/said.py)
        #: Per world, the latest day of the batch's events: no sweep of the batch goes later.
        self.horizon: dict[str, float] = {}
        #: Per world, the promise views past their deadline by a day (and their deadlines),
        #: read once per batch and dropped when an event of the batch writes promise rows:
        #: each sweep in between takes its slice.
        self.promises_due: dict[str, tuple[float, list[float], list[PromiseView]]] = {}


_INF = float("inf")


def _due_order(b: Belief) -> tuple[float, str, str]:
    return (b.next_decay_day, b.resident, b.root)  # type: ignore[return-value]


class _View(PromiseReads):
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
        key = (self.world, resident, root)
        batch = self.batch
        if batch is not None:
            staged = batch.beliefs.get(key)
            if staged is not None:
                return staged
        cache = self.cache
        if cache is not None:
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
        if pending and batch.due_floor[world] <= day:
            # (every staged belief with an aging day is looked at: the floor is set again
            # to the lowest of them, so the next sweep before it looks at none)
            floor = _INF
            for b in pending.values():
                when: float = b.next_decay_day  # type: ignore[assignment]
                if when <= day:
                    due.append(b)
                if when < floor:
                    floor = when
            batch.due_floor[world] = floor
            due.sort(key=_due_order)
        return iter(due)

    def due_promise_views(self, day: float) -> list[PromiseView]:
        """Views past their deadline before ``day``; on the batched path, sliced from one
        read, which holds until an event of the batch writes promise rows (the writer's
        ``_stage`` drops it then)."""
        batch = self.batch
        if batch is None:
            return PromiseReads.due_promise_views(self, day)
        read = batch.promises_due.get(self.world)
        if read is None or read[0] < day:
            upto = max(day, batch.horizon.get(self.world, day))
            views = PromiseReads.due_promise_views(self, upto)
            read = batch.promises_due[self.world] = (upto, [v.due for v in views], views)  # type: ignore[misc]
        _, dues, views = read
        return views[: bisect_left(dues, day)]

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
        key = (self.world, resident, source, topic)
        batch = self.batch
        if batch is not None:
            staged = batch.trust.get(key)
            if staged is not None:
                return staged
        cache = self.cache
        if cache is not None:
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
