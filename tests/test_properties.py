"""Property tests: random event sequences through MemoryWorld and the SQLite Writer.

Sequences mix every event kind over a few residents, roots and values, with a clock that
mostly moves forward (sometimes by whole weeks, sometimes not at all, now and then back),
resent ids and interventions that cannot apply. Whatever happens, the two implementations
must agree exactly, every change must be a legal transition, and a rebuild must match.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from belief_builders import act, announce, intervene, observe, say, tick
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.frames import evidence_refs as shown_refs
from sidecar.engine import (
    DEFAULT_RULES,
    Belief,
    Change,
    ChangeKind,
    Evidence,
    InvalidEvent,
    MemoryWorld,
    SourceKind,
    State,
    WorldEvent,
    check_transition,
    parse_event,
    parse_trust_root,
    trust_root,
)
from sidecar.store import Reader, ResultStatus, Writer, rebuild

RESIDENTS = ["ana", "ben", "cai", "dot"]
ROOTS = ["r1", "r2", "r3"]
VALUES = ["x", "y", 1, 0, True, False]
STEPS = [0, 0, 0, 0.5, 1, 1, 2, 3, 6.9, 7, 7, 14, 21, -2]
WORLD = "prop"

residents = st.sampled_from(RESIDENTS)
roots = st.sampled_from(ROOTS)
values = st.sampled_from(VALUES)
groups = st.lists(residents, min_size=1, max_size=3, unique=True)


@st.composite
def one_event(draw: st.DrawFn, eid: str, day: float) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            ["observe"] * 3 + ["say"] * 4 + ["announce", "act", "tick"] + ["intervene"] * 2
        )
    )
    if kind == "observe":
        return observe(day, draw(groups), draw(roots), draw(values), eid=eid)
    if kind == "say":
        speaker = draw(residents)
        listeners = draw(st.lists(st.sampled_from([r for r in RESIDENTS if r != speaker]),
                                  min_size=1, max_size=3, unique=True))  # fmt: skip
        return say(day, speaker, listeners, draw(roots), draw(values), eid=eid)
    if kind == "announce":
        # The audience may name the speaker (dropped) or be only the speaker (refused).
        audience: Any = draw(st.one_of(st.just("*"), st.lists(residents, min_size=1, max_size=2)))
        speaker = draw(residents)
        return announce(day, speaker, audience, draw(roots), draw(values), eid=eid)
    if kind == "act":
        status = draw(st.sampled_from(["completed", "rejected", "interrupted", "replaced"]))
        return act(day, draw(residents), draw(st.sampled_from(["open", "take"])), status,
                   draw(st.lists(residents, max_size=2, unique=True)), eid=eid)  # fmt: skip
    if kind == "tick":
        return tick(day, eid=eid)
    op = draw(st.sampled_from(["implant", "distort", "suppress", "soften", "soften"]))
    value = draw(values) if op in ("implant", "distort") else None
    return intervene(day, draw(residents), op, draw(roots), value, eid=eid)


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[WorldEvent], list[int]]:
    """A sequence of parsed events and the batch sizes to send them to the Writer in."""
    n = draw(st.integers(min_value=1, max_value=40))
    day = 0.0
    events: list[WorldEvent] = []
    for i in range(n):
        day = max(0.0, day + draw(st.sampled_from(STEPS)))
        resend = events and draw(st.integers(0, 15)) == 0
        eid = draw(st.sampled_from([e.event_id for e in events])) if resend else f"e{i}"
        try:
            events.append(parse_event(draw(one_event(eid, day))))
        except InvalidEvent:
            continue  # malformed on the wire: never reaches a world
    n = len(events)
    sizes: list[int] = []
    left = n
    while left:
        size = draw(st.integers(min_value=1, max_value=min(left, 8)))
        sizes.append(size)
        left -= size
    return events, sizes


def fold_in_memory(events: list[WorldEvent]) -> tuple[MemoryWorld, list[ResultStatus]]:
    world = MemoryWorld()
    statuses = []
    for event in events:
        try:
            out = world.apply(event)
        except InvalidEvent:
            statuses.append(ResultStatus.REJECTED)
            continue
        statuses.append(ResultStatus.DUPLICATE if out is None else ResultStatus.APPLIED)
    return world, statuses


def write_to_sqlite(
    path: Path, events: list[WorldEvent], sizes: list[int]
) -> tuple[list[ResultStatus], list[Belief], list[Change]]:
    writer = Writer(path, synchronous="OFF")
    statuses: list[ResultStatus] = []
    start = 0
    try:
        for size in sizes:
            batch = [(WORLD, e) for e in events[start : start + size]]
            statuses.extend(r.status for r in writer.apply(batch))
            start += size
    finally:
        writer.close()
    reader = Reader(path)
    try:
        return statuses, reader.all_beliefs(WORLD), reader.all_changes(WORLD)
    finally:
        reader.close()


#: How far one piece of firsthand evidence moves trust in the sources of a hearsay belief.
TRUST_STEPS = {
    "confirmed": DEFAULT_RULES.trust_confirm_step,
    "contradicted": -DEFAULT_RULES.trust_contradict_step,
    "corrected": -DEFAULT_RULES.trust_correct_step,
}


def check_trust_change(c: Change, previous: Change | None) -> None:
    """A trust move: one rule step from the value before (the default at first), clamped."""
    assert parse_trust_root(c.root) is not None
    assert c.root.count(":") == 1  # no topics in these events
    assert c.source_kind is SourceKind.FIRSTHAND and c.source_resident_id is None
    assert c.detail in TRUST_STEPS and c.evidence_id is not None
    before = DEFAULT_RULES.trust_default if previous is None else previous.value_after
    assert c.value_before == before
    assert isinstance(before, float)
    assert c.value_after == round(min(1.0, max(0.0, before + TRUST_STEPS[c.detail])), 4)
    assert c.value_after != c.value_before  # a clamped move that changes nothing is no record
    assert (c.confidence_before, c.confidence_after) == (
        round(100 * before),
        round(100 * c.value_after),
    )


def check_change_log(
    changes: list[Change],
    beliefs: dict[tuple[str, str], Belief],
    evidence: dict[str, Evidence],
    trust: dict[tuple[str, str, str], float],
) -> None:
    """Every change is legal, numbers stay in range, and each belief's changes chain up.

    Trust moves (root ``trust:<source>``) chain up the same way, per resident and source, and
    end at the trust table's value; they are not beliefs.
    """
    assert [c.seq for c in changes] == list(range(1, len(changes) + 1))
    last: dict[tuple[str, str], Change] = {}
    trusts: dict[tuple[str, str], Change] = {}
    for c in changes:
        check_transition(c.kind, c.state_before, c.state_after)
        assert 0 <= c.confidence_after <= 100
        assert c.confidence_before is None or 0 <= c.confidence_before <= 100
        if c.kind is ChangeKind.TRUST:
            check_trust_change(c, trusts.get((c.resident, c.root)))
            trusts[(c.resident, c.root)] = c
            continue
        assert not c.root.startswith("trust:")
        if c.kind in (ChangeKind.DOUBTED, ChangeKind.ANOMALY, ChangeKind.DECAYED, ChangeKind.FADED):
            assert c.confidence_before is not None and c.confidence_after <= c.confidence_before
        if c.kind is ChangeKind.REINFORCED:
            assert c.confidence_before is not None and c.confidence_after >= c.confidence_before
        if c.kind is ChangeKind.CORRECTED:
            assert c.confidence_after == 72
        if c.kind is ChangeKind.FORMED:
            ev = evidence[c.evidence_id or ""]
            if ev.source_kind is SourceKind.HEARSAY:  # weighted by the listener's trust
                assert ev.trust is not None
                assert c.confidence_after == DEFAULT_RULES.hearsay_confidence(ev.trust)
            else:
                assert c.confidence_after == {"firsthand": 78, "implanted": 65}[ev.source_kind]
        key = (c.resident, c.root)
        previous = last.get(key)
        if previous is None:
            assert c.kind is ChangeKind.FORMED and c.state_before is None
        else:
            assert c.kind is not ChangeKind.FORMED
            assert c.confidence_before == previous.confidence_after
            assert c.state_before == previous.state_after
            assert c.value_before == previous.value_after
            assert c.subject_before == previous.subject_after
        last[key] = c
    assert set(last) == set(beliefs)
    for key, belief in beliefs.items():
        final = last[key]
        assert (belief.confidence, belief.state, belief.value, belief.subject) == (
            final.confidence_after,
            final.state_after,
            final.value_after,
            final.subject_after,
        )
        assert 0 <= belief.confidence <= 100
        assert len(set(belief.evidence_refs)) == len(belief.evidence_refs)
        # The bounded refs: the first and latest of every piece on the key, all counted.
        pieces = [e.evidence_id for e in evidence.values() if (e.resident, e.claim.root) == key]
        assert belief.evidence_count == len(pieces)
        assert list(belief.evidence_refs) == shown_refs(pieces)
    assert {(i, trust_root(j, t or None)): v for (i, j, t), v in trust.items()} == {
        key: c.value_after for key, c in trusts.items()
    }


@settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_memory_and_sqlite_agree_and_obey_the_rules(
    history: tuple[list[WorldEvent], list[int]],
) -> None:
    """Any sequence: memory and SQLite agree on beliefs and changes, legal moves, rebuild ok."""
    events, sizes = history
    world, mem_statuses = fold_in_memory(events)
    check_change_log(
        world.changes, world.beliefs, {e.evidence_id: e for e, _ in world.evidence}, world.trust
    )
    with tempfile.TemporaryDirectory(prefix="credence-prop-") as tmp:
        db = Path(tmp) / "prop.db"
        statuses, beliefs, changes = write_to_sqlite(db, events, sizes)
        assert statuses == mem_statuses
        assert beliefs == sorted(world.beliefs.values(), key=lambda b: (b.resident, b.root))
        assert changes == world.changes
        assert [c.seq for c in changes] == [c.seq for c in world.changes]
        report = rebuild(db)
        assert report.ok, report.differences
        assert report.events == mem_statuses.count(ResultStatus.APPLIED)
        assert report.changes == len(world.changes)


@settings(max_examples=50, deadline=None)
@given(histories())
def test_replaying_the_canonical_log_gives_the_same_world(
    history: tuple[list[WorldEvent], list[int]],
) -> None:
    """Folding the canonical form (to_dict, parsed again) of the applied events rebuilds all."""
    events, _ = history
    world, statuses = fold_in_memory(events)
    applied = [e for e, s in zip(events, statuses, strict=True) if s is ResultStatus.APPLIED]
    replay, replay_statuses = fold_in_memory([parse_event(e.to_dict()) for e in applied])
    assert set(replay_statuses) <= {ResultStatus.APPLIED}
    assert replay.beliefs == world.beliefs
    assert replay.changes == world.changes
    assert replay.day == world.day


@settings(max_examples=50, deadline=None)
@given(histories())
def test_aging_only_touches_uncorroborated_influencing_hearsay(
    history: tuple[list[WorldEvent], list[int]],
) -> None:
    """Decay/fade hit only influencing hearsay above 34, by max(34, c-8); only such is scheduled."""
    events, _ = history
    world, _ = fold_in_memory(events)
    for c in world.changes:
        if c.kind in (ChangeKind.DECAYED, ChangeKind.FADED):
            assert c.source_kind is SourceKind.HEARSAY
            assert c.state_before is State.INFLUENCING
            assert c.evidence_id is None
            assert c.confidence_before is not None and c.confidence_before > 34
            assert c.confidence_after == max(34, c.confidence_before - 8)
            assert (c.kind is ChangeKind.FADED) == (c.confidence_after == 34)
    for belief in world.beliefs.values():
        if belief.next_decay_day is not None:
            assert belief.source_kind is SourceKind.HEARSAY and belief.intervention is None
            assert belief.state is State.INFLUENCING and belief.confidence > 34
            assert len(belief.heard_from) <= 2
            assert belief.next_decay_day > belief.last_evidence_day
    # A tick that moves the clock on leaves nothing overdue: aging caught up with it.
    world.apply(parse_event(tick(world.day + 1, eid="final-tick")))
    overdue = [b for b in world.beliefs.values() if (b.next_decay_day or 1e18) <= world.day]
    assert overdue == []
