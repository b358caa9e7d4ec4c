"""Rebuild: replay the world log into a fresh database and compare every belief and change.

The event log is the source of truth; this is the proof. Used by ``credence rebuild``.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..engine import Belief, Change
from .promises import promise_differences
from .reader import Reader
from .said import said_rows
from .writer import Writer

__all__ = ["RebuildReport", "rebuild"]

BATCH = 500
T = TypeVar("T")


@dataclass(slots=True)
class RebuildReport:
    worlds: int = 0
    events: int = 0
    beliefs: int = 0
    changes: int = 0
    differences: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences


def rebuild(
    source: str | Path, target: str | Path | None = None, *, max_report: int = 20
) -> RebuildReport:
    """Replay every world of ``source`` into ``target`` (a temp file if None) and compare."""
    report = RebuildReport()
    with tempfile.TemporaryDirectory(prefix="credence-rebuild-") as tmp:
        target_path = Path(target) if target else Path(tmp) / "rebuilt.db"
        original = Reader(source)
        writer = Writer(target_path, synchronous="OFF")
        try:
            for world in original.worlds():
                report.worlds += 1
                writer.ensure_world(world, original.rules(world))
                batch = []
                for event in original.events(world):
                    batch.append((world, event))
                    report.events += 1
                    if len(batch) >= BATCH:
                        writer.apply(batch)
                        batch = []
                writer.apply(batch)
            rebuilt = Reader(target_path)
            try:
                for world in original.worlds():
                    _compare(world, original, rebuilt, report, max_report)
            finally:
                rebuilt.close()
        finally:
            writer.close()
            original.close()
    return report


#: Rows compared at a time: a world's beliefs, changes and utterances are read a page at a
#: time from both databases, so a check of any size holds two pages, not two worlds.
PAGE = 2000


def _paged(fetch: Callable[[Any], Sequence[T]], key: Callable[[T], Any]) -> Iterator[T]:
    """Every row ``fetch(after)`` gives, page after page (``after``: the last row's key)."""
    after = None
    while True:
        page = fetch(after)
        yield from page
        if len(page) < PAGE:
            return
        after = key(page[-1])


def _compare(world: str, a: Reader, b: Reader, report: RebuildReport, limit: int) -> None:
    def differ(what: str) -> None:
        if len(report.differences) < limit:
            report.differences.append(f"world {world!r}: {what}")
        elif len(report.differences) == limit:
            report.differences.append("... (more differences not shown)")

    def beliefs(r: Reader) -> Iterator[Belief]:
        return _paged(lambda after: r.belief_page(world, after, PAGE), _belief_key)

    # Both sides in (resident, root) order, walked together as a merge.
    stored = 0
    old_iter, new_iter = beliefs(a), beliefs(b)
    old, new = next(old_iter, None), next(new_iter, None)
    while old is not None or new is not None:
        k_old = _belief_key(old) if old is not None else None
        k_new = _belief_key(new) if new is not None else None
        if k_new is None or (k_old is not None and k_old < k_new):
            assert old is not None and k_old is not None
            differ(f"belief {k_old[0]}/{k_old[1]}: stored {old} != rebuilt None")
            stored += 1
            old = next(old_iter, None)
        elif k_old is None or k_new < k_old:
            differ(f"belief {k_new[0]}/{k_new[1]}: stored None != rebuilt {new}")
            new = next(new_iter, None)
        else:
            if old != new:
                differ(f"belief {k_old[0]}/{k_old[1]}: stored {old} != rebuilt {new}")
            stored += 1
            old, new = next(old_iter, None), next(new_iter, None)
    report.beliefs += stored

    def changes(r: Reader) -> Iterator[Change]:
        return _paged(lambda after: r.changes_after(world, after or 0, limit=PAGE), _seq)

    counts = [0, 0]
    for pair in itertools.zip_longest(changes(a), changes(b)):
        counts[0] += pair[0] is not None
        counts[1] += pair[1] is not None
        x, y = pair
        if x is not None and y is not None and (x != y or x.seq != y.seq):
            differ(f"change seq {x.seq}: stored {x} != rebuilt {y}")
    report.changes += counts[0]
    if counts[0] != counts[1]:
        differ(f"{counts[0]} change rows stored, {counts[1]} rebuilt")
    if said_rows(a.conn, world, limit=0) is not None:

        def said(r: Reader) -> Iterator[tuple[Any, ...]]:
            return _paged(lambda after: said_rows(r.conn, world, after, PAGE) or [], _said_key)

        if any(x != y for x, y in itertools.zip_longest(said(a), said(b))):
            differ("the own-words records (said) differ")
    for difference in promise_differences(world, a, b):
        differ(difference)
    if a.registry(world) != b.registry(world):
        differ("the resident registry (display names, action labels) differs")
    if a.latest_seq(world) != b.latest_seq(world) or a.world_day(world) != b.world_day(world):
        differ("world clock or change counter differs")
    for label, reader in (("stored", a), ("rebuilt", b)):
        if _trust_totals(reader, world) not in (None, _trust_counts(reader, world)):
            differ(f"{label} trust history totals (trust_history) differ from its change rows")
    residents = a._rows("SELECT count(*) FROM residents WHERE world = ?", (world,))[0][0]
    for label, counted in (("stored", _counters(a, world)), ("rebuilt", _counters(b, world))):
        if counted is not None and counted != (residents, stored):
            differ(
                f"{label} counters say {counted[0]} residents and {counted[1]} beliefs; "
                f"the stored rows are {residents} and {stored}"
            )


def _belief_key(b: Belief) -> tuple[str, str]:
    return (b.resident, b.root)


def _seq(c: Change) -> int:
    return c.seq or 0  # (a stored change always has its seq)


def _said_key(row: tuple[Any, ...]) -> tuple[str, int]:
    return (row[0], row[1])


def _counters(reader: Reader, world: str) -> tuple[int, int] | None:
    """The world row's resident and belief counters (what the ``worlds`` listing sends), or
    ``None`` in a file from before migration 0015."""
    if not any(c[1] == "belief_count" for c in reader._rows("PRAGMA table_info(worlds)")):
        return None
    rows = reader._rows("SELECT resident_count, belief_count FROM worlds WHERE world = ?", (world,))
    return (int(rows[0][0]), int(rows[0][1])) if rows else None


def _trust_totals(reader: Reader, world: str) -> dict[tuple[str, str], int] | None:
    """The ``trust_history`` counters of ``world`` (what a ``trust`` page sends as
    ``history_total``), or ``None`` in a file from before migration 0018."""
    if not reader._rows("SELECT 1 FROM sqlite_master WHERE name = 'trust_history'"):
        return None
    sql = "SELECT resident, root, total FROM trust_history WHERE world = ?"
    return {(r[0], r[1]): int(r[2]) for r in reader._rows(sql, (world,))}


def _trust_counts(reader: Reader, world: str) -> dict[tuple[str, str], int]:
    """What the counters must say: the ``trust`` change rows per (resident, root)."""
    sql = (
        "SELECT resident, root, count(*) FROM changes WHERE world = ? AND kind = 'trust' "
        "GROUP BY resident, root"
    )
    return {(r[0], r[1]): int(r[2]) for r in reader._rows(sql, (world,))}
