"""Rebuild: replay the world log into a fresh database and compare every belief and change.

The event log is the source of truth; this is the proof. Used by ``credence rebuild``.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .promises import promise_differences
from .reader import Reader
from .said import said_rows
from .writer import Writer

__all__ = ["RebuildReport", "rebuild"]

BATCH = 500


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


def _compare(world: str, a: Reader, b: Reader, report: RebuildReport, limit: int) -> None:
    def differ(what: str) -> None:
        if len(report.differences) < limit:
            report.differences.append(f"world {world!r}: {what}")
        elif len(report.differences) == limit:
            report.differences.append("... (more differences not shown)")

    old_beliefs = {(x.resident, x.root): x for x in a.all_beliefs(world)}
    new_beliefs = {(x.resident, x.root): x for x in b.all_beliefs(world)}
    report.beliefs += len(old_beliefs)
    for key in sorted(old_beliefs.keys() | new_beliefs.keys()):
        if old_beliefs.get(key) != new_beliefs.get(key):
            differ(
                f"belief {key[0]}/{key[1]}: stored {old_beliefs.get(key)} != rebuilt {new_beliefs.get(key)}"
            )
    old_changes = a.all_changes(world)
    new_changes = b.all_changes(world)
    report.changes += len(old_changes)
    if len(old_changes) != len(new_changes):
        differ(f"{len(old_changes)} change rows stored, {len(new_changes)} rebuilt")
    for old, new in zip(old_changes, new_changes, strict=False):
        if old != new or old.seq != new.seq:
            differ(f"change seq {old.seq}: stored {old} != rebuilt {new}")
    stored_said = said_rows(a.conn, world)
    if stored_said is not None and stored_said != said_rows(b.conn, world):
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
    residents = len(a._rows("SELECT resident FROM residents WHERE world = ?", (world,)))
    for label, counts in (("stored", _counters(a, world)), ("rebuilt", _counters(b, world))):
        if counts is not None and counts != (residents, len(old_beliefs)):
            differ(
                f"{label} counters say {counts[0]} residents and {counts[1]} beliefs; "
                f"the stored rows are {residents} and {len(old_beliefs)}"
            )


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
