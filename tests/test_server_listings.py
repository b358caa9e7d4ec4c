"""End-to-end: the ``residents`` and ``events`` listings (SPEC §10.8, §10.9) and ``hello.role``."""

from __future__ import annotations

from pathlib import Path

from wsclient import WsClient, observe, running, say

TOKENS = {"writer_tokens": ["town=w-secret"], "reader_tokens": ["town=r-secret"]}


async def test_residents_lists_every_resident_with_its_names_page_by_page(tmp_path: Path) -> None:
    """residents pages in id order with registered names; next continues exactly where it stopped."""
    async with running(tmp_path) as sc, WsClient(sc.url) as c:
        await c.event("say", 1, **say("bo", ["mira", "kai"], "water:well", "poisoned"))
        await c.event("observe", 2, **observe(["tom", "ann"], "lamp", "lit"))
        names = [{"resident": "mira", "names": {"en": "Mira", "zh-Hant": "米拉"}}]
        ack = await c.event("register", 2, residents=names)
        assert ack["type"] == "ack"
        seen: list[str] = []
        after = None
        while True:
            frame = {"type": "residents", "limit": 2} | ({"after": after} if after else {})
            reply = await c.request(frame)
            assert reply["type"] == "residents" and len(reply["residents"]) <= 2
            seen += [r["resident"] for r in reply["residents"]]
            if reply["next"] is None:
                break
            after = reply["next"]
        assert seen == ["ann", "bo", "kai", "mira", "tom"]
        whole = await c.request({"type": "residents"})
        by_id = {r["resident"]: r["names"] for r in whole["residents"]}
        assert by_id["mira"] == {"en": "Mira", "zh-Hant": "米拉"} and by_id["kai"] == {}
        assert whole["next"] is None


async def test_events_lists_the_log_with_seq_day_kind_and_who(tmp_path: Path) -> None:
    """events pages the log from a seq: seq, id, day, kind, speaker, subject; last is the log length."""
    async with running(tmp_path) as sc, WsClient(sc.url) as c:
        for n in range(1, 8):
            await c.event("say", n + 0.25, event_id=f"s{n}",
                          **say("bo", ["mira"], f"rumour:{n}", "yes", f"rumour {n}"))  # fmt: skip
        reply = await c.request({"type": "events", "from": 3, "limit": 2})
        assert [e["seq"] for e in reply["events"]] == [3, 4]
        assert (reply["from"], reply["last"], reply["next"]) == (3, 7, 5)
        first = reply["events"][0]
        assert first == {"seq": 3, "event_id": "s3", "day": 3.25, "kind": "say", "by": "bo",
                         "subject": "rumour 3"}  # fmt: skip
        tail = await c.request({"type": "events", "from": 6})
        assert [e["seq"] for e in tail["events"]] == [6, 7] and tail["next"] is None
        beyond = await c.request({"type": "events", "from": 50})
        assert beyond["events"] == [] and beyond["last"] == 7


async def test_listing_limits_are_validated(tmp_path: Path) -> None:
    """A limit outside 1..1000, a seq below 1 or a bad after is invalid_frame; the connection stays."""
    async with running(tmp_path) as sc, WsClient(sc.url) as c:
        for frame in (
            {"type": "events", "limit": 0},
            {"type": "events", "limit": 1001},
            {"type": "events", "from": 0},
            {"type": "events", "from": 2.5},
            {"type": "residents", "limit": "9"},
            {"type": "residents", "after": ""},
        ):
            reply = await c.request(frame)
            assert (reply["type"], reply["code"]) == ("error", "invalid_frame"), frame
        ok = await c.request({"type": "events", "from": 1.0, "limit": 1000.0})
        assert ok["type"] == "events"


async def test_hello_role_reader_makes_an_open_mode_connection_read_only(tmp_path: Path) -> None:
    """In open mode hello.role 'reader' gives a reader (events forbidden); without it a writer."""
    async with running(tmp_path) as sc:
        async with WsClient(sc.url, hello_extra={"role": "reader"}) as viewer:
            assert viewer.welcome is not None and viewer.welcome["role"] == "reader"
            refused = await viewer.event("observe", 1, **observe(["mira"], "lamp", "lit"))
            assert (refused["type"], refused["code"]) == ("error", "forbidden")
            fork = await viewer.request({"type": "fork", "into": "copy"})
            assert fork["code"] == "forbidden"
        async with WsClient(sc.url) as game:
            assert game.welcome is not None and game.welcome["role"] == "writer"


async def test_hello_role_writer_with_a_reader_token_is_unauthorized(tmp_path: Path) -> None:
    """hello.role 'writer' with a token that only reads is unauthorized (4001); a writer token passes."""
    async with running(tmp_path, **TOKENS) as sc:
        extra = {"role": "writer"}
        async with WsClient(sc.url, token="r-secret", hello_extra=extra) as c:
            assert c.hello_error is not None and c.hello_error["code"] == "unauthorized"
            assert await c.wait_closed() == 4001
        async with WsClient(sc.url, token="w-secret", hello_extra=extra) as c:
            assert c.welcome is not None and c.welcome["role"] == "writer"
        async with WsClient(sc.url, token="w-secret", hello_extra={"role": "reader"}) as c:
            assert c.welcome is not None and c.welcome["role"] == "reader"
        async with WsClient(sc.url, hello_extra={"role": "boss"}) as c:
            assert c.hello_error is not None and c.hello_error["code"] == "invalid_frame"
