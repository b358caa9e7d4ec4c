"""Acts at the size of a long game: a resident doing chores every day for a year.

``python -m tools.acts_at_size [--days D] [--chores N] [--runs R]`` builds a world where Bo
does N chores a game day (twelve kinds of chore, about one in five refused, some refusals
with a reason) in front of Kai, for D days (default 365 × 30: 10,950 episodes), then prints
what the narrative's act lines cost at that size, as p50/p99 over R runs in one process:

* what each act came to, counted on the index of act evidence (migration 0024) with only
  the episodes a line names read from the log, beside the same read from every episode (as a
  file before 0024 reads it), with their ratio;
* the whole narrative of Bo and of Kai.

Figures only: no thresholds (targets belong to the benchmarks).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sidecar.engine import parse_event
from sidecar.read.narrative import project
from sidecar.read.recall import act_histories, act_histories_by_episode
from sidecar.store import Reader

from .harness import percentiles, write_events

WORLD = "chores"
#: The kinds of chore Bo does, one after another.
CHORES = tuple(f"chore_{k}" for k in range(12))


def story(days: int, chores: int, seed: int = 3) -> list[dict[str, Any]]:
    """The year's acts in day order, every one seen by Kai."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for day in range(days):
        for k in range(chores):
            refused = rng.random() < 0.2
            act: dict[str, Any] = {
                "event_id": f"a{day}-{k}", "day": day + k / chores, "kind": "act",
                "actor": "bo", "action": CHORES[(day * chores + k) % len(CHORES)],
                "status": "rejected" if refused else "completed", "witnesses": ["kai"],
            }  # fmt: skip
            if refused and rng.random() < 0.5:
                act["reason"] = f"the tool broke on day {day}"
            out.append(act)
    return out


def timed(run: Callable[[], object], runs: int) -> tuple[float, float]:
    """p50 and p99 (nearest rank) in ms of ``runs`` calls, after one untimed call."""
    run()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1000)
    found = percentiles(samples, (50, 99))
    return found["p50"], found["p99"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--chores", type=int, default=30, help="chores a game day")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args(argv)
    if args.days < 1 or args.chores < 1 or args.runs < 1:
        parser.error("--days, --chores and --runs must be at least 1")
    events = [parse_event(e) for e in story(args.days, args.chores)]
    with tempfile.TemporaryDirectory(prefix="credence-acts-") as tmp:
        path = Path(tmp) / "chores.db"
        took, _ = write_events(path, WORLD, events, 500)
        reader = Reader(path)
        counted = act_histories(reader, WORLD, "kai")
        episodes = sum(sum(h.counts.values()) for h in counted.values())
        if counted != act_histories_by_episode(reader, WORLD, "kai"):
            raise SystemExit("the counted act histories differ from every episode's")
        print(
            f"acts at size: Bo did {len(events):,} chores over {args.days} days, seen by Kai "
            f"(written in {took:.1f} s); Kai's act histories: {len(counted)} acts, "
            f"{episodes:,} episodes"
        )
        index = timed(lambda: act_histories(reader, WORLD, "kai"), args.runs)
        every = timed(lambda: act_histories_by_episode(reader, WORLD, "kai"), args.runs)
        print(
            f"  act histories, counted on the index   p50 {index[0]:7.2f}  p99 {index[1]:7.2f} ms"
        )
        print(f"  act histories, from every episode     p50 {every[0]:7.2f}  p99 {every[1]:7.2f} ms"
              f"  (×{every[0] / index[0]:.1f} the counted read)")  # fmt: skip
        for who in ("kai", "bo"):
            p50, p99 = timed(lambda who=who: project(reader, WORLD, who), args.runs)  # type: ignore[misc]
            print(f"  narrative of {who:<3}                      p50 {p50:7.2f}  p99 {p99:7.2f} ms")
        reader.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
