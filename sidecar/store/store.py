"""The embedded SQLite store: one writer with group commit, and readers beside it.

:class:`Writer` is the only code that writes. :meth:`Writer.apply` takes a batch of world
events, runs each through the engine's :func:`~sidecar.engine.ingest` inside one
transaction (each event in its own savepoint, so a bad one is refused whole while the rest
commit), commits once, and only then returns. Whatever it returns is durable: that return is
the commit boundary the server waits on before it acknowledges.

:class:`Reader` answers queries on its own connection; WAL lets it read while the writer
writes. Raw ``sqlite3`` errors do not leave this module: they become :class:`StoreError`.

Exception tree::

    StoreError
     ├── SchemaTooNew       the database was written by a newer Credence
     └── StorageFailure     SQLite refused a write we believed valid (a bug or a full disk)
"""

from __future__ import annotations

import dataclasses
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
    Outcome,
    Rules,
    WorldEvent,
    ingest,
    parse_event,
)
from .rows import (
    BELIEF_COLUMNS,
    CHANGE_COLUMNS,
    belief_from_row,
    belief_to_row,
    change_from_row,
    change_to_row,
    dump_json,
    load_json,
)
from .schema import migrate

__all__ = [
    "EventResult",
    "Reader",
    "ResultStatus",
    "SchemaTooNew",
    "StorageFailure",
    "StoreError",
    "Writer",
    "connect",
]


class StoreError(Exception):
    """Base of the store's own errors."""


class SchemaTooNew(StoreError):
    """The database holds migrations this version does not know."""


class StorageFailure(StoreError):
    """SQLite refused a write: an engine bug caught by a CHECK, or the disk failed."""

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


@dataclass(slots=True)
class _WorldState:
    """The writer's cached copy of one world's row and resident set."""

    day: float
    event_seq: int
    change_seq: int
    rules: Rules
    residents: set[str] = field(default_factory=set)


class _View:
    """The engine's read access to one world, over the writer's open transaction."""

    def __init__(self, conn: sqlite3.Connection, world: str, state: _WorldState) -> None:
        self.conn, self.world, self.state = conn, world, state

    def get_belief(self, resident: str, root: str) -> Belief | None:
        row = self.conn.execute(
            "SELECT * FROM beliefs WHERE world = ? AND resident = ? AND root = ?",
            (self.world, resident, root),
        ).fetchone()
        return None if row is None else belief_from_row(row)

    def due_beliefs(self, day: float) -> Iterator[Belief]:
        rows = self.conn.execute(
            "SELECT * FROM beliefs INDEXED BY beliefs_due WHERE world = ? AND "
            "next_decay_day IS NOT NULL AND next_decay_day <= ? "
            "ORDER BY next_decay_day, resident, root",
            (self.world, day),
        ).fetchall()
        return (belief_from_row(row) for row in rows)

    def is_known(self, resident: str) -> bool:
        return resident in self.state.residents

    def get_trust(self, resident: str, source: str, topic: str) -> float | None:
        row = self.conn.execute(
            "SELECT value FROM trust WHERE world = ? AND resident = ? AND source = ? AND topic = ?",
            (self.world, resident, source, topic),
        ).fetchone()
        return None if row is None else float(row[0])

    def known_residents(self) -> list[str]:
        return sorted(self.state.residents)


_INSERT_BELIEF = (
    f"INSERT OR REPLACE INTO beliefs ({', '.join(BELIEF_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(BELIEF_COLUMNS))})"
)
_INSERT_CHANGE = (
    f"INSERT INTO changes ({', '.join(CHANGE_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(CHANGE_COLUMNS))})"
)
_INSERT_EVIDENCE = (
    "INSERT INTO evidence (world, evidence_id, resident, root, value, event_id, day, "
    "source_kind, source_resident, relation, op, subject, origin, hops, trust) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


class Writer:
    """The single writer. Not thread-safe: one thread calls it (the server's writer thread)."""

    def __init__(
        self, path: str | Path, *, rules: Rules = DEFAULT_RULES, synchronous: str = "FULL"
    ) -> None:
        self.path = Path(path)
        self.rules = rules
        self.conn = connect(self.path, synchronous=synchronous)
        self.db = Database(self.conn)
        try:
            self.migrations_applied = migrate(self.conn)
        except RuntimeError as exc:
            self.conn.close()
            raise SchemaTooNew(str(exc)) from exc
        self._worlds: dict[str, _WorldState] = {}

    def close(self) -> None:
        self.conn.close()

    def ensure_world(self, world: str, rules: Rules) -> None:
        """Create ``world`` with its own rules (a rebuild keeps the rules it was run with)."""
        if self.conn.execute("SELECT 1 FROM worlds WHERE world = ?", (world,)).fetchone():
            return
        self.conn.execute(
            "INSERT INTO worlds (world, rules) VALUES (?, ?)",
            (world, dump_json(dataclasses.asdict(rules))),
        )

    def _world(self, world: str) -> _WorldState:
        state = self._worlds.get(world)
        if state is not None:
            return state
        row = self.conn.execute(
            "SELECT day, event_seq, change_seq, rules FROM worlds WHERE world = ?", (world,)
        ).fetchone()
        if row is None:
            rules = self.rules
            self.conn.execute(
                "INSERT INTO worlds (world, rules) VALUES (?, ?)",
                (world, dump_json(dataclasses.asdict(rules))),
            )
            state = _WorldState(0.0, 0, 0, rules)
        else:
            state = _WorldState(
                row["day"], row["event_seq"], row["change_seq"], Rules(**load_json(row["rules"]))
            )
            state.residents = {
                r[0] for r in self.conn.execute(
                    "SELECT resident FROM residents WHERE world = ?", (world,)
                )
            }  # fmt: skip
        self._worlds[world] = state
        return state

    def apply(self, batch: Sequence[tuple[str, WorldEvent]]) -> list[EventResult]:
        """Apply ``(world, event)`` pairs in order in one transaction; return after commit."""
        results: list[EventResult] = []
        if not batch:
            return results
        snapshot = {w: dataclasses.replace(s, residents=set(s.residents)) for w, s in self._worlds.items()}
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            dirty: set[str] = set()
            for world, event in batch:
                results.append(self._apply_one(world, event))
                dirty.add(world)
            for world in dirty:
                s = self._worlds[world]
                self.conn.execute(
                    "UPDATE worlds SET day = ?, event_seq = ?, change_seq = ? WHERE world = ?",
                    (s.day, s.event_seq, s.change_seq, world),
                )
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._worlds = snapshot
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise StorageFailure(f"could not commit a batch of {len(batch)} events: {exc}") from exc
        except BaseException:
            self._worlds = snapshot
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        return results

    def _apply_one(self, world: str, event: WorldEvent) -> EventResult:
        state = self._world(world)
        if self.conn.execute(
            "SELECT 1 FROM events WHERE world = ? AND event_id = ?", (world, event.event_id)
        ).fetchone():
            return EventResult(world, event.event_id, ResultStatus.DUPLICATE)
        try:
            outcome = ingest(event, state.day, _View(self.conn, world, state), state.rules)
        except EngineError as exc:
            return EventResult(world, event.event_id, ResultStatus.REJECTED, error=exc)
        self.conn.execute("SAVEPOINT event")
        try:
            changes = self._write(world, state, outcome)
        except sqlite3.Error as exc:
            self.conn.execute("ROLLBACK TO event")
            self.conn.execute("RELEASE event")
            failure = StorageFailure(f"event {event.event_id!r} could not be stored: {exc}")
            return EventResult(world, event.event_id, ResultStatus.REJECTED, error=failure)
        self.conn.execute("RELEASE event")
        state.day = outcome.day
        state.event_seq += 1
        state.change_seq += len(changes)
        state.residents.update(outcome.new_residents)
        return EventResult(
            world, event.event_id, ResultStatus.APPLIED, changes=tuple(changes),
            results=tuple(outcome.results),
        )  # fmt: skip

    def _write(self, world: str, state: _WorldState, out: Outcome) -> list[Change]:
        ev = out.event
        conn = self.conn
        conn.execute(
            "INSERT INTO events (world, seq, event_id, day, kind, body) VALUES (?,?,?,?,?,?)",
            (world, state.event_seq + 1, ev.event_id, ev.day, str(ev.kind), dump_json(ev.to_dict())),
        )
        if out.new_residents:
            conn.executemany(
                "INSERT INTO residents (world, resident) VALUES (?, ?)",
                [(world, r) for r in out.new_residents],
            )
        if out.evidence:
            conn.executemany(
                _INSERT_EVIDENCE,
                [
                    (
                        world, e.evidence_id, e.resident, e.claim.root, dump_json(e.claim.value),
                        e.event_id, e.day, str(e.source_kind), e.source_resident_id, str(rel),
                        e.op, e.subject, e.origin, dump_json(e.hops), e.trust,
                    )  # fmt: skip
                    for e, rel in out.evidence
                ],
            )
        if out.beliefs:
            conn.executemany(_INSERT_BELIEF, [belief_to_row(world, b) for b in out.beliefs.values()])
        if out.trust:
            conn.executemany(
                "INSERT OR REPLACE INTO trust (world, resident, source, topic, value) VALUES (?,?,?,?,?)",
                [(world, i, j, t, v) for (i, j, t), v in out.trust.items()],
            )
        if out.facts:
            conn.executemany(
                "INSERT OR REPLACE INTO facts (world, root, value) VALUES (?,?,?)",
                [(world, root, dump_json(v)) for root, v in out.facts.items()],
            )
        numbered = [
            dataclasses.replace(c, seq=state.change_seq + i)
            for i, c in enumerate(out.changes, start=1)
        ]
        if numbered:
            conn.executemany(
                _INSERT_CHANGE, [change_to_row(world, c.seq or 0, c) for c in numbered]
            )
        return numbered


class Reader:
    """Read-only queries on a connection of its own. One thread at a time may use it."""

    def __init__(self, path: str | Path) -> None:
        self.conn = connect(path, synchronous="NORMAL")
        self.db = Database(self.conn)

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
            self._rows("SELECT 1 FROM residents WHERE world = ? AND resident = ?", (world, resident))
        )

    def belief(self, world: str, resident: str, root: str) -> Belief | None:
        rows = self._rows(
            "SELECT * FROM beliefs WHERE world = ? AND resident = ? AND root = ?",
            (world, resident, root),
        )
        return belief_from_row(rows[0]) if rows else None

    def beliefs(
        self, world: str, resident: str, *, after_root: str | None = None, limit: int = -1
    ) -> list[Belief]:
        """A resident's beliefs in root order; page with ``after_root``."""
        rows = self._rows(
            "SELECT * FROM beliefs WHERE world = ? AND resident = ? AND root > ? "
            "ORDER BY root LIMIT ?",
            (world, resident, after_root or "", limit),
        )
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

    def evidence(self, world: str, resident: str, root: str) -> list[dict[str, Any]]:
        """Every piece of evidence behind one belief, oldest first, with its event kind."""
        rows = self._rows(
            "SELECT ev.*, e.kind AS event_kind, e.seq AS event_seq FROM evidence ev "
            "JOIN events e ON e.world = ev.world AND e.event_id = ev.event_id "
            "WHERE ev.world = ? AND ev.resident = ? AND ev.root = ? ORDER BY e.seq",
            (world, resident, root),
        )
        out = []
        for r in rows:
            item = dict(r)
            item["value"] = load_json(item["value"])
            out.append(item)
        return out

    def history(self, world: str, resident: str, root: str) -> list[Change]:
        rows = self._rows(
            "SELECT * FROM changes WHERE world = ? AND resident = ? AND root = ? ORDER BY seq",
            (world, resident, root),
        )
        return [change_from_row(r) for r in rows]

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
        cursor = self.conn.execute(
            "SELECT body FROM events WHERE world = ? ORDER BY seq", (world,)
        )
        for (body,) in cursor:
            yield parse_event(load_json(body))

    def event_ids(self, world: str) -> set[str]:
        return {r[0] for r in self._rows("SELECT event_id FROM events WHERE world = ?", (world,))}

    def trust(self, world: str, resident: str, source: str | None = None) -> list[dict[str, Any]]:
        """A resident's trust table, each entry with the change records that moved it."""
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
                    "history": self.history(world, resident, root),
                }
            )
        return out

    def fact(self, world: str, root: str) -> tuple[bool, Any]:
        """What the world itself observed on ``root`` (found, value)."""
        rows = self._rows("SELECT value FROM facts WHERE world = ? AND root = ?", (world, root))
        return (True, load_json(rows[0][0])) if rows else (False, None)

    def rules(self, world: str) -> Rules:
        rows = self._rows("SELECT rules FROM worlds WHERE world = ?", (world,))
        return Rules(**load_json(rows[0][0])) if rows else DEFAULT_RULES
