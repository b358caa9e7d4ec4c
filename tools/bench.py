"""``credence bench``: where the sidecar's time goes, and how its cost grows.

One invocation measures, under the same client load (the same pre-generated town frames over
the same number of connections, each with the same window of unacknowledged events):

(a) **transport** — a bare websockets + msgpack server (:mod:`tools.echo_server`, a child
    process) that decodes each event and answers with an ack-sized frame;
(b) **storage** — plain ``sqlite3`` writing exactly the rows the sidecar writes for those
    events (event row, new residents, evidence, belief upserts, trust, facts, change rows,
    the world row) the way its writer does (one ``executemany`` per table per transaction,
    each belief once in its last version), in WAL transactions of ``clients × window``
    events (the most a group commit can gather from that load) with ``synchronous=FULL``;
    no engine, no network (the rows are computed beforehand through the engine, untimed);
(b0) **fixed reference** — the same, but the least a faithful store could write: the log
    row and, per affected belief, one compact upsert and one compact change row. It does not
    move when the sidecar's rows get heavier or lighter, so ``c / L0`` compares runs;
(c) **sidecar** — ``credence serve`` as a child process, acks after a durable group commit.

They run interleaved (a, b, b0, w, c in rotating order, several rounds, medians reported;
w is :class:`~sidecar.store.Writer` alone, no network), so a noisy neighbour hurts them all
alike. From them: the serial limit ``L = 1 / (1/a + 1/b)`` — what a server that did
transport and storage one after the other could reach — and ``c / L``; and ``L0`` and
``c / L0`` with the fixed reference b0 in place of b. Then a paced run at ``c / 2`` gives the ack latency at half the
sidecar's peak rate.

**Growth with stored beliefs**: two databases are pre-filled by direct SQL (10k and 1M
beliefs; ``--quick``: 10k and 100k) with hearsay aging days spread far out, except for a
fixed number of beliefs due on each of a few coming days. The same events are then applied
with :class:`~sidecar.store.Writer` to both (interleaved), and ticks that each age exactly
that fixed number of beliefs; the ratios ``cost@large / cost@small`` should stay near 1.

**Stalled subscriber**: a sidecar child process, a subscriber to ``"*"`` that never reads
(small socket buffer), events streamed in; the sidecar's RSS is sampled over time. It should
stay bounded: the subscriber's outbox is capped and the connection closed ``4008
slow_consumer``.

Figures are printed, never asserted: speed targets are printed beside them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import random
import re
import socket
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import msgpack
import orjson
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from sidecar.engine import (
    DEFAULT_RULES,
    MemoryWorld,
    WorldEvent,
    parse_event,
    rules_to_stored,
)
from sidecar.store import Writer, migrate
from sidecar.store import connect as db_connect
from sidecar.store.rows import (
    BELIEF_COLUMNS,
    CHANGE_COLUMNS,
    belief_to_row,
    change_to_row,
    dump_json,
    evidence_row,
    logged_subject,
)

from .harness import ServerProcess, percentiles
from .load import DriveResult, ListSource, TownSource, drive
from .town import LATE_EVENT_DAYS, Town, deal, encode_event, in_made_order

__all__ = ["BenchConfig", "bench_events", "main", "run_bench"]

WORLD = "bench"

TARGET_RATIO = 0.6
TARGET_RATIO0 = 0.35
TARGET_P99_MS = 25.0
TARGET_GROWTH = 1.5


@dataclass(slots=True)
class BenchConfig:
    events: int = 5000
    clients: int = 4
    window: int = 64
    rounds: int = 5
    residents: int = 50
    seed: int = 1
    small: int = 10_000
    large: int = 1_000_000
    scale_events: int = 1000
    scale_rounds: int = 5
    ticks: int = 12
    aged_per_tick: int = 200
    stall_events: int = 40_000
    stall_seconds: float = 40.0
    quick: bool = False

    @classmethod
    def for_args(cls, *, quick: bool, events: int | None, clients: int | None) -> BenchConfig:
        config = cls(
            events=800, rounds=3, large=100_000, scale_events=300, scale_rounds=3, ticks=9,
            aged_per_tick=100, stall_events=12_000, stall_seconds=15.0, quick=True,
        ) if quick else cls()  # fmt: skip
        if events is not None:
            config.events = events
        if clients is not None:
            config.clients = clients
        return config


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- (b) storage


@dataclass(slots=True)
class _Rows:
    """Everything the sidecar's writer inserts for one event, as ready parameter tuples."""

    event: tuple[Any, ...]
    residents: list[tuple[str, str]]
    evidence: list[tuple[Any, ...]]
    beliefs: list[tuple[Any, ...]]
    changes: list[tuple[Any, ...]]
    day: float
    change_seq: int
    trust: list[tuple[Any, ...]] = field(default_factory=list)
    facts: list[tuple[Any, ...]] = field(default_factory=list)
    #: The fixed reference (b0): one belief upsert and one change row per affected belief.
    minimal: list[tuple[Any, ...]] = field(default_factory=list)


_SQL_EVENT = "INSERT INTO events (world, seq, event_id, day, kind, body) VALUES (?,?,?,?,?,?)"
_SQL_RESIDENT = "INSERT INTO residents (world, resident) VALUES (?, ?)"
_SQL_EVIDENCE = (
    "INSERT INTO evidence_pieces (world, evidence_id, resident, root, value, event_seq, "
    "source_kind, source_resident, relation, op, subject, origin, hops, trust) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
_SQL_BELIEF = (
    f"INSERT INTO beliefs ({', '.join(BELIEF_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(BELIEF_COLUMNS))}) "
    "ON CONFLICT (world, resident, root) DO UPDATE SET "
    + ", ".join(
        f"{c} = excluded.{c}" for c in BELIEF_COLUMNS if c not in ("world", "resident", "root")
    )
)
_SQL_TRUST = (
    "INSERT OR REPLACE INTO trust (world, resident, source, topic, value) VALUES (?,?,?,?,?)"
)
_SQL_FACT = "INSERT OR REPLACE INTO facts (world, root, value) VALUES (?,?,?)"
_SQL_CHANGE = (
    f"INSERT INTO changes ({', '.join(CHANGE_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(CHANGE_COLUMNS))})"
)


def bench_events(total: int) -> list[WorldEvent]:
    """The bench's first ``total`` town events (its residents, seed and clients), parsed, in
    the order the town made them: the order one writer applies them in."""
    config = BenchConfig()
    streams = deal(config.residents, total, seed=config.seed, clients=config.clients)
    return [parse_event(e) for e in in_made_order(streams)]


def storage_plan(events: list[dict[str, Any]], world: str = WORLD) -> list[_Rows]:
    """The rows :class:`~sidecar.store.Writer` would insert for ``events``, in this order."""
    memory = MemoryWorld()
    plan: list[_Rows] = []
    change_seq = 0
    for seq, raw in enumerate(events, start=1):
        out = memory.apply(parse_event(raw))
        assert out is not None, "the town never repeats an event id"
        ev = out.event
        changes = []
        for change in out.changes:
            change_seq += 1
            changes.append(change_to_row(world, change_seq, change))
        plan.append(
            _Rows(
                event=(world, seq, ev.event_id, ev.day, str(ev.kind), dump_json(ev.to_dict())),
                residents=[(world, r) for r in out.new_residents],
                evidence=[
                    evidence_row(world, e, rel, seq, logged_subject(ev)) for e, rel in out.evidence
                ],
                beliefs=[belief_to_row(world, b) for b in out.beliefs.values()],
                changes=changes,
                day=out.day,
                change_seq=change_seq,
                trust=[(world, *k, v) for k, v in out.trust.items()],
                facts=[(world, k, dump_json(v)) for k, v in out.facts.items()],
                minimal=[
                    (world, b.resident, b.root, dump_json(b.value), b.confidence, str(b.state))
                    for b in out.beliefs.values()
                ],
            )
        )
    return plan


# The fixed reference (b0): the least a faithful store could write for the same events — the
# log row (idempotency: unique event id per world), then per affected belief one compact
# upsert and one compact change row — with the same durability (WAL, synchronous=FULL, the
# same transactions) and plain sqlite3 at its best (one executemany per table per
# transaction). It does not move when the sidecar's own rows get lighter or heavier.
_MINIMAL_SCHEMA = (
    "CREATE TABLE events (world TEXT NOT NULL, seq INTEGER NOT NULL, event_id TEXT NOT NULL, "
    "body TEXT NOT NULL, PRIMARY KEY (world, seq), UNIQUE (world, event_id))",
    "CREATE TABLE beliefs (world TEXT NOT NULL, resident TEXT NOT NULL, root TEXT NOT NULL, "
    "value TEXT NOT NULL, confidence INTEGER NOT NULL, state TEXT NOT NULL, "
    "PRIMARY KEY (world, resident, root)) WITHOUT ROWID",
    "CREATE TABLE changes (world TEXT NOT NULL, seq INTEGER NOT NULL, resident TEXT NOT NULL, "
    "root TEXT NOT NULL, confidence INTEGER NOT NULL, state TEXT NOT NULL, "
    "PRIMARY KEY (world, seq))",
)
_MIN_EVENT = "INSERT INTO events (world, seq, event_id, body) VALUES (?,?,?,?)"
_MIN_BELIEF = (
    "INSERT INTO beliefs (world, resident, root, value, confidence, state) VALUES (?,?,?,?,?,?) "
    "ON CONFLICT (world, resident, root) DO UPDATE SET value = excluded.value, "
    "confidence = excluded.confidence, state = excluded.state"
)
_MIN_CHANGE = (
    "INSERT INTO changes (world, seq, resident, root, confidence, state) VALUES (?,?,?,?,?,?)"
)


def run_minimal(plan: list[_Rows], path: Path, batch: int) -> float:
    """(b0): the minimal faithful rows for ``plan``, ``batch`` events per transaction."""
    conn = db_connect(path, synchronous="FULL")
    try:
        for sql in _MINIMAL_SCHEMA:
            conn.execute(sql)
        execute, many = conn.execute, conn.executemany
        change_seq = 0
        t0 = time.perf_counter()
        for start in range(0, len(plan), batch):
            events, beliefs, changes = [], [], []
            for rows in plan[start : start + batch]:
                world, seq, event_id, _, _, body = rows.event
                events.append((world, seq, event_id, body))
                for w, resident, root, _value, confidence, state in rows.minimal:
                    change_seq += 1
                    changes.append((w, change_seq, resident, root, confidence, state))
                beliefs += rows.minimal
            execute("BEGIN IMMEDIATE")
            many(_MIN_EVENT, events)
            many(_MIN_BELIEF, beliefs)
            many(_MIN_CHANGE, changes)
            execute("COMMIT")
        elapsed = time.perf_counter() - t0
    finally:
        conn.close()
    return len(plan) / elapsed


def run_storage(plan: list[_Rows], path: Path, batch: int, world: str = WORLD) -> float:
    """Write ``plan`` in transactions of ``batch`` events; events per second (timed part)."""
    conn = db_connect(path, synchronous="FULL")
    try:
        migrate(conn)
        conn.execute(
            "INSERT INTO worlds (world, rules) VALUES (?, ?)",
            (world, dump_json(rules_to_stored(DEFAULT_RULES))),
        )
        execute, many = conn.execute, conn.executemany
        t0 = time.perf_counter()
        for start in range(0, len(plan), batch):
            chunk = plan[start : start + batch]
            # As the writer does: one executemany per table per transaction, and each
            # belief (trust value, fact) once, in its last version.
            events, residents, evidence, changes = [], [], [], []
            beliefs: dict[tuple[Any, ...], tuple[Any, ...]] = {}
            trust: dict[tuple[Any, ...], tuple[Any, ...]] = {}
            facts: dict[tuple[Any, ...], tuple[Any, ...]] = {}
            for rows in chunk:
                events.append(rows.event)
                residents += rows.residents
                evidence += rows.evidence
                changes += rows.changes
                for row in rows.beliefs:
                    beliefs.pop(row[:3], None)
                    beliefs[row[:3]] = row
                for row in rows.trust:
                    trust[row[:4]] = row
                for row in rows.facts:
                    facts[row[:2]] = row
            execute("BEGIN IMMEDIATE")
            many(_SQL_EVENT, events)
            many(_SQL_RESIDENT, residents)
            many(_SQL_EVIDENCE, evidence)
            many(_SQL_BELIEF, beliefs.values())
            many(_SQL_TRUST, trust.values())
            many(_SQL_FACT, facts.values())
            many(_SQL_CHANGE, changes)
            last = chunk[-1]
            execute(
                "UPDATE worlds SET day = ?, event_seq = ?, change_seq = ? WHERE world = ?",
                (last.day, last.event[1], last.change_seq, world),
            )
            execute("COMMIT")
        elapsed = time.perf_counter() - t0
    finally:
        conn.close()
    return len(plan) / elapsed


def run_writer(events: list[WorldEvent], path: Path, batch: int, world: str = WORLD) -> float:
    """The store's own :class:`~sidecar.store.Writer` (engine, reads and the same rows), no
    network: events per second in transactions of ``batch`` events, ``synchronous=FULL``."""
    writer = Writer(path, synchronous="FULL")
    try:
        t0 = time.perf_counter()
        for start in range(0, len(events), batch):
            writer.apply([(world, e) for e in events[start : start + batch]])
        elapsed = time.perf_counter() - t0
    finally:
        writer.close()
    return len(events) / elapsed


# --------------------------------------------------------------------------- (a) and (c)


def _echo_argv(port: int) -> list[str]:
    return [sys.executable, "-m", "tools.echo_server", "--port", str(port)]


async def run_transport(frames: list[list[tuple[str, bytes]]], config: BenchConfig) -> float:
    with ServerProcess(argv_for=_echo_argv) as server:
        result = await drive(
            server.url, ListSource(frames), clients=config.clients, world=WORLD,
            window=config.window, observe=False, timeout=300,
        )  # fmt: skip
    _check(result, frames, "transport")
    return result.acked_per_s


_BATCHES = re.compile(r"credence stopped: (\d+) events in (\d+) batches")


async def run_sidecar(
    frames: list[list[tuple[str, bytes]]],
    config: BenchConfig,
    db: Path,
    *,
    rate: float | None = None,
) -> tuple[DriveResult, float | None]:
    """One run against a fresh sidecar child; the result and its mean group-commit batch."""
    server = ServerProcess(db, log_level="INFO", late_event_days=LATE_EVENT_DAYS)
    with server:
        result = await drive(
            server.url, ListSource(frames), clients=config.clients, world=WORLD,
            window=config.window, rate=rate, observe=False, timeout=300,
        )  # fmt: skip
        server.stop()
        found = _BATCHES.search(server.log_tail(5))
    _check(result, frames, "sidecar")
    mean_batch = int(found[1]) / int(found[2]) if found and int(found[2]) else None
    return result, mean_batch


def _check(result: DriveResult, frames: list[list[tuple[str, bytes]]], what: str) -> None:
    total = sum(len(f) for f in frames)
    if result.acked != total or result.errors:
        raise RuntimeError(
            f"{what} run acknowledged {result.acked} of {total} events; "
            f"errors: {dict(result.errors)}"
        )


# --------------------------------------------------------------------------- growth


_ROOTS_PER_RESIDENT = 100
_DAY0 = 1000.0
#: Game days between the growth part's ticks: half a day, so 12 ticks end before day 1007,
#: when the hearsay the timed events formed on day 1000 would age too.
_TICK_SPACING = 0.5


def _resident(i: int) -> str:
    return f"r{i:05d}"


def _root(i: int) -> str:
    return f"k{i:03d}"


def prefill(
    path: Path, beliefs: int, *, ticks: int, due_per_tick: int, spacing: float = 1.0
) -> float:
    """A database with ``beliefs`` beliefs in world ``bench`` at day 1000; seconds taken.

    Residents hold 100 beliefs each (roots ``k000``–``k099``); odd roots are hearsay, which
    ages: their next aging day is spread over the next 100 000 days, except for
    ``due_per_tick`` beliefs on odd roots ≥ 51 due just before each coming tick day
    ``1000 + k × spacing`` (k = 1..``ticks``) whose single aging step fades them (so each
    tick ages exactly that many, and none twice). Rows are
    generated by SQL (a recursive CTE) with the two secondary belief indexes built after the
    bulk insert, from the schema's own ``CREATE INDEX`` text.
    """
    t0 = time.perf_counter()
    residents = -(-beliefs // _ROOTS_PER_RESIDENT)
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        migrate(conn)
        indexes = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'beliefs' "
            "AND sql IS NOT NULL"
        ).fetchall()
        for name, _ in indexes:
            conn.execute(f"DROP INDEX {name}")
        conn.execute("BEGIN")
        conn.execute(
            "INSERT INTO worlds (world, day, rules) VALUES (?, ?, ?)",
            (WORLD, _DAY0, dump_json(rules_to_stored(DEFAULT_RULES))),
        )
        conn.execute(
            "INSERT INTO residents (world, resident) "
            "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?) "
            "SELECT ?, printf('r%05d', i) FROM c",
            (residents, WORLD),
        )
        conn.execute(
            """
            INSERT INTO beliefs (world, resident, root, value, subject, confidence, state,
                source_kind, source_resident, evidence_refs, evidence_count, heard_from, formed_day,
                updated_day, last_evidence_day, next_decay_day)
            WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < :n)
            SELECT :world, printf('r%05d', i / :per), printf('k%03d', i % :per),
                '"v' || (i % 3) || '"', 'a belief from before the benchmark',
                CASE i % 2 WHEN 1 THEN 58 ELSE 78 END, 'influencing',
                CASE i % 2 WHEN 1 THEN 'hearsay' ELSE 'firsthand' END,
                CASE i % 2 WHEN 1 THEN printf('r%05d', (i / :per + 1) % :res) END,
                '["pre/' || i || '"]', 1,
                CASE i % 2 WHEN 1 THEN printf('["r%05d"]', (i / :per + 1) % :res) ELSE '[]' END,
                :d0 - 30, :d0 - 30, :d0 - 30,
                CASE i % 2 WHEN 1 THEN :d0 + 100 + (i * 7919) % 100000 END
            FROM c
            """,
            {
                "n": beliefs,
                "per": _ROOTS_PER_RESIDENT,
                "res": residents,
                "d0": _DAY0,
                "world": WORLD,
            },
        )
        # Beliefs due on each coming day: confidence 42, so one step (−8) fades them at 34.
        pairs = [(r, k) for r in range(residents) for k in range(51, _ROOTS_PER_RESIDENT, 2)
                 if r * _ROOTS_PER_RESIDENT + k < beliefs]  # fmt: skip
        chosen = random.Random(7).sample(pairs, ticks * due_per_tick)
        due = []
        for slot, (r, k) in enumerate(chosen):
            day = _DAY0 + (slot // due_per_tick + 0.5) * spacing
            due.append((day - 7, day, WORLD, _resident(r), _root(k)))
        conn.executemany(
            "UPDATE beliefs SET confidence = 42, last_evidence_day = ?, next_decay_day = ? "
            "WHERE world = ? AND resident = ? AND root = ?",
            due,
        )
        conn.execute("COMMIT")
        for _, sql in indexes:
            conn.execute(sql)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("ANALYZE")
    finally:
        conn.close()
    return time.perf_counter() - t0


def scale_events(count: int, tag: str) -> list[dict[str, Any]]:
    """A fixed mix of events on residents r00000–r00099 and roots k000–k049 (present in
    every prefilled size), all on day 1000 so no aging runs during them."""
    rng = random.Random(11)
    people = [_resident(i) for i in range(100)]
    events: list[dict[str, Any]] = []
    for i in range(count):
        root = _root(rng.randrange(50))
        value = f"v{rng.randrange(3)}"
        base = {"event_id": f"{tag}-{i}", "day": _DAY0, "claim": {"root": root, "value": value}}
        roll = rng.random()
        if roll < 0.45:
            witnesses = rng.sample(people, rng.randint(1, 3))
            events.append({**base, "kind": "observe", "witnesses": witnesses,
                           "subject": f"{root} seen as {value}"})  # fmt: skip
        elif roll < 0.85:
            who = rng.sample(people, rng.randint(2, 4))
            events.append({**base, "kind": "say", "speaker": who[0], "listeners": who[1:],
                           "subject": f"{who[0]} says {root} is {value}"})  # fmt: skip
        elif roll < 0.95:
            del base["claim"]
            events.append({**base, "kind": "act", "actor": rng.choice(people), "action": "bake",
                           "status": "completed", "witnesses": rng.sample(people, 2)})  # fmt: skip
        else:
            events.append({**base, "kind": "intervene", "resident": rng.choice(people),
                           "op": "implant", "subject": f"implanted {root} is {value}"})  # fmt: skip
    return events


@dataclass(slots=True)
class Growth:
    small: int
    large: int
    prefill_s: dict[int, float] = field(default_factory=dict)
    event_us: dict[int, float] = field(default_factory=dict)
    tick_us: dict[int, float] = field(default_factory=dict)
    aged: dict[int, list[int]] = field(default_factory=dict)

    def ratio(self, costs: dict[int, float]) -> float:
        return costs[self.large] / costs[self.small]


def _settle(writer: Writer) -> None:
    """Untimed, before each timed run of the growth part: collect the garbage the other
    database's run left, and checkpoint the WAL, so neither a collection nor an automatic
    checkpoint owed to earlier commits lands at random in one size's ~20 ms tick (see
    tools/PERFORMANCE.md, "Per-tick growth at 1M beliefs")."""
    gc.collect()
    writer.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")


def run_growth(config: BenchConfig, tmp: Path) -> Growth:
    sizes = (config.small, config.large)
    growth = Growth(*sizes)
    writers: dict[int, Writer] = {}
    # Whatever the bench built before (frames, storage plans) lives on: out of the collector's
    # reach, a full collection during a timed tick walks only what the growth part built.
    gc.collect()
    gc.freeze()
    try:
        for size in sizes:
            _log(f"  prefilling {size} beliefs …")
            growth.prefill_s[size] = prefill(
                tmp / f"grow-{size}.db", size, ticks=config.ticks,
                due_per_tick=config.aged_per_tick, spacing=_TICK_SPACING,
            )  # fmt: skip
            writers[size] = Writer(tmp / f"grow-{size}.db", synchronous="NORMAL")
            writers[size].apply([(WORLD, parse_event(e)) for e in scale_events(1, "warm")])
        per_event: dict[int, list[float]] = {size: [] for size in sizes}
        for r in range(config.scale_rounds):
            parsed = [parse_event(e) for e in scale_events(config.scale_events, f"g{r}")]
            for size in sizes if r % 2 == 0 else sizes[::-1]:
                writer = writers[size]
                _settle(writer)
                t0 = time.perf_counter()
                for start in range(0, len(parsed), 10):
                    writer.apply([(WORLD, e) for e in parsed[start : start + 10]])
                per_event[size].append((time.perf_counter() - t0) / len(parsed))
        per_tick: dict[int, list[float]] = {size: [] for size in sizes}
        growth.aged = {size: [] for size in sizes}
        for t in range(config.ticks):
            day = _DAY0 + (t + 1) * _TICK_SPACING
            tick = parse_event({"event_id": f"tick-{t}", "day": day, "kind": "tick"})
            for size in sizes if t % 2 == 0 else sizes[::-1]:
                _settle(writers[size])
                t0 = time.perf_counter()
                (result,) = writers[size].apply([(WORLD, tick)])
                per_tick[size].append(time.perf_counter() - t0)
                growth.aged[size].append(len(result.changes))
        for size in sizes:
            growth.event_us[size] = statistics.median(per_event[size]) * 1e6
            growth.tick_us[size] = statistics.median(per_tick[size]) * 1e6
    finally:
        for writer in writers.values():
            writer.close()
        gc.unfreeze()
    return growth


# --------------------------------------------------------------------------- stalled subscriber


@dataclass(slots=True)
class Stall:
    samples: list[tuple[float, int, float]] = field(default_factory=list)  # t, acked, RSS MiB
    close_code: int | None = None
    slow_consumer_frame: bool = False
    drained: int = 0
    events: int = 0
    peak_mib: float = 0.0
    baseline_mib: float = 0.0
    server_closed_at: float | None = None  # when the sidecar logged the 4008 close (s)

    @property
    def closed_slow(self) -> bool:
        """The sidecar closed the subscriber as a slow consumer (its log, or the close code)."""
        return self.server_closed_at is not None or self.close_code == 4008

    @property
    def bounded(self) -> bool:
        """Closed as a slow consumer, and RSS in the second half of the run did not grow by
        more than 10% over the first half's peak."""
        if not self.samples:
            return False
        half = len(self.samples) // 2
        first = max(s[2] for s in self.samples[: max(1, half)])
        last = max(s[2] for s in self.samples[half:])
        return self.closed_slow and last <= first * 1.10


# The sidecar logs a connection's end once its close handshake is over (or timed out).
_SLOW_CLOSE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO credence\.server: conn \d+ closed "
    r"code=4008 .*\(slow consumer\)",
    re.MULTILINE,
)


def _slow_close_time(log: str) -> float | None:
    """Unix time of the first slow-consumer close in a sidecar log at INFO level."""
    found = _SLOW_CLOSE.search(log)
    if found is None:
        return None
    return datetime.strptime(found[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()


async def _stalled_subscriber(url: str) -> Any:
    host, port = url.removeprefix("ws://").split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.wait_for(asyncio.get_running_loop().sock_connect(sock, (host, int(port))), 10)
    ws = await asyncio.wait_for(
        connect(url, sock=sock, proxy=None, compression=None, ping_interval=None, max_queue=1,
                close_timeout=5),
        10,
    )  # fmt: skip
    await ws.send(msgpack.packb({"type": "hello", "protocol": 1, "world": WORLD, "subscribe": "*"}))
    welcome = msgpack.unpackb(await asyncio.wait_for(ws.recv(), 10), raw=False)
    if welcome.get("type") != "welcome":
        raise RuntimeError(f"stalled subscriber refused: {welcome}")
    return ws  # never read again until the end


async def run_stall(config: BenchConfig, db: Path) -> Stall:
    stall = Stall()
    with ServerProcess(db, log_level="INFO", late_event_days=LATE_EVENT_DAYS) as server:
        sub = await _stalled_subscriber(server.url)
        town = Town(config.residents, seed=config.seed + 1, clients=config.clients)
        t0, wall0 = time.perf_counter(), time.time()
        progress: list[DriveResult] = []

        def tick(r: DriveResult) -> None:
            if not progress:
                progress.append(r)

        async def sample() -> None:
            while True:
                mem = server.memory()
                if mem is not None:
                    acked = progress[0].acked if progress else 0
                    stall.samples.append((time.perf_counter() - t0, acked, mem[1]))
                    stall.peak_mib = max(stall.peak_mib, mem[0])
                await asyncio.sleep(0.25)

        first = server.memory()
        stall.baseline_mib = first[1] if first else 0.0
        sampler = asyncio.get_running_loop().create_task(sample())
        try:
            result = await drive(
                server.url, TownSource(town, config.stall_events), clients=config.clients,
                world=WORLD, window=config.window, duration=config.stall_seconds,
                observe=False, timeout=config.stall_seconds + 60, on_tick=tick,
            )  # fmt: skip
            stall.events = result.acked
            await asyncio.sleep(1.0)  # one more second of samples after the stream
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
        # Now read what the subscriber was sent, until the server's close (bounded).
        deadline = time.perf_counter() + 20
        try:
            while time.perf_counter() < deadline:
                message = await asyncio.wait_for(
                    sub.recv(), max(0.1, deadline - time.perf_counter())
                )
                stall.drained += 1
                frame = msgpack.unpackb(message, raw=False)
                if frame.get("type") == "error" and frame.get("code") == "slow_consumer":
                    stall.slow_consumer_frame = True
        except (ConnectionClosed, TimeoutError):
            pass
        stall.close_code = sub.close_code
        with contextlib.suppress(Exception):
            await sub.close()
        for _ in range(60):  # the log line follows the close handshake (bounded: 15 s)
            closed = _slow_close_time(server.log_tail(400))
            if closed is not None:
                stall.server_closed_at = closed - wall0
                break
            await asyncio.sleep(0.25)
    return stall


# --------------------------------------------------------------------------- the run


@dataclass(slots=True)
class BenchResult:
    config: BenchConfig
    transport: list[float] = field(default_factory=list)
    storage: list[float] = field(default_factory=list)
    minimal: list[float] = field(default_factory=list)
    sidecar: list[float] = field(default_factory=list)
    writer: list[float] = field(default_factory=list)
    mean_batch: list[float] = field(default_factory=list)
    storage_batch: int = 0
    paced_rate: float = 0.0
    paced: dict[str, float] = field(default_factory=dict)
    paced_achieved: float = 0.0
    growth: Growth | None = None
    stall: Stall | None = None

    @property
    def a(self) -> float:
        return statistics.median(self.transport)

    @property
    def b(self) -> float:
        return statistics.median(self.storage)

    @property
    def c(self) -> float:
        return statistics.median(self.sidecar)

    @property
    def b0(self) -> float:
        return statistics.median(self.minimal)

    @property
    def serial_limit(self) -> float:
        return 1 / (1 / self.a + 1 / self.b)

    @property
    def serial_limit0(self) -> float:
        """L0: the serial limit over the fixed reference (b0) instead of the sidecar's rows."""
        return 1 / (1 / self.a + 1 / self.b0)


async def run_bench(config: BenchConfig) -> BenchResult:
    result = BenchResult(config)
    streams = deal(config.residents, config.events, seed=config.seed, clients=config.clients)
    frames = [[(e["event_id"], encode_event(e)) for e in s] for s in streams]
    in_order = in_made_order(streams)
    plan = storage_plan(in_order)
    result.storage_batch = config.clients * config.window
    with tempfile.TemporaryDirectory(prefix="credence-bench-") as tmp_name:
        tmp = Path(tmp_name)
        runs = ("a", "b", "b0", "w", "c")
        parsed = [parse_event(e) for e in in_order]
        for r in range(config.rounds):
            order = runs[r % len(runs) :] + runs[: r % len(runs)]
            for which in order:
                if which == "a":
                    result.transport.append(await run_transport(frames, config))
                elif which == "b":
                    path = tmp / f"storage-{r}.db"
                    result.storage.append(run_storage(plan, path, result.storage_batch))
                    _remove_db(path)
                elif which == "b0":
                    path = tmp / f"minimal-{r}.db"
                    result.minimal.append(run_minimal(plan, path, result.storage_batch))
                    _remove_db(path)
                elif which == "w":
                    path = tmp / f"writer-{r}.db"
                    result.writer.append(run_writer(parsed, path, result.storage_batch))
                    _remove_db(path)
                else:
                    path = tmp / f"sidecar-{r}.db"
                    got, batch = await run_sidecar(frames, config, path)
                    result.sidecar.append(got.acked_per_s)
                    if batch is not None:
                        result.mean_batch.append(batch)
                    _remove_db(path)
            _log(
                f"round {r + 1}/{config.rounds}: transport {result.transport[-1]:.0f}, "
                f"storage {result.storage[-1]:.0f}, minimal {result.minimal[-1]:.0f}, "
                f"writer {result.writer[-1]:.0f}, "
                f"sidecar {result.sidecar[-1]:.0f} events/s"
            )
        result.paced_rate = result.c / 2
        _log(f"paced run at {result.paced_rate:.0f} events/s …")
        paced, _ = await run_sidecar(frames, config, tmp / "paced.db", rate=result.paced_rate)
        result.paced = {k: v * 1000 for k, v in percentiles(paced.ack_latency).items()}
        result.paced_achieved = paced.acked_per_s
        _remove_db(tmp / "paced.db")
        _log("growth with stored beliefs …")
        result.growth = run_growth(config, tmp)
        for size in (config.small, config.large):
            _remove_db(tmp / f"grow-{size}.db")
        _log("stalled subscriber …")
        result.stall = await run_stall(config, tmp / "stall.db")
    return result


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{suffix}").unlink()


def _short(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 and n % 1_000_000 == 0 else (
        f"{n // 1000}k" if n % 1000 == 0 else str(n)
    )  # fmt: skip


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def render(res: BenchResult) -> str:
    cfg = res.config
    a, b, c, lim = res.a, res.b, res.c, res.serial_limit
    ratio = c / lim
    b0, lim0 = res.b0, res.serial_limit0
    ratio0 = c / lim0
    batch = f"{statistics.mean(res.mean_batch):.1f}" if res.mean_batch else "?"
    w = statistics.median(res.writer)
    lines = [
        f"credence bench{' --quick' if cfg.quick else ''}: {cfg.events} town events over "
        f"{cfg.clients} connections (window {cfg.window} each), {cfg.rounds} interleaved rounds, "
        f"seed {cfg.seed}",
        "",
        "throughput (median of the rounds)                         measured      target",
        f"  (a) transport: websockets + msgpack echo     {a:>12.1f} events/s",
        f"  (b) storage: sqlite3 WAL FULL, {res.storage_batch} ev/txn     {b:>12.1f} events/s",
        f"  (b0) fixed reference: minimal faithful rows  {b0:>12.1f} events/s",
        f"  (c) sidecar: durable group-commit acks       {c:>12.1f} events/s",
        f"  serial limit L = 1/(1/a + 1/b)               {lim:>12.1f} events/s",
        f"  serial limit L0 = 1/(1/a + 1/b0)             {lim0:>12.1f} events/s",
        f"  c / L                                        {ratio:>12.3f}          ≥ {TARGET_RATIO}"
        f"   {_verdict(ratio >= TARGET_RATIO)}",
        f"  c / L0                                       {ratio0:>12.3f}          ≥ "
        f"{TARGET_RATIO0}   {_verdict(ratio0 >= TARGET_RATIO0)}",
        f"  rounds (events/s)  a: {' '.join(f'{x:.0f}' for x in res.transport)}",
        f"                     b: {' '.join(f'{x:.0f}' for x in res.storage)}",
        f"                    b0: {' '.join(f'{x:.0f}' for x in res.minimal)}",
        f"                     c: {' '.join(f'{x:.0f}' for x in res.sidecar)}",
        f"                     w: {' '.join(f'{x:.0f}' for x in res.writer)}",
        f"  (w) reference: Writer.apply, no network   {w:>12.1f} events/s"
        "   (engine + reads + b's rows)",
        f"  sidecar mean group-commit batch: {batch} events",
        "",
        f"ack latency at half peak (paced at {res.paced_rate:.1f} events/s, "
        f"achieved {res.paced_achieved:.1f})",
        f"  p50                                          {res.paced['p50']:>12.2f} ms",
        f"  p99                                          {res.paced['p99']:>12.2f} ms       ≤ "
        f"{TARGET_P99_MS:g} ms   {_verdict(res.paced['p99'] <= TARGET_P99_MS)}",
    ]
    g = res.growth
    if g is not None:
        s, big = _short(g.small), _short(g.large)
        er, tr = g.ratio(g.event_us), g.ratio(g.tick_us)
        lines += [
            "",
            f"cost growth with stored beliefs ({s} → {big}; Writer.apply, synchronous=NORMAL)",
            f"  prefill: {s} in {g.prefill_s[g.small]:.1f} s, "
            f"{big} in {g.prefill_s[g.large]:.1f} s",
            f"  per event @{s:<5} {g.event_us[g.small]:>10.2f} µs   @{big:<5} "
            f"{g.event_us[g.large]:>10.2f} µs   ratio {er:.3f}   ≤ {TARGET_GROWTH}   "
            f"{_verdict(er <= TARGET_GROWTH)}",
            f"  per tick  @{s:<5} {g.tick_us[g.small]:>10.2f} µs   @{big:<5} "
            f"{g.tick_us[g.large]:>10.2f} µs   ratio {tr:.3f}   ≤ {TARGET_GROWTH}   "
            f"{_verdict(tr <= TARGET_GROWTH)}",
            f"  beliefs aged per tick: {s} {g.aged[g.small]}, {big} {g.aged[g.large]} "
            f"(target {cfg.aged_per_tick} each)",
        ]
    st = res.stall
    if st is not None:
        lines += ["", 'stalled subscriber (subscribed to "*", never reads; small socket buffer)']
        lines.append("  t (s)    events acked    sidecar RSS (MiB)")
        step = max(1, len(st.samples) // 12)
        shown = st.samples[::step]
        if st.samples and shown[-1] is not st.samples[-1]:
            shown.append(st.samples[-1])
        for t, acked, rss in shown:
            lines.append(f"  {t:>5.1f}    {acked:>12}    {rss:>12.1f}")
        seen = "with a slow_consumer error frame" if st.slow_consumer_frame else "without one"
        server_side = (
            "not closed as a slow consumer"
            if st.server_closed_at is None
            else "closed 4008 slow_consumer by the sidecar (logged at "
            f"t={st.server_closed_at:.1f} s, once its close handshake ended)"
        )
        lines += [
            f"  subscriber: {server_side}",
            f"  subscriber, reading at the end: {st.drained} frames still buffered, then close "
            f"{st.close_code} {seen}",
            f"  RSS: baseline {st.baseline_mib:.1f} MiB, peak {st.peak_mib:.1f} MiB "
            f"over {st.events} events   bounded   {_verdict(st.bounded)}",
        ]
    return "\n".join(lines)


def to_json(res: BenchResult) -> dict[str, Any]:
    g, st = res.growth, res.stall
    return {
        "config": dataclasses.asdict(res.config),
        "transport_per_s": res.a, "storage_per_s": res.b, "sidecar_per_s": res.c,
        "serial_limit_per_s": res.serial_limit, "ratio": res.c / res.serial_limit,
        "minimal_per_s": res.b0, "serial_limit0_per_s": res.serial_limit0,
        "ratio0": res.c / res.serial_limit0,
        "writer_per_s": statistics.median(res.writer),
        "rounds": {"transport": res.transport, "storage": res.storage, "sidecar": res.sidecar,
                   "writer": res.writer, "minimal": res.minimal},
        "storage_batch": res.storage_batch, "sidecar_mean_batch": res.mean_batch,
        "paced_rate_per_s": res.paced_rate, "paced_achieved_per_s": res.paced_achieved,
        "paced_ack_latency_ms": res.paced,
        "growth": None if g is None else {
            "small": g.small, "large": g.large, "prefill_s": g.prefill_s,
            "event_us": g.event_us, "tick_us": g.tick_us, "aged": g.aged,
            "event_ratio": g.ratio(g.event_us), "tick_ratio": g.ratio(g.tick_us),
        },
        "stall": None if st is None else {
            "samples": st.samples, "close_code": st.close_code, "events": st.events,
            "slow_consumer_frame": st.slow_consumer_frame, "peak_mib": st.peak_mib,
            "server_closed_at_s": st.server_closed_at,
            "baseline_mib": st.baseline_mib, "bounded": st.bounded,
        },
    }  # fmt: skip


def main(config: BenchConfig, *, as_json: bool = False) -> int:
    t0 = time.perf_counter()
    try:
        result = asyncio.run(run_bench(config))
    except (OSError, RuntimeError, TimeoutError) as exc:
        print(f"credence bench: {exc}", file=sys.stderr)
        return 2
    if as_json:
        print(
            orjson.dumps(
                to_json(result), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
            ).decode()
        )
    else:
        print(render(result))
        print(f"\n(bench took {time.perf_counter() - t0:.0f} s)")
    return 0
