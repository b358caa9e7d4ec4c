"""Belief revision: ``(belief or None, evidence, rules) -> (belief, change or None)``.

Pure functions, one per row of the rules table in :mod:`sidecar.engine.rules`. The caller
loads the belief, calls :func:`revise` (or :func:`age` when the clock moves), and stores what
comes back. Nothing is deleted: a revision returns a new belief and the record of the change.
"""

from __future__ import annotations

from .model import (
    Belief,
    Change,
    ChangeKind,
    Evidence,
    Intervention,
    InvalidEvent,
    Relation,
    SourceKind,
    State,
    evolve,
    new_belief,
    positional,
    same_value,
    unique,
    with_ref,
)
from .rules import DEFAULT_RULES, Rules

__all__ = ["age", "ages", "decay_due", "relation_of", "revise"]

# The members the fold compares against, as module constants: on Python 3.11 reading an
# enum member (``State.PAST``) goes through EnumType's ``__getattr__`` hook, ~90 ns against
# ~8 ns for a global, and the fold reads dozens of them per event.
_FIRSTHAND, _HEARSAY, _IMPLANTED = SourceKind.FIRSTHAND, SourceKind.HEARSAY, SourceKind.IMPLANTED
_INFLUENCING, _PAST, _DOUBTFUL = State.INFLUENCING, State.PAST, State.DOUBTFUL
_ANOMALOUS, _CORRECTED, _SUPPRESSED = State.ANOMALOUS, State.CORRECTED, Intervention.SUPPRESSED
_FORMS, _SUPPORTS = Relation.FORMS, Relation.SUPPORTS
_CONTRADICTS, _INTERVENES = Relation.CONTRADICTS, Relation.INTERVENES
_FORMED, _REINFORCED, _DOUBTED = ChangeKind.FORMED, ChangeKind.REINFORCED, ChangeKind.DOUBTED
_DECAYED, _FADED = ChangeKind.DECAYED, ChangeKind.FADED


def relation_of(belief: Belief | None, evidence: Evidence) -> Relation:
    """How ``evidence`` bears on ``belief`` (the table's first column)."""
    if evidence.op is not None:
        return _FORMS if belief is None else _INTERVENES
    if belief is None:
        return _FORMS
    if same_value(belief.value, evidence.claim.value):
        return _SUPPORTS
    return _CONTRADICTS


def ages(belief: Belief, rules: Rules = DEFAULT_RULES) -> bool:
    """Whether hearsay aging applies: uncorroborated hearsay, influencing, not tampered with."""
    return _ages(
        belief.source_kind, belief.state, belief.intervention, belief.heard_from,
        belief.confidence, rules,
    )  # fmt: skip


def _ages(
    source_kind: SourceKind, state: State, intervention: Intervention | None,
    heard_from: tuple[str, ...], confidence: int, rules: Rules,
) -> bool:  # fmt: skip
    """:func:`ages` on the fields of a belief about to be built (one copy, not two)."""
    return (
        source_kind is _HEARSAY
        and state is _INFLUENCING
        and intervention is None
        and len(heard_from) <= rules.decay_max_refs
        and confidence > rules.decay_floor
    )


def decay_due(
    belief: Belief, rules: Rules = DEFAULT_RULES, *, since: float | None = None
) -> float | None:
    """The day of the next aging step, counted from ``since`` (default: last evidence)."""
    if not ages(belief, rules):
        return None
    start = belief.last_evidence_day if since is None else since
    return start + (belief.decay_period or rules.decay_period_days)


def change_between(
    before: Belief | None,
    after: Belief,
    kind: ChangeKind,
    *,
    event_id: str,
    day: float,
    evidence_id: str | None = None,
    detail: str | None = None,
) -> Change:
    """The change record from ``before`` (``None``: a new belief) to ``after``."""
    if before is None:
        return _new_change(
            after.resident, after.root, kind, None, after.confidence, None, after.state,
            None, after.value, after.source_kind, after.source_resident_id, event_id, day,
            evidence_id, None, after.subject, detail, None,
        )  # fmt: skip
    return _new_change(
        after.resident, after.root, kind, before.confidence, after.confidence, before.state,
        after.state, before.value, after.value, after.source_kind, after.source_resident_id,
        event_id, day, evidence_id, before.subject, after.subject, detail, None,
    )  # fmt: skip


#: Formed beliefs and change records are built positionally (:func:`~.model.positional`: once per revision).
_new_change = positional(Change, (
    "resident", "root", "kind", "confidence_before", "confidence_after", "state_before",
    "state_after", "value_before", "value_after", "source_kind", "source_resident_id",
    "event_id", "day", "evidence_id", "subject_before", "subject_after", "detail", "seq",
))  # fmt: skip


def _change(
    before: Belief | None,
    after: Belief,
    kind: ChangeKind,
    evidence: Evidence,
    detail: str | None = None,
) -> Change:
    return change_between(
        before, after, kind, event_id=evidence.event_id, day=evidence.day,
        evidence_id=evidence.evidence_id, detail=detail,
    )  # fmt: skip


def revise(
    belief: Belief | None, evidence: Evidence, rules: Rules = DEFAULT_RULES
) -> tuple[Belief, Change | None]:
    """Apply one piece of evidence to a resident's belief on the evidence's root.

    Returns the new belief and its change record; the record is ``None`` only when the
    evidence is recorded without effect (a hearsay source repeating itself, or a revision
    that changes neither value, confidence, state nor provenance).
    Raises :class:`InvalidEvent` for an intervention that needs a belief and finds none.
    """
    if belief is not None and (
        belief.root != evidence.claim.root or belief.resident != evidence.resident
    ):
        raise ValueError("evidence is about another resident or root than the belief")
    if evidence.op is not None:
        return _intervene(belief, evidence, rules)
    if belief is None:
        return _form(evidence, rules)
    if belief.intervention is _SUPPRESSED:
        if evidence.source_kind is not _FIRSTHAND:
            # A suppressed memory is out of reach: only the resident's own eyes bring it
            # back. Hearsay is recorded against it and changes nothing.
            return evolve(belief, **_recorded(belief, evidence)), None
        seen = evolve(belief, intervention=None)  # seen again: the suppression ends
        after, change = _revise_held(seen, evidence, rules)
        if change is None:  # (an echo of what it already counted: still out of reach)
            after = evolve(after, intervention=_SUPPRESSED)
        return after, change
    return _revise_held(belief, evidence, rules)


def _revise_held(belief: Belief, evidence: Evidence, rules: Rules) -> tuple[Belief, Change | None]:
    if same_value(belief.value, evidence.claim.value):
        after, change = _support(belief, evidence, rules)
    else:
        after, change = _contradict(belief, evidence, rules)
    if change is not None and _no_op(belief, after):
        # Evidence that changes neither value, confidence, state nor provenance (the 21st
        # fetch at 100, a doubt already at its floor) is recorded, not announced.
        return after, None
    return after, change


def _no_op(before: Belief, after: Belief) -> bool:
    return (
        same_value(before.value, after.value)
        and before.confidence == after.confidence
        and before.state is after.state
        and before.source_kind is after.source_kind
        and before.subject == after.subject
    )


def _form(ev: Evidence, rules: Rules) -> tuple[Belief, Change]:
    hearsay = ev.source_kind is _HEARSAY
    if not hearsay:
        initial = rules.firsthand_initial
    elif ev.trust is None:
        initial = rules.hearsay_initial
    else:
        initial = rules.hearsay_confidence(ev.trust)
    heard_from = (ev.source_resident_id,) if ev.source_resident_id else ()
    period = rules.decay_period(ev.importance, ev.emotion, ev.trust) if hearsay else None
    # Scheduled as it is built (decay_due of the result, without a second copy).
    scheduled = _ages(ev.source_kind, _INFLUENCING, None, heard_from, initial, rules)
    claim, day = ev.claim, ev.day
    belief = new_belief(
        ev.resident, claim.root, claim.value, ev.subject, initial, _INFLUENCING,
        ev.source_kind, ev.source_resident_id, day, day, day,  # formed, updated, last evidence
        ev.interpretation, ev.people, ev.places, ev.topics, None,  # intervention
        (ev.evidence_id,), 1, heard_from,  # refs, count
        day + (period or rules.decay_period_days) if scheduled else None,  # next decay
        (ev.origin,) if ev.origin else (), ev.hops, period, day,  # value since
        ev.importance, None, 0,  # remembered day, own origins
    )  # fmt: skip
    return belief, _change(None, belief, _FORMED, ev)


def _recorded(belief: Belief, ev: Evidence) -> dict[str, object]:
    """Evidence kept against a belief it does not move (refs and days only)."""
    return {
        "evidence_refs": with_ref(belief.evidence_refs, ev.evidence_id),
        "evidence_count": belief.evidence_count + 1,
        "updated_day": max(belief.updated_day, ev.day),
    }


def _touched(belief: Belief, ev: Evidence) -> dict[str, object]:
    """Fields every piece of evidence updates, whatever it does to confidence."""
    return {
        "evidence_refs": with_ref(belief.evidence_refs, ev.evidence_id),
        "evidence_count": belief.evidence_count + 1,
        "updated_day": max(belief.updated_day, ev.day),
        "last_evidence_day": max(belief.last_evidence_day, ev.day),
        "importance": _importance(belief.importance, ev.importance),
    }


def _importance(a: float | None, b: float | None) -> float | None:
    """The higher of two importances, ``None`` only when neither was ever given."""
    if a is None:
        return b
    return a if b is None else max(a, b)


def _support(belief: Belief, ev: Evidence, rules: Rules) -> tuple[Belief, Change | None]:
    repeated = ev.source_kind is _HEARSAY and ev.source_resident_id in belief.heard_from
    echoed = ev.resident in ev.hops or (ev.origin is not None and ev.origin in belief.origins)
    if repeated or echoed:
        # The same source repeating itself, or a rumour echoing back from an origin already
        # counted (circular reporting), is not corroboration: record it, change nothing,
        # and keep the aging clock where it was.
        refs = with_ref(belief.evidence_refs, ev.evidence_id)
        return evolve(belief, evidence_refs=refs, evidence_count=belief.evidence_count + 1), None
    source_kind, source, hops = belief.source_kind, belief.source_resident_id, belief.hops
    confidence = belief.confidence + rules.reinforce_step
    if source_kind is _HEARSAY and ev.source_kind is _FIRSTHAND:
        source_kind, source, hops = _FIRSTHAND, None, ()  # seen for oneself now
        # seeing it oneself is at least as sure as having seen it first: max(c + 8, 78)
        confidence = max(confidence, rules.firsthand_initial)
    confidence = min(rules.confidence_cap, confidence)
    state = _CORRECTED if belief.state is _CORRECTED else _INFLUENCING
    heard_from = (
        (*belief.heard_from, ev.source_resident_id) if ev.source_resident_id else belief.heard_from
    )
    last_evidence_day = max(belief.last_evidence_day, ev.day)
    # A sighting or implant is its own origin: after the first origin it is counted, not
    # listed (no rumour can carry it: see Belief.own_origins).
    origins, own = belief.origins, belief.own_origins
    if ev.origin:
        if ev.origin == ev.evidence_id and origins:
            own += 1
        else:
            origins = (*origins, ev.origin)
    # Rescheduled in the same copy (decay_due of the result, without a second copy).
    due = (
        last_evidence_day + (belief.decay_period or rules.decay_period_days)
        if _ages(source_kind, state, belief.intervention, heard_from, confidence, rules)
        else None
    )
    # Every field, in Belief's order (the most common revision: built, not copied).
    after = new_belief(
        belief.resident, belief.root, belief.value, belief.subject, confidence, state,
        source_kind, source, belief.formed_day, max(belief.updated_day, ev.day),
        last_evidence_day, ev.interpretation or belief.interpretation,
        unique((*belief.people, *ev.people)), unique((*belief.places, *ev.places)),
        unique((*belief.topics, *ev.topics)), belief.intervention,
        with_ref(belief.evidence_refs, ev.evidence_id), belief.evidence_count + 1,
        heard_from, due,  # next decay day
        origins, hops, belief.decay_period, belief.value_since,
        _importance(belief.importance, ev.importance), belief.remembered_day, own,
    )  # fmt: skip
    return after, _change(belief, after, _REINFORCED, ev)


def _contradict(belief: Belief, ev: Evidence, rules: Rules) -> tuple[Belief, Change | None]:
    firsthand = ev.source_kind is _FIRSTHAND
    if ev.mutable and firsthand and ev.day > belief.last_evidence_day:
        return _update(belief, ev, rules)
    if belief.root.startswith("believes:") and firsthand:
        # "What A believes" follows what A says: A saying another value is A changing what A
        # says, not A contradicting itself. An older telling arriving late changes nothing.
        if ev.day >= belief.last_evidence_day:
            return _update(belief, ev, rules)
        return evolve(belief, **_recorded(belief, ev)), None
    active = belief.intervention is not None and belief.intervention.active
    if active and not (belief.state is _ANOMALOUS and firsthand):
        after = evolve(
            belief,
            **_touched(belief, ev),
            confidence=min(
                belief.confidence, max(rules.anomaly_floor, belief.confidence - rules.anomaly_step)
            ),
            state=_ANOMALOUS,
            # Exposed: the resident has noticed something is off. From now on a
            # contradiction is a plain doubt, and firsthand evidence corrects it.
            intervention=Intervention.DISCOVERED,
            next_decay_day=None,
        )
        return after, _change(belief, after, ChangeKind.ANOMALY, ev)
    if firsthand and belief.state in (_DOUBTFUL, _ANOMALOUS):
        return _correct(belief, ev, rules)
    after = evolve(
        belief,
        **_touched(belief, ev),
        confidence=min(
            belief.confidence, max(rules.doubt_floor, belief.confidence - rules.doubt_step)
        ),
        state=_DOUBTFUL,
        next_decay_day=None,
    )
    return after, _change(belief, after, _DOUBTED, ev)


def _seen_anew(belief: Belief, ev: Evidence, **fields: object) -> Belief:
    """The belief replaced by what the resident saw: new value, firsthand, a fresh chain.

    Shared by correction and update; the old value survives only in the change history.
    """
    return evolve(
        belief,
        **_touched(belief, ev),
        value=ev.claim.value,
        subject=ev.subject,
        people=ev.people,
        places=ev.places,
        topics=ev.topics,
        source_kind=_FIRSTHAND,
        source_resident_id=None,
        intervention=None,
        heard_from=(),
        origins=(ev.origin,) if ev.origin else (),
        own_origins=0,
        hops=(),
        value_since=ev.day,
        decay_period=None,
        next_decay_day=None,
        **fields,
    )


def _correct(belief: Belief, ev: Evidence, rules: Rules) -> tuple[Belief, Change]:
    # No sidecar text is stored (it would be in one language): the correction's change record
    # keeps what was believed before, and the narrative words it in the language asked.
    after = _seen_anew(
        belief,
        ev,
        interpretation=ev.interpretation,
        confidence=rules.corrected_confidence,
        state=_CORRECTED,
    )
    return after, _change(belief, after, ChangeKind.CORRECTED, ev)


def _update(belief: Belief, ev: Evidence, rules: Rules) -> tuple[Belief, Change]:
    """A mutable root seen firsthand with a newer value: the world changed, not my mind."""
    after = _seen_anew(
        belief,
        ev,
        interpretation=ev.interpretation,
        confidence=rules.firsthand_initial,
        state=_INFLUENCING,
    )
    held = f"held from day {belief.value_since:g} until day {ev.day:g}"
    return after, _change(belief, after, ChangeKind.UPDATED, ev, detail=held)


def _intervene(belief: Belief | None, ev: Evidence, rules: Rules) -> tuple[Belief, Change]:
    op = ev.op
    if op == "implant":
        implanted = Belief(
            resident=ev.resident,
            root=ev.claim.root,
            value=ev.claim.value,
            subject=ev.subject,
            people=ev.people,
            places=ev.places,
            topics=ev.topics,
            confidence=rules.implant_initial,
            state=_INFLUENCING,
            source_kind=_IMPLANTED,
            source_resident_id=None,
            intervention=Intervention.IMPLANTED,
            formed_day=ev.day if belief is None else belief.formed_day,
            # A late implant (rules.late_event_days) never moves these days back.
            updated_day=ev.day if belief is None else max(belief.updated_day, ev.day),
            last_evidence_day=ev.day if belief is None else max(belief.last_evidence_day, ev.day),
            origins=(ev.origin,) if ev.origin else (),
            value_since=ev.day,
            evidence_refs=(ev.evidence_id,)
            if belief is None
            else with_ref(belief.evidence_refs, ev.evidence_id),
            evidence_count=1 if belief is None else belief.evidence_count + 1,
        )
        kind = _FORMED if belief is None else ChangeKind.INTERVENED
        return implanted, _change(belief, implanted, kind, ev, detail="implant")
    if belief is None:
        raise InvalidEvent(f"{op}: resident {ev.resident!r} holds no belief on {ev.claim.root!r}")
    touched = {
        "evidence_refs": with_ref(belief.evidence_refs, ev.evidence_id),
        "evidence_count": belief.evidence_count + 1,
        "updated_day": max(belief.updated_day, ev.day),
    }
    if op == "distort":
        after = evolve(
            belief,
            **touched,
            subject=ev.subject,
            # The player's version replaces the resident's reading of the old one too.
            interpretation=ev.interpretation,
            value=ev.claim.value,
            intervention=Intervention.DISTORTED,
            heard_from=belief.heard_from if same_value(belief.value, ev.claim.value) else (),
            origins=belief.origins
            if same_value(belief.value, ev.claim.value)
            else (ev.origin or "",),
            own_origins=belief.own_origins if same_value(belief.value, ev.claim.value) else 0,
            value_since=belief.value_since if same_value(belief.value, ev.claim.value) else ev.day,
            next_decay_day=None,
        )
    elif op == "suppress":
        after = evolve(
            belief,
            **touched,
            state=_PAST,
            intervention=_SUPPRESSED,
            next_decay_day=None,
        )
    elif op == "soften":
        confidence = max(0, belief.confidence - rules.soften_step)
        state = _DOUBTFUL if confidence <= rules.soften_doubt_at else belief.state
        after = evolve(belief, **touched, confidence=confidence, state=state)
        after = evolve(after, next_decay_day=belief.next_decay_day if ages(after, rules) else None)
    else:  # pragma: no cover - parse_event only lets the four ops through
        raise InvalidEvent(f"unknown intervention op {op!r}")
    return after, _change(belief, after, ChangeKind.INTERVENED, ev, detail=op)


def age(
    belief: Belief, day: float, event_id: str, rules: Rules = DEFAULT_RULES
) -> tuple[Belief, list[Change]]:
    """Apply every hearsay-aging step due by ``day`` (catch-up: 21 days = three steps)."""
    changes: list[Change] = []
    while (
        belief.next_decay_day is not None and belief.next_decay_day <= day and ages(belief, rules)
    ):
        due = belief.next_decay_day
        confidence = max(rules.decay_floor, belief.confidence - rules.decay_step)
        faded = confidence <= rules.decay_floor
        after = evolve(
            belief,
            confidence=confidence,
            state=_PAST if faded else _INFLUENCING,
            updated_day=max(belief.updated_day, due),
            next_decay_day=None
            if faded
            else due + (belief.decay_period or rules.decay_period_days),
        )
        kind = _FADED if faded else _DECAYED
        changes.append(change_between(belief, after, kind, event_id=event_id, day=due))
        belief = after
    if belief.next_decay_day is not None and not ages(belief, rules):
        belief = evolve(belief, next_decay_day=None)
    return belief, changes
