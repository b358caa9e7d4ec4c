"""The rules table, one test per row and boundary, on the pure functions ``revise`` and ``age``.

Evidence and beliefs are built directly, so each test pins exactly one rule with the default
numbers of :class:`sidecar.engine.Rules` (78/58/65 initial, +8 to 100, -20 to 10, -30 to 10,
72 corrected, -8 to 34 every 7 days, -25 soften with doubt at 30).
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import pytest
from belief_builders import observe, say

from sidecar.engine import (
    DEFAULT_RULES,
    Belief,
    Change,
    ChangeKind,
    Claim,
    Evidence,
    Intervention,
    InvalidEvent,
    MemoryWorld,
    Rules,
    SourceKind,
    State,
    age,
    check_transition,
    parse_event,
    revise,
)

RES = "mira"
ROOT = "water:well"
_ids = itertools.count(1)


def ev(
    value: Any = "clean",
    *,
    kind: str = "firsthand",
    source: str | None = None,
    day: float = 1.0,
    subject: str | None = None,
    op: str | None = None,
    interpretation: str | None = None,
    root: str = ROOT,
) -> Evidence:
    """One piece of evidence for ``mira`` on ``water:well`` (hearsay defaults to source bo)."""
    n = next(_ids)
    source_kind = SourceKind(kind)
    if source_kind is SourceKind.HEARSAY and source is None:
        source = "bo"
    return Evidence(
        evidence_id=f"e{n}/{RES}",
        resident=RES,
        event_id=f"e{n}",
        day=day,
        source_kind=source_kind,
        source_resident_id=source,
        claim=Claim(root=root, value=value),
        subject=subject or f"the well is {value}",
        interpretation=interpretation,
        op=op,
    )


def implanted(value: Any = "poisoned", *, day: float = 1.0, op: str = "implant") -> Evidence:
    """A player's intervention evidence for mira."""
    return ev(value, kind="implanted", op=op, day=day)


def run(*evidence: Evidence, belief: Belief | None = None) -> tuple[Belief, list[Change]]:
    """Fold evidence into one belief, checking every change against the transition table."""
    changes: list[Change] = []
    for one in evidence:
        belief, change = revise(belief, one)
        if change is not None:
            check_transition(change.kind, change.state_before, change.state_after)
            changes.append(change)
    assert belief is not None
    return belief, changes


def with_(belief: Belief, **fields: Any) -> Belief:
    return replace(belief, **fields)


# --------------------------------------------------------------------------- formation


def test_firsthand_forms_at_78_influencing() -> None:
    """No belief + firsthand evidence forms a belief at 78, influencing, firsthand, no source."""
    e = ev("clean")
    belief, [change] = run(e)
    assert (belief.value, belief.confidence, belief.state) == ("clean", 78, State.INFLUENCING)
    assert belief.source_kind is SourceKind.FIRSTHAND and belief.source_resident_id is None
    assert belief.evidence_refs == (e.evidence_id,)
    assert change.kind is ChangeKind.FORMED
    assert (change.confidence_before, change.confidence_after) == (None, 78)
    assert change.state_before is None and change.evidence_id == e.evidence_id


def test_hearsay_forms_at_58_with_source_recorded() -> None:
    """No belief + hearsay forms at 58, influencing, hearsay, the speaker recorded as source."""
    belief, [change] = run(ev("poisoned", kind="hearsay", source="bo"))
    assert (belief.confidence, belief.state) == (58, State.INFLUENCING)
    assert belief.source_kind is SourceKind.HEARSAY and belief.source_resident_id == "bo"
    assert belief.heard_from == ("bo",)
    assert (change.kind, change.source_resident_id) == (ChangeKind.FORMED, "bo")


def test_implant_forms_at_65_implanted() -> None:
    """No belief + player implant forms at 65, source implanted, intervention 'implanted'."""
    belief, [change] = run(implanted("poisoned"))
    assert (belief.value, belief.confidence, belief.state) == ("poisoned", 65, State.INFLUENCING)
    assert belief.source_kind is SourceKind.IMPLANTED
    assert belief.intervention is Intervention.IMPLANTED
    assert (change.kind, change.detail) == (ChangeKind.FORMED, "implant")


def test_implant_on_existing_belief_replaces_value_and_is_an_intervention() -> None:
    """Implant on an existing belief: intervened, value/subject replaced, 65, source implanted."""
    belief, changes = run(ev("clean"), implanted("poisoned"))
    assert (belief.value, belief.confidence) == ("poisoned", 65)
    assert belief.source_kind is SourceKind.IMPLANTED
    assert belief.intervention is Intervention.IMPLANTED
    assert len(belief.evidence_refs) == 2
    last = changes[-1]
    assert (last.kind, last.detail) == (ChangeKind.INTERVENED, "implant")
    assert (last.value_before, last.value_after) == ("clean", "poisoned")
    assert last.subject_before == "the well is clean"
    assert last.subject_after == "the well is poisoned"


# --------------------------------------------------------------------------- support


def test_support_reinforces_by_8_and_appends_evidence() -> None:
    """Supporting evidence: reinforced 78 -> 86, evidence ref appended to the same belief."""
    first, second = ev("clean"), ev("clean", day=2)
    belief, changes = run(first, second)
    assert belief.confidence == 86
    assert belief.evidence_refs == (first.evidence_id, second.evidence_id)
    assert [c.kind for c in changes] == [ChangeKind.FORMED, ChangeKind.REINFORCED]
    assert (changes[1].confidence_before, changes[1].confidence_after) == (78, 86)
    assert belief.formed_day == 1 and belief.last_evidence_day == 2


def test_support_caps_at_100() -> None:
    """Reinforcing a belief at 96 gives 100 (min(100, c+8)), not 104."""
    start, _ = run(ev("clean"))
    belief, [change] = run(ev("clean"), belief=with_(start, confidence=96))
    assert belief.confidence == 100
    assert (change.confidence_before, change.confidence_after) == (96, 100)


def test_many_observations_reach_exactly_100_and_stay() -> None:
    """78, 86, 94, 100, 100, 100: repeated firsthand support saturates at the cap."""
    belief: Belief | None = None
    seen = []
    for day in range(1, 7):
        belief, _ = revise(belief, ev("clean", day=day))
        seen.append(belief.confidence)
    assert seen == [78, 86, 94, 100, 100, 100]


def test_support_that_changes_nothing_is_recorded_without_a_change() -> None:
    """At 100, influencing, more firsthand support appends its evidence ref and emits no
    change record (no "reinforced 100 → 100" every day)."""
    belief, _ = run(*(ev("clean", day=d) for d in range(1, 5)))
    assert belief.confidence == 100
    e = ev("clean", day=9)
    after, change = revise(belief, e)
    assert change is None
    assert after.evidence_refs[-1] == e.evidence_id and after.updated_day == 9


def test_doubt_at_its_floor_is_recorded_without_a_change() -> None:
    """A doubtful hearsay belief at 10, contradicted by more hearsay, stays 10 and doubtful:
    the evidence is kept, no change record."""
    belief, _ = run(ev("poisoned", kind="hearsay", source="bo"))
    belief = with_(belief, confidence=10, state=State.DOUBTFUL, next_decay_day=None)
    after, change = revise(belief, ev("clean", kind="hearsay", source="tom", day=3))
    assert change is None and (after.confidence, after.state) == (10, State.DOUBTFUL)
    assert len(after.evidence_refs) == len(belief.evidence_refs) + 1


def test_support_returns_doubtful_to_influencing() -> None:
    """A doubtful belief that gets supporting evidence is reinforced back to influencing."""
    doubtful, _ = run(ev("clean"), ev("dirty", kind="hearsay"))
    assert doubtful.state is State.DOUBTFUL
    belief, [change] = run(ev("clean", day=3), belief=doubtful)
    assert (belief.state, belief.confidence) == (State.INFLUENCING, doubtful.confidence + 8)
    assert (change.kind, change.state_before) == (ChangeKind.REINFORCED, State.DOUBTFUL)


def test_support_returns_anomalous_to_influencing_and_it_stays_discovered() -> None:
    """Support for an anomalous (exposed implant) belief: influencing again, still discovered."""
    anomalous, _ = run(implanted("poisoned"), ev("clean", kind="hearsay"))
    assert anomalous.state is State.ANOMALOUS
    belief, [change] = run(ev("poisoned", kind="hearsay", source="tom"), belief=anomalous)
    assert belief.state is State.INFLUENCING
    assert belief.intervention is Intervention.DISCOVERED
    assert change.kind is ChangeKind.REINFORCED


def test_firsthand_support_brings_a_suppressed_belief_back() -> None:
    """Firsthand support for a suppressed belief: influencing again, the suppression ends."""
    past, _ = run(ev("clean"), implanted(op="suppress", value="clean"))
    assert (past.state, past.intervention) == (State.PAST, Intervention.SUPPRESSED)
    belief, [change] = run(ev("clean", day=3), belief=past)
    assert (belief.state, belief.confidence) == (State.INFLUENCING, 86)
    assert belief.intervention is None
    assert (change.state_before, change.state_after) == (State.PAST, State.INFLUENCING)


@pytest.mark.parametrize("value", ["clean", "poisoned"], ids=["support", "contradiction"])
def test_hearsay_never_reaches_a_suppressed_belief(value: str) -> None:
    """Hearsay on a suppressed belief is recorded; no change, still past and suppressed."""
    past, _ = run(ev("clean"), implanted(op="suppress", value="clean"))
    heard = ev(value, kind="hearsay", source="bo", day=3)
    belief, change = revise(past, heard)
    assert change is None
    assert (belief.state, belief.intervention, belief.confidence) == (
        State.PAST, Intervention.SUPPRESSED, past.confidence,
    )  # fmt: skip
    assert belief.evidence_refs[-1] == heard.evidence_id


def test_firsthand_contradiction_brings_a_suppressed_belief_back_in_doubt() -> None:
    """Seeing otherwise brings a suppressed memory back as a doubt (not hidden any more)."""
    past, _ = run(ev("clean"), implanted(op="suppress", value="clean"))
    belief, [change] = run(ev("poisoned", day=3), belief=past)
    assert (change.kind, belief.state, belief.intervention) == (
        ChangeKind.DOUBTED, State.DOUBTFUL, None,
    )  # fmt: skip


def test_support_for_past_belief_returns_to_influencing() -> None:
    """Silent case: support for a faded (past, not suppressed) belief makes it influencing."""
    faded = with_(run(ev("clean", kind="hearsay", source="bo"))[0], state=State.PAST)
    belief, [change] = run(ev("clean", kind="hearsay", source="tom", day=3), belief=faded)
    assert belief.state is State.INFLUENCING
    assert (change.state_before, change.state_after) == (State.PAST, State.INFLUENCING)


def test_support_for_corrected_belief_stays_corrected() -> None:
    """Silent case: a corrected belief that is supported is reinforced but stays corrected."""
    corrected, _ = run(ev("poisoned", kind="hearsay"), ev("clean"), ev("clean"))
    assert (corrected.state, corrected.confidence) == (State.CORRECTED, 72)
    belief, [change] = run(ev("clean", day=4), belief=corrected)
    assert (belief.state, belief.confidence) == (State.CORRECTED, 80)
    assert change.kind is ChangeKind.REINFORCED


def test_firsthand_confirmation_makes_hearsay_belief_firsthand() -> None:
    """Silent case: firsthand support of hearsay makes it firsthand, source resident cleared."""
    hearsay, _ = run(ev("poisoned", kind="hearsay", source="bo"))
    assert hearsay.next_decay_day is not None
    belief, [change] = run(ev("poisoned", day=2), belief=hearsay)
    assert belief.source_kind is SourceKind.FIRSTHAND
    assert belief.source_resident_id is None
    assert belief.confidence == 78  # max(58 + 8, firsthand 78)
    assert belief.next_decay_day is None  # firsthand beliefs stop aging
    assert (change.source_kind, change.source_resident_id) == (SourceKind.FIRSTHAND, None)


def test_repeated_hearsay_from_same_source_only_records_evidence() -> None:
    """Silent case: a source repeating itself: ref appended, nothing else, no change record."""
    hearsay, _ = run(ev("poisoned", kind="hearsay", source="bo", day=1))
    repeat = ev("poisoned", kind="hearsay", source="bo", day=5)
    belief, change = revise(hearsay, repeat)
    assert change is None
    assert belief.evidence_refs == (*hearsay.evidence_refs, repeat.evidence_id)
    assert belief.confidence == 58
    assert belief.last_evidence_day == 1 and belief.next_decay_day == hearsay.next_decay_day
    assert belief.evidence_count == hearsay.evidence_count + 1 == 2
    assert with_(belief, evidence_refs=hearsay.evidence_refs, evidence_count=1) == hearsay


def test_hearsay_from_a_second_source_reinforces() -> None:
    """Support from a new hearsay source counts: reinforced 58 -> 66, both sources in heard_from."""
    belief, changes = run(
        ev("poisoned", kind="hearsay", source="bo"), ev("poisoned", kind="hearsay", source="tom")
    )
    assert belief.confidence == 66
    assert belief.heard_from == ("bo", "tom")
    assert belief.source_resident_id == "bo"  # the original source stays the belief's source
    assert changes[-1].kind is ChangeKind.REINFORCED


# --------------------------------------------------------------------------- contradiction


def test_contradiction_doubts_by_20() -> None:
    """Contradicting evidence: doubted, 78 -> 58, doubtful; the value itself is kept."""
    belief, changes = run(ev("clean"), ev("dirty", kind="hearsay"))
    assert (belief.value, belief.confidence, belief.state) == ("clean", 58, State.DOUBTFUL)
    assert changes[-1].kind is ChangeKind.DOUBTED
    assert len(belief.evidence_refs) == 2


@pytest.mark.parametrize(("before", "after"), [(31, 11), (30, 10), (29, 10), (10, 10)])
def test_doubt_floor_is_10(before: int, after: int) -> None:
    """Doubt is max(10, c-20): 31 -> 11, 30 -> 10, 29 -> 10, 10 stays 10."""
    start, _ = run(ev("clean"))
    belief, [change] = run(ev("dirty", kind="hearsay"), belief=with_(start, confidence=before))
    assert (belief.confidence, belief.state) == (after, State.DOUBTFUL)
    assert change.kind is ChangeKind.DOUBTED


def test_doubt_never_raises_confidence() -> None:
    """A belief softened below the floor (5) keeps 5 when doubted; max(10, ...) does not lift it."""
    start, _ = run(ev("clean"))
    belief, [change] = run(ev("dirty", kind="hearsay"), belief=with_(start, confidence=5))
    assert belief.confidence == 5
    assert (change.confidence_before, change.confidence_after) == (5, 5)


def test_influencing_plus_firsthand_contradiction_is_doubt_not_correction() -> None:
    """Correction needs doubt first: influencing + firsthand contradiction is only doubted."""
    belief, changes = run(ev("poisoned", kind="hearsay"), ev("clean"))
    assert (belief.value, belief.state, belief.confidence) == ("poisoned", State.DOUBTFUL, 38)
    assert belief.source_kind is SourceKind.HEARSAY
    assert changes[-1].kind is ChangeKind.DOUBTED


def test_doubtful_plus_firsthand_contradiction_corrects() -> None:
    """Doubtful + firsthand contradiction: corrected, value/subject replaced, 72, firsthand."""
    doubtful, _ = run(ev("poisoned", kind="hearsay", subject="the well is poisoned"), ev("clean"))
    fix = ev("clean", day=4, subject="the water is clear and sweet")
    belief, [change] = run(fix, belief=doubtful)
    assert (belief.value, belief.subject) == ("clean", "the water is clear and sweet")
    assert (belief.confidence, belief.state) == (72, State.CORRECTED)
    assert belief.source_kind is SourceKind.FIRSTHAND and belief.source_resident_id is None
    assert belief.interpretation is None  # what was believed before lives in the change
    assert change.kind is ChangeKind.CORRECTED
    assert change.subject_before == "the well is poisoned"
    assert (change.value_before, change.value_after) == ("poisoned", "clean")
    assert (change.subject_before, change.subject_after) == (
        "the well is poisoned",
        "the water is clear and sweet",
    )
    assert belief.next_decay_day is None and belief.heard_from == ()


def test_correction_keeps_the_witness_interpretation_and_no_text_of_its_own() -> None:
    """A correcting observation's interpretation is kept as the witness gave it, and a
    correction without one stores none: the sidecar adds no text in one language."""
    doubtful, _ = run(ev("poisoned", kind="hearsay"), ev("clean"))
    belief, _ = run(ev("clean", interpretation="Bo lied to me"), belief=doubtful)
    assert belief.interpretation == "Bo lied to me"
    plain, _ = run(ev("clean"), belief=doubtful)
    assert plain.state is State.CORRECTED and plain.interpretation is None


def test_doubtful_plus_hearsay_contradiction_doubts_again() -> None:
    """Correction needs firsthand evidence: doubtful + hearsay contradiction is doubted again."""
    doubtful, _ = run(ev("clean"), ev("dirty", kind="hearsay", source="bo"))
    belief, [change] = run(ev("dirty", kind="hearsay", source="tom"), belief=doubtful)
    assert (belief.value, belief.state, belief.confidence) == ("clean", State.DOUBTFUL, 38)
    assert change.kind is ChangeKind.DOUBTED


def test_contradiction_of_past_belief_doubts() -> None:
    """Silent case: contradicting a past belief makes it doubtful (doubted), not corrected."""
    past, _ = run(ev("clean"), implanted(op="suppress", value="clean"))
    belief, [change] = run(ev("dirty", day=3), belief=past)
    assert (belief.state, belief.confidence, belief.value) == (State.DOUBTFUL, 58, "clean")
    assert (change.kind, change.state_before) == (ChangeKind.DOUBTED, State.PAST)


def test_contradiction_of_corrected_belief_doubts() -> None:
    """A corrected belief contradicted again is doubted (72 -> 52), like any other."""
    corrected, _ = run(ev("poisoned", kind="hearsay"), ev("clean"), ev("clean"))
    belief, [change] = run(ev("poisoned", kind="hearsay", source="tom"), belief=corrected)
    assert (belief.state, belief.confidence) == (State.DOUBTFUL, 52)
    assert change.kind is ChangeKind.DOUBTED


# --------------------------------------------------------------------------- anomaly


def test_contradiction_against_implant_is_anomaly() -> None:
    """Contradicting an implanted belief: anomaly, 65 -> 35 (c-30), anomalous, now discovered."""
    belief, changes = run(implanted("poisoned"), ev("clean", kind="hearsay"))
    assert (belief.confidence, belief.state) == (35, State.ANOMALOUS)
    assert belief.intervention is Intervention.DISCOVERED
    assert belief.value == "poisoned"
    assert changes[-1].kind is ChangeKind.ANOMALY


def test_contradiction_against_distortion_is_anomaly() -> None:
    """Contradicting a distorted belief (even firsthand, while influencing): anomaly, not doubt."""
    distorted, _ = run(ev("clean"), implanted("poisoned", op="distort"))
    belief, [change] = run(ev("clean", day=3), belief=distorted)
    assert (belief.confidence, belief.state) == (48, State.ANOMALOUS)
    assert change.kind is ChangeKind.ANOMALY


@pytest.mark.parametrize(("before", "after"), [(41, 11), (40, 10), (35, 10)])
def test_anomaly_floor_is_10(before: int, after: int) -> None:
    """Anomaly is max(10, c-30): 41 -> 11, 40 -> 10, 35 -> 10."""
    start, _ = run(implanted("poisoned"))
    belief, _ = run(ev("clean", kind="hearsay"), belief=with_(start, confidence=before))
    assert (belief.confidence, belief.state) == (after, State.ANOMALOUS)


def test_anomaly_never_raises_confidence() -> None:
    """An implanted belief softened to 0 stays at 0 when contradicted (anomaly does not lift it)."""
    soft, _ = run(implanted("poisoned"), implanted(op="soften"), implanted(op="soften"))
    zero, _ = run(implanted(op="soften"), implanted(op="soften"), belief=soft)
    assert (zero.confidence, zero.intervention) == (0, Intervention.IMPLANTED)
    belief, [change] = run(ev("clean", kind="hearsay", source="tom"), belief=zero)
    assert (belief.confidence, change.kind) == (0, ChangeKind.ANOMALY)


def test_doubt_never_raises_confidence_of_a_discovered_belief() -> None:
    """After the anomaly, a contradiction is a doubt: a discovered belief at 0 stays at 0."""
    soft, _ = run(implanted("poisoned"), implanted(op="soften"), implanted(op="soften"))
    soft, _ = run(ev("clean", kind="hearsay"), belief=soft)  # anomaly: 15 -> 10, discovered
    zero, _ = run(implanted(op="soften"), belief=soft)
    assert (zero.confidence, zero.intervention) == (0, Intervention.DISCOVERED)
    assert zero.state is State.DOUBTFUL  # (softened to 30 or below)
    belief, change = revise(zero, ev("clean", kind="hearsay", source="tom"))
    # A doubt at 0 on a doubtful belief changes nothing: recorded, no anomaly, no record.
    assert (belief.confidence, belief.state, change) == (0, State.DOUBTFUL, None)


def test_anomaly_takes_precedence_over_correction() -> None:
    """Doubtful + firsthand contradiction under an intervention is an anomaly, not a correction."""
    soft, _ = run(implanted("poisoned"), implanted(op="soften"), implanted(op="soften"))
    assert (soft.state, soft.intervention) == (State.DOUBTFUL, Intervention.IMPLANTED)
    belief, [change] = run(ev("clean", day=3), belief=soft)
    assert change.kind is ChangeKind.ANOMALY
    assert (belief.state, belief.value, belief.confidence) == (State.ANOMALOUS, "poisoned", 10)


def test_anomalous_plus_firsthand_contradiction_corrects_and_clears_intervention() -> None:
    """Anomalous + firsthand contradiction: corrected (72) and the intervention is cleared."""
    anomalous, _ = run(implanted("poisoned"), ev("clean", kind="hearsay"))
    belief, [change] = run(ev("clean", day=3), belief=anomalous)
    assert change.kind is ChangeKind.CORRECTED
    assert (belief.value, belief.confidence, belief.state) == ("clean", 72, State.CORRECTED)
    assert belief.intervention is None
    assert belief.source_kind is SourceKind.FIRSTHAND


def test_a_discovered_intervention_is_doubted_not_anomalous_again() -> None:
    """Once an anomaly exposed it, a hearsay contradiction is a plain doubt (35 -> 15)."""
    anomalous, _ = run(implanted("poisoned"), ev("clean", kind="hearsay", source="bo"))
    belief, [change] = run(ev("clean", kind="hearsay", source="tom"), belief=anomalous)
    assert change.kind is ChangeKind.DOUBTED
    assert (belief.confidence, belief.state) == (15, State.DOUBTFUL)
    assert belief.intervention is Intervention.DISCOVERED


def test_a_discovered_intervention_reinforced_then_contradicted_is_doubted() -> None:
    """Exposed, then supported back to influencing: the next contradiction is still a doubt."""
    anomalous, _ = run(implanted("poisoned"), ev("clean", kind="hearsay", source="bo"))
    supported, _ = run(ev("poisoned", kind="hearsay", source="tom"), belief=anomalous)
    assert supported.state is State.INFLUENCING
    belief, [change] = run(ev("clean", kind="hearsay", source="kai"), belief=supported)
    assert (change.kind, belief.state) == (ChangeKind.DOUBTED, State.DOUBTFUL)


def test_a_discovered_doubtful_belief_is_corrected_by_firsthand_evidence() -> None:
    """Discovered and doubtful, then seen otherwise: corrected, and the mark is cleared."""
    anomalous, _ = run(implanted("poisoned"), ev("clean", kind="hearsay", source="bo"))
    doubtful, _ = run(ev("clean", kind="hearsay", source="tom"), belief=anomalous)
    belief, [change] = run(ev("clean", day=3), belief=doubtful)
    assert (change.kind, belief.state, belief.value) == (
        ChangeKind.CORRECTED, State.CORRECTED, "clean",
    )  # fmt: skip
    assert belief.intervention is None


# --------------------------------------------------------------------------- interventions


def test_distort_replaces_subject_and_value() -> None:
    """Distort: intervened, subject and value replaced, confidence kept, intervention distorted."""
    start, _ = run(ev("clean", subject="the well is clean"))
    belief, [change] = run(
        ev("poisoned", kind="implanted", op="distort", subject="the well is cursed"), belief=start
    )
    assert (belief.value, belief.subject) == ("poisoned", "the well is cursed")
    assert belief.intervention is Intervention.DISTORTED
    assert belief.interpretation is None
    assert belief.confidence == 78 and belief.state is State.INFLUENCING
    assert (change.kind, change.detail) == (ChangeKind.INTERVENED, "distort")
    assert (change.subject_before, change.subject_after) == (
        "the well is clean",
        "the well is cursed",
    )
    assert (change.value_before, change.value_after) == ("clean", "poisoned")


def test_distort_replaces_the_old_interpretation() -> None:
    """Distort drops the resident's reading of the version it replaced (as implant does)."""
    start, _ = run(ev("clean", interpretation="someone cleaned it on purpose"))
    assert start.interpretation == "someone cleaned it on purpose"
    belief, _ = run(implanted("poisoned", op="distort"), belief=start)
    assert belief.interpretation is None


def test_suppress_makes_belief_past() -> None:
    """Suppress: intervened (detail suppress), state past and suppressed, confidence kept."""
    start, _ = run(ev("poisoned", kind="hearsay"))
    belief, [change] = run(implanted("poisoned", op="suppress"), belief=start)
    assert (belief.state, belief.confidence, belief.value) == (State.PAST, 58, "poisoned")
    assert belief.intervention is Intervention.SUPPRESSED
    assert belief.next_decay_day is None
    assert (change.kind, change.detail) == (ChangeKind.INTERVENED, "suppress")
    assert (change.subject_before, change.subject_after) == (start.subject, start.subject)


@pytest.mark.parametrize(
    ("before", "after", "state"),
    [
        (78, 53, State.INFLUENCING),
        (56, 31, State.INFLUENCING),
        (55, 30, State.DOUBTFUL),
        (20, 0, State.DOUBTFUL),
    ],
)
def test_soften_lowers_by_25_and_doubts_at_30(before: int, after: int, state: State) -> None:
    """Soften is max(0, c-25); the belief becomes doubtful at 30 or below (56 -> 31 stays)."""
    start, _ = run(ev("clean"))
    belief, [change] = run(implanted("clean", op="soften"), belief=with_(start, confidence=before))
    assert (belief.confidence, belief.state) == (after, state)
    assert (change.kind, change.detail) == (ChangeKind.INTERVENED, "soften")


def test_distort_without_belief_is_invalid() -> None:
    """Distort needs a belief to distort: revise raises InvalidEvent when there is none."""
    with pytest.raises(InvalidEvent):
        revise(None, implanted("poisoned", op="distort"))


@pytest.mark.parametrize("op", ["distort", "suppress", "soften"])
def test_interventions_without_belief_are_refused_by_the_fold(op: str) -> None:
    """distort/suppress/soften with no belief on the root: InvalidEvent, nothing applied."""
    world = MemoryWorld()
    claim: dict[str, Any] = {"root": ROOT}
    if op == "distort":
        claim["value"] = "poisoned"
    event = {"event_id": "x", "day": 1, "kind": "intervene", "resident": RES, "op": op,
             "claim": claim, "subject": "s"}  # fmt: skip
    with pytest.raises(InvalidEvent):
        world.apply(parse_event(event))
    assert world.beliefs == {} and world.changes == [] and world.event_ids == set()


# --------------------------------------------------------------------------- unrelated


def test_unrelated_evidence_changes_nothing() -> None:
    """Evidence on another root neither touches the belief nor records a change for it."""
    world = MemoryWorld()
    world.apply(parse_event(say(1, "bo", [RES], ROOT, "poisoned")))
    before = world.get_belief(RES, ROOT)
    world.apply(parse_event(observe(1, [RES], "weather:today", "rain")))
    world.apply(parse_event(observe(1, [RES], "water:river", "poisoned")))
    assert world.get_belief(RES, ROOT) == before
    # the say also gives the listener a firsthand belief that bo claimed it
    assert [c.root for c in world.changes] == [
        ROOT,
        f"believes:bo:{ROOT}",
        "weather:today",
        "water:river",
    ]


# --------------------------------------------------------------------------- hearsay aging


def hearsay_on(day: float = 0.0, **fields: Any) -> Belief:
    belief, _ = revise(None, ev("poisoned", kind="hearsay", day=day))
    return with_(belief, **fields) if fields else belief


def test_aging_one_full_week_decays_by_8() -> None:
    """7 full days after the last evidence an uncorroborated hearsay belief decays 58 -> 50."""
    belief, [change] = age(hearsay_on(0.0), 7.0, "t1")
    assert (belief.confidence, belief.state) == (50, State.INFLUENCING)
    assert (change.kind, change.day, change.event_id) == (ChangeKind.DECAYED, 7.0, "t1")
    assert change.evidence_id is None
    assert belief.next_decay_day == 14.0


def test_aging_not_before_a_full_week() -> None:
    """6.9 days after the last evidence nothing ages."""
    start = hearsay_on(0.0)
    belief, changes = age(start, 6.9, "t1")
    assert changes == [] and belief == start


def test_aging_catches_up_three_steps_and_fades_at_34() -> None:
    """A 21-day clock jump applies three steps 58 -> 50 -> 42 -> 34; the last is faded (past)."""
    belief, changes = age(hearsay_on(0.0), 21.0, "jump")
    assert [(c.kind, c.confidence_after, c.day) for c in changes] == [
        (ChangeKind.DECAYED, 50, 7.0),
        (ChangeKind.DECAYED, 42, 14.0),
        (ChangeKind.FADED, 34, 21.0),
    ]
    assert (belief.confidence, belief.state, belief.next_decay_day) == (34, State.PAST, None)
    for change in changes:
        check_transition(change.kind, change.state_before, change.state_after)


def test_aging_step_that_reaches_34_fades_even_short_of_8() -> None:
    """At 40 the step is max(34, 32) = 34, which fades the belief (state past)."""
    belief, [change] = age(hearsay_on(0.0, confidence=40), 7.0, "t")
    assert (change.kind, belief.confidence, belief.state) == (ChangeKind.FADED, 34, State.PAST)


def test_aging_faded_belief_ages_no_further() -> None:
    """Once faded at 34, a much later clock advance does nothing more."""
    faded, _ = age(hearsay_on(0.0), 21.0, "jump")
    belief, changes = age(faded, 400.0, "later")
    assert changes == [] and belief == faded


def test_firsthand_beliefs_never_decay() -> None:
    """A firsthand belief has no decay schedule, however long the clock runs."""
    belief, _ = revise(None, ev("clean", day=0))
    assert belief.next_decay_day is None
    aged, changes = age(belief, 1000.0, "t")
    assert changes == [] and aged == belief


def test_hearsay_from_two_sources_still_decays() -> None:
    """Heard from 2 distinct sources (the limit) a hearsay belief still ages."""
    belief, _ = run(
        ev("poisoned", kind="hearsay", source="bo", day=0),
        ev("poisoned", kind="hearsay", source="tom", day=0),
    )
    _, [change] = age(belief, 7.0, "t")
    assert (change.confidence_before, change.confidence_after) == (66, 58)


def test_hearsay_corroborated_by_three_sources_does_not_decay() -> None:
    """Heard from 3 distinct sources a hearsay belief is corroborated and stops aging."""
    belief, _ = run(
        ev("poisoned", kind="hearsay", source="bo", day=0),
        ev("poisoned", kind="hearsay", source="tom", day=0),
        ev("poisoned", kind="hearsay", source="kai", day=0),
    )
    assert belief.next_decay_day is None
    _, changes = age(belief, 100.0, "t")
    assert changes == []


def test_implanted_belief_does_not_decay() -> None:
    """An implanted belief has an active intervention and never ages."""
    belief, _ = run(implanted("poisoned", day=0))
    assert belief.next_decay_day is None
    _, changes = age(belief, 100.0, "t")
    assert changes == []


def test_distorted_hearsay_belief_does_not_decay() -> None:
    """Distorting a hearsay belief stops its aging (an intervention is active)."""
    belief, _ = run(ev("poisoned", kind="hearsay", day=0), implanted("cursed", op="distort", day=1))
    assert belief.source_kind is SourceKind.HEARSAY and belief.next_decay_day is None
    _, changes = age(belief, 100.0, "t")
    assert changes == []


def test_doubtful_hearsay_does_not_decay() -> None:
    """Only influencing hearsay ages: a doubtful one keeps its confidence."""
    belief, _ = run(ev("poisoned", kind="hearsay", day=0), ev("clean", kind="hearsay", day=1))
    assert belief.state is State.DOUBTFUL and belief.next_decay_day is None
    _, changes = age(belief, 100.0, "t")
    assert changes == []


def test_softened_hearsay_at_or_below_34_does_not_decay() -> None:
    """A hearsay belief softened to 33 (still influencing) is at the floor and no longer ages."""
    belief, _ = run(ev("poisoned", kind="hearsay", day=0), implanted(op="soften", day=1))
    assert (belief.confidence, belief.state) == (33, State.INFLUENCING)
    assert belief.next_decay_day is None


@pytest.mark.parametrize(
    "stale",
    [
        {"state": State.DOUBTFUL},
        {"intervention": Intervention.DISTORTED},
        {"heard_from": ("a", "b", "c")},
    ],
    ids=["doubtful", "distorted", "three-sources"],
)
def test_aging_rechecks_a_scheduled_belief(stale: dict[str, Any]) -> None:
    """age() re-checks eligibility: a belief that no longer ages drops a stale schedule, no step."""
    belief = hearsay_on(0.0, **stale)
    assert belief.next_decay_day == 7.0
    aged, changes = age(belief, 30.0, "t")
    assert changes == []
    assert aged.next_decay_day is None and aged.confidence == 58


def test_support_does_not_put_a_distorted_belief_back_on_the_clock() -> None:
    """A new source supporting a distorted hearsay belief reinforces it but schedules no aging."""
    belief, _ = run(
        ev("poisoned", kind="hearsay", source="bo", day=0),
        implanted("cursed", op="distort", day=1),
        ev("cursed", kind="hearsay", source="tom", day=2),
    )
    assert (belief.confidence, belief.heard_from) == (66, ("tom",))
    assert belief.next_decay_day is None


def test_softening_into_doubt_stops_aging() -> None:
    """With a higher soften_doubt_at, a hearsay belief softened into doubt (41) is not scheduled."""
    rules = Rules(soften_doubt_at=50)
    belief: Belief | None = None
    for one in (
        ev("poisoned", kind="hearsay", source="bo", day=0),
        ev("poisoned", kind="hearsay", source="tom", day=0),
        implanted(op="soften", day=1),
    ):
        belief, _ = revise(belief, one, rules)
    assert belief is not None
    assert (belief.confidence, belief.state) == (41, State.DOUBTFUL)
    assert belief.next_decay_day is None


def test_reinforcement_restarts_the_aging_clock() -> None:
    """Support from a second source on day 5 moves the next step from day 7 to day 12."""
    belief, _ = run(
        ev("poisoned", kind="hearsay", source="bo", day=0),
        ev("poisoned", kind="hearsay", source="tom", day=5),
    )
    assert belief.next_decay_day == 12.0
    unchanged, changes = age(belief, 11.9, "t")
    assert changes == [] and unchanged == belief
    _, [change] = age(belief, 12.0, "t")
    assert (change.confidence_before, change.confidence_after) == (66, 58)


def test_rules_are_per_world_numbers() -> None:
    """The numbers come from the Rules object: a world with other rules forms at other values."""
    rules = Rules(firsthand_initial=90, reinforce_step=3)
    belief, _ = revise(None, ev("clean"), rules)
    belief, _ = revise(belief, ev("clean"), rules)
    assert belief.confidence == 93
    assert DEFAULT_RULES.firsthand_initial == 78
    with pytest.raises(ValueError):
        Rules(doubt_step=-1)
    with pytest.raises(ValueError):
        Rules(decay_period_days=0)


@pytest.mark.parametrize("seen", [1, 9, 10, 11, 12, 40])
def test_a_belief_keeps_its_first_and_latest_refs_and_counts_every_piece(seen: int) -> None:
    """Every path that records evidence (forming, support, repeated hearsay, doubt,
    correction, implant and the other ops) keeps the first 5 and the latest 5 evidence ids in
    order and counts them all: what a reply shows of the full list (frames.evidence_refs)."""
    from protocol.frames import belief_summary, evidence_refs

    kinds = [
        lambda d: ev(day=d),
        lambda d: ev(kind="hearsay", day=d),  # repeated source: recorded only
        lambda d: ev("poisoned", kind="hearsay", source="cy", day=d),  # a doubt
        lambda d: ev(day=d),  # corrects the doubt
        lambda d: implanted("clean", day=d, op="soften"),
        lambda d: implanted("clean", day=d, op="suppress"),
        lambda d: implanted("dry", day=d, op="distort"),
        lambda d: implanted("clean", day=d),
    ]
    pieces = [kinds[i % len(kinds)](float(i + 1)) for i in range(seen)]
    belief: Belief | None = None
    for piece in pieces:
        belief, _ = revise(belief, piece)
        assert belief is not None
    assert belief is not None
    every = [p.evidence_id for p in pieces]
    assert belief.evidence_count == seen
    assert list(belief.evidence_refs) == evidence_refs(every)
    assert len(belief.evidence_refs) == min(seen, 10)
    summary = belief_summary(belief)
    assert (summary["evidence_refs"], summary["evidence_count"]) == (evidence_refs(every), seen)


def test_a_belief_refuses_more_refs_than_it_counts_or_keeps() -> None:
    """The bound is part of the value: more refs than the count, or more than 10, is refused."""
    belief, _ = run(ev())
    with pytest.raises(ValueError, match="evidence refs kept"):
        replace(belief, evidence_refs=("a", "b"))
    eleven = tuple(f"e{i}" for i in range(11))
    with pytest.raises(ValueError, match="evidence refs kept"):
        replace(belief, evidence_refs=eleven, evidence_count=11)
    assert replace(belief, evidence_refs=eleven[:10], evidence_count=11).evidence_count == 11
