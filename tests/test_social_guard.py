"""The epistemic guard over the wire: contract violations, relationships, and `propose` verdicts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from social_helpers import (
    belief_of,
    explain,
    held,
    history,
    propose,
    rebuild_check,
    stored_event,
)
from wsclient import Frame, WsClient, db_rows, observe, running, say

from sidecar.server import Sidecar


@pytest.fixture
async def sc(tmp_path: Path) -> AsyncIterator[Sidecar]:
    async with running(tmp_path) as sidecar:
        yield sidecar


def counts(db: Path) -> tuple[Any, ...]:
    """Row counts of every table an event can fill."""
    return tuple(
        db_rows(db, f"SELECT count(*) FROM {table}")[0][0]
        for table in ("events", "evidence", "beliefs", "changes", "residents", "trust", "facts")
    )


CLAIM = {"root": "well:water", "value": "poisoned"}

#: (case, kind, fields, reason): one world event per reason code of the guard.
VIOLATIONS: list[tuple[str, str, Frame, str]] = [
    (
        "say-with-witnesses",
        "say",
        {**say("bo", ["mira"], "well:water", "poisoned"), "witnesses": ["mira"]},
        "utterance_as_firsthand",
    ),
    (
        "say-with-interpretations",
        "say",
        {**say("bo", ["mira"], "well:water", "poisoned"), "interpretations": {"mira": "odd"}},
        "utterance_as_firsthand",
    ),
    (
        "announce-as-firsthand",
        "announce",
        {
            "speaker": "bo",
            "audience": "*",
            "claim": CLAIM,
            "subject": "s",
            "source_kind": "firsthand",
        },
        "utterance_as_firsthand",
    ),
    (
        "say-without-speaker",
        "say",
        {"listeners": ["mira"], "claim": CLAIM, "subject": "s"},
        "hearsay_without_source",
    ),
    (
        "announce-empty-speaker",
        "announce",
        {"speaker": "", "audience": "*", "claim": CLAIM, "subject": "s"},
        "hearsay_without_source",
    ),
    (
        "observe-with-source",
        "observe",
        {**observe(["mira"], "well:water", "clean"), "source": "bo"},
        "firsthand_with_source",
    ),
    (
        "observe-as-hearsay",
        "observe",
        {**observe(["mira"], "well:water", "clean"), "source_kind": "hearsay"},
        "firsthand_with_source",
    ),
    (
        "act-with-speaker",
        "act",
        {
            "actor": "bo",
            "action": "open_door",
            "status": "completed",
            "witnesses": [],
            "speaker": "kai",
        },
        "firsthand_with_source",
    ),
    (
        "intervene-with-source",
        "intervene",
        {"resident": "mira", "op": "implant", "claim": CLAIM, "subject": "s", "source": "bo"},
        "firsthand_with_source",
    ),
    (
        "act-with-claim",
        "act",
        {
            "actor": "bo",
            "action": "open_door",
            "status": "rejected",
            "witnesses": ["mira"],
            "claim": {"root": "action:bo:open_door", "value": "completed"},
        },
        "act_claim_given",
    ),
    (
        "observe-action-root",
        "observe",
        observe(["mira"], "action:bo:open_door", "completed"),
        "action_claim_outside_act",
    ),
    (
        "announce-relation",
        "announce",
        {
            "speaker": "mira",
            "audience": "*",
            "claim": {"root": "relation:bo:honest", "value": False},
            "subject": "bo lies",
        },
        "public_relationship",
    ),
    (
        "observe-relation-to-self",
        "observe",
        observe(["mira", "kai"], "relation:kai:brave", True),
        "relation_to_self",
    ),
    (
        "say-relation-to-listener",
        "say",
        say("bo", ["mira"], "relation:mira:liar", True),
        "relation_to_self",
    ),
    (
        "implant-relation-to-self",
        "intervene",
        {
            "resident": "mira",
            "op": "implant",
            "subject": "I am a coward",
            "claim": {"root": "relation:mira:coward", "value": True},
        },
        "relation_to_self",
    ),
    (
        "interpretation-as-value",
        "observe",
        {**observe(["mira"], "well:water", "cursed"), "interpretations": {"mira": "cursed"}},
        "interpretation_as_value",
    ),
    (
        "claim-carrying-interpretation",
        "say",
        {
            **say("bo", ["mira"], "well:water", "poisoned"),
            "claim": {**CLAIM, "interpretation": "bo is scared"},
        },
        "interpretation_as_value",
    ),
]


@pytest.mark.parametrize(
    ("kind", "fields", "reason"), [v[1:] for v in VIOLATIONS], ids=[v[0] for v in VIOLATIONS]
)
async def test_each_guard_violation_is_refused_whole_with_its_reason(
    sc: Sidecar, kind: str, fields: Frame, reason: str
) -> None:
    """Refused as contract_violation with its reason; nothing stored; the connection serves on."""
    db = sc.config.db
    async with WsClient(sc.url) as c:
        await c.event("observe", day=1, **observe(["mira"], "weather", "rain"))
        before = counts(db)
        refused = await c.event(kind, day=2, **fields)
        assert refused["type"] == "error", refused
        assert (refused["code"], refused["reason"]) == ("contract_violation", reason)
        assert refused["message"]
        assert stored_event(db, refused["event_id"]) == []
        assert counts(db) == before
        after = await c.event("observe", day=2, **observe(["mira"], "weather", "sun"))
        assert after["type"] == "ack" and after["changes"] == 1
        assert c.close_code is None


async def test_violations_in_a_stream_leave_the_valid_events_around_them(sc: Sidecar) -> None:
    """valid, violating, valid back to back: ack, error, ack in order; two events logged."""
    async with WsClient(sc.url) as c:
        first = await c.send_event("observe", 1, **observe(["mira"], "weather", "rain"))
        bad = await c.send_event("observe", 1, **observe(["mira"], "action:bo:run", "completed"))
        last = await c.send_event("say", 1, **say("bo", ["mira"], "weather", "rain"))
        replies = [
            await c.next_where(lambda f: f.get("type") in ("ack", "error")) for _ in range(3)
        ]
        assert [(r["type"], r["event_id"]) for r in replies] == [
            ("ack", first),
            ("error", bad),
            ("ack", last),
        ]
        assert replies[1]["reason"] == "action_claim_outside_act"
        logged = [r[0] for r in db_rows(sc.config.db, "SELECT event_id FROM events ORDER BY seq")]
        assert logged == [first, last]


# --------------------------------------------------------------------------- relationships


async def test_relation_beliefs_are_directed(sc: Sidecar) -> None:
    """mira's view of bo and bo's view of mira are separate beliefs; evidence moves one only."""
    async with WsClient(sc.url) as c:
        await c.event("observe", day=1, **observe(["mira"], "relation:bo:honest", True))
        await c.event("observe", day=1, **observe(["bo"], "relation:mira:honest", False))
        await c.event("say", day=2, **say("kai", ["mira"], "relation:bo:honest", False))
        assert await history(c, "mira", "relation:bo:honest") == ["formed", "doubted"]
        assert await history(c, "bo", "relation:mira:honest") == ["formed"]
        assert await belief_of(c, "bo", "relation:bo:honest") is None
        assert await belief_of(c, "mira", "relation:mira:honest") is None


async def test_announcing_a_relationship_is_refused_and_saying_it_is_not(sc: Sidecar) -> None:
    """A relation: root may be said privately; announced it is public_relationship, not stored."""
    async with WsClient(sc.url) as c:
        told = await c.event("say", day=1, **say("mira", ["kai"], "relation:bo:honest", False))
        assert told["type"] == "ack"
        before = counts(sc.config.db)
        shouted = await c.event(
            "announce",
            day=1,
            speaker="mira",
            audience=["kai", "tom"],
            claim={"root": "relation:bo:honest", "value": False},
            subject="bo is a liar",
        )
        assert (shouted["code"], shouted["reason"]) == ("contract_violation", "public_relationship")
        assert counts(sc.config.db) == before
        assert await belief_of(c, "tom", "relation:bo:honest") is None


async def test_propose_cannot_reword_a_relationship_but_a_player_intervention_can_change_it(
    sc: Sidecar,
) -> None:
    """Rewording relation:bo:honest is relationship_without_evidence; a distort still applies."""
    root = "relation:bo:honest"
    async with WsClient(sc.url) as c:
        await c.event("observe", day=1, **observe(["mira"], root, True, subject="bo is honest"))
        ack = await propose(
            c,
            "mira",
            [
                {"root": root, "subject": "bo is a saint"},
                {"root": root, "interpretation": "I like him"},
            ],
        )
        assert [r["reasons"] for r in ack["results"]] == [["relationship_without_evidence"]] * 2
        assert ack["changes"] == 0
        assert (await held(c, "mira", root))["subject"] == "bo is honest"
        distorted = await c.event(
            "intervene",
            day=2,
            resident="mira",
            op="distort",
            claim={"root": root, "value": False},
            subject="bo cheats",
        )
        assert distorted["type"] == "ack"
        belief = await held(c, "mira", root)
        assert (belief["value"], belief["intervention"]) == (False, "distorted")


# --------------------------------------------------------------------------- propose


async def _mira_holds_four_beliefs(c: WsClient) -> None:
    """well: hearsay from bo (58); mill: doubtful; road: corrected; weather: firsthand."""
    await c.event("say", day=1, **say("bo", ["mira"], "well:water", "poisoned", subject="poison"))
    await c.event("say", day=1, **say("bo", ["mira"], "mill:fire", "arson"))
    await c.event("say", day=1, **say("kai", ["mira"], "road:north", "closed"))
    await c.event("observe", day=2, **observe(["mira"], "mill:fire", "accident"))
    await c.event("observe", day=2, **observe(["mira"], "road:north", "open"))
    await c.event("observe", day=3, **observe(["mira"], "road:north", "open"))
    await c.event("observe", day=3, **observe(["mira"], "weather", "rain", subject="rain"))
    states = {
        r: (await held(c, "mira", r))["state"] for r in ("well:water", "mill:fire", "road:north")
    }
    assert states == {
        "well:water": "influencing",
        "mill:fire": "doubtful",
        "road:north": "corrected",
    }


async def test_propose_gives_each_edit_a_verdict_and_applies_the_accepted(sc: Sidecar) -> None:
    """Two rewordings pass; value, source, doubt, correction, confidence and merge edits fail."""
    edits: list[Frame] = [
        {"root": "well:water", "subject": "bo says the well water is poisoned"},
        {"root": "weather", "interpretation": "a good day to stay in"},
        {"root": "well:water", "value": "clean", "subject": "the well is clean"},
        {"root": "well:water", "source": "kai"},
        {"root": "well:water", "source_kind": "firsthand"},
        {"root": "mill:fire", "state": "influencing", "subject": "the mill burned by accident"},
        {"root": "road:north", "state": "influencing"},
        {"root": "weather", "confidence": 100},
        {"root": "weather", "merge": ["weather", "well:water"], "subject": "rain and poison"},
        {"root": "weather", "subject": "rain"},
        {"root": "weather", "subject": "   "},
        {"root": "no:such", "subject": "x"},
    ]
    expected = [
        [],
        [],
        ["changes_value_without_evidence"],
        ["changes_provenance"],
        ["changes_provenance"],
        ["hides_contradiction"],
        ["erases_correction"],
        ["changes_confidence_without_evidence"],
        ["merges_distinct_claims"],
        ["no_edit"],
        ["empty_text"],
        ["no_such_belief"],
    ]
    async with WsClient(sc.url, subscribe=["mira"]) as c:
        await _mira_holds_four_beliefs(c)
        before = {
            r: await belief_of(c, "mira", r) for r in ("well:water", "mill:fire", "road:north")
        }
        ack = await propose(c, "mira", edits, day=4)
        results = ack["results"]
        assert [r["root"] for r in results] == [e["root"] for e in edits]
        assert [r["reasons"] for r in results] == expected
        assert [r["accepted"] for r in results] == [not x for x in expected]
        assert ack["changes"] == 2
        note = await c.next_of("belief", event_id=ack["event_id"], root="well:water")
        assert (note["change"], note["detail"]) == ("intervened", "edit")
        assert (note["prev_subject"], note["subject"]) == (
            "poison",
            "bo says the well water is poisoned",
        )
        assert (note["prev_confidence"], note["confidence"]) == (58, 58)
        assert (note["prev_value"], note["value"], note["source"]) == ("poisoned", "poisoned", "bo")
        well = await held(c, "mira", "well:water")
        assert well == {
            **before["well:water"],
            "subject": "bo says the well water is poisoned",
            "updated_day": 4,
        }
        weather = await held(c, "mira", "weather")
        assert (weather["interpretation"], weather["confidence"]) == ("a good day to stay in", 78)
        for root in ("mill:fire", "road:north"):
            assert await belief_of(c, "mira", root) == before[root]
        assert (await explain(c, "mira", "well:water"))["history"][-1]["detail"] == "edit"


async def test_a_proposal_is_judged_against_the_belief_as_it_stands_on_its_day(sc: Sidecar) -> None:
    """Heard at 58 on day 1, decayed to 50 by day 8: a day-8 edit claiming 58 is refused."""
    async with WsClient(sc.url) as c:
        await c.event("say", day=1, **say("bo", ["mira"], "well:water", "poisoned"))
        edits = [{"root": "well:water", "subject": "bo said so", "confidence": 58}]
        ack = await propose(c, "mira", edits, day=8)
        assert await history(c, "mira", "well:water") == ["formed", "decayed"]
        [verdict] = ack["results"]
        assert verdict["reasons"] == ["changes_confidence_without_evidence"]
        assert (await held(c, "mira", "well:water"))["subject"] == "said"


async def test_two_edits_of_one_belief_are_judged_in_turn(sc: Sidecar) -> None:
    """A second edit of a root meets the first one's text: rewording back is an edit too."""
    async with WsClient(sc.url) as c:
        await c.event(
            "say", day=1, **say("bo", ["mira"], "well:water", "poisoned", subject="poison")
        )
        edits = [
            {"root": "well:water", "subject": "tidy"},
            {"root": "well:water", "subject": "poison"},
        ]
        ack = await propose(c, "mira", edits, day=2)
        assert [r["accepted"] for r in ack["results"]] == [True, True]
        history_rows = (await explain(c, "mira", "well:water"))["history"]
        subjects = [
            (h["prev_subject"], h["subject"]) for h in history_rows if h["detail"] == "edit"
        ]
        assert subjects == [("poison", "tidy"), ("tidy", "poison")]
        assert (await held(c, "mira", "well:water"))["subject"] == "poison"


async def test_a_proposal_is_logged_and_rebuild_replays_it_exactly(sc: Sidecar) -> None:
    """The propose event is in the world log with its edits; `credence rebuild --check` passes."""
    async with WsClient(sc.url) as c:
        await _mira_holds_four_beliefs(c)
        ack = await propose(
            c,
            "mira",
            [
                {"root": "well:water", "subject": "the well, per bo"},
                {"root": "mill:fire", "state": "influencing"},
            ],
            day=4,
        )
        assert [r["accepted"] for r in ack["results"]] == [True, False]
        [(kind, body)] = stored_event(sc.config.db, ack["event_id"])
        assert kind == "propose"
        logged = orjson.loads(body)
        assert (logged["resident"], [e["root"] for e in logged["edits"]]) == (
            "mira",
            ["well:water", "mill:fire"],
        )
        again = await propose(c, "mira", [{"root": "well:water", "subject": "other"}], day=5)
        assert again["changes"] == 1
    proc = rebuild_check(sc.config.db)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "DIFFERENT" not in proc.stdout


async def test_an_edit_may_not_bring_in_a_person_the_evidence_never_named(sc: Sidecar) -> None:
    """An organizer naming a resident (by id or registered name, any case, whole words) who
    is in none of the belief's evidence is refused ``introduces_person``; naming its source or
    its people is a rewording, and a name inside a longer word names no one."""
    async with WsClient(sc.url) as c:
        await c.event("register", day=1, residents=[
            {"resident": "tom", "names": {"en": "Old Tom", "zh-Hant": "老湯"}},
            {"resident": "kai", "names": {"en": "Kai"}},
        ])  # fmt: skip
        await c.event(
            "say", day=1, **say("bo", ["mira"], "well:water", "poisoned", people=["lena"])
        )
        await c.event("observe", day=1, **observe(["kai", "tom"], "weather", "rain"))
        edits: list[Frame] = [
            {"root": "well:water", "subject": "Bo warned me that Lena poisoned the well"},
            {"root": "well:water", "subject": "Old Tom poisoned the well"},
            {"root": "well:water", "interpretation": "老湯做的"},
            {"root": "well:water", "subject": "KAI poisoned the well"},
            {"root": "well:water", "subject": "Kaiser poisoned the well"},
        ]
        ack = await propose(c, "mira", edits, day=2)
        assert [r["reasons"] for r in ack["results"]] == [
            [], ["introduces_person"], ["introduces_person"], ["introduces_person"], [],
        ]  # fmt: skip
        assert ack["changes"] == 2
