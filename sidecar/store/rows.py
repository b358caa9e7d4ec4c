"""Conversions between engine values and SQLite rows (one place, both directions)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ..engine import (
    Belief,
    Change,
    ChangeKind,
    Evidence,
    Intervention,
    Relation,
    Rules,
    RulesError,
    SourceKind,
    State,
    Value,
    WorldEvent,
    rules_from_stored,
)
from ..engine.texts import wire_text
from .errors import WorldRulesInvalid

__all__ = [
    "BELIEF_COLUMNS",
    "CHANGE_COLUMNS",
    "CHANGE_SUMMARY_COLUMNS",
    "belief_from_row",
    "belief_to_row",
    "change_from_row",
    "change_summary_from_row",
    "change_to_row",
    "dump_json",
    "dump_json_list",
    "evidence_row",
    "load_json",
    "logged_subject",
    "stored_rules",
]


def dump_json(value: Any) -> str:
    return orjson.dumps(value).decode()


_dumps = orjson.dumps


def dump_json_list(value: Any) -> str:
    """:func:`dump_json` with a shortcut for the empty tuple (most list columns, most rows)."""
    return "[]" if value == () else _dumps(value).decode()


def load_json(text: str | bytes) -> Any:
    return orjson.loads(text)


BELIEF_COLUMNS = (
    "world", "resident", "root", "value", "subject", "interpretation", "people", "places",
    "topics", "confidence", "state", "source_kind", "source_resident", "intervention",
    "evidence_refs", "heard_from", "formed_day", "updated_day", "last_evidence_day",
    "next_decay_day", "origins", "hops", "decay_period", "value_since", "importance",
    "remembered_day", "evidence_count", "own_origins",
)  # fmt: skip

CHANGE_COLUMNS = (
    "world", "seq", "resident", "root", "kind", "confidence_before", "confidence_after",
    "state_before", "state_after", "value_before", "value_after", "source_kind",
    "source_resident", "event_id", "evidence_id", "day", "detail", "subject_before",
    "subject_after",
)  # fmt: skip


def belief_to_row(world: str, b: Belief) -> tuple[Any, ...]:
    # Written out, not through dump_json_list: this runs for every belief a batch stores,
    # and seven calls per row were a tenth of the row's cost. An empty list (most list
    # columns of most rows) is "[]" without encoding.
    d = _dumps
    people, places, topics, refs = b.people, b.places, b.topics, b.evidence_refs
    heard, origins, hops = b.heard_from, b.origins, b.hops
    return (
        world, b.resident, b.root, d(b.value).decode(), b.subject, b.interpretation,
        d(people).decode() if people else "[]", d(places).decode() if places else "[]",
        d(topics).decode() if topics else "[]", b.confidence,
        str(b.state), str(b.source_kind), b.source_resident_id,
        None if b.intervention is None else str(b.intervention),
        d(refs).decode() if refs else "[]", d(heard).decode() if heard else "[]",
        b.formed_day, b.updated_day, b.last_evidence_day,
        b.next_decay_day, d(origins).decode() if origins else "[]",
        d(hops).decode() if hops else "[]", b.decay_period, b.value_since,
        b.importance, b.remembered_day, b.evidence_count, b.own_origins,
    )  # fmt: skip


def _row(row: sqlite3.Row | Mapping[str, Any]) -> Mapping[str, Any]:
    return row if isinstance(row, Mapping) else dict(zip(row.keys(), row, strict=True))


def belief_from_row(row: sqlite3.Row | Mapping[str, Any]) -> Belief:
    r = _row(row)
    value: Value = load_json(r["value"])
    return Belief(
        resident=r["resident"],
        root=r["root"],
        value=value,
        subject=r["subject"],
        interpretation=r["interpretation"],
        people=tuple(load_json(r["people"])),
        places=tuple(load_json(r["places"])),
        topics=tuple(load_json(r["topics"])),
        confidence=r["confidence"],
        state=State(r["state"]),
        source_kind=SourceKind(r["source_kind"]),
        source_resident_id=r["source_resident"],
        intervention=None if r["intervention"] is None else Intervention(r["intervention"]),
        evidence_refs=tuple(load_json(r["evidence_refs"])),
        evidence_count=r["evidence_count"],
        heard_from=tuple(load_json(r["heard_from"])),
        formed_day=r["formed_day"],
        updated_day=r["updated_day"],
        last_evidence_day=r["last_evidence_day"],
        next_decay_day=r["next_decay_day"],
        origins=tuple(load_json(r["origins"])),
        hops=tuple(load_json(r["hops"])),
        decay_period=r["decay_period"],
        value_since=r["value_since"],
        importance=r.get("importance"),
        remembered_day=r.get("remembered_day"),
        own_origins=r["own_origins"],
    )


def change_to_row(world: str, seq: int, c: Change) -> tuple[Any, ...]:
    before = c.value_before
    return (
        world, seq, c.resident, c.root, str(c.kind), c.confidence_before, c.confidence_after,
        None if c.state_before is None else str(c.state_before), str(c.state_after),
        None if before is None else _dumps(before).decode(), _dumps(c.value_after).decode(),
        str(c.source_kind), c.source_resident_id, c.event_id, c.evidence_id, c.day, c.detail,
        c.subject_before, c.subject_after,
    )  # fmt: skip


def change_from_row(row: sqlite3.Row | Mapping[str, Any]) -> Change:
    r = _row(row)
    return Change(
        seq=r["seq"],
        resident=r["resident"],
        root=r["root"],
        kind=ChangeKind(r["kind"]),
        confidence_before=r["confidence_before"],
        confidence_after=r["confidence_after"],
        state_before=None if r["state_before"] is None else State(r["state_before"]),
        state_after=State(r["state_after"]),
        value_before=None if r["value_before"] is None else load_json(r["value_before"]),
        value_after=load_json(r["value_after"]),
        source_kind=SourceKind(r["source_kind"]),
        source_resident_id=r["source_resident"],
        event_id=r["event_id"],
        evidence_id=r["evidence_id"],
        day=r["day"],
        detail=r["detail"],
        subject_before=r.get("subject_before"),
        subject_after=r.get("subject_after"),
    )


#: The ``changes`` columns :func:`change_summary_from_row` reads, in its order.
CHANGE_SUMMARY_COLUMNS = (
    "seq", "kind", "confidence_after", "confidence_before", "state_after", "state_before",
    "value_after", "value_before", "subject_after", "subject_before", "source_kind",
    "source_resident", "event_id", "evidence_id", "day", "detail",
)  # fmt: skip

_loads = orjson.loads


def change_summary_from_row(row: Sequence[Any]) -> dict[str, Any]:
    """A change record in its wire form, straight from a row of ``CHANGE_SUMMARY_COLUMNS``:
    the dict :func:`protocol.change_summary` gives for :func:`change_from_row` of the row.

    A ``trust`` reply sends the latest change records of every entry of its page (hundreds
    per reply); building each as a :class:`~sidecar.engine.Change` (four enums, a frozen
    dataclass) only to read it back into this dict was most of the reply's cost. The enum
    columns are already their wire strings (the table's CHECKs hold them to the enums'
    values), so only the JSON values and the subjects (a language map is sent as the map)
    are decoded. ``tests/test_store_trust_rows.py`` holds the two ways equal.
    """
    (
        seq, kind, confidence, prev_confidence, state, prev_state, value, prev_value,
        subject, prev_subject, source_kind, source, event_id, evidence_id, day, detail,
    ) = row  # fmt: skip
    return {
        "seq": seq,
        "change": kind,
        "confidence": confidence,
        "prev_confidence": prev_confidence,
        "state": state,
        "prev_state": prev_state,
        "value": _loads(value),
        "prev_value": None if prev_value is None else _loads(prev_value),
        "subject": wire_text(subject),
        "prev_subject": wire_text(prev_subject),
        "source_kind": source_kind,
        "source": source,
        "event_id": event_id,
        "evidence_id": evidence_id,
        "day": day,
        "detail": detail,
    }


def stored_rules(world: str, text: str | bytes) -> Rules:
    """A world's rules from its row, checked like every other source of rules."""
    try:
        return rules_from_stored(load_json(text), f"world {world!r:.60}: stored rules")
    except (RulesError, ValueError) as exc:  # (ValueError: the JSON itself is damaged)
        raise WorldRulesInvalid(f"{exc}; the world cannot be opened") from None


def logged_subject(event: WorldEvent) -> str | None:
    """The subject an event's log row gives its evidence (see :func:`evidence_row`): its own
    subject when that is plain text, else None (a language map is stored with each piece:
    its logged form may be spelled otherwise)."""
    subject = getattr(event, "subject", None)
    return subject if isinstance(subject, str) and not subject.startswith("{") else None


def evidence_row(
    world: str, e: Evidence, rel: Relation, seq: int, logged: str | None
) -> tuple[Any, ...]:
    """One row of ``evidence_pieces`` (migration 0026): a reference to the ``seq``-th event
    of the world's log, which gives the piece's event id and day, and its subject where it
    is the event's ``logged`` one (:func:`logged_subject`; else the piece keeps its own)."""
    claim, hops, subject = e.claim, e.hops, e.subject
    return (
        world, e.evidence_id, e.resident, claim.root, _dumps(claim.value).decode(), seq,
        str(e.source_kind), e.source_resident_id, str(rel), e.op,
        None if subject == logged else subject, e.origin,
        _dumps(hops).decode() if hops else "[]", e.trust,
    )  # fmt: skip


def _event_row(world: str, seq: int, ev: WorldEvent) -> tuple[Any, ...]:
    return (world, seq, ev.event_id, ev.day, str(ev.kind), dump_json(ev.to_dict()))
