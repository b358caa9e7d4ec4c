"""Provenance over the wire: rumour chains, echoes, independence, society views, mutable roots,
beliefs about beliefs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from social_helpers import (
    belief_of,
    beliefs_of,
    explain,
    held,
    history,
    rebuild_check,
    set_trust,
    trust_entries,
)
from wsclient import Frame, WsClient, observe, running, say

from sidecar.engine import Rules
from sidecar.server import Sidecar

ROOT = "mill:fire"


@pytest.fixture
async def sc(tmp_path: Path) -> AsyncIterator[Sidecar]:
    async with running(tmp_path) as sidecar:
        yield sidecar


async def distribution(c: WsClient, root: str) -> Frame:
    parts = await c.request_all({"type": "distribution", "root": root})
    assert parts[0]["type"] == "distribution", parts[0]
    return {**parts[0], "residents": [r for p in parts for r in p["residents"]]}


def moved(fields: Frame) -> Frame:
    """The same event fields with the claim declared mutable (``claim.mutable: true``)."""
    return {**fields, "claim": {**fields["claim"], "mutable": True}}


# --------------------------------------------------------------------------- chains and echoes


async def test_explain_shows_origin_and_hops_along_a_chain(sc: Sidecar) -> None:
    """A tells B, B tells C: both evidence share A's utterance as origin; C's hops are A, B."""
    async with WsClient(sc.url) as c:
        started = await c.event("say", day=1, **say("ann", ["ben"], ROOT, "arson"))
        await c.event("say", day=2, **say("ben", ["cai"], ROOT, "arson"))
        [to_ben] = (await explain(c, "ben", ROOT))["evidence"]
        [to_cai] = (await explain(c, "cai", ROOT))["evidence"]
        assert to_ben["hops"] == ["ann"] and to_cai["hops"] == ["ann", "ben"]
        assert to_ben["origin"] == to_cai["origin"]
        # ann does not hold the claim: she is its origin (one for all her tellings of it)
        assert to_ben["origin"] == f'said:["ann", "{ROOT}", "arson"]'
        assert started["changes"] >= 1
        assert (to_cai["source"], to_cai["trust"]) == ("ben", 0.6)


async def test_a_chain_from_a_firsthand_witness_starts_at_the_sighting(sc: Sidecar) -> None:
    """ann saw it and told ben: ben's evidence has ann's firsthand evidence as origin."""
    async with WsClient(sc.url) as c:
        await c.event("observe", day=1, **observe(["ann"], ROOT, "arson"))
        [seen] = (await explain(c, "ann", ROOT))["evidence"]
        await c.event("say", day=2, **say("ann", ["ben"], ROOT, "arson"))
        [heard] = (await explain(c, "ben", ROOT))["evidence"]
        assert heard["origin"] == seen["origin"] == seen["evidence_id"]
        assert heard["hops"] == ["ann"]


async def test_circular_reporting_does_not_reinforce(sc: Sidecar) -> None:
    """A → B → C → B: the rumour returning to its first listener is recorded, nothing changes."""
    async with WsClient(sc.url, subscribe=["ben"]) as c:
        await c.event("say", day=1, **say("ann", ["ben"], ROOT, "arson"))
        await c.event("say", day=2, **say("ben", ["cai"], ROOT, "arson"))
        await c.sync()
        before = await held(c, "ben", ROOT)
        echo = await c.event("say", day=3, **say("cai", ["ben"], ROOT, "arson"))
        assert echo["type"] == "ack"
        after = await held(c, "ben", ROOT)
        assert before is not None and after is not None
        assert after["confidence"] == before["confidence"] == 58
        assert await history(c, "ben", ROOT) == ["formed"]
        trail = await explain(c, "ben", ROOT)
        assert [e["hops"] for e in trail["evidence"]] == [["ann"], ["ann", "ben", "cai"]]
        assert after["evidence_refs"] == [e["evidence_id"] for e in trail["evidence"]]
        await c.sync()
        assert [n["root"] for n in c.untaken("belief") if n["event_id"] == echo["event_id"]] == [
            "believes:cai:" + ROOT
        ]  # only ben's belief about what cai believes


async def test_the_same_source_repeating_itself_does_not_reinforce(sc: Sidecar) -> None:
    """ann tells ben twice: the second telling is evidence, not corroboration."""
    async with WsClient(sc.url) as c:
        await c.event("say", day=1, **say("ann", ["ben"], ROOT, "arson"))
        await c.event("say", day=2, **say("ann", ["ben"], ROOT, "arson"))
        assert (await held(c, "ben", ROOT))["confidence"] == 58
        assert await history(c, "ben", ROOT) == ["formed"]
        assert len((await explain(c, "ben", ROOT))["evidence"]) == 2


async def test_two_witnesses_telling_c_are_independent(sc: Sidecar) -> None:
    """ann and ben each saw it and told cai: two origins, so cai is reinforced 58 → 66."""
    async with WsClient(sc.url) as c:
        await c.event("observe", day=1, **observe(["ann"], ROOT, "arson"))
        await c.event("observe", day=1, **observe(["ben"], ROOT, "arson"))
        await c.event("say", day=2, **say("ann", ["cai"], ROOT, "arson"))
        await c.event("say", day=2, **say("ben", ["cai"], ROOT, "arson"))
        assert await history(c, "cai", ROOT) == ["formed", "reinforced"]
        assert (await held(c, "cai", ROOT))["confidence"] == 66
        origins = {e["origin"] for e in (await explain(c, "cai", ROOT))["evidence"]}
        assert len(origins) == 2


async def test_a_rumour_shared_by_two_tellers_is_not_independent(sc: Sidecar) -> None:
    """ann told ben and cai in one breath; both tell dee: one origin, dee stays at 58."""
    async with WsClient(sc.url) as c:
        await c.event("say", day=1, **say("ann", ["ben", "cai"], ROOT, "arson"))
        await c.event("say", day=2, **say("ben", ["dee"], ROOT, "arson"))
        await c.event("say", day=2, **say("cai", ["dee"], ROOT, "arson"))
        assert await history(c, "dee", ROOT) == ["formed"]
        assert (await held(c, "dee", ROOT))["confidence"] == 58


# --------------------------------------------------------------------------- society views


async def test_a_liar_telling_people_separately_is_one_origin(sc: Sidecar) -> None:
    """ann, who does not hold the claim, tells ben and cai on different days; when cai
    tells ben, that is ann's story again, not corroboration: ben stays at 58."""
    async with WsClient(sc.url) as c:
        await c.event("say", day=1, **say("ann", ["ben"], ROOT, "arson"))
        await c.event("say", day=2, **say("ann", ["cai"], ROOT, "arson"))
        await c.event("say", day=3, **say("cai", ["ben"], ROOT, "arson"))
        assert await history(c, "ben", ROOT) == ["formed"]
        assert (await held(c, "ben", ROOT))["confidence"] == 58
        origins = {e["origin"] for e in (await explain(c, "ben", ROOT))["evidence"]}
        assert len(origins) == 1


async def test_distribution_counts_independent_origins_per_value(sc: Sidecar) -> None:
    """Two sightings behind 'arson' (three residents), one utterance behind 'accident' (two)."""
    async with WsClient(sc.url) as c:
        await c.event("observe", day=1, **observe(["ann"], ROOT, "arson"))
        await c.event("observe", day=1, **observe(["ben"], ROOT, "arson"))
        await c.event("say", day=2, **say("ann", ["cai"], ROOT, "arson"))
        await c.event("say", day=2, **say("ben", ["cai"], ROOT, "arson"))
        await c.event("say", day=2, **say("dee", ["eve", "fay"], ROOT, "accident"))
        dist = await distribution(c, ROOT)
        values = {v["value"]: v for v in dist["values"]}
        assert (values["arson"]["residents"], values["arson"]["independent_origins"]) == (3, 2)
        assert (values["accident"]["residents"], values["accident"]["independent_origins"]) == (
            2,
            1,
        )
        assert values["accident"]["mean_confidence"] == 58
        # ann and ben saw it: the world observed 'arson'; two of five believe otherwise.
        assert (dist["observed_value"], dist["false_share"]) == ("arson", 0.4)


async def test_false_consensus_is_reported_not_copied_into_beliefs(sc: Sidecar) -> None:
    """Four believe a rumour the world saw refuted: false_share 0.8; only the witness changes."""
    async with WsClient(sc.url) as c:
        await c.event("say", day=1, **say("ann", ["ben", "cai", "dee", "eve"], ROOT, "arson"))
        before = {r: await belief_of(c, r, ROOT) for r in ("ben", "cai", "dee", "eve")}
        assert "observed_value" not in await distribution(c, ROOT)  # nobody saw anything yet
        seen = await c.event("observe", day=2, **observe(["fay"], ROOT, "accident"))
        assert seen["changes"] == 1  # fay forms a belief; nobody else is touched
        dist = await distribution(c, ROOT)
        assert (dist["observed_value"], dist["false_share"]) == ("accident", 0.8)
        assert {r["resident"]: r["value"] for r in dist["residents"]} == {
            "ben": "arson",
            "cai": "arson",
            "dee": "arson",
            "eve": "arson",
            "fay": "accident",
        }
        for resident, belief in before.items():
            assert await belief_of(c, resident, ROOT) == belief
            assert await history(c, resident, ROOT) == ["formed"]
        assert await belief_of(c, "ann", ROOT) is None  # the liar never believed it either


# --------------------------------------------------------------------------- mutable roots


async def test_newer_firsthand_sighting_of_a_mutable_root_is_an_update(sc: Sidecar) -> None:
    """bo at the tavern on day 2, at the market on day 5: `updated`, 78, old value in history."""
    root = "location:bo"
    async with WsClient(sc.url, subscribe=["ann"]) as c:
        await c.event("observe", day=2, **moved(observe(["ann"], root, "tavern")))
        await c.event("observe", day=3, **observe(["ann"], root, "tavern"))  # reinforced to 86
        await c.event("observe", day=5, **moved(observe(["ann"], root, "market")))
        note = await c.next_of("belief", root=root, change="updated")
        assert (note["change"], note["confidence"], note["prev_confidence"]) == ("updated", 78, 86)
        assert (note["state"], note["value"], note["prev_value"]) == (
            "influencing",
            "market",
            "tavern",
        )
        assert "day 2" in note["detail"] and "day 5" in note["detail"]
        belief = await held(c, "ann", root)
        assert (belief["value"], belief["source_kind"]) == ("market", "firsthand")
        last = (await explain(c, "ann", root))["history"][-1]
        assert (last["prev_value"], last["value"]) == ("tavern", "market")


async def test_mutable_sighting_not_newer_than_the_belief_is_a_doubt(sc: Sidecar) -> None:
    """A sighting on the same day as the belief's last evidence follows the core rule: doubted."""
    root = "location:bo"
    async with WsClient(sc.url) as c:
        await c.event("observe", day=2, **observe(["ann"], root, "tavern"))
        await c.event("observe", day=2, **moved(observe(["ann"], root, "market")))
        belief = await held(c, "ann", root)
        assert (belief["value"], belief["state"], belief["confidence"]) == (
            "tavern",
            "doubtful",
            58,
        )


async def test_hearsay_about_a_mutable_root_follows_the_core_rules(sc: Sidecar) -> None:
    """Told bo moved (mutable, newer) is still hearsay: doubted, never an update."""
    root = "location:bo"
    async with WsClient(sc.url) as c:
        await c.event("observe", day=2, **observe(["ann"], root, "tavern"))
        await c.event("say", day=5, **moved(say("cai", ["ann"], root, "market")))
        assert await history(c, "ann", root) == ["formed", "doubted"]
        assert (await held(c, "ann", root))["value"] == "tavern"


async def test_an_update_does_not_blame_who_said_the_old_value(sc: Sidecar) -> None:
    """Heard bo was at the tavern, later saw him at the market: the world changed, trust stays."""
    root = "location:bo"
    async with WsClient(sc.url) as c:
        await c.event("say", day=1, **say("cai", ["ann"], root, "tavern"))
        await c.event("observe", day=4, **moved(observe(["ann"], root, "market")))
        assert await history(c, "ann", root) == ["formed", "updated"]
        assert await trust_entries(c, "ann", "cai") == []


async def test_world_mutable_prefixes_make_updates_without_the_flag(tmp_path: Path) -> None:
    """With mutable_prefixes=("location:",) location roots update; other roots still doubt."""
    rules = Rules(mutable_prefixes=("location:",))
    async with running(tmp_path, rules=rules) as sc, WsClient(sc.url) as c:
        await c.event("observe", day=1, **observe(["ann"], "location:bo", "tavern"))
        await c.event("observe", day=1, **observe(["ann"], "mood:bo", "glad"))
        await c.event("observe", day=3, **observe(["ann"], "location:bo", "market"))
        await c.event("observe", day=3, **observe(["ann"], "mood:bo", "sad"))
        assert await history(c, "ann", "location:bo") == ["formed", "updated"]
        assert await history(c, "ann", "mood:bo") == ["formed", "doubted"]
    proc = rebuild_check(tmp_path / "x.db")
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --------------------------------------------------------------------------- beliefs about beliefs


async def test_hearing_a_claim_forms_a_firsthand_belief_about_the_speakers_belief(
    sc: Sidecar,
) -> None:
    """ben saw the truth, distrusts ann, yet hearing her forms believes:ann:<root> firsthand, 78."""
    async with WsClient(sc.url) as c:
        await c.event("observe", day=1, **observe(["ben"], ROOT, "accident"))
        await set_trust(c, "ben", "ann", 0.2, day=1)
        await c.event("say", day=2, **say("ann", ["ben"], ROOT, "arson"))
        mine = await held(c, "ben", ROOT)
        about = await held(c, "ben", "believes:ann:" + ROOT)
        assert (mine["value"], mine["state"]) == ("accident", "doubtful")
        assert about is not None
        assert (about["value"], about["confidence"], about["source_kind"], about["source"]) == (
            "arson",
            78,
            "firsthand",
            None,
        )


async def test_announce_and_overhearing_also_form_beliefs_about_beliefs(sc: Sidecar) -> None:
    """An announcement's audience and a say's overhearer both learn what the speaker claims."""
    async with WsClient(sc.url) as c:
        await c.event(
            "announce",
            day=1,
            speaker="ann",
            audience=["ben"],
            claim={"root": ROOT, "value": "arson"},
            subject="arson!",
        )
        await c.event("say", day=1, **say("ann", ["cai"], "tax", "up", overhearers=["dee"]))
        assert (await held(c, "ben", "believes:ann:" + ROOT))["value"] == "arson"
        overheard = await held(c, "dee", "believes:ann:tax")
        assert (overheard["value"], overheard["confidence"]) == ("up", 78)


async def test_beliefs_about_beliefs_are_first_order_only(sc: Sidecar) -> None:
    """ann claims what bo believes: cai holds that hearsay, but no believes:ann:believes:… root."""
    nested = "believes:bo:" + ROOT
    async with WsClient(sc.url) as c:
        ack = await c.event("say", day=1, **say("ann", ["cai"], nested, "arson"))
        assert ack["changes"] == 1
        held = await beliefs_of(c, "cai")
        assert list(held) == [nested]
        assert (held[nested]["source_kind"], held[nested]["source"]) == ("hearsay", "ann")
