"""Folding world events into residents' beliefs.

:func:`ingest` is the one mutator: given a world event, the world clock and read access to
current beliefs, it returns everything the event causes (evidence, new beliefs, change
records) without writing anything. The SQLite store and the in-memory :class:`MemoryWorld`
both call it, so a replay of the event log through either gives the same beliefs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .events import (
    Act,
    ActStatus,
    Announce,
    Goal,
    Intervene,
    Observe,
    Promise,
    Propose,
    Register,
    Say,
    Schema,
    Tick,
    Trust,
    Utterance,
    WorldEvent,
)
from .guard import judge_edits
from .model import (
    Belief,
    Change,
    ChangeKind,
    Claim,
    ClockBackwards,
    Evidence,
    InvalidEvent,
    Relation,
    SourceKind,
    State,
    evolve,
    positional,
    same_value,
    unique,
)
from .promises import (
    GoalRecord,
    PromiseFold,
    PromiseReader,
    PromiseRecord,
    PromiseState,
    PromiseView,
    is_promise_report,
)
from .recall import misremember
from .revise import age, relation_of, revise
from .roots import RootDecl, RootSchema, trust_root
from .rules import DEFAULT_RULES, Rules
from .said import Said, own_words, reached

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


class BeliefReader(PromiseReader, Protocol):
    """Read access to one world's current beliefs (and promises and goals, see
    :class:`~.promises.PromiseReader`), as :func:`ingest` needs it."""

    def get_belief(self, resident: str, root: str) -> Belief | None: ...

    def due_beliefs(self, day: float) -> Iterable[Belief]:
        """Beliefs whose ``next_decay_day`` is at or before ``day`` (index-driven)."""
        ...

    def is_known(self, resident: str) -> bool: ...

    def get_trust(self, resident: str, source: str, topic: str) -> float | None:
        """The stored Trust(resident ← source, topic); topic "" is general trust."""
        ...

    def known_residents(self) -> Iterable[str]:
        """Every resident the world has heard of (only read for an announcement to all)."""
        ...

    def registered_names(self) -> Mapping[str, Mapping[str, str]]:
        """Display names by resident and language (only read for a proposal)."""
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
    #: (resident, source, topic) → trust value, for the store to upsert.
    trust: dict[tuple[str, str, str], float] = field(default_factory=dict)
    #: What the world itself observed: root → value (never copied into a belief).
    facts: dict[str, Any] = field(default_factory=dict)
    #: Per-edit verdicts of a ``propose`` event.
    results: list[dict[str, Any]] = field(default_factory=list)
    #: The world's new root schema, set by a ``schema`` event.
    schema: RootSchema | None = None
    #: Warnings for the ack (a root the world's schema does not declare, with ``warn``).
    warnings: list[str] = field(default_factory=list)
    #: A ``register`` event's display names: resident → {lang: name}; action → {lang: label}.
    names: dict[str, dict[str, str]] = field(default_factory=dict)
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    #: A ``say``/``announce``: the speaker's record of what it said (never its belief).
    said: Said | None = None
    #: Promises made by this event, and every party's view and goal it moved (final versions).
    promises: dict[str, PromiseRecord] = field(default_factory=dict)
    views: dict[tuple[str, str], PromiseView] = field(default_factory=dict)
    goals: dict[tuple[str, str], GoalRecord] = field(default_factory=dict)

    @property
    def touches_promises(self) -> bool:
        return bool(self.promises or self.views or self.goals)


_audience = reached


def _new_outcome(event: WorldEvent, day: float) -> Outcome:
    """``Outcome(event=event, day=day)``, every field set by a plain slot store (once per
    event: the dataclass ``__init__``'s eighteen parameters and eleven default factories
    cost ~1.6 µs). ``tests/test_engine_model.py`` holds it equal to the constructor's."""
    out = _new(Outcome)
    out.event, out.day = event, day
    out.evidence, out.beliefs, out.changes, out.new_residents = [], {}, [], ()
    out.trust, out.facts, out.results, out.schema, out.warnings = {}, {}, [], None, []
    out.names, out.labels, out.said = {}, {}, None
    out.promises, out.views, out.goals = {}, {}, {}
    return out


_new = object.__new__


# (module constants: an enum member read costs ~90 ns on Python 3.11, see revise.py)
_FIRSTHAND, _HEARSAY, _IMPLANTED = SourceKind.FIRSTHAND, SourceKind.HEARSAY, SourceKind.IMPLANTED
#: (``isinstance`` with a tuple: ``Say | Announce`` builds a union object at every call)
_UTTERANCES, _SEEN = (Say, Announce), (Observe, Act)


def _escaped(event_id: str) -> str:
    return event_id.replace("%", "%25").replace("/", "%2F")


def evidence_id(event_id: str, resident: str, suffix: str = "") -> str:
    """``<event_id>/<resident>``, unambiguous even when ids contain ``/``.

    ``%`` and ``/`` in the event id are percent-escaped, so the first ``/`` always ends the
    event id: event ``a/b`` for resident ``c`` and event ``a`` for resident ``b/c`` no longer
    share an evidence id (which made the store refuse a valid event).
    """
    return _id_of(_escaped(event_id), resident, suffix)


def _id_of(escaped: str, resident: str, suffix: str = "") -> str:
    """:func:`evidence_id` of an event id already escaped (an utterance escapes it once for
    all its hearers)."""
    if suffix:  # "%23" cannot occur in an escaped id, so derived ids never collide
        escaped = f"{escaped}%23{suffix}"
    return f"{escaped}/{resident}"


#: ``json.dumps(..., ensure_ascii=False)`` without building an encoder per call.
_said_json = json.JSONEncoder(ensure_ascii=False).encode


def said_origin(speaker: str, claim: Claim) -> str:
    """The origin of a claim a speaker tells without holding it: one per (speaker, claim)."""
    return "said:" + _said_json([speaker, claim.root, claim.value])


def derive_evidence(event: WorldEvent, known: Iterable[str] = ()) -> list[Evidence]:
    """Turn a world event into per-resident evidence.

    Observations and action results are firsthand for each witness; an utterance or an
    announcement is hearsay with the speaker as source (the world only knows it was said);
    an intervention is implanted evidence for its one resident.
    """
    if isinstance(event, Intervene):
        return [
            Evidence(
                evidence_id=evidence_id(event.event_id, event.resident),
                resident=event.resident,
                event_id=event.event_id,
                day=event.day,
                claim=event.claim,
                source_kind=_IMPLANTED,
                subject=event.subject or "",
                op=str(event.op),
            )
        ]
    if isinstance(event, Act):
        witnesses = unique((event.actor, *event.witnesses))  # the actor knows
        subject = event.subject or _act_subject(event)
        claim = event.claim
        return [
            Evidence(
                evidence_id=evidence_id(event.event_id, who),
                resident=who,
                event_id=event.event_id,
                day=event.day,
                claim=claim,
                source_kind=_FIRSTHAND,
                subject=subject,
                origin=evidence_id(event.event_id, who),
            )
            for who in witnesses
        ]
    if isinstance(event, Observe):
        eid, day, claim, subject = event.event_id, event.day, event.claim, event.subject
        people, places, topics = event.people, event.places, event.topics
        mutable, importance, emotion = event.mutable, event.importance, event.emotion
        out: list[Evidence] = []
        for who in event.witnesses:
            seen = evidence_id(eid, who)
            out.append(_new_evidence(
                seen, who, eid, day, _FIRSTHAND, claim, subject, None,
                event.interpretations.get(who), people, places, topics, None,  # op
                seen, (), None, None, mutable, importance, emotion,  # origin, hops, trust, topic
            ))  # fmt: skip
        return out
    if isinstance(event, _UTTERANCES):
        return list(_heard(event, known, None))
    return []  # tick, trust, propose, register


def _heard(
    event: Say | Announce,
    known: Iterable[str],
    context: Callable[[str], tuple[float, str, tuple[str, ...]]] | None,
) -> Iterator[Evidence]:
    """An utterance's evidence, hearer by hearer: the hearsay, then what the hearer now knows
    the speaker claims. ``context(hearer)`` gives the hearsay's weighing and chain (trust,
    origin, hops); it is asked for when the hearer's turn comes, after the evidence before it
    was folded, exactly when the fold used to add those fields to a copy — now the evidence
    is built once, with them."""
    eid, day, claim, subject = event.event_id, event.day, event.claim, event.subject
    people, places, topics = event.people, event.places, event.topics
    mutable, importance, emotion = event.mutable, event.importance, event.emotion
    speaker, topic = event.speaker, event.topic
    hearers = _audience(event, known) if isinstance(event, Announce) else event.listeners
    overhearers = event.overhearers if isinstance(event, Say) else ()
    # What every hearer's evidence shares, worked out once per utterance: the escaped event
    # id, and what the hearer learns firsthand, that the speaker claimed it ("believes:A:k",
    # first order only: no deeper nesting; the root names the speaker).
    escaped = _escaped(eid)
    about_claim = None if claim.root.startswith("believes:") else _about_claim(event)
    about_people = (speaker,)
    for who in (*hearers, *overhearers):
        trust, origin, hops = (None, None, ()) if context is None else context(who)
        yield _new_evidence(
            _id_of(escaped, who), who, eid, day, _HEARSAY, claim, subject, speaker,
            None, people, places, topics, None,  # interpretation, ..., op
            origin, hops, trust, topic, mutable, importance, emotion,
        )  # fmt: skip
        if about_claim is not None:
            about_id = _id_of(escaped, who, "believes")
            yield _new_evidence(
                about_id, who, eid, day, _FIRSTHAND, about_claim, subject, None,
                None, about_people, (), topics, None,  # interpretation, people, places, ..., op
                about_id, (), None, None, False, None, None,  # origin, hops, trust, topic, ...
            )  # fmt: skip


#: Evidence built positionally (:func:`~.model.positional`), in the class's field order.
_new_evidence = positional(Evidence, (
    "evidence_id", "resident", "event_id", "day", "source_kind", "claim", "subject",
    "source_resident_id", "interpretation", "people", "places", "topics", "op", "origin",
    "hops", "trust", "topic", "mutable", "importance", "emotion",
))  # fmt: skip


def _act_subject(event: Act) -> str:
    """A readable default subject: "mira did fetch water", "bo's open door was rejected"."""
    action = event.action.replace("_", " ")
    if event.status is ActStatus.COMPLETED:
        return f"{event.actor} did {action}"
    return f"{event.actor}'s {action} was {event.status}"


def believes_root(speaker: str, root: str) -> str:
    """The derived root of "what I think ``speaker`` believes about ``root``"."""
    return f"believes:{speaker}:{root}"


def _about_claim(event: Utterance) -> Claim:
    """The claim of a hearer's belief about what the speaker believes (``believes:A:k``)."""
    return Claim.checked_parts(believes_root(event.speaker, event.claim.root), event.claim.value)


def touched_keys(event: WorldEvent, known: Iterable[str] = ()) -> list[Key]:
    """The (resident, root) beliefs an event may change, for the store to load first."""
    return [(ev.resident, ev.claim.root) for ev in derive_evidence(event, known)]


def ingest(
    event: WorldEvent, clock: float, reader: BeliefReader, rules: Rules = DEFAULT_RULES
) -> Outcome:
    """Everything one event causes, computed without writing anything.

    If the event moves the world clock forward, hearsay aging due by the event's day runs
    first (the event happens in a world where that time has passed). Raises
    :class:`InvalidEvent` if the event cannot apply (:class:`ClockBackwards` if it is dated
    more than ``rules.late_event_days`` before ``clock``); then nothing of it is to be stored.
    """
    if event.day < clock - rules.late_event_days:
        raise ClockBackwards(event.day, clock)
    day = max(clock, event.day)  # an accepted late event never moves the clock back
    out = _new_outcome(event, day)
    if day > clock:
        for belief in reader.due_beliefs(day):
            aged, changes = age(belief, day, event.event_id, rules)
            if changes:
                out.beliefs[(aged.resident, aged.root)] = aged
                out.changes.extend(changes)
    out.new_residents = tuple(r for r in event.mentioned_residents() if not reader.is_known(r))
    social = _Social(reader, out, rules)
    promises = _promise_fold(reader, out, social, rules)
    if day > clock:
        promises.sweep(day, event.event_id)
    if isinstance(event, Promise):
        promises.make(event)
        return out
    if isinstance(event, Goal):
        promises.goal(event)
        return out
    if isinstance(event, Trust):
        social.set_trust(
            event.resident, event.source, event.topic or "", event.value, "set",
            event.event_id, event.day,
        )  # fmt: skip
        return out
    if isinstance(event, Propose):
        _propose(event, reader, out)
        return out
    if isinstance(event, Register):
        out.names = {resident: dict(names) for resident, names in event.names}
        out.labels = {action: dict(names) for action, names in event.labels}
        return out
    if isinstance(event, Schema):
        out.schema = event.schema
        return out
    decl = _check_schema(event, reader, out)
    if isinstance(event, _SEEN):
        claim = event.claim
        out.facts[claim.root] = claim.value
    everyone_needed = isinstance(event, Announce) and event.audience is None
    known: Iterable[str] = list(reader.known_residents()) if everyone_needed else ()
    out.said = own_words(event, known)
    if isinstance(event, _UTTERANCES):
        utterance = event  # (hearsay arrives weighed and chained: see _heard)
        evidence: Iterable[Evidence] = _heard(
            utterance, known, lambda who: social.hearsay_context(who, utterance)
        )
    else:
        evidence = derive_evidence(event, known)
    # (the loop runs once per piece of evidence of every event: what it reads per piece is
    # bound once, and a piece the world adds nothing to builds no dict of extra fields)
    beliefs, changes, kept = out.beliefs, out.changes, out.evidence
    get_belief, is_mutable = reader.get_belief, rules.is_mutable
    recalls = rules.misremember > 0
    for ev in evidence:
        resident, root = ev.resident, ev.claim.root
        key = (resident, root)
        current = beliefs[key] if key in beliefs else get_belief(resident, root)
        if ev.op in ("suppress", "soften"):
            if current is None:
                raise InvalidEvent(
                    f"{ev.op}: resident {ev.resident!r} holds no belief on {ev.claim.root!r}"
                )
            ev = evolve(ev, claim=current.claim)
        # What the world adds to the evidence, gathered and applied in one copy.
        extra: dict[str, Any] | None = None
        if ev.source_kind is _IMPLANTED:
            extra = {"origin": ev.evidence_id}
        if decl is not None and root.startswith(decl.prefix):
            if decl.mutable and not ev.mutable:
                extra = {**(extra or {}), "mutable": True}
            if decl.importance is not None and ev.importance is None:
                extra = {**(extra or {}), "importance": decl.importance}
        if not ev.mutable and not (extra and "mutable" in extra) and is_mutable(root):
            extra = {**(extra or {}), "mutable": True}
        if extra:
            ev = evolve(ev, **extra)
        relation = relation_of(current, ev)
        belief, change = revise(current, ev, rules)
        kept.append((ev, relation))
        if change is not None:
            changes.append(change)
            if current is not None and current.source_kind is _HEARSAY:
                social.judge_sources(current, ev, change)  # (it judges only these)
        if current is not None and recalls:  # a recall: details may drift
            belief, drift = misremember(
                belief, current, event_id=event.event_id, day=ev.day, places=ev.places,
                people=unique((*ev.people, *event.mentioned_residents())), rules=rules,
            )  # fmt: skip
            if drift is not None:
                changes.append(drift)
        beliefs[key] = belief
    if isinstance(event, Act) or is_promise_report(event):
        told = {ev.resident: ev.evidence_id for ev, _ in out.evidence}
        if isinstance(event, Act):
            promises.seen(event, told)
        else:
            assert isinstance(event, Utterance)
            hearers = [ev.resident for ev, _ in out.evidence if ev.source_kind is _HEARSAY]
            promises.told(event, hearers, told)
    return out


def _promise_fold(reader: BeliefReader, out: Outcome, social: _Social, rules: Rules) -> PromiseFold:
    """The event's promise and goal fold, moving trust through the event's social state."""

    def read(resident: str, source: str) -> float:
        return social.trust(resident, source, None)

    def move(resident: str, source: str, value: float, why: str, event_id: str, day: float) -> None:
        social.set_trust(resident, source, "", value, why, event_id, day)

    return PromiseFold(
        reader, out.promises, out.views, out.goals, out.changes, (read, move),
        (rules.promise_kept_step, rules.promise_broken_step),
    )  # fmt: skip


def _check_schema(event: WorldEvent, reader: BeliefReader, out: Outcome) -> RootDecl | None:
    """The world's root schema on the event's claim: its declaration, a warning, or a refusal."""
    get_schema = getattr(reader, "get_schema", None)  # (readers without schemas: none)
    schema: RootSchema | None = get_schema() if get_schema is not None else None
    if schema is None or isinstance(
        event, Tick | Trust | Propose | Schema | Register | Act | Promise | Goal
    ):
        return None
    decl, warning = schema.check(event.claim)
    if warning is not None:
        out.warnings.append(warning)
    return decl


class _Social:
    """Trust lookups and updates, and rumour chains, within one event's outcome."""

    __slots__ = ("out", "reader", "rules", "said_origin")

    def __init__(self, reader: BeliefReader, out: Outcome, rules: Rules) -> None:
        self.reader, self.out, self.rules = reader, out, rules
        #: The speaker's own origin of this event's claim, once worked out (see below).
        self.said_origin: str | None = None

    def belief(self, resident: str, root: str) -> Belief | None:
        found = self.out.beliefs.get((resident, root))  # (a belief is never None)
        return found if found is not None else self.reader.get_belief(resident, root)

    def stored_trust(self, resident: str, source: str, topic: str) -> float | None:
        found = self.out.trust.get((resident, source, topic))  # (a trust value is a float)
        return found if found is not None else self.reader.get_trust(resident, source, topic)

    def trust(self, resident: str, source: str, topic: str | None) -> float:
        """Trust(i ← j, topic), falling back to general trust, then to the default."""
        if topic:
            value = self.stored_trust(resident, source, topic)
            if value is not None:
                return value
        value = self.stored_trust(resident, source, "")
        return self.rules.trust_default if value is None else value

    def set_trust(
        self, resident: str, source: str, topic: str, value: float, why: str,
        event_id: str, day: float, evidence_id: str | None = None,
    ) -> None:  # fmt: skip
        before = self.trust(resident, source, topic or None)
        value = round(min(1.0, max(0.0, value)), 4)
        self.out.trust[(resident, source, topic)] = value
        if value == before and why != "set":
            return
        self.out.changes.append(
            Change(
                resident=resident,
                root=trust_root(source, topic or None),
                kind=ChangeKind.TRUST,
                confidence_before=round(before * 100),
                confidence_after=round(value * 100),
                state_before=State.INFLUENCING,
                state_after=State.INFLUENCING,
                value_before=before,
                value_after=value,
                source_kind=_IMPLANTED if why == "set" else _FIRSTHAND,
                source_resident_id=None,
                event_id=event_id,
                evidence_id=evidence_id,
                day=day,
                detail=why,
            )
        )

    def hearsay_context(self, hearer: str, event: Utterance) -> tuple[float, str, tuple[str, ...]]:
        """How ``hearer`` weighs the utterance (trust) and the chain it travelled (origin,
        hops): the fields its hearsay evidence is built with."""
        speaker, claim = event.speaker, event.claim
        trust = self.trust(hearer, speaker, event.topic)
        if isinstance(event, Say) and hearer in event.overhearers:
            trust *= self.rules.overhear_trust_factor
        told = self.belief(speaker, claim.root)
        # (told.claim.supports(claim), without building the belief's claim)
        if told is not None and told.origins and same_value(told.value, claim.value):
            origin, hops = told.origins[0], (*told.hops, speaker)
        else:  # the claim enters the world with the speaker (a guess, a lie, a story):
            # one origin for all of the speaker's tellings of it, so a liar telling people
            # separately is not corroboration when they compare notes
            # (the same text for every hearer of the utterance: encoded once)
            said = self.said_origin
            if said is None:
                said = self.said_origin = said_origin(speaker, claim)
            origin, hops = said, (speaker,)
        return round(trust, 4), origin, hops

    def judge_sources(self, before: Belief | None, ev: Evidence, change: Change) -> None:
        """Firsthand evidence on a belief still held on hearsay judges those who told it."""
        if before is None or before.source_kind is not _HEARSAY:
            return
        if ev.source_kind is not _FIRSTHAND:
            return
        step = {
            ChangeKind.REINFORCED: self.rules.trust_confirm_step,
            ChangeKind.DOUBTED: -self.rules.trust_contradict_step,
            ChangeKind.ANOMALY: -self.rules.trust_contradict_step,
            ChangeKind.CORRECTED: -self.rules.trust_correct_step,
        }.get(change.kind)
        if step is None:
            return
        why = {True: "confirmed", False: "contradicted"}[step > 0]
        if change.kind is ChangeKind.CORRECTED:
            why = "corrected"
        topic = before.topics[0] if before.topics else ""
        for source in before.heard_from:
            keys = (topic, "") if topic else ("",)
            currents = [(t, self.trust(ev.resident, source, t or None)) for t in keys]
            for t, current in currents:
                self.set_trust(
                    ev.resident, source, t, current + step, why,
                    ev.event_id, ev.day, ev.evidence_id,
                )  # fmt: skip


def _propose(event: Propose, reader: BeliefReader, out: Outcome) -> None:
    """Apply the accepted edits of an organizer's proposal; record every verdict."""

    def current(resident: str, root: str) -> Belief | None:
        """The belief as this event meets it: after its aging and the edits accepted so far."""
        key = (resident, root)
        return out.beliefs[key] if key in out.beliefs else reader.get_belief(resident, root)

    names = reader.registered_names()
    people = {
        r: (r, *names.get(r, {}).values()) for r in reader.known_residents()
    }  # every label an organizer's text may name a resident by
    for edit, verdict in judge_edits(event.resident, event.edits, current, people):
        out.results.append(verdict)
        if not verdict["accepted"]:
            continue
        before = current(event.resident, edit.root)
        assert before is not None
        key = (before.resident, before.root)
        after = evolve(
            before,
            subject=before.subject if edit.subject is None else edit.subject,
            interpretation=(
                before.interpretation if edit.interpretation is None else edit.interpretation
            ),
            updated_day=max(before.updated_day, event.day),
        )
        out.beliefs[key] = after
        out.changes.append(
            Change(
                resident=after.resident, root=after.root, kind=ChangeKind.INTERVENED,
                confidence_before=before.confidence, confidence_after=after.confidence,
                state_before=before.state, state_after=after.state,
                value_before=before.value, value_after=after.value,
                subject_before=before.subject, subject_after=after.subject,
                source_kind=after.source_kind, source_resident_id=after.source_resident_id,
                event_id=event.event_id, day=event.day, detail="edit",
            )
        )  # fmt: skip


class MemoryWorld:
    """An in-memory world: the same fold as the store, for offline replay and tests.

    ``history``: keep every change record (numbered), piece of evidence and utterance, as
    the store's tables do (tests compare them). The fold reads none of them, so an offline
    replay of a long capture leaves them out (``history=False``): its memory then holds
    what the world is, not everything that happened; :attr:`change_count` still numbers
    the changes."""

    def __init__(self, rules: Rules = DEFAULT_RULES, *, history: bool = True) -> None:
        self.rules = rules
        self.history = history
        self.change_count = 0
        self.day = 0.0
        self.beliefs: dict[Key, Belief] = {}
        self.residents: dict[str, None] = {}
        self.event_ids: set[str] = set()
        self.changes: list[Change] = []
        self.evidence: list[tuple[Evidence, Relation]] = []
        self.trust: dict[tuple[str, str, str], float] = {}
        self.facts: dict[str, Any] = {}
        self.schema: RootSchema | None = None
        self.names: dict[str, dict[str, str]] = {}
        self.labels: dict[str, dict[str, str]] = {}
        #: What each speaker said, in log order (own words: never beliefs).
        self.said: list[Said] = []
        self.promises: dict[str, PromiseRecord] = {}
        self.views: dict[tuple[str, str], PromiseView] = {}
        self.goals: dict[tuple[str, str], GoalRecord] = {}

    def get_promise(self, promise: str) -> PromiseRecord | None:
        return self.promises.get(promise)

    def get_promise_view(self, resident: str, promise: str) -> PromiseView | None:
        return self.views.get((resident, promise))

    def open_promise_views(self, promiser: str, action: str) -> list[PromiseView]:
        found = [
            v for v in self.views.values()
            if v.resident == promiser and v.promiser == promiser and v.action == action
            and v.state is not PromiseState.KEPT
        ]  # fmt: skip
        return sorted(found, key=lambda v: (v.resident, v.promise))

    def due_promise_views(self, day: float) -> list[PromiseView]:
        due = [v for v in self.views.values() if v.due is not None and v.due < day]
        return sorted(due, key=lambda v: (v.due, v.resident, v.promise))

    def get_goal(self, resident: str, goal: str) -> GoalRecord | None:
        return self.goals.get((resident, goal))

    def get_schema(self) -> RootSchema | None:
        return self.schema

    def get_trust(self, resident: str, source: str, topic: str) -> float | None:
        return self.trust.get((resident, source, topic))

    def get_belief(self, resident: str, root: str) -> Belief | None:
        return self.beliefs.get((resident, root))

    def due_beliefs(self, day: float) -> list[Belief]:
        due = [
            b
            for b in self.beliefs.values()
            if b.next_decay_day is not None and b.next_decay_day <= day
        ]
        return sorted(due, key=lambda b: (b.next_decay_day, b.resident, b.root))

    def is_known(self, resident: str) -> bool:
        return resident in self.residents

    def known_residents(self) -> list[str]:
        return list(self.residents)

    def registered_names(self) -> dict[str, dict[str, str]]:
        return self.names

    def apply(self, event: WorldEvent) -> Outcome | None:
        """Apply one event; ``None`` if its id was seen before (idempotent ingest)."""
        if event.event_id in self.event_ids:
            return None
        out = ingest(event, self.day, self, self.rules)
        self.event_ids.add(event.event_id)
        self.day = out.day
        self.beliefs.update(out.beliefs)
        self.residents.update(dict.fromkeys(out.new_residents))
        if self.history:
            self.evidence.extend(out.evidence)
        self.trust.update(out.trust)
        self.facts.update(out.facts)
        if out.schema is not None:
            self.schema = out.schema
        self.names.update(out.names)
        self.labels.update(out.labels)
        if out.said is not None and self.history:
            self.said.append(out.said)
        self.promises.update(out.promises)
        self.views.update(out.views)
        self.goals.update(out.goals)
        if self.history:
            for n, change in enumerate(out.changes, start=self.change_count + 1):
                self.changes.append(evolve(change, seq=n))
        self.change_count += len(out.changes)
        return out
