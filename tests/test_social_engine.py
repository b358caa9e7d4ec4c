"""Social epistemics in the pure engine (Rules, MemoryWorld, ingest) and the store beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from belief_builders import observe, say, tick

from sidecar.engine import (
    DEFAULT_RULES,
    Belief,
    ChangeKind,
    Edit,
    MemoryWorld,
    Rules,
    SourceKind,
    State,
    believes_root,
    derive_evidence,
    judge_edits,
    parse_event,
)
from sidecar.store import Reader, Writer, rebuild


def trust(
    day: float, resident: str, source: str, value: float, topic: str | None = None
) -> dict[str, Any]:
    """A trust-set event mapping (the ``trust`` frame with a value, as logged)."""
    event = {
        "event_id": f"t-{resident}-{source}-{topic}-{value}-{day}",
        "day": day,
        "kind": "trust",
        "resident": resident,
        "source": source,
        "value": value,
    }
    if topic is not None:
        event["topic"] = topic
    return event


def world_of(*events: dict[str, Any], rules: Rules = DEFAULT_RULES) -> MemoryWorld:
    world = MemoryWorld(rules)
    for event in events:
        assert world.apply(parse_event(event)) is not None
    return world


def kinds(world: MemoryWorld, resident: str, root: str) -> list[str]:
    return [str(c.kind) for c in world.changes if (c.resident, c.root) == (resident, root)]


# --------------------------------------------------------------------------- Rules


@pytest.mark.parametrize(
    ("t", "expected"), [(0.6, 58), (0.9, 75), (0.2, 35), (0.3, 41), (0.0, 24), (1.0, 81)]
)
def test_hearsay_confidence_formula(t: float, expected: int) -> None:
    """35 + 40·(t − 0.2)/0.7, rounded: the README's three anchors and the ends of the scale."""
    assert DEFAULT_RULES.hearsay_confidence(t) == expected


def test_hearsay_confidence_is_clamped_to_its_bounds() -> None:
    """A steeper span still never leaves [hearsay_min, hearsay_max]."""
    steep = Rules(hearsay_span=200)
    assert (steep.hearsay_confidence(0.0), steep.hearsay_confidence(1.0)) == (10, 90)


@pytest.mark.parametrize(
    ("importance", "emotion", "t", "days"),
    [
        (None, None, None, 7),
        (0, 0, 0.6, 7),
        (1, None, None, 14),
        (0.5, 0.5, None, 14),
        (None, None, 0.3, 4.2),
        (None, None, 0.1, 3.5),  # never faster than × 0.5
        (1, 0, 0.25, 7),
    ],
)
def test_decay_period(
    importance: float | None, emotion: float | None, t: float | None, days: float
) -> None:
    """7 × (1 + importance + emotion), × max(0.5, t/0.5) below trust 0.5."""
    assert DEFAULT_RULES.decay_period(importance, emotion, t) == pytest.approx(days)


def test_rules_validate_trust_and_keep_mutable_prefixes_as_a_tuple() -> None:
    """trust_default outside [0, 1] is refused; mutable_prefixes given as a list becomes a tuple."""
    with pytest.raises(ValueError, match="trust_default"):
        Rules(trust_default=1.5)
    rules = Rules(mutable_prefixes=["location:"])  # type: ignore[arg-type]
    assert rules.mutable_prefixes == ("location:",)
    assert rules.is_mutable("location:bo") and not rules.is_mutable("mood:bo")


# --------------------------------------------------------------------------- trust in the fold


def test_trust_lookup_prefers_topic_then_general_then_default() -> None:
    """Evidence carries the trust it was weighted by: topic entry, else general, else 0.6."""
    world = world_of(
        trust(0, "mira", "bo", 0.2),
        trust(0, "mira", "bo", 0.9, topic="herbs"),
        say(1, "bo", ["mira", "kai"], "herb", "sage", topic="herbs"),
        say(1, "bo", ["mira"], "sky", "rain", topic="weather"),
    )
    weighted = {
        (e.resident, e.claim.root): e.trust for e, _ in world.evidence if e.trust is not None
    }
    assert weighted == {("mira", "herb"): 0.9, ("kai", "herb"): 0.6, ("mira", "sky"): 0.2}
    assert world.beliefs[("mira", "herb")].confidence == 75
    assert world.beliefs[("mira", "sky")].confidence == 35


def test_trust_set_is_a_trust_change_with_the_value_before_and_after() -> None:
    """Setting trust is a `trust` change (implanted, detail set), even to the value it had."""
    world = world_of(trust(0, "mira", "bo", 0.6), trust(1, "mira", "bo", 0.25, topic="well"))
    first, second = world.changes
    assert (first.kind, first.root, first.value_before, first.value_after) == (
        ChangeKind.TRUST,
        "trust:bo",
        0.6,
        0.6,
    )
    assert (second.root, second.confidence_before, second.confidence_after) == (
        "trust:bo:well",
        60,
        25,
    )
    assert {c.detail for c in world.changes} == {"set"}
    assert {c.source_kind for c in world.changes} == {SourceKind.IMPLANTED}
    assert world.trust == {("mira", "bo", ""): 0.6, ("mira", "bo", "well"): 0.25}


def test_firsthand_judgement_moves_every_source_that_counted() -> None:
    """Told by bo and kai, then seen otherwise: both lose 0.10, on general trust only (no topic)."""
    world = world_of(
        say(1, "bo", ["mira"], "well", "poisoned"),
        say(1, "kai", ["mira"], "well", "poisoned"),
        observe(2, ["mira"], "well", "clean"),
    )
    assert world.trust == {("mira", "bo", ""): 0.5, ("mira", "kai", ""): 0.5}
    moves = [c for c in world.changes if c.kind is ChangeKind.TRUST]
    assert [(c.root, c.detail, c.evidence_id) for c in moves] == [
        ("trust:bo", "contradicted", moves[0].evidence_id),
        ("trust:kai", "contradicted", moves[0].evidence_id),
    ]
    assert moves[0].evidence_id is not None and moves[0].evidence_id.endswith("/mira")


def test_trust_never_leaves_zero_to_one() -> None:
    """A source already at 0.05 caught wrong goes to 0, not below; one at 1 confirmed stays 1."""
    world = world_of(
        trust(0, "mira", "bo", 0.05),
        trust(0, "mira", "kai", 1.0),
        say(1, "bo", ["mira"], "a", 1),
        say(1, "kai", ["mira"], "b", 1),
        observe(2, ["mira"], "a", 2),
        observe(2, ["mira"], "b", 1),
    )
    assert world.trust[("mira", "bo", "")] == 0.0
    assert world.trust[("mira", "kai", "")] == 1.0
    assert not [c for c in world.changes if c.root == "trust:kai" and c.detail == "confirmed"]


# --------------------------------------------------------------------------- chains


def test_say_derives_hearsay_and_a_first_order_belief_about_the_speaker() -> None:
    """Each listener and overhearer: hearsay on the root, firsthand on believes:<speaker>:<root>."""
    event = parse_event(say(1, "bo", ["mira"], "well", "poisoned", overhearers=["kai"]))
    got = {(e.resident, e.claim.root, e.source_kind) for e in derive_evidence(event)}
    about = believes_root("bo", "well")
    assert got == {
        ("mira", "well", SourceKind.HEARSAY),
        ("mira", about, SourceKind.FIRSTHAND),
        ("kai", "well", SourceKind.HEARSAY),
        ("kai", about, SourceKind.FIRSTHAND),
    }
    nested = parse_event(say(1, "bo", ["mira"], about, "poisoned"))
    assert [e.claim.root for e in derive_evidence(nested)] == [about]


def test_what_a_speaker_believes_follows_what_the_speaker_says() -> None:
    """A says counter, then drawer: z's believes:A:k is updated to drawer (not doubted), and
    the history keeps what A said before; an older telling arriving late changes nothing."""
    about = believes_root("a", "k")
    rules = Rules(late_event_days=5)
    world = world_of(
        say(1, "a", ["z"], "k", "counter"), say(2, "a", ["z"], "k", "drawer"), rules=rules
    )
    held = world.get_belief("z", about)
    assert held is not None
    assert (held.value, held.state, held.confidence) == ("drawer", State.INFLUENCING, 78)
    assert kinds(world, "z", about) == ["formed", "updated"]
    [update] = [c for c in world.changes if c.root == about and c.kind is ChangeKind.UPDATED]
    assert (update.value_before, update.value_after) == ("counter", "drawer")
    world.apply(parse_event(say(1.5, "a", ["z"], "k", "counter", eid="late")))
    late = world.get_belief("z", about)
    assert late is not None and late.value == "drawer"
    assert kinds(world, "z", about) == ["formed", "updated"]
    # The claim itself is still plain hearsay: two tellings of different values doubt it.
    assert kinds(world, "z", "k")[:2] == ["formed", "doubted"]


def test_origins_and_hops_follow_the_claim_through_the_fold() -> None:
    """A → B → C → B: one origin all along; the echo to B is recorded, its clock untouched."""
    world = world_of(
        say(1, "ann", ["ben"], "fire", "arson", eid="s1"),
        say(2, "ben", ["cai"], "fire", "arson", eid="s2"),
        say(3, "cai", ["ben"], "fire", "arson", eid="s3"),
    )
    ben, cai = world.beliefs[("ben", "fire")], world.beliefs[("cai", "fire")]
    assert ben.origins == cai.origins and len(ben.origins) == 1
    assert (ben.hops, cai.hops) == (("ann",), ("ann", "ben"))
    assert (ben.confidence, ben.last_evidence_day, ben.next_decay_day) == (58, 1, 8)
    assert len(ben.evidence_refs) == 2
    assert kinds(world, "ben", "fire") == ["formed"]


def test_a_witness_hearing_her_own_sighting_back_is_not_reinforced() -> None:
    """ann saw it and told ben; ben telling ann brings back her own origin: nothing changes."""
    world = world_of(
        observe(1, ["ann"], "fire", "arson"),
        say(2, "ann", ["ben"], "fire", "arson"),
        say(3, "ben", ["ann"], "fire", "arson"),
    )
    assert world.beliefs[("ann", "fire")].confidence == 78
    assert kinds(world, "ann", "fire") == ["formed"]


def test_independent_sightings_are_two_origins() -> None:
    """Two firsthand witnesses telling cai: cai's belief counts two origins and is reinforced."""
    world = world_of(
        observe(1, ["ann", "ben"], "fire", "arson"),
        say(2, "ann", ["cai"], "fire", "arson"),
        say(2, "ben", ["cai"], "fire", "arson"),
    )
    cai = world.beliefs[("cai", "fire")]
    assert (cai.confidence, len(cai.origins), cai.heard_from) == (66, 2, ("ann", "ben"))


def test_a_belief_seen_a_thousand_times_counts_its_own_origins_and_still_knows_its_echoes() -> None:
    """ann sees the well 1,000 times: one origin listed (her first sighting), 999 counted,
    so revising it costs the same at the thousandth sighting as at the second. Told back to
    her, her own sighting is still an echo (recorded, not counted); bo, who saw it at one of
    those sightings, is an origin of his own: his telling counts."""
    sightings = [observe(1 + i / 100, ["ann"], "well", "clean", eid=f"o{i}") for i in range(1000)]
    sightings[500] = observe(6, ["ann", "bo"], "well", "clean", eid="o500")
    world = world_of(
        *sightings,
        say(20, "ann", ["cai"], "well", "clean", eid="told"),
        say(21, "cai", ["ann"], "well", "clean", eid="echo"),
    )
    ann = world.beliefs[("ann", "well")]
    assert (ann.origins, ann.own_origins, ann.evidence_count) == (("o0/ann",), 999, 1001)
    assert world.beliefs[("cai", "well")].origins == ("o0/ann",)
    assert ann.heard_from == ()  # cai's telling was her own sighting coming back: not counted
    world.apply(parse_event(say(22, "bo", ["ann"], "well", "clean", eid="bo")))
    after = world.beliefs[("ann", "well")]
    assert after.origins == ("o0/ann", "o500/bo") and after.own_origins == 999
    assert after.heard_from == ("bo",) and after.evidence_count == 1002


# --------------------------------------------------------------------------- mutable roots, facts


def test_update_keeps_the_old_value_in_the_change_and_says_how_long_it_held() -> None:
    """Mutable by world rule: `updated` 78, influencing, firsthand; detail names both days."""
    rules = Rules(mutable_prefixes=("location:",))
    world = world_of(
        say(1, "cai", ["ann"], "location:bo", "tavern"),
        observe(4, ["ann"], "location:bo", "market"),
        rules=rules,
    )
    belief = world.beliefs[("ann", "location:bo")]
    assert (belief.value, belief.confidence, belief.state) == ("market", 78, State.INFLUENCING)
    assert (belief.source_kind, belief.next_decay_day, belief.value_since) == (
        SourceKind.FIRSTHAND,
        None,
        4,
    )
    change = world.changes[-1]
    assert (change.kind, change.value_before, change.value_after) == (
        ChangeKind.UPDATED,
        "tavern",
        "market",
    )
    assert change.detail == "held from day 1 until day 4"
    assert world.trust == {}  # the world changed: cai is not blamed


def test_only_observations_and_acts_are_world_facts() -> None:
    """observe and act fill the world's facts; a say does not."""
    world = world_of(
        say(1, "bo", ["mira"], "well", "poisoned"),
        observe(2, ["kai"], "mill", "burnt"),
        {
            "event_id": "a1",
            "day": 3,
            "kind": "act",
            "actor": "kai",
            "action": "run",
            "status": "rejected",
            "witnesses": [],
        },
    )
    assert world.facts == {"mill": "burnt", "action:kai:run": "rejected"}


def test_store_with_mutable_prefixes_updates_and_rebuilds(db_path: Path) -> None:
    """Writer(rules=mutable_prefixes): updated in SQLite, rules kept per world, rebuild equal."""
    writer = Writer(db_path, rules=Rules(mutable_prefixes=("location:",)))
    events = [
        observe(1, ["ann"], "location:bo", "tavern"),
        observe(1, ["ann"], "mood:bo", "glad"),
        observe(3, ["ann"], "location:bo", "market"),
        observe(3, ["ann"], "mood:bo", "sad"),
        trust(3, "ann", "cai", 0.3),
    ]
    writer.apply([("town", parse_event(e)) for e in events])
    writer.close()
    reader = Reader(db_path)
    try:
        assert reader.rules("town").mutable_prefixes == ("location:",)
        assert reader.belief("town", "ann", "location:bo").value == "market"  # type: ignore[union-attr]
        assert [c.kind for c in reader.history("town", "ann", "location:bo")] == [
            ChangeKind.FORMED,
            ChangeKind.UPDATED,
        ]
        assert reader.belief("town", "ann", "mood:bo").state is State.DOUBTFUL  # type: ignore[union-attr]
        assert reader.fact("town", "location:bo") == (True, "market")
        assert reader.fact("town", "nowhere") == (False, None)
        [entry] = reader.trust("town", "ann")
        assert (entry["source"], entry["topic"], entry["value"]) == ("cai", None, 0.3)
        assert [c.detail for c in entry["history"]] == ["set"]
    finally:
        reader.close()
    report = rebuild(db_path)
    assert report.ok, report.differences


# --------------------------------------------------------------------------- proposals; both folds


def test_judge_edits_refuses_tags_and_relationship_rewording() -> None:
    """Tag edits are changes_tags_without_evidence; any text edit of relation: is refused."""
    world = world_of(
        observe(1, ["ann"], "relation:bo:kind", True, people=["bo"]),
        observe(1, ["ann"], "mill", "burnt", people=["bo"]),
    )
    edits = [
        {"root": "mill", "people": ["cai"]},
        {"root": "mill", "people": ["bo"], "subject": "the mill burnt down"},
        {"root": "relation:bo:kind", "interpretation": "he is kind"},
    ]
    verdicts = [v for _, v in judge_edits("ann", [Edit.parse(e) for e in edits], world.get_belief)]
    assert [v["reasons"] for v in verdicts] == [
        ["changes_tags_without_evidence"],
        [],
        ["relationship_without_evidence"],
    ]


SOCIAL_LOG: list[dict[str, Any]] = [
    trust(0, "mira", "bo", 0.3),
    trust(0, "kai", "bo", 0.9, topic="well"),
    say(
        1,
        "bo",
        ["mira", "kai"],
        "well",
        "poisoned",
        topic="well",
        overhearers=["tom"],
        importance=1,
    ),
    say(2, "kai", ["lena"], "well", "poisoned"),
    say(3, "lena", ["kai"], "well", "poisoned"),
    observe(4, ["kai"], "well", "clean", places=["well"]),
    observe(4, ["tom"], "location:bo", "tavern"),
    {
        **observe(6, ["tom"], "location:bo", "market"),
        "claim": {"root": "location:bo", "value": "market", "mutable": True},
    },
    {
        "event_id": "p1",
        "day": 7,
        "kind": "propose",
        "resident": "lena",
        "edits": [
            {"root": "well", "subject": "kai says the well is bad"},
            {"root": "well", "value": "x"},
        ],
    },
    tick(30),
]


def test_memory_world_and_store_fold_the_same_social_log(db_path: Path) -> None:
    """Trust, chains, overhearing, updates, proposals, aging: MemoryWorld and SQLite agree."""
    memory = world_of(*SOCIAL_LOG)
    writer = Writer(db_path)
    results = writer.apply([("town", parse_event(e)) for e in SOCIAL_LOG])
    writer.close()
    assert [r.status.value for r in results] == ["applied"] * len(SOCIAL_LOG)
    reader = Reader(db_path)
    try:
        stored: dict[tuple[str, str], Belief] = {
            (b.resident, b.root): b for b in reader.all_beliefs("town")
        }
        assert stored == memory.beliefs
        assert reader.all_changes("town") == memory.changes
        assert [c.seq for c in reader.all_changes("town")] == [c.seq for c in memory.changes]
    finally:
        reader.close()
    tom = next(c for c in memory.changes if (c.resident, c.root) == ("tom", "well"))
    assert (tom.kind, tom.confidence_after) == (ChangeKind.FORMED, 41)  # overheard: 0.6 / 2
    assert memory.beliefs[("tom", "location:bo")].value == "market"
    assert memory.beliefs[("kai", "well")].state is State.DOUBTFUL
    assert memory.trust[("kai", "bo", "well")] == 0.8 and memory.trust[("kai", "bo", "")] == 0.5
    assert kinds(memory, "kai", "well") == ["formed", "doubted"]  # lena's echo changed nothing
