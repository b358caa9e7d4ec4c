"""Instructions per event of ``Writer.apply``, counted by callgrind (steady on a busy machine).

``python -m tools.writer_cost [--events N] [--batch B] [--warm W]`` runs the bench's
workload (its town, 50 residents, seed 1, events in the bench's order) twice under
``valgrind --tool=callgrind``: once applying the first ``W + N`` events, once applying only
the first ``W``. Everything else (imports, building the events, opening the database, the
warm-up) is the same in both runs, so the difference divided by ``N`` is what
``Writer.apply`` costs per event, in batches of ``B`` (the bench's 256), engine and SQLite
included. Wall and CPU time move 15% from run to run on a shared machine; this count moves
by well under 1%. Needs ``valgrind`` on PATH. ``--in-process K`` is the measured run itself
(applies ``K`` events and exits), which the two callgrind runs execute.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from sidecar.commands import number
from sidecar.engine import Bound
from sidecar.store import Writer

from .bench import WORLD, bench_events

__all__ = ["apply_events", "instructions", "main"]

#: Events measured, or per batch; events applied first (checked as every number is, once).
_COUNT = number(Bound(int, 1, 1_000_000))
_WARM = number(Bound(int, 0, 1_000_000))


def apply_events(count: int, total: int, batch: int, path: Path) -> None:
    """Build the bench's first ``total`` events; apply the first ``count`` of them."""
    events = bench_events(total)
    writer = Writer(path, synchronous="FULL")
    try:
        for start in range(0, count, batch):
            writer.apply([(WORLD, e) for e in events[start : min(start + batch, count)]])
    finally:
        writer.close()


def instructions(count: int, total: int, batch: int) -> int:
    """Instructions callgrind counts for a whole run of :func:`apply_events`."""
    with tempfile.TemporaryDirectory(prefix="credence-cost-") as tmp:
        out = Path(tmp) / "callgrind.out"
        argv = [
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
            sys.executable, "-m", "tools.writer_cost", "--in-process", str(count),
            "--events", str(total), "--batch", str(batch), "--db", str(Path(tmp) / "w.db"),
        ]  # fmt: skip
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise SystemExit(f"callgrind run failed: {done.stderr[-2000:]}")
        found = re.search(r"^summary:\s*(\d+)", out.read_text(), re.MULTILINE)
        if found is None:
            raise SystemExit("no summary line in callgrind's output")
        return int(found.group(1))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.writer_cost", description=__doc__)
    p.add_argument("--events", type=_COUNT, default=600, help="events measured")
    p.add_argument("--warm", type=_WARM, default=256, help="events applied first in both runs")
    p.add_argument("--batch", type=_COUNT, default=256)
    p.add_argument("--in-process", type=_WARM, default=None, help=argparse.SUPPRESS)
    p.add_argument("--db", type=Path, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.in_process is not None:  # the measured run (under callgrind)
        apply_events(args.in_process, args.events, args.batch, args.db)
        return 0
    total = args.warm + args.events
    base = instructions(args.warm, total, args.batch)
    full = instructions(total, total, args.batch)
    per_event = (full - base) / args.events
    print(f"Writer.apply, bench events {args.warm + 1}-{total} in batches of {args.batch}: "
          f"{per_event / 1e6:.3f} M instructions per event "
          f"(runs: {full:,} and {base:,})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
