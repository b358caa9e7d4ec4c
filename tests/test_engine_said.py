"""Own words (issue 18 item 1): a say/announce gives its speaker a record of what it said,
to whom and when — lies included — and never a belief or a change of any belief rule."""

from __future__ import annotations

from belief_builders import announce, observe, say

from sidecar.engine import EventKind, MemoryWorld, Said, ingest, own_words, parse_event


def test_a_say_records_its_listeners_but_not_its_overhearers() -> None:
    """Whom the speaker addressed: the listeners, in the event's order; overhearers were not
    told (the speaker may not even know they heard)."""
    event = parse_event(
        say(3.5, "mira", ["lena", "kai"], "well", "fine", "the well is fine", eid="s1",
            overhearers=["bo"])
    )  # fmt: skip
    said = own_words(event)
    assert said == Said(
        speaker="mira", event_id="s1", day=3.5, kind=EventKind.SAY,
        claim=event.claim, subject="the well is fine", to=("lena", "kai"),
    )  # fmt: skip


def test_an_announcement_to_everyone_records_whom_it_reached() -> None:
    """``audience: "*"`` reaches every resident known then (and any it names), never the
    speaker; a listed audience is recorded as listed."""
    to_all = own_words(parse_event(announce(1, "mayor", "*", "fest", 12)), ["kai", "mayor", "bo"])
    assert to_all is not None and to_all.everyone and to_all.to == ("bo", "kai")
    listed = own_words(parse_event(announce(1, "mayor", ["kai"], "fest", 12)), ["bo"])
    assert listed is not None and not listed.everyone and listed.to == ("kai",)


def test_other_events_say_nothing() -> None:
    """Only utterances are own words: an observation gives no record."""
    assert own_words(parse_event(observe(1, ["mira"], "well", "dry"))) is None


def test_a_lie_is_recorded_and_leaves_the_speakers_belief_alone() -> None:
    """Mira saw the well is dry and tells Kai it is fine: her record says what she said, her
    belief stays what she saw, and she gets no evidence, belief or change from her words."""
    world = MemoryWorld()
    world.apply(parse_event(observe(1, ["mira"], "well", "dry", "the well is dry", eid="o")))
    before = world.get_belief("mira", "well")
    lie = parse_event(say(2, "mira", ["kai"], "well", "fine", "the well is fine", eid="lie"))
    out = ingest(lie, world.day, world)
    assert out.said is not None and out.said.claim.value == "fine" and out.said.to == ("kai",)
    assert all(ev.resident != "mira" for ev, _ in out.evidence)
    assert all(key[0] != "mira" for key in out.beliefs)
    assert all(c.resident != "mira" for c in out.changes)
    world.apply(lie)
    assert world.get_belief("mira", "well") == before
    assert [s.event_id for s in world.said] == ["lie"]


def test_the_record_does_not_change_what_listeners_get() -> None:
    """The listeners' evidence and beliefs are what they were before own words existed:
    hearsay from the speaker, with the speaker's origin."""
    world = MemoryWorld()
    world.apply(parse_event(say(1, "bo", ["kai"], "well", "poisoned", eid="s")))
    heard = world.get_belief("kai", "well")
    assert heard is not None and heard.source_resident_id == "bo"
    assert world.get_belief("bo", "well") is None
    assert world.said[0].speaker == "bo" and world.said[0].day == 1.0
