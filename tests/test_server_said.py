"""End-to-end: the ``said`` query (SPEC §10.10) over the real server — what a resident said,
to whom and when, a page at a time; bad input refused with a code; rebuilt exactly."""

from __future__ import annotations

from pathlib import Path

from wsclient import WsClient, observe, rebuild_check, running, say


async def test_said_pages_a_residents_own_words_lies_included(tmp_path: Path) -> None:
    """Mira saw the well dry, then told Kai and Lena it is fine and announced it to everyone:
    the said query lists each telling with its claim, day and listeners, page by page, while
    her belief stays what she saw."""
    async with running(tmp_path) as sc, WsClient(sc.url) as c:
        await c.event(
            "observe", 1, **observe(["mira", "bo"], "water:well", "dry", "the well is dry")
        )
        for n in range(5):
            ack = await c.event("say", 2 + n, event_id=f"s{n}",
                                **say("mira", ["kai", "lena"], "water:well", "fine",
                                      "the well is fine", overhearers=["bo"]))  # fmt: skip
            assert ack["type"] == "ack"
        ack = await c.event("announce", 8, event_id="a", speaker="mira", audience="*",
                            claim={"root": "water:well", "value": "fine"},
                            subject="the well is fine")  # fmt: skip
        assert ack["type"] == "ack"
        seen, start = [], 1
        while True:
            reply = await c.request({"type": "said", "resident": "mira", "from": start, "limit": 2})
            assert reply["type"] == "said" and reply["resident"] == "mira"
            assert len(reply["said"]) <= 2 and reply["from"] == start
            seen += reply["said"]
            if reply["next"] is None:
                break
            start = reply["next"]
        assert [e["event_id"] for e in seen] == ["s0", "s1", "s2", "s3", "s4", "a"]
        first = seen[0]
        assert first == {
            "seq": 2, "event_id": "s0", "day": 2.0, "kind": "say", "root": "water:well",
            "value": "fine", "subject": "the well is fine", "topic": None,
            "to": ["kai", "lena"], "to_count": 2, "everyone": False,
        }  # fmt: skip
        assert seen[-1]["everyone"] and seen[-1]["to"] == ["bo", "kai", "lena"]
        belief = await c.request({"type": "beliefs", "resident": "mira", "root": "water:well"})
        assert [b["value"] for b in belief["beliefs"]] == ["dry"]
        quiet = await c.request({"type": "said", "resident": "bo"})
        assert quiet["said"] == [] and quiet["next"] is None
    rebuild_check(tmp_path / "x.db")


async def test_said_refuses_bad_input_with_a_code_and_the_connection_stays(tmp_path: Path) -> None:
    """No resident, a from below 1, a limit outside 1..1000: invalid_frame; an unknown
    resident: not_found; the connection answers the next query."""
    async with running(tmp_path) as sc, WsClient(sc.url) as c:
        await c.event("say", 1, **say("bo", ["mira"], "water:well", "poisoned"))
        for frame, code in (
            ({"type": "said"}, "invalid_frame"),
            ({"type": "said", "resident": "bo", "from": 0}, "invalid_frame"),
            ({"type": "said", "resident": "bo", "from": "3"}, "invalid_frame"),
            ({"type": "said", "resident": "bo", "limit": 1001}, "invalid_frame"),
            ({"type": "said", "resident": "bo", "limit": 0}, "invalid_frame"),
            ({"type": "said", "resident": "nobody"}, "not_found"),
        ):
            reply = await c.request(frame)
            assert (reply["type"], reply["code"]) == ("error", code), frame
        ok = await c.request({"type": "said", "resident": "bo", "limit": 1000.0})
        assert [e["to"] for e in ok["said"]] == [["mira"]]
