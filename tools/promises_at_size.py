"""Promises and goals at the size of a long game: one resident with 10,000 promises over a year.

``python -m tools.promises_at_size [--promises N] [--days D]`` builds a world where Bo makes
N promises to Kai over D days (each due a few days later), keeps about half of them in
front of Kai, keeps a quarter unseen and forgets the rest, with a tick every day and a goal
changed every week; then prints what it cost: the write rate, the rows and bytes of the
promise tables, and the read side (a ``promises`` page, the narrative) at that size, as
p50/p99 over repeated runs. Figures only: no thresholds (targets belong to the benchmarks).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from protocol import parse_client_frame
from sidecar.engine import parse_event
from sidecar.read.narrative import project
from sidecar.read.promises import own_items, recall_own
from sidecar.server.queries import answer
from sidecar.store import Reader

from .harness import write_events

WORLD = "year"


def story(promises: int, days: int) -> list[dict[str, Any]]:
    """The year's events in day order: promises, acts, ticks, goals."""
    per_day = max(1, promises // days)
    out: list[dict[str, Any]] = [
        {"event_id": "reg", "day": 0, "kind": "register", "residents": [
            {"resident": "bo", "names": {"en": "Bo", "zh-Hant": "阿博"}},
            {"resident": "kai", "names": {"en": "Kai", "zh-Hant": "凱"}}]},
    ]  # fmt: skip
    n = 0
    for day in range(days):
        for _ in range(per_day):
            if n >= promises:
                break
            action = f"job{n % 50}"
            out.append({"event_id": f"p{n}", "day": day, "kind": "promise", "promise": f"p{n:05}",
                        "promiser": "bo", "to": ["kai"], "action": action,
                        "subject": f"do job {n}", "by": day + 3})  # fmt: skip
            n += 1
        for k in range(per_day):  # keep some of the promises made two days ago
            m = (day - 2) * per_day + k
            if m < 0 or m >= n or m % 4 == 3:
                continue
            witnesses = ["kai"] if m % 4 < 2 else []
            out.append({"event_id": f"a{m}", "day": day + 0.5, "kind": "act", "actor": "bo",
                        "action": f"job{m % 50}", "status": "completed",
                        "witnesses": witnesses})  # fmt: skip
        out.append({"event_id": f"t{day}", "day": day + 0.9, "kind": "tick"})
        if day % 7 == 0:
            op = "set" if day == 0 else "changed"
            out.append({"event_id": f"g{day}", "day": day + 0.9, "kind": "goal",
                        "resident": "kai", "goal": "life", "op": op,
                        "subject": f"get through week {day // 7}"})  # fmt: skip
    return out


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, round(0.99 * len(ordered)) - 1)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--promises", type=int, default=10_000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args(argv)
    events = [parse_event(e) for e in story(args.promises, args.days)]
    with tempfile.TemporaryDirectory(prefix="credence-promises-") as tmp:
        path = Path(tmp) / "year.db"
        took, fallbacks = write_events(path, WORLD, events, 200)
        reader = Reader(path)
        rows = {
            t: reader.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("promises", "promise_views", "goals", "changes")
        }
        states = dict(
            reader.conn.execute(
                "SELECT state, count(*) FROM promise_views WHERE resident = 'kai' GROUP BY state"
            ).fetchall()
        )
        try:
            sizes = dict(
                reader.conn.execute(
                    "SELECT name, sum(pgsize) FROM dbstat WHERE name LIKE 'promise%' "
                    "OR name LIKE 'goals%' GROUP BY name"
                ).fetchall()
            )
        except Exception:  # dbstat is a compile-time option of SQLite
            sizes = {}
        timings: dict[str, list[float]] = {
            "promises page": [], "overdue page": [], "the sections' recall": [], "narrative": [],
        }  # fmt: skip
        frames = {
            "promises page": {"type": "promises", "resident": "kai", "rid": 1},
            "overdue page": {"type": "promises", "resident": "kai", "state": "overdue", "rid": 2},
        }
        text = ""
        for _ in range(args.runs):
            for name, frame in frames.items():
                t0 = time.perf_counter()
                answer(reader, WORLD, parse_client_frame(dict(frame)))
                timings[name].append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            own_items("kai", recall_own(reader, WORLD, "kai"))
            timings["the sections' recall"].append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            text = project(reader, WORLD, "kai", budget=1000).text
            timings["narrative"].append((time.perf_counter() - t0) * 1000)
        reader.close()
    print(
        f"{args.promises:,} promises from Bo to Kai over {args.days} days: {len(events):,} events"
    )
    print(f"write: {took:.1f} s, {len(events) / took:,.0f} events/s "
          f"({fallbacks} of {-(-len(events) // 200)} batches written event by event)")  # fmt: skip
    print("rows: " + ", ".join(f"{t} {n:,}" for t, n in rows.items()))
    print("Kai's views: " + ", ".join(f"{s} {n:,}" for s, n in sorted(states.items())))
    if sizes:
        print("bytes: " + ", ".join(f"{t} {n / 1024:,.0f} KiB" for t, n in sorted(sizes.items())))
    for name, samples in timings.items():
        p50, p99 = _percentiles(samples)
        print(f"{name}: p50 {p50:.2f} ms, p99 {p99:.2f} ms ({len(samples)} runs)")
    owe = text[text.find("What I owe") :].splitlines()[:4]
    print("narrative (budget 1000), first promise lines: " + " | ".join(owe))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
