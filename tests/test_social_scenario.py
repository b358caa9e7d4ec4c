"""The issue-4 story end to end over the wire: one liar, five listeners, a sighting, an echo."""

from __future__ import annotations

from pathlib import Path

from social_helpers import explain, held, history, rebuild_check, set_trust, trust_entries
from wsclient import WsClient, observe, running, say

LIAR = "vex"
LIE = "granary:thief"
TRUST = {"ann": 0.9, "ben": 0.75, "cai": 0.6, "dee": 0.4, "eli": 0.2}
#: 35 + 40·(t − 0.2)/0.7, rounded: what each listener makes of the same sentence.
EXPECTED = {"ann": 75, "ben": 66, "cai": 58, "dee": 46, "eli": 35}


async def test_a_lie_spreads_is_seen_through_and_its_echo_counts_for_nothing(
    tmp_path: Path,
) -> None:
    """Trust shapes a lie's reach; a sighting corrects cai, costing vex trust; echoes add none."""
    async with running(tmp_path) as sc, WsClient(sc.url, subscribe="*") as c:
        # 1. Five residents trust vex differently; one sentence reaches all five.
        for resident, t in TRUST.items():
            await set_trust(c, resident, LIAR, t)
        told = await c.event(
            "say", day=1, **say(LIAR, list(TRUST), LIE, "fay", subject="fay robbed the granary")
        )
        assert told["type"] == "ack"
        assert {r: (await held(c, r, LIE))["confidence"] for r in TRUST} == EXPECTED
        origins = {e["origin"] for r in TRUST for e in (await explain(c, r, LIE))["evidence"]}
        assert len(origins) == 1  # one utterance: one origin

        # 2. cai sees the rats for herself, twice: doubted, then corrected.
        await c.event(
            "observe", day=2, **observe(["cai"], LIE, "rats", subject="rats in the granary")
        )
        assert (await held(c, "cai", LIE))["state"] == "doubtful"
        await c.event("observe", day=3, **observe(["cai"], LIE, "rats", subject="rats again"))
        corrected = await held(c, "cai", LIE)
        assert (corrected["value"], corrected["state"], corrected["confidence"]) == (
            "rats",
            "corrected",
            72,
        )
        assert await history(c, "cai", LIE) == ["formed", "doubted", "corrected"]

        # 3. cai's trust in vex has fallen: 0.6 → 0.5 (contradicted) → 0.35 (corrected).
        [entry] = await trust_entries(c, "cai", LIAR)
        assert entry["value"] == 0.35
        assert [h["detail"] for h in entry["history"]] == ["set", "contradicted", "corrected"]
        for other in ("ann", "ben", "dee", "eli"):  # nobody else saw anything
            [theirs] = await trust_entries(c, other, LIAR)
            assert theirs["value"] == TRUST[other]

        # 4. vex's next lie reaches cai weaker than the first did (44 < 58); ann still at 75.
        await c.event("say", day=4, **say(LIAR, ["cai", "ann"], "well:water", "poisoned"))
        second = await held(c, "cai", "well:water")
        assert second["confidence"] == 44 < EXPECTED["cai"]
        assert (await held(c, "ann", "well:water"))["confidence"] == 75

        # 5. The rumour comes back to ann, its first listener: from dee (the same utterance)
        #    and around a loop through gus (ann already in its hops). Neither reinforces.
        await c.event("say", day=5, **say("dee", ["ann"], LIE, "fay"))
        await c.event("say", day=5, **say("ann", ["gus"], LIE, "fay"))
        await c.event("say", day=6, **say("gus", ["ann"], LIE, "fay"))
        ann = await held(c, "ann", LIE)
        assert (ann["confidence"], ann["state"]) == (75, "influencing")
        assert await history(c, "ann", LIE) == ["formed"]
        heard = (await explain(c, "ann", LIE))["evidence"]
        assert [e["hops"] for e in heard] == [[LIAR], [LIAR, "dee"], [LIAR, "ann", "gus"]]
        assert len({e["origin"] for e in heard}) == 1
        assert (await held(c, "gus", LIE))["confidence"] == 58

        # 6. The town: the world saw rats; most still believe the lie, from one origin.
        dist = await c.request({"type": "distribution", "root": LIE})
        values = {v["value"]: v for v in dist["values"]}
        assert (values["fay"]["residents"], values["fay"]["independent_origins"]) == (5, 1)
        assert (dist["observed_value"], dist["false_share"]) == ("rats", round(5 / 6, 4))

    # 7. The world log replays to exactly these beliefs and changes.
    proc = rebuild_check(tmp_path / "x.db")
    assert proc.returncode == 0, proc.stdout + proc.stderr
