"""End-to-end: the ``trust`` query a page at a time (SPEC §10.6), over the real server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgpack
from wsclient import WsClient, running

from protocol import MAX_OUTBOUND, change_summary, parse_client_frame
from sidecar.engine import parse_event
from sidecar.server.queries import TRUST_HISTORY_SHOWN, answer
from sidecar.store import Reader, Writer
from tools.graphpages import sqlite_steps

WORLD = "town"
SOURCES = 1_500  # sources Kai trusts: more than the largest page
#: Sources whose ids need the cursor's escapes, each with topics (one holding a ':').
ODD = ("a", "a%b", "a:b", "a:b:c")
RESETS = 60  # how often the game sets Kai's general trust in s0007


def _trust(n: int, source: str, value: float, topic: str | None = None) -> dict[str, Any]:
    return {"event_id": f"t{n}", "day": n / 100, "kind": "trust", "resident": "kai",
            "source": source, "value": value, **({"topic": topic} if topic else {})}  # fmt: skip


def _trusting(db: Path) -> None:
    """Kai trusts 1,500 sources in general, every third also on the well and the roads; the
    odd ids with topics; and the game sets Kai's trust in s0007 60 times. Written through the
    real writer, as the sidecar writes a game's trust events."""
    frames = []
    for i in range(SOURCES):
        source = f"s{i:04d}"
        frames.append(_trust(len(frames), source, round(0.1 + (i % 9) / 10, 2)))
        if i % 3 == 0:
            frames.append(_trust(len(frames), source, 0.3, "well"))
            frames.append(_trust(len(frames), source, 0.7, "roads"))
    for source in ODD:
        for topic in (None, "x", "x:y"):
            frames.append(_trust(len(frames), source, 0.4, topic))
    for i in range(RESETS):
        frames.append(_trust(len(frames), "s0007", round(0.2 + (i % 7) / 10, 2)))
    writer = Writer(db)
    writer.apply([(WORLD, parse_event(f)) for f in frames])
    writer.close()


def _whole_table(db: Path, source: str | None = None) -> list[Any]:
    """The whole trust table as one unpaged read gives it, in wire form (msgpack round trip)."""
    reader = Reader(db)
    try:
        rows = reader.trust(WORLD, "kai", source, latest=TRUST_HISTORY_SHOWN)
    finally:
        reader.close()
    entries = [{**r, "history": [change_summary(c) for c in r["history"]]} for r in rows]
    return list(msgpack.unpackb(msgpack.packb(entries), raw=False))


def _entries(pages: list[list[dict[str, Any]]]) -> list[Any]:
    return [e for page in pages for f in page for e in f["entries"]]


async def test_a_long_trust_table_comes_a_bounded_page_at_a_time(tmp_path: Path) -> None:
    """2,512 entries: the default page holds the first 100 in (source, topic) order; following
    next at the default and at limit 1,000 joins into exactly the unpaged table, in order; a
    source's own pages hold its entries only; every frame is under 60 KiB, in JSON text too."""
    db = tmp_path / "trust.db"
    _trusting(db)
    whole = _whole_table(db)
    assert len(whole) == SOURCES + 2 * (SOURCES // 3) + 3 * len(ODD)
    keys = [(e["source"], e["topic"] or "") for e in whole]
    assert keys == sorted(keys)
    async with running(tmp_path, db=db) as sc:
        for json in (False, True):
            async with WsClient(sc.url, json=json) as c:
                first = await c.request_all({"type": "trust", "resident": "kai"})
                assert len(_entries([first])) == 100 and first[0]["source"] is None
                # The odd ids' 12 entries sort first, then s0000 (general, roads, well), …
                assert first[0]["next"] == "s0051:well"  # … 88 of s0000 to s0051
                for limit in (None, 1000):
                    query = {"type": "trust", "resident": "kai"}
                    pages = await c.request_pages(query | ({"limit": limit} if limit else {}))
                    assert [len(_entries([p])) for p in pages][:-1] == [limit or 100] * (
                        len(pages) - 1
                    )
                    assert _entries(pages) == whole
                    assert all(len(f) < MAX_OUTBOUND for p in pages for f in map(_wire, p))
                # The odd ids: a's, a%b's, a:b's and a:b:c's entries, each source on its own.
                for source in ODD:
                    pages = await c.request_pages({"type": "trust", "resident": "kai", "source": source,
                                            "limit": 1})  # fmt: skip
                    got = _entries(pages)
                    assert [(e["source"], e["topic"]) for e in got] == [
                        (source, None), (source, "x"), (source, "x:y")
                    ]  # fmt: skip
                    assert got == _whole_table(db, source)
                    assert all(p[0]["source"] == source for p in pages)


def _wire(frame: dict[str, Any]) -> bytes:
    return bytes(msgpack.packb(frame))


async def test_an_entry_lists_its_latest_changes_and_counts_them_all(tmp_path: Path) -> None:
    """Set 61 times, s0007's general entry lists its latest 20 changes, oldest first, and
    history_total 61; the cursor names the last entry with its escapes."""
    db = tmp_path / "trust.db"
    _trusting(db)
    async with running(tmp_path, db=db) as sc, WsClient(sc.url) as c:
        page = await c.request({"type": "trust", "resident": "kai", "source": "s0007"})
        (entry,) = page["entries"]
        assert entry["history_total"] == RESETS + 1 and len(entry["history"]) == 20
        seqs = [h["seq"] for h in entry["history"]]
        assert seqs == sorted(seqs) and entry["history"][-1]["value"] == entry["value"]
        assert entry["history"][0]["event_id"] == f"t{_first_reset() + RESETS - 20}"
        for after, cursor in (("a%25b:x", "a%25b:x:y"), ("a%3Ab", "a%3Ab:x")):
            got = await c.request({"type": "trust", "resident": "kai", "after": after,
                                   "limit": 1})  # fmt: skip
            assert got["next"] == cursor, got["next"]


def _first_reset() -> int:
    """The event number of the first of s0007's resets (see :func:`_trusting`)."""
    return SOURCES + 2 * (SOURCES // 3) + 3 * len(ODD)


async def test_trust_paging_input_is_validated(tmp_path: Path) -> None:
    """limit 0, 1001, a string or 2.5, and an after that is no cursor (a number, empty, a bad
    or lowercase escape, an empty source or topic, too long) or names another source's entry
    are invalid_frame with a message naming the field; the connection stays; an unknown
    resident is not_found."""
    db = tmp_path / "trust.db"
    _trusting(db)
    async with running(tmp_path, db=db) as sc, WsClient(sc.url) as c:
        one = {"type": "trust", "resident": "kai"}
        for frame, field in (
            ({**one, "limit": 0}, "limit"),
            ({**one, "limit": 1001}, "limit"),
            ({**one, "limit": "10"}, "limit"),
            ({**one, "limit": 2.5}, "limit"),
            ({**one, "after": 7}, "after"),
            ({**one, "after": ""}, "after"),
            ({**one, "after": ["s0001", None]}, "after"),
            ({**one, "after": "a%3ab"}, "after"),
            ({**one, "after": "a%zz"}, "after"),
            ({**one, "after": "s0001:"}, "after"),
            ({**one, "after": ":well"}, "after"),
            ({**one, "after": "x" * 1001}, "after"),
            ({**one, "source": "s0003", "after": "s0001:well"}, "after"),
        ):
            reply = await c.request(frame)
            assert (reply["type"], reply["code"]) == ("error", "invalid_frame"), frame
            assert f"'{field}'" in reply["message"], reply
            assert reply["rid"] == frame["rid"]
        missing = await c.request({"type": "trust", "resident": "nobody"})
        assert (missing["type"], missing["code"]) == ("error", "not_found")
        # A cursor need not name a stored entry: the page starts after where it would be.
        again = await c.request({**one, "after": "s0001:zzz", "limit": 2.0})
        assert [(e["source"], e["topic"]) for e in again["entries"]] == [
            ("s0002", None), ("s0003", None)
        ]  # fmt: skip
        scoped = await c.request({**one, "source": "s0003", "after": "s0003"})
        assert [e["topic"] for e in scoped["entries"]] == ["roads", "well"]
        assert scoped["next"] is None


def test_a_deep_trust_page_costs_what_the_first_costs(tmp_path: Path) -> None:
    """The page after s1400 (near the end of 2,512 entries) takes the SQLite steps the first
    page takes (one primary-key range from the cursor, each entry's history by key), and a
    whole-table read takes over twenty times more."""
    db = tmp_path / "trust.db"
    _trusting(db)
    reader = Reader(db)
    try:

        def page(after: str | None) -> int:
            frame = {"type": "trust", "resident": "kai", "rid": 1} | ({"after": after} if after
                                                                        else {})  # fmt: skip
            query = parse_client_frame(frame)
            return sqlite_steps(reader, lambda: answer(reader, WORLD, query))

        first, deep = page(None), page("s1400")
        whole = sqlite_steps(reader, lambda: reader.trust(WORLD, "kai", latest=20))
    finally:
        reader.close()
    assert 0.8 * first < deep < 1.25 * first, (first, deep)
    assert whole > 20 * first, (first, whole)
