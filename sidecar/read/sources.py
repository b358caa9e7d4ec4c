"""Every source behind a belief stays tellable (issue 18 item 3): who told it, by origin,
and what first made the resident doubt it.

A belief row keeps only who told its current value (``heard_from``); the evidence keeps the
rest. For the beliefs whose sentence needs more than that — told by several people, or
contested, or corrected — this reads their evidence (index ``evidence_by_seq``, one range
per belief): the hearsay behind the value told (for a correction, the value it replaced),
grouped by origin in the order first heard, the log's ("Bo told me, and Old Tom repeated
it": Tom's telling shares Bo's origin), and the first piece of evidence that contradicted
it. At most :data:`MAX_SOURCED` beliefs are read per narrative (contested and corrected
first, then those told by several people, each the most recently updated first), and at
most :data:`MAX_TELLINGS` tellings each, so the cost stays bounded whatever the resident
holds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import orjson

from ..engine import Belief, State
from ..store import Reader, StoreError
from .queries import Correction

__all__ = ["MAX_SOURCED", "MAX_TELLINGS", "FirstDoubt", "Sources", "load_sources"]

#: Most beliefs whose sources one narrative reads.
MAX_SOURCED = 100
#: Most tellings read per belief (the earliest).
MAX_TELLINGS = 50
_CONTESTED = (State.DOUBTFUL, State.ANOMALOUS, State.CORRECTED)


@dataclass(frozen=True, slots=True)
class FirstDoubt:
    """The first evidence that contradicted a belief: when, what, from whom."""

    event_id: str
    day: float
    subject: str
    source_kind: str
    source: str | None


@dataclass(frozen=True, slots=True)
class Sources:
    """Who told a belief, grouped by origin: ``(first teller, those who repeated it)``."""

    tellers: tuple[tuple[str, tuple[str, ...]], ...]
    first_doubt: FirstDoubt | None


def _rows(reader: Reader, sql: str, params: Sequence[object]) -> list[sqlite3.Row]:
    try:
        return reader.conn.execute(sql, tuple(params)).fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"query failed: {exc}") from exc


def _grouped(rows: Sequence[sqlite3.Row]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    groups: dict[str, list[str]] = {}
    seen: set[str] = set()
    for row in rows:
        source = row["source_resident"]
        if source in seen:
            continue
        seen.add(source)
        groups.setdefault(row["origin"] or source, []).append(source)
    return tuple((first, tuple(rest)) for first, *rest in groups.values())


def _chosen(beliefs: Sequence[Belief]) -> list[Belief]:
    """Contested and corrected beliefs first, then those told by several people; each the
    most recently updated first (what the narrative ranks first and words in full), not in
    root order, so a resident with thousands of doubts has the sources of the ones shown."""
    contested = [b for b in beliefs if b.state in _CONTESTED]
    several = [b for b in beliefs if b.state not in _CONTESTED and len(b.heard_from) > 1]
    contested.sort(key=lambda b: -b.updated_day)
    several.sort(key=lambda b: -b.updated_day)
    return (contested + several)[:MAX_SOURCED]


def load_sources(
    reader: Reader,
    world: str,
    resident: str,
    beliefs: Sequence[Belief],
    corrections: Mapping[tuple[str, str], Correction],
    wanted: Collection[str] | None = None,
) -> dict[str, Sources]:
    """Per root, the tellers of the value told and the first contradiction (see the module);
    of the chosen roots only those ``wanted`` (None: all), the others still taking their
    place among the chosen."""
    out: dict[str, Sources] = {}
    # In the order heard: the log's, on its index (migration 0023), so the first of
    # thousands of tellings on one game day is found without sorting them all; a file no
    # writer has opened since keeps the day and event id order it had.
    logged = reader.has_evidence_seq()
    heard = "event_seq" if logged else "day, event_id"
    # The first doubt likewise: the contradicting piece first logged, found in one pass over
    # the belief's (``evidence_contradicting``), however many there are; unsorted.
    first_doubt = (
        "SELECT event_id, day, subject, source_kind, source_resident, min(event_seq) "
        "FROM evidence WHERE world = ? AND resident = ? AND root = ? "
        "AND relation = 'contradicts'"
        if logged
        else "SELECT event_id, day, subject, source_kind, source_resident FROM evidence "
        "WHERE world = ? AND resident = ? AND root = ? AND relation = 'contradicts' "
        "ORDER BY day, event_id LIMIT 1"
    )
    for b in _chosen(beliefs):
        if wanted is not None and b.root not in wanted:
            continue
        correction = corrections.get((resident, b.root))
        told = b.value if correction is None else correction.value_before
        tellings = _rows(
            reader,
            "SELECT source_resident, origin FROM evidence WHERE world = ? AND resident = ? "
            f"AND root = ? AND source_kind = 'hearsay' AND value = ? ORDER BY {heard} LIMIT ?",
            (world, resident, b.root, orjson.dumps(told).decode(), MAX_TELLINGS),
        )
        first: FirstDoubt | None = None
        if b.state in _CONTESTED:
            found = _rows(reader, first_doubt, (world, resident, b.root))
            if found and found[0]["event_id"] is not None:  # (min() of no rows: one of NULLs)
                r = found[0]
                first = FirstDoubt(
                    r["event_id"], r["day"], r["subject"], r["source_kind"], r["source_resident"]
                )
        out[b.root] = Sources(_grouped(tellings), first)
    return out
