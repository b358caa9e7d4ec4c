"""Source trust over the wire: weighted hearsay, topics, direction, moves, decay beyond time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from social_helpers import explain, held, history, send_frame, set_trust, trust_entries
from wsclient import WsClient, observe, running, say

from sidecar.server import Sidecar

ROOT = "well:water"


@pytest.fixture
async def sc(tmp_path: Path) -> AsyncIterator[Sidecar]:
    async with running(tmp_path) as sidecar:
        yield sidecar


async def confidence(c: WsClient, resident: str, root: str = ROOT) -> int:
    return (await held(c, resident, root))["confidence"]


# --------------------------------------------------------------------------- weighting


async def test_hearsay_confidence_follows_the_listeners_trust_in_the_speaker(sc: Sidecar) -> None:
    """One sentence, three listeners: 58 at the default trust, 75 at t=0.9, 35 at t=0.2."""
    async with WsClient(sc.url, subscribe="*") as c:
        await set_trust(c, "kai", "bo", 0.9)
        await set_trust(c, "tom", "bo", 0.2)
        ack = await c.event("say", day=1, **say("bo", ["mira", "kai", "tom"], ROOT, "poisoned"))
        assert ack["type"] == "ack", ack
        formed = {}
        while len(formed) < 3:
            note = await c.next_of("belief", root=ROOT)
            formed[note["resident"]] = note
        assert {r: n["confidence"] for r, n in formed.items()} == {"mira": 58, "kai": 75, "tom": 35}
        assert all(n["change"] == "formed" and n["source"] == "bo" for n in formed.values())
        assert [await confidence(c, r) for r in ("mira", "kai", "tom")] == [58, 75, 35]


async def test_topic_trust_overrides_general_trust_for_that_topic_only(sc: Sidecar) -> None:
    """Trust(mira ← bo, herbs)=0.9 over general 0.2: 75 on herbs, 35 on weather and on no topic."""
    async with WsClient(sc.url) as c:
        await set_trust(c, "mira", "bo", 0.2)
        await set_trust(c, "mira", "bo", 0.9, topic="herbs")
        await c.event("say", day=1, **say("bo", ["mira"], "herb:sage", "heals", topic="herbs"))
        await c.event("say", day=1, **say("bo", ["mira"], "sky:tomorrow", "rain", topic="weather"))
        await c.event("say", day=1, **say("bo", ["mira"], "road:north", "closed"))
        assert await confidence(c, "mira", "herb:sage") == 75
        assert await confidence(c, "mira", "sky:tomorrow") == 35
        assert await confidence(c, "mira", "road:north") == 35
        trail = await explain(c, "mira", "herb:sage")
        assert [e["trust"] for e in trail["evidence"]] == [0.9]


async def test_trust_is_directed(sc: Sidecar) -> None:
    """Trust(mira ← bo)=0.9 says nothing of Trust(bo ← mira): bo hears mira at the default 58."""
    async with WsClient(sc.url) as c:
        await set_trust(c, "mira", "bo", 0.9)
        await c.event("say", day=1, **say("bo", ["mira"], "mill:open", True))
        await c.event("say", day=1, **say("mira", ["bo"], "bridge:safe", False))
        assert await confidence(c, "mira", "mill:open") == 75
        assert await confidence(c, "bo", "bridge:safe") == 58
        assert [(e["source"], e["value"]) for e in await trust_entries(c, "mira")] == [("bo", 0.9)]
        assert await trust_entries(c, "bo") == []


async def test_trust_query_lists_entries_with_the_changes_behind_them(sc: Sidecar) -> None:
    """The trust query gives each (source, topic) entry its value and history; source filters."""
    async with WsClient(sc.url) as c:
        first = await set_trust(c, "mira", "bo", 0.9)
        second = await set_trust(c, "mira", "bo", 0.7, day=1)
        await set_trust(c, "mira", "bo", 0.4, topic="herbs", day=1)
        await set_trust(c, "mira", "kai", 0.1, day=1)
        reply = await c.request({"type": "trust", "resident": "mira"})
        assert (reply["type"], reply["default"], reply["more"]) == ("trust", 0.6, False)
        entries = {(e["source"], e["topic"]): e for e in reply["entries"]}
        assert set(entries) == {("bo", None), ("bo", "herbs"), ("kai", None)}
        general = entries[("bo", None)]
        assert general["value"] == 0.7
        steps = [
            (h["change"], h["prev_value"], h["value"], h["detail"]) for h in general["history"]
        ]
        assert steps == [("trust", 0.6, 0.9, "set"), ("trust", 0.9, 0.7, "set")]
        assert [h["event_id"] for h in general["history"]] == [
            first["event_id"],
            second["event_id"],
        ]
        topical = entries[("bo", "herbs")]["history"]
        assert [(h["prev_value"], h["value"]) for h in topical] == [(0.7, 0.4)]  # from general
        only_kai = await trust_entries(c, "mira", "kai")
        assert [(e["source"], e["value"]) for e in only_kai] == [("kai", 0.1)]
        unknown = await c.request({"type": "trust", "resident": "nobody"})
        assert (unknown["type"], unknown["code"]) == ("error", "not_found")


async def test_trust_frame_with_a_bad_value_is_refused_and_not_stored(sc: Sidecar) -> None:
    """A trust above 1 is an invalid_event; the table stays empty and the connection serves on."""
    async with WsClient(sc.url) as c:
        bad = await send_frame(
            c, {"type": "trust", "day": 0, "resident": "mira", "source": "bo", "value": 1.5}
        )
        assert (bad["type"], bad["code"]) == ("error", "invalid_event")
        await set_trust(c, "mira", "kai", 0.5)
        assert [e["source"] for e in await trust_entries(c, "mira")] == ["kai"]


# --------------------------------------------------------------------------- trust moves


async def test_firsthand_support_raises_trust_in_the_source(sc: Sidecar) -> None:
    """mira heard it from bo, then saw it herself: Trust(mira ← bo) 0.6 → 0.65, detail confirmed."""
    async with WsClient(sc.url) as c:
        await c.event("say", day=1, **say("bo", ["mira"], ROOT, "poisoned"))
        await c.event("observe", day=2, **observe(["mira"], ROOT, "poisoned"))
        assert await confidence(c, "mira") == 78  # max(58 + 8, firsthand 78)
        [entry] = await trust_entries(c, "mira", "bo")
        assert entry["value"] == 0.65
        assert [(h["prev_value"], h["value"], h["detail"]) for h in entry["history"]] == [
            (0.6, 0.65, "confirmed")
        ]


async def test_contradiction_lowers_trust_and_correction_lowers_it_more(sc: Sidecar) -> None:
    """Seen otherwise: doubted costs bo 0.10 of mira's trust, the correction that follows 0.15."""
    async with WsClient(sc.url) as c:
        await c.event("say", day=1, **say("bo", ["mira"], ROOT, "poisoned"))
        await c.event("observe", day=2, **observe(["mira"], ROOT, "clean"))
        [entry] = await trust_entries(c, "mira", "bo")
        assert entry["value"] == 0.5
        await c.event("observe", day=3, **observe(["mira"], ROOT, "clean"))
        assert await history(c, "mira", ROOT) == ["formed", "doubted", "corrected"]
        [entry] = await trust_entries(c, "mira", "bo")
        assert entry["value"] == 0.35
        moves = [(h["prev_value"], h["value"], h["detail"]) for h in entry["history"]]
        assert moves == [(0.6, 0.5, "contradicted"), (0.5, 0.35, "corrected")]
        # The belief is now firsthand: a third sighting judges bo no further.
        await c.event("observe", day=4, **observe(["mira"], ROOT, "clean"))
        [entry] = await trust_entries(c, "mira", "bo")
        assert entry["value"] == 0.35


async def test_a_source_caught_wrong_on_a_topic_loses_general_trust(sc: Sidecar) -> None:
    """A topical lie seen through moves the topic entry and general trust: all talk weakens."""
    async with WsClient(sc.url) as c:
        await c.event("say", day=1, **say("bo", ["mira"], ROOT, "poisoned", topic="well"))
        await c.event("observe", day=2, **observe(["mira"], ROOT, "clean"))
        entries = {(e["source"], e["topic"]): e["value"] for e in await trust_entries(c, "mira")}
        assert entries == {("bo", None): 0.5, ("bo", "well"): 0.5}
        await c.event("say", day=3, **say("bo", ["mira"], "road:north", "closed"))
        assert await confidence(c, "mira", "road:north") == 52  # 35 + 40·0.3/0.7


async def test_trust_moves_on_the_topic_that_weighted_the_hearsay(sc: Sidecar) -> None:
    """On topic theft (tagged granary too): caught, theft and general trust move; not granary."""
    async with WsClient(sc.url) as c:
        await set_trust(c, "mira", "bo", 0.9, topic="theft")
        fields = say("bo", ["mira"], "granary:thief", "fay", topic="theft", topics=["granary"])
        await c.event("say", day=1, **fields)
        assert await confidence(c, "mira", "granary:thief") == 75
        await c.event("observe", day=2, **observe(["mira"], "granary:thief", "rats"))
        entries = {(e["source"], e["topic"]): e["value"] for e in await trust_entries(c, "mira")}
        assert entries == {("bo", None): 0.5, ("bo", "theft"): 0.8}
        await c.event("say", day=3, **say("bo", ["mira"], "mill:thief", "gus", topic="theft"))
        assert await confidence(c, "mira", "mill:thief") == 69  # 35 + 40·0.6/0.7


async def test_trust_changes_reach_subscribers_with_before_and_after(sc: Sidecar) -> None:
    """A set and a judged move are `trust` notifications: root trust:<source>, values and 100·t."""
    async with WsClient(sc.url, subscribe=["mira"]) as c:
        ack = await set_trust(c, "mira", "bo", 0.9)
        note = await c.next_of("belief", change="trust")
        assert (note["resident"], note["root"], note["event_id"]) == (
            "mira",
            "trust:bo",
            ack["event_id"],
        )
        assert (note["prev_value"], note["value"]) == (0.6, 0.9)
        assert (note["prev_confidence"], note["confidence"], note["detail"]) == (60, 90, "set")
        await c.event("say", day=1, **say("bo", ["mira"], ROOT, "poisoned", topic="well"))
        await c.event("observe", day=2, **observe(["mira"], ROOT, "clean"))
        moved = [await c.next_of("belief", change="trust") for _ in range(2)]
        assert {n["root"] for n in moved} == {"trust:bo", "trust:bo:well"}
        for n in moved:
            assert (n["prev_value"], n["value"], n["detail"]) == (0.9, 0.8, "contradicted")
            assert (n["prev_confidence"], n["confidence"]) == (90, 80)


async def test_overheard_hearsay_is_weighted_as_if_trust_were_halved(sc: Sidecar) -> None:
    """kai overhears what bo tells mira: 0.6 halved is 0.3, so 41 beside mira's 58."""
    async with WsClient(sc.url) as c:
        await set_trust(c, "tom", "bo", 0.9)
        fields = say("bo", ["mira"], ROOT, "poisoned", overhearers=["kai", "tom"])
        await c.event("say", day=1, **fields)
        assert await confidence(c, "mira") == 58
        assert await confidence(c, "kai") == 41
        assert await confidence(c, "tom") == 49  # 0.9 halved: 0.45
        [heard] = (await explain(c, "kai", ROOT))["evidence"]
        assert (heard["source_kind"], heard["source"], heard["trust"]) == ("hearsay", "bo", 0.3)


# --------------------------------------------------------------------------- decay beyond time


async def test_aging_without_importance_or_emotion_is_exactly_the_core_rule(sc: Sidecar) -> None:
    """Heard on day 1 at the default trust: nothing on day 7.9, decayed 58 → 50 on day 8."""
    async with WsClient(sc.url) as c:
        await c.event("say", day=1, **say("bo", ["mira"], ROOT, "poisoned"))
        assert (await c.event("tick", day=7.9))["changes"] == 0
        assert (await c.event("tick", day=8))["changes"] == 1
        trail = await explain(c, "mira", ROOT)
        step = trail["history"][-1]
        assert (step["change"], step["prev_confidence"], step["confidence"], step["day"]) == (
            "decayed",
            58,
            50,
            8,
        )


async def test_importance_one_doubles_the_aging_period(sc: Sidecar) -> None:
    """Heard with importance 1 on day 1: no step on day 8, the first step on day 15."""
    async with WsClient(sc.url) as c:
        await c.event("say", day=1, **say("bo", ["mira"], ROOT, "poisoned", importance=1))
        await c.event("tick", day=8)
        assert await history(c, "mira", ROOT) == ["formed"]
        await c.event("tick", day=14.9)
        assert await confidence(c, "mira") == 58
        await c.event("tick", day=15)
        assert await history(c, "mira", ROOT) == ["formed", "decayed"]
        assert await confidence(c, "mira") == 50


async def test_hearsay_from_a_distrusted_source_ages_faster(sc: Sidecar) -> None:
    """At t=0.3 the period is 7 × 0.6 = 4.2 days: 41 fades to 34 on day 5.2; a 58 stays."""
    async with WsClient(sc.url) as c:
        await set_trust(c, "mira", "bo", 0.3)
        await c.event("say", day=1, **say("bo", ["mira", "kai"], ROOT, "poisoned"))
        assert [await confidence(c, r) for r in ("mira", "kai")] == [41, 58]
        await c.event("tick", day=6)
        trail = await explain(c, "mira", ROOT)
        step = trail["history"][-1]
        assert (step["change"], step["confidence"], step["state"]) == ("faded", 34, "past")
        assert step["day"] == pytest.approx(5.2)
        assert await history(c, "kai", ROOT) == ["formed"]


async def test_independent_corroboration_restarts_the_aging_clock(sc: Sidecar) -> None:
    """Told on day 5 by another: no step on day 8, one on day 12; bo repeating restarts nothing."""
    async with WsClient(sc.url) as c:
        await c.event("say", day=1, **say("bo", ["mira", "tom"], ROOT, "poisoned"))
        await c.event("say", day=5, **say("kai", ["mira"], ROOT, "poisoned"))
        await c.event("say", day=5, **say("bo", ["tom"], ROOT, "poisoned"))
        assert await confidence(c, "mira") == 66
        assert await confidence(c, "tom") == 58
        await c.event("tick", day=8)
        assert await history(c, "mira", ROOT) == ["formed", "reinforced"]
        assert await history(c, "tom", ROOT) == ["formed", "decayed"]
        await c.event("tick", day=12)
        assert await history(c, "mira", ROOT) == ["formed", "reinforced", "decayed"]
        assert await confidence(c, "mira") == 58
