"""End-to-end: beliefs / explain / distribution / narrative / graph queries and paged replies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from wsclient import WsClient, db_rows, observe, running, say

from protocol import MAX_OUTBOUND, TAGS_SHOWN
from sidecar.server import Sidecar


@pytest.fixture
async def sc(tmp_path: Path) -> AsyncIterator[Sidecar]:
    async with running(tmp_path) as sidecar:
        yield sidecar


async def well_story(c: WsClient) -> None:
    """Bo tells Mira and Kai the well is poisoned; Mira and Tom then see it is clean."""
    await c.event("say", day=1, **say("bo", ["mira", "kai"], "water:well", "poisoned"))
    await c.event("observe", day=2, **observe(["mira", "tom"], "water:well", "clean"))


async def test_beliefs_query_lists_a_residents_beliefs(sc: Sidecar) -> None:
    """beliefs returns every belief of the resident with value, confidence, state and source."""
    async with WsClient(sc.url) as c:
        await well_story(c)
        await c.event("observe", day=2, **observe(["mira"], "bridge", "safe"))
        reply = await c.request({"type": "beliefs", "resident": "mira"})
        assert (reply["type"], reply["resident"], reply["part"], reply["more"]) == (
            "beliefs",
            "mira",
            0,
            False,
        )
        got = {b["root"]: b for b in reply["beliefs"]}
        assert set(got) == {"bridge", "water:well", "believes:bo:water:well"}
        well = got["water:well"]
        assert (well["value"], well["state"], well["source_kind"]) == (
            "poisoned",
            "doubtful",
            "hearsay",
        )
        assert well["confidence"] == 38
        assert well["source"] == "bo"
        assert len(well["evidence_refs"]) == 2


async def test_explain_carries_evidence_and_history(sc: Sidecar) -> None:
    """explain returns the belief, every piece of evidence behind it and its change history."""
    async with WsClient(sc.url) as c:
        await well_story(c)
        await c.event("observe", day=3, **observe(["mira"], "water:well", "clean"))
        parts = await c.request_all({"type": "explain", "resident": "mira", "root": "water:well"})
        assert len(parts) == 1
        reply = parts[0]
        assert reply["type"] == "explanation"
        assert (reply["belief"]["value"], reply["belief"]["state"]) == ("clean", "corrected")
        evidence = reply["evidence"]
        assert [(e["event_kind"], e["source_kind"], e["value"]) for e in evidence] == [
            ("say", "hearsay", "poisoned"),
            ("observe", "firsthand", "clean"),
            ("observe", "firsthand", "clean"),
        ]
        assert evidence[0]["source"] == "bo"
        assert [e["relation"] for e in evidence] == ["forms", "contradicts", "contradicts"]
        history = reply["history"]
        assert [(h["change"], h["prev_confidence"], h["confidence"]) for h in history] == [
            ("formed", None, 58),
            ("doubted", 58, 38),
            ("corrected", 38, 72),
        ]
        assert history[-1]["prev_value"] == "poisoned" and history[-1]["value"] == "clean"
        seqs = [h["seq"] for h in history]
        assert seqs == sorted(seqs)


async def test_distribution_summarises_each_value(sc: Sidecar) -> None:
    """distribution groups residents by value with counts, mean confidence and states."""
    async with WsClient(sc.url) as c:
        await well_story(c)
        reply = await c.request({"type": "distribution", "root": "water:well"})
        assert reply["type"] == "distribution" and reply["root"] == "water:well"
        by_value = {v["value"]: v for v in reply["values"]}
        assert set(by_value) == {"poisoned", "clean"}
        assert by_value["poisoned"]["residents"] == 2  # mira (doubtful) and kai
        assert by_value["poisoned"]["mean_confidence"] == 48.0  # (38 + 58) / 2
        assert by_value["poisoned"]["states"] == {"doubtful": 1, "influencing": 1}
        assert by_value["poisoned"]["independent_origins"] == 1  # both heard bo's one utterance
        assert by_value["clean"] == {
            "value": "clean",
            "residents": 1,
            "mean_confidence": 78.0,
            "states": {"influencing": 1},
            "independent_origins": 1,
        }
        # the world observed the well clean: two of three residents believe otherwise
        assert (reply["observed_value"], reply["false_share"]) == ("clean", 0.6667)
        assert sorted(r["resident"] for r in reply["residents"]) == ["kai", "mira", "tom"]
        empty = await c.request({"type": "distribution", "root": "no:such:root"})
        assert (empty["type"], empty["values"], empty["residents"]) == ("distribution", [], [])


async def test_unknown_resident_or_root_is_not_found(sc: Sidecar) -> None:
    """beliefs/explain/narrative of an unknown resident, explain of an unknown root: not_found."""
    async with WsClient(sc.url) as c:
        await well_story(c)
        for query in (
            {"type": "beliefs", "resident": "nobody"},
            {"type": "explain", "resident": "nobody", "root": "water:well"},
            {"type": "explain", "resident": "mira", "root": "no:such:root"},
            {"type": "narrative", "resident": "nobody"},
        ):
            reply = await c.request(query)
            assert (reply["type"], reply["code"]) == ("error", "not_found"), query
            assert reply["rid"] == query["rid"]
        known_but_empty = await c.request({"type": "beliefs", "resident": "bo"})
        assert (known_but_empty["type"], known_but_empty["beliefs"]) == ("beliefs", [])


async def test_beliefs_query_filters(sc: Sidecar) -> None:
    """beliefs narrows by root, prefix, states, people, places and minimum confidence."""
    async with WsClient(sc.url) as c:
        await well_story(c)
        await c.event("observe", day=2, **observe(["mira"], "bridge", "safe", places=["river"]))

        async def roots(**filters: object) -> list[str]:
            reply = await c.request({"type": "beliefs", "resident": "mira", **filters})
            return [b["root"] for b in reply["beliefs"]]

        assert await roots(root="water:well") == ["water:well"]
        assert await roots(root="no:such") == []
        assert await roots(prefix="believes:") == ["believes:bo:water:well"]
        assert await roots(prefix=["bridge", "water:"]) == ["bridge", "water:well"]
        assert await roots(states=["doubtful"]) == ["water:well"]
        assert await roots(places=["river"]) == ["bridge"]
        assert await roots(people=["bo"]) == ["believes:bo:water:well"]
        assert await roots(min_confidence=70) == ["believes:bo:water:well", "bridge"]
        assert await roots(states=["doubtful"], min_confidence=70) == []


async def test_narrative_focus_over_the_wire(sc: Sidecar) -> None:
    """narrative takes a focus; the reply echoes it and each entry says why it was chosen."""
    async with WsClient(sc.url) as c:
        await well_story(c)
        await c.event("observe", day=2, **observe(["mira"], "bridge", "safe", places=["river"]))
        focus = {"places": ["river"], "people": [], "roots": [], "topics": []}
        [reply] = await c.request_all({"type": "narrative", "resident": "mira", "focus": focus})
        assert reply["focus"] == focus and reply["day"] == 2.0
        entries = [e for s in reply["sections"] for e in s["entries"]]
        bridge = next(e for e in entries if e["root"] == "bridge")
        assert bridge["why"]["matched"] == ["place:river"]


async def test_register_names_residents_before_they_appear(sc: Sidecar) -> None:
    """A register frame is an event: acked, and a registered resident's day-1 narrative is
    empty rather than not_found; names in an unknown language are refused whole."""
    async with WsClient(sc.url) as c:
        frame = {
            "type": "register", "event_id": "reg-1", "day": 0,
            "residents": [{"resident": "mira", "names": {"en": "Mira", "zh-Hant": "米拉"}}],
        }  # fmt: skip
        await c.send(frame)
        ack = await c.ack_of("reg-1")
        assert (ack["type"], ack["changes"]) == ("ack", 0)
        [reply] = await c.request_all({"type": "narrative", "resident": "mira", "lang": "zh-Hant"})
        assert reply["text"] == "我沒有什麼特別的記憶。"
        bad = {
            **frame,
            "event_id": "reg-2",
            "residents": [{"resident": "kai", "names": {"fr": "K"}}],
        }
        await c.send(bad)
        refused = await c.ack_of("reg-2")
        assert (refused["type"], refused["code"]) == ("error", "invalid_event")
        gone = await c.request({"type": "narrative", "resident": "kai"})
        assert gone["code"] == "not_found"


async def test_narrative_and_graph_queries_answer(sc: Sidecar) -> None:
    """narrative and graph replies arrive with their type and rid over the wire."""
    async with WsClient(sc.url) as c:
        await well_story(c)
        narrative = await c.request_all({"type": "narrative", "resident": "mira"})
        assert narrative[0]["type"] == "narrative" and narrative[0]["resident"] == "mira"
        assert narrative[-1]["more"] is False
        graph = await c.request_all({"type": "graph", "root": "water:well"})
        assert graph[0]["type"] == "graph"
        assert sum(len(p["nodes"]) for p in graph) > 0


async def test_long_beliefs_reply_is_paged_under_60_kib(sc: Sidecar) -> None:
    """A beliefs reply over 60 KiB comes in parts, each under 60 KiB, adding up to every belief."""
    async with WsClient(sc.url) as c:
        subject = "a long account of what was seen at the crossroads " * 78  # ~4 KB
        ids = [
            await c.send_event("observe", **observe(["mira"], f"road:{i:03d}", i, subject=subject))
            for i in range(40)
        ]
        for event_id in ids:
            assert (await c.ack_of(event_id))["type"] == "ack"
        await c.send({"type": "beliefs", "resident": "mira", "rid": "page"})
        parts = [await c.next_received(lambda f: f.get("rid") == "page")]
        while parts[-1].frame["more"]:
            parts.append(await c.next_received(lambda f: f.get("rid") == "page"))
        assert len(parts) >= 3
        assert all(p.size < MAX_OUTBOUND for p in parts)
        assert [p.frame["part"] for p in parts] == list(range(len(parts)))
        assert [p.frame["more"] for p in parts] == [True] * (len(parts) - 1) + [False]
        beliefs = [b for p in parts for b in p.frame["beliefs"]]
        assert [b["root"] for b in beliefs] == [f"road:{i:03d}" for i in range(40)]
        assert all(b["subject"] == subject for b in beliefs)
        assert [b["value"] for b in beliefs] == list(range(40))
        stored = db_rows(
            sc.config.db, "SELECT root FROM beliefs WHERE resident = 'mira' ORDER BY root"
        )
        assert [r[0] for r in stored] == [b["root"] for b in beliefs]

        after = await c.request_all({"type": "beliefs", "resident": "mira", "after": "road:029"})
        assert [b["root"] for p in after for b in p["beliefs"]] == [
            f"road:{i:03d}" for i in range(30, 40)
        ]


async def test_a_belief_about_many_people_still_answers_bounded(sc: Sidecar) -> None:
    """A belief naming 320 long ids (64 KB) lists the first few in beliefs and explain, with
    their count: one large belief no longer makes its resident's replies too_large."""
    async with WsClient(sc.url) as c:
        people = [f"{i:04d}" + "p" * 196 for i in range(320)]  # ~64 KB of people on one belief
        ack = await c.event("observe", **observe(["mira"], "crowd", "large", people=people))
        assert ack["type"] == "ack"
        [listing] = await c.request_all({"type": "beliefs", "resident": "mira"})
        [explained] = await c.request_all({"type": "explain", "resident": "mira", "root": "crowd"})
        for summary in (listing["beliefs"][0], explained["belief"]):
            assert summary["people"] == people[:TAGS_SHOWN]
            assert summary["people_count"] == 320


async def test_reply_that_cannot_fit_is_too_large_and_connection_survives(sc: Sidecar) -> None:
    """A narrative whose echoed focus (the client's own 80 KB of terms) cannot fit in a frame
    is too_large; the connection then answers the same query with a small focus."""
    async with WsClient(sc.url) as c:
        await well_story(c)
        terms = [f"{i:03d}" + "t" * 197 for i in range(100)]
        focus = {"people": terms, "places": terms, "roots": terms, "topics": terms}
        reply = await c.request({"type": "narrative", "resident": "mira", "focus": focus})
        assert (reply["type"], reply["code"]) == ("error", "too_large")
        assert reply["rid"] is not None
        fine = await c.request_all(
            {"type": "narrative", "resident": "mira", "focus": {"people": ["bo"]}}
        )
        assert fine[-1]["type"] == "narrative" and fine[-1]["more"] is False


async def test_query_reads_the_connections_own_earlier_writes(sc: Sidecar) -> None:
    """A query sent right after events, without waiting for their acks, sees those events."""
    async with WsClient(sc.url) as c:
        for i in range(30):
            await c.send_event("observe", **observe(["mira"], f"k{i:02d}", i))
        reply = await c.request({"type": "beliefs", "resident": "mira"})
        assert len(reply["beliefs"]) == 30
        assert len(c.untaken("ack")) == 30  # every ack came before the reply


async def test_json_paged_reply_frames_stay_under_60_kib(sc: Sidecar) -> None:
    """Paged replies to a JSON text connection stay under 60 KiB even when escapes swell them."""
    async with WsClient(sc.url, json=True) as c:
        subject = 'he said "go" \\ then\n' * 190  # every quote, backslash, newline is escaped
        ids = [
            await c.send_event("observe", **observe(["mira"], f"road:{i:03d}", i, subject=subject))
            for i in range(40)
        ]
        for event_id in ids:
            assert (await c.ack_of(event_id))["type"] == "ack"
        await c.send({"type": "beliefs", "resident": "mira", "rid": "page"})
        parts = [await c.next_received(lambda f: f.get("rid") == "page")]
        while parts[-1].frame["more"]:
            parts.append(await c.next_received(lambda f: f.get("rid") == "page"))
        assert len(parts) >= 3 and all(p.text for p in parts)
        assert all(p.size < MAX_OUTBOUND for p in parts), [p.size for p in parts]
        beliefs = [b for p in parts for b in p.frame["beliefs"]]
        assert [b["root"] for b in beliefs] == [f"road:{i:03d}" for i in range(40)]
        assert all(b["subject"] == subject for b in beliefs)


async def test_graph_of_unknown_resident_or_root_is_not_found(sc: Sidecar) -> None:
    """graph of an unknown resident, or of a root nobody holds, is not_found, not internal_error."""
    async with WsClient(sc.url) as c:
        await well_story(c)
        for query in (
            {"type": "graph", "resident": "nobody"},
            {"type": "graph", "root": "no:such:root"},
            {"type": "graph", "resident": "mira", "root": "no:such:root"},
        ):
            reply = await c.request(query)
            assert (reply["type"], reply["code"], reply["rid"]) == (
                "error",
                "not_found",
                query["rid"],
            )
        assert (await c.request({"type": "graph", "resident": "mira"}))["type"] == "graph"
