"""Folding world events into residents' beliefs.

:func:`ingest` is the one mutator: given a world event, the world clock and read access to
current beliefs, it returns everything the event causes (evidence, new beliefs, change
records) without writing anything. The SQLite store and the in-memory :class:`MemoryWorld`
both call it, so a replay of the event log through either gives the same beliefs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Protocol

from .events import EventKind, WorldEvent
from .model import Belief, Change, Claim, Evidence, InvalidEvent, Relation, SourceKind
from .revise import age, relation_of, revise
from .rules import DEFAULT_RULES, Rules

__all__ = [
    "BeliefReader",
    "MemoryWorld",
    "Outcome",
    "derive_evidence",
    "evidence_id",
    "ingest",
    "touched_keys",
]

Key = tuple[str, str]


class BeliefReader(Protocol):
    """Read access to one world's current beliefs, as :func:`ingest` needs it."""

    def get_belief(self, resident: str, root: str) -> Belief | None: ...

    def due_beliefs(self, day: float) -> Iterable[Belief]:
        """Beliefs whose ``next_decay_day`` is at or before ``day`` (index-driven)."""
        ...

    def is_known(self, resident: str) -> bool: ...

    def known_residents(self) -> Iterable[str]:
        """Every resident the world has heard of (only read for an announcement to all)."""
        ...


@dataclass(slots=True)
class Outcome:
    """What one event does. Beliefs are final versions keyed by (resident, root)."""

    event: WorldEvent
    day: float
    evidence: list[tuple[Evidence, Relation]] = field(default_factory=list)
    beliefs: dict[Key, Belief] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    new_residents: tuple[str, ...] = ()


def _audience(event: WorldEvent, known: Iterable[str]) -> tuple[str, ...]:
    if event.audience is not None:
        return event.audience
    everyone = set(known) | set(event.mentioned_residents())
    everyone.discard(event.speaker or "")
    return tuple(sorted(everyone))


def evidence_id(event_id: str, resident: str) -> str:
    """``<event_id>/<resident>``, unambiguous even when ids contain ``/``.

    ``%`` and ``/`` in the event id are percent-escaped, so the first ``/`` always ends the
    event id: event ``a/b`` for resident ``c`` and event ``a`` for resident ``b/c`` no longer
    share an evidence id (which made the store refuse a valid event).
    """
    return f"{event_id.replace('%', '%25').replace('/', '%2F')}/{resident}"


def derive_evidence(event: WorldEvent, known: Iterable[str] = ()) -> list[Evidence]:
    """Turn a world event into per-resident evidence.

    Observations and action results are firsthand for each witness; an utterance or an
    announcement is hearsay with the speaker as source (the world only knows it was said);
    an intervention is implanted evidence for its one resident.
    """
    kind = event.kind
    if kind is EventKind.TICK:
        return []
    assert event.claim is not None
    base = {
        "event_id": event.event_id,
        "day": event.day,
        "claim": event.claim,
        "people": event.people,
        "places": event.places,
        "topics": event.topics,
    }
    if kind is EventKind.INTERVENE:
        assert event.resident is not None
        return [
            Evidence(
                **base,
                evidence_id=evidence_id(event.event_id, event.resident),
                resident=event.resident,
                source_kind=SourceKind.IMPLANTED,
                subject=event.subject or "",
                op=event.op,
            )
        ]
    if kind in (EventKind.OBSERVE, EventKind.ACT):
        witnesses = event.witnesses
        if kind is EventKind.ACT:
            assert event.actor is not None
            witnesses = tuple(dict.fromkeys((event.actor, *witnesses)))  # the actor knows
        subject = event.subject or f"{event.actor} {event.action}: {event.status}"
        return [
            Evidence(
                **base,
                evidence_id=evidence_id(event.event_id, who),
                resident=who,
                source_kind=SourceKind.FIRSTHAND,
                subject=subject,
                interpretation=event.interpretations.get(who),
            )
            for who in witnesses
        ]
    hearers = event.listeners if kind is EventKind.SAY else _audience(event, known)
    return [
        Evidence(
            **base,
            evidence_id=evidence_id(event.event_id, who),
            resident=who,
            source_kind=SourceKind.HEARSAY,
            source_resident_id=event.speaker,
            subject=event.subject or "",
        )
        for who in hearers
    ]


def touched_keys(event: WorldEvent, known: Iterable[str] = ()) -> list[Key]:
    """The (resident, root) beliefs an event may change, for the store to load first."""
    return [(ev.resident, ev.claim.root) for ev in derive_evidence(event, known)]


def ingest(
    event: WorldEvent, clock: float, reader: BeliefReader, rules: Rules = DEFAULT_RULES
) -> Outcome:
    """Everything one event causes, computed without writing anything.

    If the event moves the world clock forward, hearsay aging due by the event's day runs
    first (the event happens in a world where that time has passed). Raises
    :class:`InvalidEvent` if the event cannot apply; then nothing of it is to be stored.
    """
    day = max(clock, event.day)
    out = Outcome(event=event, day=day)
    if day > clock:
        for belief in reader.due_beliefs(day):
            aged, changes = age(belief, day, event.event_id, rules)
            if changes:
                out.beliefs[(aged.resident, aged.root)] = aged
                out.changes.extend(changes)
    out.new_residents = tuple(r for r in event.mentioned_residents() if not reader.is_known(r))
    everyone_needed = event.kind is EventKind.ANNOUNCE and event.audience is None
    known: Iterable[str] = reader.known_residents() if everyone_needed else ()
    for ev in derive_evidence(event, known):
        key = (ev.resident, ev.claim.root)
        current = out.beliefs[key] if key in out.beliefs else reader.get_belief(*key)
        if ev.op in ("suppress", "soften"):
            if current is None:
                raise InvalidEvent(
                    f"{ev.op}: resident {ev.resident!r} holds no belief on {ev.claim.root!r}"
                )
            ev = _with_claim(ev, current.claim)
        relation = relation_of(current, ev)
        belief, change = revise(current, ev, rules)
        out.evidence.append((ev, relation))
        out.beliefs[key] = belief
        if change is not None:
            out.changes.append(change)
    return out


def _with_claim(ev: Evidence, claim: Claim) -> Evidence:
    return replace(ev, claim=claim)


class MemoryWorld:
    """An in-memory world: the same fold as the store, for offline replay and tests."""

    def __init__(self, rules: Rules = DEFAULT_RULES) -> None:
        self.rules = rules
        self.day = 0.0
        self.beliefs: dict[Key, Belief] = {}
        self.residents: dict[str, None] = {}
        self.event_ids: set[str] = set()
        self.changes: list[Change] = []
        self.evidence: list[tuple[Evidence, Relation]] = []

    def get_belief(self, resident: str, root: str) -> Belief | None:
        return self.beliefs.get((resident, root))

    def due_beliefs(self, day: float) -> list[Belief]:
        due = [
            b for b in self.beliefs.values() if b.next_decay_day is not None and b.next_decay_day <= day
        ]
        return sorted(due, key=lambda b: (b.next_decay_day, b.resident, b.root))

    def is_known(self, resident: str) -> bool:
        return resident in self.residents

    def known_residents(self) -> list[str]:
        return list(self.residents)

    def apply(self, event: WorldEvent) -> Outcome | None:
        """Apply one event; ``None`` if its id was seen before (idempotent ingest)."""
        if event.event_id in self.event_ids:
            return None
        out = ingest(event, self.day, self, self.rules)
        self.event_ids.add(event.event_id)
        self.day = out.day
        self.beliefs.update(out.beliefs)
        self.residents.update(dict.fromkeys(out.new_residents))
        self.evidence.extend(out.evidence)
        for change in out.changes:
            self.changes.append(replace(change, seq=len(self.changes) + 1))
        return out
