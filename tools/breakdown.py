"""Per-event cost breakdown of the write path, in CPU time of the thread doing the work.

``python -m tools.breakdown [--events N] [--batch B] [--rounds R]`` takes the bench's town
events and times, per event, each stage an event goes through in the sidecar, with no
network: decoding and validating the frame; in ``Writer.apply`` the engine fold, each SQL
statement, the row building around them and the commit; encoding the ack; encoding one
``belief`` notification per change (for one subscriber to everything); and the hand-off of a
batch to the writer thread and back. CPU time (``time.thread_time``) is what a busy machine
distorts least; the commit's fsync is not CPU, so the commit is shown in wall time too.
Rounds alternate with a writer on the schema without issue 13's two storage migrations
(0004: ``col IN (…)`` and ``json_valid`` CHECKs; 0006: rowid ``changes`` and ``evidence``
tables and the ``changes_by_resident`` index), so what they save shows as the difference. Figures are printed, never
asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import sidecar.store.writer as store_module
from protocol import EventFrame, belief_frame, decode, encode, parse_client_frame
from sidecar.server.queries import event_reply
from sidecar.store import Writer, migrate

from .bench import WORLD
from .town import deal, encode_event

_clock = time.thread_time


class _TimedConnection:
    """A sqlite3 connection that adds each statement's CPU time to ``costs``."""

    def __init__(self, conn: sqlite3.Connection, costs: dict[str, float]) -> None:
        self._conn, self._costs = conn, costs

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def _timed(self, fn: Callable[..., Any], sql: str, *args: Any) -> Any:
        t0, w0 = _clock(), time.perf_counter()
        try:
            return fn(sql, *args)
        finally:
            key = "sql " + " ".join(sql.split()[:3])[:40]
            self._costs[key] += _clock() - t0
            if sql == "COMMIT":
                self._costs["commit (wall, with fsync)"] += time.perf_counter() - w0

    def execute(self, sql: str, *args: Any) -> Any:
        return self._timed(self._conn.execute, sql, *args)

    def executemany(self, sql: str, *args: Any) -> Any:
        return self._timed(self._conn.executemany, sql, *args)


#: The storage-only migrations of issue 13: the "old" writer runs without them.
_STORAGE_MIGRATIONS = ("0004_i13_cheap_checks", "0006_i13_lean_tables")


def _writer(path: Path, schema: str) -> Writer:
    if schema == "old":
        conn = sqlite3.connect(path, isolation_level=None)
        migrate(conn, upto=3)
        for name in _STORAGE_MIGRATIONS:  # marked done, never run; the others still run
            conn.execute("INSERT INTO _migrations (name) VALUES (?)", (name,))
        conn.close()
    return Writer(path, synchronous="FULL")


def one_round(frames: list[bytes], batch: int, path: Path, schema: str) -> dict[str, float]:
    costs: dict[str, float] = defaultdict(float)
    t0 = _clock()
    parsed = [parse_client_frame(decode(f)) for f in frames]
    costs["decode + validate frame"] = _clock() - t0
    events = [f.event for f in parsed if isinstance(f, EventFrame)]
    writer = _writer(path, schema)
    writer.conn = _TimedConnection(writer.conn, costs)  # type: ignore[assignment]
    real_ingest = getattr(store_module, "ingest")  # noqa: B009 (not exported)

    def sql_so_far() -> float:
        return sum(v for k, v in costs.items() if k.startswith("sql "))

    def ingest(*args: Any) -> Any:
        t, sql = _clock(), sql_so_far()
        try:
            return real_ingest(*args)
        finally:  # the reads it makes are counted under their statements
            costs["engine fold (ingest, without its reads)"] += _clock() - t - (sql_so_far() - sql)

    setattr(store_module, "ingest", ingest)  # noqa: B010
    results = []
    apply_cpu = 0.0
    try:
        for start in range(0, len(events), batch):
            t = _clock()
            results += writer.apply([(WORLD, e) for e in events[start : start + batch]])
            apply_cpu += _clock() - t
    finally:
        setattr(store_module, "ingest", real_ingest)  # noqa: B010
        writer.close()
    inside = sum(v for k, v in costs.items() if k.startswith(("sql ", "engine")))
    costs["rows, overlay, cache (rest of apply)"] = apply_cpu - inside
    costs["Writer.apply total"] = apply_cpu
    t = _clock()
    for r in results:
        encode(event_reply(r, None))
    costs["ack: build + encode"] = _clock() - t
    t = _clock()
    for r in results:
        for c in r.changes:
            encode(belief_frame(c))
    costs["notifications: build + encode (1 subscriber)"] = _clock() - t
    costs["_changes"] = sum(len(r.changes) for r in results)
    return costs


async def _handoff(batches: int) -> float:
    """Loop time to hand a batch to the writer thread and resume on its result."""
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(1) as pool:
        t = _clock()
        for _ in range(batches):
            await asyncio.shield(loop.run_in_executor(pool, lambda: None))
        return _clock() - t


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.breakdown", description=__doc__)
    p.add_argument("--events", type=int, default=2000)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    streams = deal(50, args.events, seed=1, clients=4)
    ordered = [streams[k % 4][k // 4] for k in range(args.events)]
    frames = [encode_event(e) for e in ordered]
    runs: dict[str, list[dict[str, float]]] = {"now": [], "old": []}
    with tempfile.TemporaryDirectory(prefix="credence-breakdown-") as tmp:
        for r in range(args.rounds):
            for schema in ("now", "old") if r % 2 == 0 else ("old", "now"):
                path = Path(tmp) / f"{schema}-{r}.db"
                runs[schema].append(one_round(frames, args.batch, path, schema))
    handoff = asyncio.run(_handoff(args.events // args.batch or 1))
    n: int = args.events

    def med(schema: str, key: str) -> float:
        return float(statistics.median(run.get(key, 0.0) for run in runs[schema])) / n * 1e6

    keys = sorted({k for run in runs["now"] for k in run if not k.startswith("_")},
                  key=lambda k: -med("now", k))  # fmt: skip
    changes = statistics.median(run["_changes"] for run in runs["now"]) / n
    print(f"{n} town events, batches of {args.batch}, median of {args.rounds} rounds; "
          f"µs of CPU per event ({changes:.1f} changes per event)")  # fmt: skip
    print(f"  {'stage':<48} {'now':>10} {'no 0004/6':>10}")
    for k in keys:
        print(f"  {k:<48} {med('now', k):>10.1f} {med('old', k):>10.1f}")
    per_event = handoff / (n // args.batch or 1) * 1e6 / min(args.batch, n)
    print(f"  {'thread hand-off (loop side), per event':<48} {per_event:>10.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
