"""Pages each event kind makes the writer's commit write, by B-tree (steady on a busy machine).

``python -m tools.writer_pages [--events N] [--warm W]`` applies the bench's events (its town,
50 residents, seed 1, in the bench's order) one per commit, as a game's trickle of events is
committed, and for each of the last ``N`` counts the WAL frames its commit wrote and which
table or index each page belongs to (SQLite's ``dbstat``). In WAL mode a commit appends
every page the transaction changed, whole, and ``synchronous=FULL`` syncs them before the
ack: rows that land on pages of their own in many B-trees (a resident's beliefs, their
changes, their evidence) cost a page each, however small the row. So an announcement heard
by the whole town writes hundreds of pages for a few hundred rows, and its commit is the
slowest part of the slowest event (``tools/PERFORMANCE.md``, "one index of a belief's
evidence"). Unlike time, the count does not move with the machine's load: the same code and
events give the same figures, so it measures what leaner rows save before any timing.

Before each measured event the WAL is checkpointed and truncated, so what it holds after
the commit is exactly that commit's frames. Figures are printed, never asserted
(``tests/test_tools_writer_pages.py`` checks they add up).
"""

from __future__ import annotations

import argparse
import sqlite3
import struct
import tempfile
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sidecar.commands import number
from sidecar.engine import Bound
from sidecar.store import Writer

from .bench import WORLD, bench_events

__all__ = ["KindPages", "main", "measure", "wal_pages"]

#: How many events are measured and applied first (checked as every number is, once).
_EVENTS = number(Bound(int, 1, 1_000_000))
_WARM = number(Bound(int, 0, 1_000_000))

#: The WAL file's header, and each frame's header before its page (sqlite.org/fileformat2).
_WAL_HEADER = 32
_FRAME_HEADER = 24


@dataclass
class KindPages:
    """The pages the commits of one event kind wrote: in all, and per B-tree."""

    events: int = 0
    pages: int = 0
    most: int = 0
    by_tree: Counter[str] = field(default_factory=Counter)

    def add(self, trees: list[str]) -> None:
        self.events += 1
        self.pages += len(trees)
        self.most = max(self.most, len(trees))
        self.by_tree.update(trees)


def wal_pages(wal: Path) -> list[int]:
    """The page number of every frame in a WAL file, in the order they were written."""
    data = wal.read_bytes() if wal.exists() else b""
    if len(data) < _WAL_HEADER:
        return []
    page_size = struct.unpack(">I", data[8:12])[0]
    pages = []
    for at in range(_WAL_HEADER, len(data) - _FRAME_HEADER + 1, _FRAME_HEADER + page_size):
        pages.append(struct.unpack(">I", data[at : at + 4])[0])
    return pages


def measure(events: int, warm: int, path: Path) -> tuple[dict[str, KindPages], int]:
    """Apply the bench's first ``warm + events`` events one per commit; the pages of each of
    the last ``events``, per event kind (and ``"all"``), and the page size."""
    parsed = bench_events(warm + events)
    writer = Writer(path, synchronous="FULL")
    owners = sqlite3.connect(path)
    wal = Path(f"{path}-wal")
    kinds: dict[str, KindPages] = defaultdict(KindPages)
    try:
        for k, event in enumerate(parsed):
            measured = k >= warm
            if measured:
                writer.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            [result] = writer.apply([(WORLD, event)])
            if not measured:
                continue
            if result.status != "applied":
                raise SystemExit(f"event {k} was not applied: {result}")
            pages = wal_pages(wal)
            where = dict(
                owners.execute(
                    "SELECT pageno, name FROM dbstat WHERE pageno IN "
                    "(SELECT value FROM json_each(?))",
                    (str(sorted(set(pages))),),
                )
            )
            trees = [where.get(p, "(free)") for p in pages]
            kinds[str(event.kind)].add(trees)
            kinds["all"].add(trees)
        page_size = int(owners.execute("PRAGMA page_size").fetchone()[0])
    finally:
        owners.close()
        writer.close()
    return dict(kinds), page_size


def report(kinds: dict[str, KindPages], events: int, warm: int, page_size: int) -> str:
    lines = [
        f"WAL pages per commit ({page_size}-byte pages), one event per commit, "
        f"bench events {warm + 1}-{warm + events}",
        f"{'kind':10s} {'events':>6s} {'pages/event':>11s} {'most':>5s}  pages/event by B-tree",
    ]
    order = sorted(
        (k for k in kinds if k != "all"), key=lambda k: -kinds[k].pages / kinds[k].events
    )
    for name in [*order, "all"]:
        kind = kinds[name]
        trees = ", ".join(
            f"{tree} {count / kind.events:.1f}" for tree, count in kind.by_tree.most_common(6)
        )
        lines.append(
            f"{name:10s} {kind.events:6d} {kind.pages / kind.events:11.1f} {kind.most:5d}  {trees}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.writer_pages", description=__doc__)
    p.add_argument("--events", type=_EVENTS, default=2000, help="events measured (default 2000)")
    p.add_argument("--warm", type=_WARM, default=2000, help="events applied first (default 2000)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="credence-pages-") as tmp:
        kinds, page_size = measure(args.events, args.warm, Path(tmp) / "w.db")
    print(report(kinds, args.events, args.warm, page_size))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
