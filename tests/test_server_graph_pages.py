"""End-to-end: the ``graph`` query a page at a time (SPEC §10.5), over the real server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wsclient import WsClient, running

from protocol import MAX_OUTBOUND
from sidecar.engine import Rules, parse_event
from sidecar.store import Writer

TOLD = 1_250  # tellings of one belief: more than the largest page


def _told(db: Path) -> None:
    """Mira hears 1,250 times that the well is poisoned (one teller each); Kai once."""
    writer = Writer(db)
    events = [
        ("town", parse_event({
            "event_id": f"s{n}", "day": n / 10, "kind": "say", "speaker": f"teller{n:04d}",
            "listeners": ["mira"] if n > 1 else ["mira", "kai"],
            "claim": {"root": "water:well", "value": "poisoned"}, "subject": f"telling {n}",
        }))
        for n in range(1, TOLD + 1)
    ]  # fmt: skip
    writer.apply(events)
    writer.close()


def _nodes(frames: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [n for f in frames for n in f["nodes"] if n["type"] == kind]


async def test_a_much_told_belief_comes_a_bounded_page_at_a_time(tmp_path: Path) -> None:
    """1,250 tellings: the default page holds 100 event nodes (the first by day), limit 1,000
    the next 1,000; following next walks all 1,250 exactly once, each page with the claim node
    and the tellers its edges reach, every edge between nodes of its page."""
    db = tmp_path / "told.db"
    _told(db)
    async with running(tmp_path, db=db) as sc, WsClient(sc.url) as c:
        first = await c.request_all({"type": "graph", "resident": "mira", "root": "water:well"})
        events = _nodes(first, "event")
        assert [e["event_id"] for e in events] == [f"s{n}" for n in range(1, 101)]
        assert first[0]["next"] is not None and first[0]["root"] == "water:well"
        pages = await c.request_pages({"type": "graph", "resident": "mira", "root": "water:well",
                                "limit": 1000})  # fmt: skip
        assert [len(_nodes(p, "event")) for p in pages] == [1000, 250]
        seen = [e["event_id"] for p in pages for e in _nodes(p, "event")]
        assert seen == [f"s{n}" for n in range(1, TOLD + 1)]
        for page in pages:
            ids = {n["id"] for f in page for n in f["nodes"]}
            assert [n["resident"] for n in _nodes(page, "claim")] == ["mira"]
            assert all(e["source"] in ids and e["target"] in ids for f in page for e in f["edges"])
            assert len(_nodes(page, "person")) == len(_nodes(page, "event"))  # one teller each
        # Root alone pages by resident: kai's one telling follows mira's 1,250.
        across = await c.request_pages({"type": "graph", "root": "water:well", "limit": 1000})
        holders = [[n["resident"] for n in _nodes(p, "claim")] for p in across]
        assert holders == [["kai", "mira"], ["mira"]]
        # 1,000 pieces of evidence on the first page: kai's s1 and mira's s1 to s999 (s1 is
        # one event node for both); the rest of mira's on the second.
        assert [len(_nodes(p, "event")) for p in across] == [999, 251]


async def test_graph_pages_follow_the_log_and_miss_nothing_logged_between_them(
    tmp_path: Path,
) -> None:
    """A belief's evidence is walked in log order, not day order: a late telling (dated
    before tellings already logged) comes after them, and one logged between two pages,
    dated before the piece the first page ended at, is on a later page. Walking every page
    gives every piece exactly once. (In day order the first page would have started with the
    late telling and the one logged between pages would have fallen behind the cursor.)"""

    def telling(n: int, day: float) -> dict[str, Any]:
        return {"event_id": f"s{n}", "day": day, "speaker": f"teller{n}", "listeners": ["mira"],
                "claim": {"root": "water:well", "value": "poisoned"}, "subject": f"telling {n}"}  # fmt: skip

    query = {"type": "graph", "resident": "mira", "root": "water:well", "limit": 2}
    async with running(tmp_path, rules=Rules(late_event_days=10.0)) as sc, WsClient(sc.url) as c:
        for n, day in enumerate([5, 6, 7, 3]):  # s3 is logged last and dated first
            assert (await c.event("say", **telling(n, day)))["type"] == "ack"
        first = await c.request_all(query)
        assert [e["event_id"] for e in _nodes(first, "event")] == ["s0", "s1"]
        assert (await c.event("say", **telling(4, 4)))["type"] == "ack"  # between two pages
        pages, after = [], first[-1]["next"]
        while after is not None:
            frames = await c.request_all({**query, "after": after})
            pages.append([e["event_id"] for e in _nodes(frames, "event")])
            after = frames[-1]["next"]
        assert pages == [["s2", "s3"], ["s4"]]


async def test_graph_paging_input_is_validated(tmp_path: Path) -> None:
    """limit 0 or 1001, a limit or after of the wrong type, and an after that is no evidence of
    this graph are invalid_frame with a message naming the field; the connection stays."""
    db = tmp_path / "told.db"
    _told(db)
    async with running(tmp_path, db=db) as sc, WsClient(sc.url) as c:
        one = {"type": "graph", "resident": "mira", "root": "water:well"}
        page = await c.request({**one, "limit": 1})
        cursor = page["next"]
        for frame, field in (
            ({**one, "limit": 0}, "limit"),
            ({**one, "limit": 1001}, "limit"),
            ({**one, "limit": "10"}, "limit"),
            ({**one, "limit": 2.5}, "limit"),
            ({**one, "after": 7}, "after"),
            ({**one, "after": ""}, "after"),
            ({**one, "after": ["s1/mira"]}, "after"),
            ({**one, "after": "x" * 1001}, "after"),
            ({**one, "after": "no-such-evidence"}, "after"),
            ({"type": "graph", "resident": "kai", "after": cursor}, "after"),  # mira's evidence
        ):
            reply = await c.request(frame)
            assert (reply["type"], reply["code"]) == ("error", "invalid_frame"), frame
            assert f"'{field}'" in reply["message"], reply
            assert reply["rid"] == frame["rid"]
        again = await c.request({**one, "after": cursor, "limit": 1.0})
        assert [n["event_id"] for n in again["nodes"] if n["type"] == "event"] == ["s2"]


async def test_every_graph_frame_stays_under_the_limit(tmp_path: Path) -> None:
    """The largest page (limit 1,000) of long tellings still comes in frames under 60 KiB,
    in JSON text too."""
    db = tmp_path / "told.db"
    _told(db)
    async with running(tmp_path, db=db) as sc:
        for json in (False, True):
            async with WsClient(sc.url, json=json) as c:
                query = {"type": "graph", "root": "water:well", "limit": 1000, "rid": "g"}
                await c.send(query)
                parts = [await c.next_received(lambda f: f.get("rid") == "g")]
                while parts[-1].frame["more"]:
                    parts.append(await c.next_received(lambda f: f.get("rid") == "g"))
                assert len(parts) > 1 and all(p.text == json for p in parts)
                assert all(p.size < MAX_OUTBOUND for p in parts), [p.size for p in parts]
