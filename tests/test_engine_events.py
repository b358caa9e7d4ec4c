"""World events: parsing and validation, evidence derivation, and the fold in ``MemoryWorld``.

These go through :func:`parse_event` and :class:`MemoryWorld` the way the store does, so they
pin what an event means (who gets which evidence, when aging runs) rather than a single rule.
"""

from __future__ import annotations

from typing import Any

import pytest
from belief_builders import act, announce, intervene, observe, say, tick

from sidecar.engine import (
    Change,
    ChangeKind,
    Claim,
    ContractViolation,
    Evidence,
    InvalidEvent,
    InvalidEvidence,
    MemoryWorld,
    SourceKind,
    State,
    action_root,
    derive_evidence,
    parse_event,
    same_value,
)
from sidecar.engine.model import MAX_SAFE_INT, ClockBackwards
from sidecar.engine.rules import Rules
from sidecar.engine.world import evidence_id


def apply_all(*events: dict[str, Any]) -> MemoryWorld:
    world = MemoryWorld()
    for event in events:
        world.apply(parse_event(event))
    return world


def core(world: MemoryWorld) -> list[Change]:
    """The change records on claim roots, leaving out the derived social ones.

    Every hearer of an utterance also forms a firsthand ``believes:<speaker>:<root>`` belief,
    and firsthand evidence on hearsay moves ``trust:<source>``; tests about one claim's
    lifecycle look only at the roots they are about.
    """
    return [c for c in world.changes if not c.root.startswith(("believes:", "trust:"))]


# --------------------------------------------------------------------------- evidence rules


def test_hearsay_evidence_without_source_is_invalid() -> None:
    """Hearsay evidence must name its source resident: InvalidEvidence otherwise."""
    with pytest.raises(InvalidEvidence):
        Evidence(evidence_id="e/a", resident="a", event_id="e", day=0,
                 source_kind=SourceKind.HEARSAY, claim=Claim(root="r", value=1),
                 subject="s")  # fmt: skip


def test_firsthand_evidence_with_source_is_invalid() -> None:
    """Firsthand evidence must not name a source resident: InvalidEvidence."""
    with pytest.raises(InvalidEvidence):
        Evidence(evidence_id="e/a", resident="a", event_id="e", day=0,
                 source_kind=SourceKind.FIRSTHAND, source_resident_id="b",
                 claim=Claim(root="r", value=1), subject="s")  # fmt: skip


def test_hearsay_evidence_from_oneself_is_invalid() -> None:
    """A resident cannot be its own hearsay source."""
    with pytest.raises(InvalidEvidence):
        Evidence(evidence_id="e/a", resident="a", event_id="e", day=0,
                 source_kind=SourceKind.HEARSAY, source_resident_id="a",
                 claim=Claim(root="r", value=1), subject="s")  # fmt: skip


# --------------------------------------------------------------------------- parsing


def test_speaker_in_listeners_is_invalid() -> None:
    """A say event whose speaker is among its listeners is refused (InvalidEvent)."""
    with pytest.raises(InvalidEvent, match="own listener"):
        parse_event(say(1, "bo", ["mira", "bo"], "r", 1))


def test_announce_to_nobody_but_the_speaker_is_invalid() -> None:
    """An announcement whose only audience is its speaker is refused (log form unparsable)."""
    with pytest.raises(InvalidEvent):
        parse_event(announce(1, "bo", ["bo"], "r", 1))


def test_announce_drops_the_speaker_from_its_audience() -> None:
    """A speaker listed in its own audience gets no evidence from its announcement."""
    event = parse_event(announce(1, "bo", ["bo", "mira"], "r", 1))
    assert event.audience == ("mira",)
    assert [(e.resident, e.claim.root) for e in derive_evidence(event)] == [
        ("mira", "r"),
        ("mira", "believes:bo:r"),
    ]


def test_unknown_event_kind_is_invalid() -> None:
    """An event kind outside observe/say/announce/act/intervene/tick is refused."""
    with pytest.raises(InvalidEvent, match="unknown event kind"):
        parse_event({"event_id": "e1", "day": 1, "kind": "whisper"})


def test_act_with_claim_is_invalid() -> None:
    """An act event may not carry its own claim: it is derived from status."""
    event = act(1, "kai", "open_door", "rejected", ["mira"])
    event["claim"] = {"root": action_root("kai", "open_door"), "value": "completed"}
    with pytest.raises(InvalidEvent, match="must not carry a claim") as refused:
        parse_event(event)
    assert isinstance(refused.value, ContractViolation)
    assert refused.value.reason == "act_claim_given"


def test_act_with_unknown_status_is_invalid() -> None:
    """An act status outside completed/rejected/interrupted/replaced is refused."""
    with pytest.raises(InvalidEvent):
        parse_event(act(1, "kai", "open_door", "done"))


@pytest.mark.parametrize("status", ["completed", "rejected", "interrupted", "replaced"])
def test_act_claim_is_derived_from_status_and_actor_witnesses(status: str) -> None:
    """An act's claim is action:<actor>:<action> = status, and the actor is a witness too."""
    world = apply_all(act(1, "kai", "open_door", status, ["mira"]))
    root = action_root("kai", "open_door")
    assert root == "action:kai:open_door"
    for who in ("kai", "mira"):
        belief = world.get_belief(who, root)
        assert belief is not None
        assert belief.value == status
        assert belief.source_kind is SourceKind.FIRSTHAND and belief.confidence == 78
    subject = "kai did open door" if status == "completed" else f"kai's open door was {status}"
    assert world.get_belief("kai", root).subject == subject  # type: ignore[union-attr]


def test_act_actor_listed_as_witness_gets_one_evidence() -> None:
    """An actor also listed among the witnesses still gets exactly one piece of evidence."""
    event = parse_event(act(1, "kai", "open_door", "completed", ["kai", "mira"]))
    assert [e.resident for e in derive_evidence(event)] == ["kai", "mira"]


def test_true_and_1_are_different_claim_values() -> None:
    """True and 1 are different values: an observation of 1 contradicts a belief in True."""
    assert not same_value(True, 1) and not same_value(0, False) and same_value(1, 1)
    world = apply_all(observe(1, ["mira"], "door:open", True), observe(2, ["mira"], "door:open", 1))
    belief = world.get_belief("mira", "door:open")
    assert belief is not None
    assert belief.value is True and belief.state is State.DOUBTFUL
    assert world.changes[-1].kind is ChangeKind.DOUBTED


@pytest.mark.parametrize("value", [MAX_SAFE_INT + 1, -MAX_SAFE_INT - 1, 2**63])
def test_ints_beyond_2_pow_53_are_rejected(value: int) -> None:
    """Integer claim values outside ±(2^53-1) are refused (not every client can carry them)."""
    with pytest.raises(InvalidEvent, match="2\\^53"):
        parse_event(observe(1, ["mira"], "coins", value))
    with pytest.raises(InvalidEvent):
        Claim(root="coins", value=value)


@pytest.mark.parametrize("value", [MAX_SAFE_INT, -MAX_SAFE_INT, 0])
def test_ints_within_2_pow_53_are_accepted(value: int) -> None:
    """The boundary ±(2^53-1) itself is a legal claim value."""
    event = parse_event(observe(1, ["mira"], "coins", value))
    assert event.claim == Claim(root="coins", value=value)


@pytest.mark.parametrize("value", [1.5, None, [1], {"a": 1}])
def test_non_scalar_or_float_claim_values_are_rejected(value: Any) -> None:
    """Claim values are strings, integers or booleans only."""
    with pytest.raises(InvalidEvent):
        parse_event(observe(1, ["mira"], "r", value))


@pytest.mark.parametrize(
    "patch",
    [
        {"day": -1},
        {"day": float("nan")},
        {"day": True},
        {"event_id": ""},
        {"witnesses": []},
        {"subject": None},
        {"interpretations": {"stranger": "hm"}},
        {"witnesses": ["*"]},
    ],
)
def test_malformed_observations_are_rejected(patch: dict[str, Any]) -> None:
    """Bad day, empty id, no witnesses, no subject, interpretation of a non-witness, '*' id."""
    with pytest.raises(InvalidEvent):
        parse_event({**observe(1, ["mira"], "r", 1), **patch})


def test_intervene_with_unknown_op_is_rejected() -> None:
    """Only implant/distort/suppress/soften are interventions."""
    with pytest.raises(InvalidEvent):
        parse_event(intervene(1, "mira", "erase", "r", 1))


def test_implant_needs_a_value() -> None:
    """Implant (like distort) must carry the claim value it implants."""
    with pytest.raises(InvalidEvent):
        parse_event(intervene(1, "mira", "implant", "r", subject="s"))


@pytest.mark.parametrize(
    "event",
    [
        observe(1.5, ["mira", "kai"], "r", "x", interpretations={"kai": "odd"}, importance=2,
                people=["bo"], places=["well"], topics=["water"]),
        say(2, "bo", ["mira"], "r", 7, topic="gossip"),
        announce(3, "bo", "*", "r", True),
        announce(3, "bo", ["mira", "kai"], "r", False),
        act(4, "kai", "open_door", "interrupted", ["mira"]),
        act(4, "kai", "open_door", "completed", subject="Kai opens the door"),
        intervene(5, "mira", "implant", "r", "x"),
        intervene(5, "mira", "distort", "r", "y", subject="twisted"),
        intervene(5, "mira", "suppress", "r"),
        intervene(5, "mira", "soften", "r", "ignored value"),
        tick(6),
    ],
    ids=lambda e: e["kind"] + ":" + str(e.get("op", "")),
)  # fmt: skip
def test_canonical_form_parses_to_the_same_event(event: dict[str, Any]) -> None:
    """The world log's canonical mapping parses back to an equal event (what rebuild relies on)."""
    parsed = parse_event(event)
    assert parse_event(parsed.to_dict()) == parsed


# --------------------------------------------------------------------------- derivation


def test_say_gives_hearsay_to_each_listener_with_speaker_as_source() -> None:
    """A say event is hearsay for each listener, from the speaker; the speaker gets nothing.

    Each listener also learns, firsthand, that bo claimed it (``believes:bo:r``).
    """
    event = parse_event(say(1, "bo", ["mira", "kai"], "r", 1))
    got = derive_evidence(event)
    assert [(e.resident, e.claim.root, e.source_kind, e.source_resident_id) for e in got] == [
        ("mira", "r", SourceKind.HEARSAY, "bo"),
        ("mira", "believes:bo:r", SourceKind.FIRSTHAND, None),
        ("kai", "r", SourceKind.HEARSAY, "bo"),
        ("kai", "believes:bo:r", SourceKind.FIRSTHAND, None),
    ]


def test_announce_to_everyone_reaches_every_known_resident_but_the_speaker() -> None:
    """An announcement to '*' is hearsay for every resident the world knows, except the speaker."""
    world = apply_all(
        observe(1, ["mira", "kai"], "weather", "rain"),
        act(1, "tom", "sweep", "completed"),
        announce(2, "bo", "*", "market:open", True),
    )
    holders = sorted(r for (r, root) in world.beliefs if root == "market:open")
    assert holders == ["kai", "mira", "tom"]
    assert world.get_belief("bo", "market:open") is None
    assert set(world.residents) == {"mira", "kai", "tom", "bo"}


def test_observation_interpretation_is_kept_per_witness() -> None:
    """An observation's interpretation belongs only to the witness it was given for."""
    world = apply_all(
        observe(1, ["mira", "kai"], "r", "x", interpretations={"mira": "Bo must be behind this"})
    )
    assert world.get_belief("mira", "r").interpretation == "Bo must be behind this"  # type: ignore[union-attr]
    assert world.get_belief("kai", "r").interpretation is None  # type: ignore[union-attr]


def test_suppress_and_soften_act_on_whatever_value_is_held() -> None:
    """suppress/soften name only a root: the value they carry (if any) does not matter."""
    world = apply_all(observe(1, ["mira"], "r", "x"), intervene(2, "mira", "soften", "r", "zzz"))
    belief = world.get_belief("mira", "r")
    assert belief is not None and (belief.value, belief.confidence) == ("x", 53)
    assert world.changes[-1].value_after == "x"


def test_evidence_ids_are_unambiguous_when_ids_contain_slashes() -> None:
    """Event 'a/b' for resident 'c' and event 'a' for resident 'b/c' get different evidence ids."""
    assert evidence_id("a/b", "c") != evidence_id("a", "b/c")
    assert evidence_id("e1", "mira") == "e1/mira"
    assert evidence_id("50%", "x") != evidence_id("50%25", "x")


# --------------------------------------------------------------------------- the fold


def test_one_belief_per_resident_and_root() -> None:
    """Repeated observations of the same claim never create a second belief."""
    world = apply_all(*(observe(d, ["mira"], "key:where", "counter") for d in (1, 2, 3)))
    assert list(world.beliefs) == [("mira", "key:where")]
    assert len(world.get_belief("mira", "key:where").evidence_refs) == 3  # type: ignore[union-attr]


def test_duplicate_event_id_is_ignored() -> None:
    """An event id seen before is not applied again (idempotent ingest)."""
    world = MemoryWorld()
    event = parse_event(observe(1, ["mira"], "r", 1, eid="same"))
    assert world.apply(event) is not None
    assert world.apply(parse_event(observe(2, ["mira"], "r", 2, eid="same"))) is None
    assert world.get_belief("mira", "r").confidence == 78  # type: ignore[union-attr]
    assert len(world.changes) == 1


def test_invalid_event_leaves_memory_world_untouched() -> None:
    """A refused intervention changes nothing: no clock, no residents, no aging, no id."""
    world = apply_all(say(0, "bo", ["mira"], "r", 1))
    before = (dict(world.beliefs), list(world.changes), world.day, dict(world.residents))
    with pytest.raises(InvalidEvent):
        world.apply(parse_event(intervene(30, "kai", "suppress", "r", eid="bad")))
    assert (dict(world.beliefs), list(world.changes), world.day, dict(world.residents)) == before
    assert "bad" not in world.event_ids


def test_tick_runs_aging() -> None:
    """A tick that moves the clock a week on decays a hearsay belief 58 -> 50."""
    world = apply_all(say(0, "bo", ["mira"], "r", 1), tick(7))
    assert world.get_belief("mira", "r").confidence == 50  # type: ignore[union-attr]
    assert world.changes[-1].kind is ChangeKind.DECAYED
    assert world.day == 7


def test_tick_short_of_a_week_does_not_age() -> None:
    """A tick 6.9 days after the evidence leaves the hearsay belief at 58."""
    world = apply_all(say(0, "bo", ["mira"], "r", 1), tick(6.9))
    assert world.get_belief("mira", "r").confidence == 58  # type: ignore[union-attr]
    assert len(core(world)) == 1
    assert [c.kind for c in world.changes] == [ChangeKind.FORMED, ChangeKind.FORMED]


def test_clock_jump_of_21_days_applies_three_steps() -> None:
    """One tick 21 days on: 58 -> 50 -> 42 -> 34, decayed, decayed, faded; past."""
    world = apply_all(say(0, "bo", ["mira"], "r", 1), tick(21, eid="jump"))
    assert [(c.kind, c.confidence_after, c.event_id) for c in core(world)[1:]] == [
        (ChangeKind.DECAYED, 50, "jump"),
        (ChangeKind.DECAYED, 42, "jump"),
        (ChangeKind.FADED, 34, "jump"),
    ]
    assert world.get_belief("mira", "r").state is State.PAST  # type: ignore[union-attr]


def test_any_event_that_advances_the_clock_runs_aging() -> None:
    """An unrelated observation a week later ages mira's hearsay belief too."""
    world = apply_all(say(0, "bo", ["mira"], "r", 1), observe(7, ["kai"], "other", "x"))
    assert world.get_belief("mira", "r").confidence == 50  # type: ignore[union-attr]
    assert [c.kind for c in core(world)] == [
        ChangeKind.FORMED,
        ChangeKind.DECAYED,
        ChangeKind.FORMED,
    ]


def test_aging_runs_before_the_events_own_evidence() -> None:
    """A second source on day 7: first the due decay 58 -> 50, then the reinforcement 50 -> 58."""
    world = apply_all(say(0, "bo", ["mira"], "r", 1), say(7, "tom", ["mira"], "r", 1))
    assert [(c.kind, c.confidence_before, c.confidence_after) for c in core(world)] == [
        (ChangeKind.FORMED, None, 58),
        (ChangeKind.DECAYED, 58, 50),
        (ChangeKind.REINFORCED, 50, 58),
    ]
    assert world.get_belief("mira", "r").next_decay_day == 14  # type: ignore[union-attr]


def test_repeated_hearsay_does_not_restart_the_aging_clock() -> None:
    """Bo repeating himself on day 5 neither reinforces nor postpones the day-7 decay."""
    world = apply_all(say(0, "bo", ["mira"], "r", 1), say(5, "bo", ["mira"], "r", 1), tick(7))
    belief = world.get_belief("mira", "r")
    assert belief is not None and belief.confidence == 50
    assert [c.kind for c in core(world)] == [ChangeKind.FORMED, ChangeKind.DECAYED]
    assert len(belief.evidence_refs) == 2


def test_a_late_event_does_not_move_the_clock_back() -> None:
    """With a late_event_days tolerance, an event dated before the world clock applies
    without moving the clock backwards."""
    world = MemoryWorld(Rules(late_event_days=7))
    for event in (tick(10), observe(3, ["mira"], "r", 1)):
        world.apply(parse_event(event))
    assert world.day == 10
    belief = world.get_belief("mira", "r")
    assert belief is not None and belief.formed_day == 3
    with pytest.raises(ClockBackwards):  # 7 days is the limit: day 2.5 is older than that
        world.apply(parse_event(observe(2.5, ["mira"], "r2", 1)))
    assert world.get_belief("mira", "r2") is None and world.day == 10


def test_by_default_an_earlier_day_is_refused_and_an_equal_day_accepted() -> None:
    """The default rules refuse any event dated before the clock (nothing applied); a day
    equal to the clock is not backwards."""
    world = apply_all(tick(10))
    before = len(world.changes)
    with pytest.raises(ClockBackwards) as refused:
        world.apply(parse_event(observe(9.5, ["mira"], "r", 1)))
    assert refused.value.code == "clock_backwards"
    assert world.get_belief("mira", "r") is None and len(world.changes) == before
    assert world.day == 10
    world.apply(parse_event(observe(10, ["mira"], "r", 1)))
    belief = world.get_belief("mira", "r")
    assert belief is not None and belief.formed_day == 10 and world.day == 10


def test_change_records_are_numbered_in_order() -> None:
    """MemoryWorld numbers change records 1..N in the order they happened."""
    world = apply_all(say(0, "bo", ["mira", "kai"], "r", 1), tick(7))
    assert [c.seq for c in world.changes] == [1, 2, 3, 4, 5, 6]
    assert [(c.resident, c.root, c.kind) for c in world.changes] == [
        ("mira", "r", ChangeKind.FORMED),
        ("mira", "believes:bo:r", ChangeKind.FORMED),
        ("kai", "r", ChangeKind.FORMED),
        ("kai", "believes:bo:r", ChangeKind.FORMED),
        ("kai", "r", ChangeKind.DECAYED),
        ("mira", "r", ChangeKind.DECAYED),
    ]


def test_a_subject_may_be_given_per_language_and_comes_back_as_sent() -> None:
    """A {en, zh-Hant} subject is kept as one canonical text and given back as the map;
    parsing the canonical event again gives the same event (so a replay is exact)."""
    e = parse_event(observe(1, ["mira"], "r", "x", subject={"zh-Hant": "井水有毒", "en": "bad"}))
    assert e.subject == '{"en":"bad","zh-Hant":"井水有毒"}'
    assert e.to_dict()["subject"] == {"en": "bad", "zh-Hant": "井水有毒"}
    assert parse_event(e.to_dict()) == e
    one = parse_event(observe(1, ["mira"], "r", "x", subject={"en": "bad"}))
    assert one.to_dict()["subject"] == {"en": "bad"}


@pytest.mark.parametrize(
    ("subject", "message"),
    [
        ({"fr": "le puits"}, "may be given in en, zh-Hant"),
        ({}, "at least one language"),
        ({"en": ""}, "non-empty"),
        ({"en": 3}, "non-empty string"),
        ('{"en": "bad"}', "JSON text of a map"),
        ({"en": "x" * 4001}, "longer than 4000"),
    ],
)
def test_a_bad_subject_map_is_refused_naming_the_field(subject: Any, message: str) -> None:
    """Another language, an empty map or text, or a map sent as JSON text: invalid_event."""
    event = {**observe(1, ["mira"], "r", "x"), "subject": subject}
    with pytest.raises(InvalidEvent, match=message):
        parse_event(event)


def test_an_act_may_carry_the_games_reason() -> None:
    """An act's reason (text or per language) is kept and logged as sent."""
    e = parse_event(act(3, "mira", "fetch_water", "rejected", reason="the rope snapped"))
    assert e.to_dict()["reason"] == "the rope snapped"
    e = parse_event(act(3, "mira", "fetch_water", "rejected", reason={"en": "it broke"}))
    assert e.to_dict()["reason"] == {"en": "it broke"}
    with pytest.raises(InvalidEvent, match="reason"):
        parse_event(act(3, "mira", "fetch_water", "rejected", reason=7))


def test_a_memory_world_without_history_folds_the_same_world() -> None:
    """history=False keeps no change, evidence or utterance lists, yet every belief and the
    numbering of changes come out as with them (the fold reads none of them)."""
    story = [
        observe(1, ["mira", "kai"], "water:well", "clean"),
        say(2, "bo", ["mira", "kai"], "water:well", "poisoned"),
        say(3, "bo", ["mira"], "road:north", "flooded"),
        observe(4, ["mira"], "water:well", "clean"),
        tick(60),
    ]
    full, lean = MemoryWorld(), MemoryWorld(history=False)
    for raw in story:
        full.apply(parse_event(raw))
        lean.apply(parse_event(raw))
    assert lean.beliefs == full.beliefs and lean.trust == full.trust
    assert lean.change_count == full.change_count == len(full.changes) > 5
    assert full.evidence and full.said and not lean.changes and not lean.evidence
    assert not lean.said
