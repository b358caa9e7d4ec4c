"""``python -m tools.said_figures``: own words at the size of a long game.

A resident ``mira`` says ``--said`` things (10,000 by default) to one or three of 30
townsfolk, one announcement to everyone in fifty, through the real
:class:`~sidecar.store.Writer`; a second resident says 100. Then, on the real store, the
script times (interleaved, ``--rounds`` each):

* ``said page @start`` / ``@end`` — the ``said`` query's SQL (``sidecar.store.said``) for a
  page of 100 from seq 1 and from the last hundred: the page should not cost more deep in
  a long history (a primary-key range scan, no offset);
* ``said page small`` — the same page for the resident who said 100 things;
* ``narrative`` — the whole narrative of the big talker at budget 2,000 (reads the latest
  200 utterances, whatever she said).

Printed: p50/p99 (ms) per query, the ratio ``@end / small`` (flat if the page is
index-backed), the plan of the page query, the ``said`` table's bytes per row (SQLite's
``dbstat``, if compiled in) beside the events table's, and a full page walk (100 pages).
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sidecar.engine import parse_event
from sidecar.read import project
from sidecar.store import Reader
from sidecar.store.said import _SELECT, said_page

from .harness import write_events

WORLD = "town"


def _events(said: int) -> list[dict[str, Any]]:
    folk = [f"r{i:02}" for i in range(30)]
    out: list[dict[str, Any]] = [
        {"event_id": "seen", "day": 0, "kind": "observe", "witnesses": [*folk, "mira", "bo"],
         "claim": {"root": "square", "value": "busy"}, "subject": "the square is busy"},
    ]  # fmt: skip
    for i in range(said):
        day = i / 30  # a year of game days for 10,000 things said
        claim = {"root": f"rumour:{i % 500}", "value": f"v{i % 7}"}
        if i % 50 == 49:
            out.append({"event_id": f"m{i}", "day": day, "kind": "announce", "speaker": "mira",
                        "audience": "*", "claim": claim, "subject": f"rumour {i % 500}"})  # fmt: skip
        else:
            to = [folk[i % 30], folk[(i * 7) % 30], folk[(i * 11) % 30]][: 1 + i % 3]
            out.append({"event_id": f"m{i}", "day": day, "kind": "say", "speaker": "mira",
                        "listeners": sorted(set(to)), "claim": claim,
                        "subject": f"rumour {i % 500}"})  # fmt: skip
    for i in range(100):
        out.append({"event_id": f"b{i}", "day": said / 30, "kind": "say", "speaker": "bo",
                    "listeners": [folk[i % 30]], "claim": {"root": f"tale:{i}", "value": i},
                    "subject": f"tale {i}"})  # fmt: skip
    return out


def _timed(fn: Callable[[], Any], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--said", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args(argv)
    if args.said < 200 or args.rounds < 1:
        parser.error("--said must be at least 200 and --rounds at least 1")
    with tempfile.TemporaryDirectory(prefix="credence-said-") as tmp:
        path = Path(tmp) / "said.db"
        events = [parse_event(e) for e in _events(args.said)]
        wrote, _ = write_events(path, WORLD, events, 500)
        reader = Reader(path)
        conn = reader.conn
        last = conn.execute(
            "SELECT max(seq) FROM said WHERE world = ? AND speaker = 'mira'", (WORLD,)
        ).fetchone()[0]
        queries: dict[str, Callable[[], Any]] = {
            "said page @start": lambda: said_page(conn, WORLD, "mira", start=1, limit=100),
            "said page @end": lambda: said_page(conn, WORLD, "mira", start=last - 120, limit=100),
            "said page small": lambda: said_page(conn, WORLD, "bo", start=1, limit=100),
            "narrative": lambda: project(reader, WORLD, "mira", budget=2000),
        }
        samples: dict[str, list[float]] = {name: [] for name in queries}
        for _ in range(args.rounds):  # interleaved: a noisy neighbour hurts them alike
            for name, fn in queries.items():
                samples[name] += _timed(fn, 1)
        rows = conn.execute("SELECT count(*) FROM said").fetchone()[0]
        print(f"{args.said:,} things said by mira (+100 by bo): {rows:,} said rows, "
              f"{len(events):,} events written in {wrote:.1f} s")  # fmt: skip
        for name, got in samples.items():
            print(f"  {name:<18} p50 {_p(got, 0.5):7.3f} ms   p99 {_p(got, 0.99):7.3f} ms")
        ratio = statistics.median(samples["said page @end"]) / statistics.median(
            samples["said page small"]
        )
        print(f"  page @end / page of a resident with 100: {ratio:.2f}x (flat: index-backed)")
        plan = conn.execute(
            "EXPLAIN QUERY PLAN " + _SELECT + "AND s.seq >= ? ORDER BY s.seq LIMIT ?",
            (WORLD, "mira", 1, 100),
        ).fetchall()
        print("  plan: " + " | ".join(str(r[-1]) for r in plan))
        start, pages, seen = time.perf_counter(), 0, 0
        cursor = 1
        while True:
            page = said_page(conn, WORLD, "mira", start=cursor, limit=101)
            pages += 1
            seen += min(100, len(page))
            if len(page) <= 100:
                break
            cursor = page[-1]["seq"]
        walk = (time.perf_counter() - start) * 1000
        print(f"  every page (100 a page): {pages} pages, {seen:,} entries, {walk:.0f} ms")
        try:
            sizes = dict(
                conn.execute(
                    "SELECT name, sum(pgsize) FROM dbstat WHERE name IN ('said', 'events') "
                    "GROUP BY name"
                ).fetchall()
            )
            ev = conn.execute("SELECT count(*) FROM events").fetchone()[0]
            print(f"  said: {sizes['said'] / rows:.0f} bytes a row; events: "
                  f"{sizes['events'] / ev:.0f} bytes a row (the copy a said row does not make)")  # fmt: skip
        except Exception as exc:  # dbstat is optional in SQLite builds
            print(f"  (no table sizes: {exc})")
        reader.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
