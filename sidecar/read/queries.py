"""The few reads the read side needs beyond :class:`~sidecar.store.Reader`'s own queries.

They run plain SQL on ``reader.conn`` so that a narrative for a resident with hundreds of
beliefs costs a handful of queries, not one per belief (``Reader.history`` is per root).
The store's package is not edited: these live here until they earn a place on ``Reader``.
Raw ``sqlite3`` errors become :class:`~sidecar.store.StoreError`, as in the store itself.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..engine import Belief, Value
from ..store import Reader, StoreError, said
from ..store.reader import EVIDENCE_WITH_EVENT
from ..store.rows import belief_from_row, load_json

__all__ = [
    "Contradiction",
    "Correction",
    "NotFound",
    "beliefs_in_scope",
    "contradictions",
    "corrections",
    "evidence_after",
    "evidence_at",
    "evidence_rows",
    "latest_said",
    "resident_known",
    "root_beliefs_page",
    "said_page",
    "world_exists",
]


class NotFound(LookupError):
    """The world, resident or belief asked about does not exist (the CLI exits 2 on it)."""


@dataclass(frozen=True, slots=True)
class Correction:
    """The latest ``corrected`` change of one belief, with who the old value came from."""

    resident: str
    root: str
    seq: int
    day: float
    event_id: str
    value_before: Value | None
    subject_before: str | None
    value_after: Value
    subject_after: str | None
    #: Source kind and source of the belief just before it was corrected (from the
    #: previous change record), so "I used to think X, as A told me" can name A.
    prior_source_kind: str | None
    prior_source: str | None


@dataclass(frozen=True, slots=True)
class Contradiction:
    """The latest evidence that contradicted one belief (what the doubt is about)."""

    resident: str
    root: str
    event_id: str
    day: float
    value: Value
    subject: str
    source_kind: str
    source: str | None


def _rows(reader: Reader, sql: str, params: Sequence[Any]) -> list[sqlite3.Row]:
    try:
        return reader.conn.execute(sql, tuple(params)).fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"query failed: {exc}") from exc


def _where(
    world: str,
    resident: str | None,
    root: str | None,
    alias: str,
    roots: Sequence[str] | None = None,
) -> tuple[str, list[Any]]:
    clauses, params = [f"{alias}.world = ?"], [world]
    if resident is not None:
        clauses.append(f"{alias}.resident = ?")
        params.append(resident)
    if root is not None:
        clauses.append(f"{alias}.root = ?")
        params.append(root)
    if roots is not None:  # a list of roots, one index probe each
        clauses.append(f"{alias}.root IN (SELECT value FROM json_each(?))")
        params.append(orjson.dumps(list(roots)).decode())
    return " AND ".join(clauses), params


def world_exists(reader: Reader, world: str) -> bool:
    """Whether ``world`` has a row (a world is created by its first event)."""
    return bool(_rows(reader, "SELECT 1 FROM worlds WHERE world = ?", (world,)))


def resident_known(reader: Reader, world: str, resident: str) -> bool:
    """Whether the world has heard of ``resident`` (named by any event so far)."""
    sql = "SELECT 1 FROM residents WHERE world = ? AND resident = ?"
    return bool(_rows(reader, sql, (world, resident)))


def corrections(
    reader: Reader,
    world: str,
    resident: str | None = None,
    root: str | None = None,
    roots: Sequence[str] | None = None,
) -> dict[tuple[str, str], Correction]:
    """The latest correction of every corrected belief, keyed by ``(resident, root)``.

    Each belief's latest is found in SQL on the partial index ``changes_corrected`` (one row
    per belief, never every correction of its history: an act that fails and succeeds by
    turns all year is corrected thousands of times), then read by key with the change just
    before it (index ``changes_by_belief``), whose ``source_kind`` is the belief's source
    back then.
    """
    where, params = _where(world, resident, root, "l", roots)
    sql = (
        "SELECT c.*, "
        "p.source_kind AS prior_source_kind, p.source_resident AS prior_source "
        "FROM changes c "
        "LEFT JOIN changes p ON p.world = c.world AND p.resident = c.resident "
        "AND p.root = c.root AND p.seq = (SELECT max(q.seq) FROM changes q "
        "WHERE q.world = c.world AND q.resident = c.resident AND q.root = c.root "
        "AND q.seq < c.seq) "
        "WHERE c.world = ? AND c.seq IN (SELECT max(l.seq) FROM changes l "
        f"WHERE {where} AND l.kind = 'corrected' GROUP BY l.resident, l.root)"
    )
    params = [world, *params]
    out: dict[tuple[str, str], Correction] = {}
    for r in _rows(reader, sql, params):
        out[(r["resident"], r["root"])] = Correction(
            resident=r["resident"],
            root=r["root"],
            seq=r["seq"],
            day=r["day"],
            event_id=r["event_id"],
            value_before=None if r["value_before"] is None else load_json(r["value_before"]),
            subject_before=r["subject_before"],
            value_after=load_json(r["value_after"]),
            subject_after=r["subject_after"],
            prior_source_kind=r["prior_source_kind"],
            prior_source=r["prior_source"],
        )
    return out


def contradictions(
    reader: Reader,
    world: str,
    resident: str | None = None,
    root: str | None = None,
    roots: Sequence[str] | None = None,
) -> dict[tuple[str, str], Contradiction]:
    """The latest contradicting evidence of every belief that has one (partial index
    ``evidence_contradicting``: only contradicting rows are read). Each belief's latest is
    found in SQL, by its event's place in the log (migration 0023): one row per belief, in
    index order, no sort; a file no writer has opened since sorts every contradicting piece
    by its event's place instead."""
    where, params = _where(world, resident, root, "ev", roots)
    if reader.has_evidence_seq():  # (max() picks the row the other columns come from)
        sql = (
            "SELECT ev.*, max(ev.event_seq) FROM evidence ev "
            f"WHERE {where} AND ev.relation = 'contradicts' GROUP BY ev.resident, ev.root"
        )
    else:
        sql = (
            "SELECT ev.* FROM evidence ev CROSS JOIN events e "
            "ON e.world = ev.world AND e.event_id = ev.event_id "
            f"WHERE {where} AND ev.relation = 'contradicts' ORDER BY e.seq"
        )
    out: dict[tuple[str, str], Contradiction] = {}
    for r in _rows(reader, sql, params):
        out[(r["resident"], r["root"])] = Contradiction(
            resident=r["resident"],
            root=r["root"],
            event_id=r["event_id"],
            day=r["day"],
            value=load_json(r["value"]),
            subject=r["subject"],
            source_kind=r["source_kind"],
            source=r["source_resident"],
        )
    return out


def said_page(
    reader: Reader, world: str, resident: str, *, start: int = 1, limit: int = 100
) -> list[dict[str, Any]]:
    """Up to ``limit`` things ``resident`` said from event seq ``start`` on (the ``said``
    query; one primary-key range scan of ``said``, see :mod:`sidecar.store.said`)."""
    try:
        return said.said_page(reader.conn, world, resident, start=start, limit=limit)
    except sqlite3.Error as exc:
        raise StoreError(f"query failed: {exc}") from exc


def latest_said(reader: Reader, world: str, resident: str, limit: int) -> list[dict[str, Any]]:
    """The ``limit`` latest things ``resident`` said, latest first (the narrative's input)."""
    try:
        return said.latest_said(reader.conn, world, resident, limit)
    except sqlite3.Error as exc:
        raise StoreError(f"query failed: {exc}") from exc


#: Who said an evidence row's event (a ``say`` or ``announce``; else NULL), read from the
#: event row that the join reads anyway (with its kind, :data:`EVIDENCE_WITH_EVENT`), so an
#: event node is the same whichever piece of its evidence a graph page holds.
_EVENT_SPEAKER = "json_extract(e.body, '$.speaker') AS event_speaker"


def evidence_rows(
    reader: Reader, world: str, resident: str | None = None, root: str | None = None
) -> Iterator[dict[str, Any]]:
    """Evidence rows like ``Reader.evidence``, for a resident, a root, both or neither, in
    log order, one at a time (a whole world's are never held), each with the value of the
    belief it bears on (``belief_value``; a piece of no belief held now is left out)."""
    where, params = _where(world, resident, root, "ev")
    sql = (
        f"SELECT {EVIDENCE_WITH_EVENT}, {_EVENT_SPEAKER}, b.value AS belief_value "
        f"FROM evidence ev JOIN events e ON e.world = ev.world AND {reader.evidence_join()} "
        "JOIN beliefs b ON b.world = ev.world AND b.resident = ev.resident AND b.root = ev.root "
        f"WHERE {where} ORDER BY e.seq, ev.resident, ev.root"
    )
    for r in reader.iterate(sql, params):
        item = dict(r)
        item["value"] = load_json(item["value"])
        item["belief_value"] = load_json(item["belief_value"])
        yield item


def beliefs_in_scope(
    reader: Reader, world: str, resident: str | None = None, root: str | None = None
) -> Iterator[Belief]:
    """The beliefs of a resident, of a root, one, or a whole world's, by resident then root,
    one at a time."""
    where, params = _where(world, resident, root, "b")
    sql = f"SELECT * FROM beliefs b WHERE {where} ORDER BY b.resident, b.root"
    return (belief_from_row(r) for r in reader.iterate(sql, params))


def _evidence_page(reader: Reader) -> str:
    """A graph page's evidence rows: each piece with its event's kind and speaker."""
    return (
        f"SELECT {EVIDENCE_WITH_EVENT}, {_EVENT_SPEAKER} FROM evidence ev "
        f"CROSS JOIN events e ON e.world = ev.world AND {reader.evidence_join()} "
        "WHERE ev.world = ? AND ev.resident = ? AND ev.root = ? "
    )


def evidence_after(
    reader: Reader,
    world: str,
    resident: str,
    root: str,
    *,
    after: tuple[float, str] | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """Up to ``limit`` pieces of one belief's evidence in log order (``event_seq``, then
    ``evidence_id``), after the position ``after`` (exclusive), with the event kind.

    One range of index ``evidence_by_seq`` (world, resident, root, event_seq; the primary key
    ``evidence_id`` ends every entry), walked in order and stopped after ``limit`` rows: a
    page deep in a belief with 10,000 pieces reads what the first page reads, and the
    belief's other evidence is never read or sorted (``tests/test_store_plans.py``). Log
    order, not day order: evidence logged between two pages always comes after the cursor,
    and the writer keeps one index of a belief's evidence, not two (migration 0025). A file
    no writer has opened since migration 0023 has no log position: its pieces come in
    (``day``, ``evidence_id``) order, on the index it still has.
    """
    key = "ev.event_seq" if reader.has_evidence_seq() else "ev.day"
    sql = _evidence_page(reader)
    params: list[Any] = [world, resident, root]
    if after is not None:
        sql += f"AND ({key}, ev.evidence_id) > (?, ?) "
        params += [after[0], after[1]]
    sql += f"ORDER BY {key}, ev.evidence_id LIMIT ?"
    out = []
    for r in _rows(reader, sql, (*params, limit)):
        item = dict(r)
        item["value"] = load_json(item["value"])
        out.append(item)
    return out


def evidence_at(reader: Reader, world: str, evidence_id: str) -> tuple[str, str, float] | None:
    """The belief (resident, root) of one piece of evidence (its primary key) and where it
    stands among that belief's evidence (its log position; its day on a file from before
    migration 0023), or None: where a graph page that ended at it continues."""
    key = "event_seq" if reader.has_evidence_seq() else "day"
    sql = f"SELECT resident, root, {key} FROM evidence WHERE world = ? AND evidence_id = ?"
    rows = _rows(reader, sql, (world, evidence_id))
    return (rows[0][0], rows[0][1], rows[0][2]) if rows else None


def root_beliefs_page(
    reader: Reader, world: str, root: str, *, after: str = "", limit: int = 100
) -> list[Belief]:
    """Up to ``limit`` residents' beliefs on ``root`` in resident order, after resident
    ``after`` (index ``beliefs_by_root``: its entries end with the key's ``resident``)."""
    sql = (
        "SELECT * FROM beliefs WHERE world = ? AND root = ? AND resident > ? "
        "ORDER BY resident LIMIT ?"
    )
    return [belief_from_row(r) for r in _rows(reader, sql, (world, root, after, limit))]
