"""End-to-end: every wire error code is reachable; non-fatal errors leave the connection open."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from wsclient import Frame, WsClient, db_rows, observe, running, within

from protocol import ErrorCode
from sidecar.engine import rules_from_mapping
from sidecar.server import Sidecar
from sidecar.server.session import Limits

#: Codes a correct server cannot be driven to by a client alone: the epistemic guard is not
#: wired into the server, the writer queue holds 20000 events, and internal_error is a bug.
UNREACHABLE = {ErrorCode.OVERLOADED, ErrorCode.INTERNAL_ERROR}


@pytest.fixture
async def sc(tmp_path: Path) -> AsyncIterator[Sidecar]:
    async with running(tmp_path) as sidecar:
        yield sidecar


async def expect_error_then_ack(c: WsClient, message: bytes | str | Frame, code: str) -> Frame:
    """Send something bad, expect ``error`` with ``code``, then show a good event is still acked."""
    if isinstance(message, dict):
        await c.send(message)
    else:
        await c.send_raw(message)
    error = await c.next_of("error")
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"]
    ack = await c.event("tick", day=1)
    assert ack["type"] == "ack", "the connection must survive a non-fatal error"
    return error


BAD_FRAMES: list[tuple[str, Any]] = [
    ("not msgpack", b"\xc1"),
    ("a msgpack list, not a map", msgpack.packb([1, 2, 3])),
    ("a non-string map key", msgpack.packb({1: "x", "type": "beliefs"})),
    ("an integer beyond 2^53", msgpack.packb({"type": "beliefs", "resident": "m", "n": 2**60})),
    ("a msgpack ext type", msgpack.packb({"type": "beliefs", "x": msgpack.ExtType(5, b"ab")})),
    ("a bin value", msgpack.packb({"type": "beliefs", "resident": b"mira"}, use_bin_type=True)),
    ("trailing bytes", msgpack.packb({"type": "beliefs", "resident": "m"}) + b"\x00"),
    ("malformed JSON text", '{"type": "beliefs",'),
    ("JSON that is not a map", "[1, 2]"),
    ("a frame without a type", {"resident": "mira"}),
]


@pytest.mark.parametrize(("what", "message"), BAD_FRAMES, ids=[w for w, _ in BAD_FRAMES])
async def test_bad_frames_are_refused_and_connection_survives(
    sc: Sidecar, what: str, message: Any
) -> None:
    """Frames breaking the codec rules get bad_frame and the connection goes on."""
    async with WsClient(sc.url) as c:
        await expect_error_then_ack(c, message, "bad_frame")


INVALID_FRAMES: list[tuple[str, Frame]] = [
    ("beliefs without resident", {"type": "beliefs"}),
    ("explain without root", {"type": "explain", "resident": "mira"}),
    ("subscribe with crossing 200", {"type": "subscribe", "residents": "*", "crossing": 200}),
    (
        "subscribe to an unknown change kind",
        {"type": "subscribe", "residents": "*", "changes": ["x"]},
    ),
    ("subscribe without residents", {"type": "subscribe"}),
    ("narrative in klingon", {"type": "narrative", "resident": "mira", "lang": "tlh"}),
    ("graph of nothing", {"type": "graph"}),
    ("a second hello", {"type": "hello", "protocol": 1, "world": "town"}),
    ("a map as rid", {"type": "beliefs", "resident": "mira", "rid": {"a": 1}}),
    ("beliefs in an unknown state", {"type": "beliefs", "resident": "mira", "states": ["x"]}),
    ("beliefs above 100", {"type": "beliefs", "resident": "mira", "min_confidence": 101}),
    ("beliefs with a numeric prefix", {"type": "beliefs", "resident": "mira", "prefix": [1]}),
    ("narrative focus as a list", {"type": "narrative", "resident": "mira", "focus": ["bo"]}),
    (
        "narrative focus with an empty person",
        {"type": "narrative", "resident": "mira", "focus": {"people": [""]}},
    ),
]


@pytest.mark.parametrize(("what", "frame"), INVALID_FRAMES, ids=[w for w, _ in INVALID_FRAMES])
async def test_invalid_frames_are_refused_and_connection_survives(
    sc: Sidecar, what: str, frame: Frame
) -> None:
    """Known frame types with bad or missing fields get invalid_frame; the connection goes on."""
    async with WsClient(sc.url) as c:
        await expect_error_then_ack(c, frame, "invalid_frame")


async def test_error_echoes_rid_and_event_id(sc: Sidecar) -> None:
    """An error answering a request carries its rid; one refusing an event carries its event_id."""
    async with WsClient(sc.url) as c:
        reply = await c.request({"type": "teleport"})
        assert (reply["type"], reply["code"], reply["rid"]) == (
            "error",
            "unknown_type",
            reply["rid"],
        )
        refused = await c.request({"type": "event", "event_id": "e-bad", "kind": "say", "day": 1})
        # a say without a speaker is hearsay without a source: the epistemic guard refuses it
        assert (refused["code"], refused["event_id"]) == ("contract_violation", "e-bad")
        assert refused["reason"] == "hearsay_without_source"
        ack = await c.request({"type": "event", "event_id": "e-good", "kind": "tick", "day": 1})
        assert (ack["type"], ack["event_id"]) == ("ack", "e-good")


async def test_every_error_code_is_reachable_over_the_wire(tmp_path: Path) -> None:
    """Each documented error code a client can provoke is sent over a real connection."""
    seen: set[str] = set()

    def saw(frame: Frame | None) -> None:
        assert frame is not None and frame["type"] == "error", frame
        seen.add(frame["code"])

    strict = {"town": rules_from_mapping({"late_event_days": 0})}  # refuses a clock going back
    async with running(
        tmp_path, writer_tokens=["town=secret"], reader_tokens=["town=ro"], world_rules=strict
    ) as sc:
        async with WsClient(sc.url, token="secret") as c:
            saw(await expect_error_then_ack(c, b"\xc1", "bad_frame"))
            past = {"type": "event", "event_id": "past", "day": 0.5, "kind": "tick"}
            saw(await expect_error_then_ack(c, past, "clock_backwards"))
            schema = {"type": "schema", "event_id": "sch", "day": 1,
                      "roots": [{"prefix": "well", "values": ["clean"]}]}  # fmt: skip
            assert (await c.request(schema))["type"] == "ack"
            typo = {"type": "event", "event_id": "typo", "day": 1, "kind": "observe",
                    "witnesses": ["mira"], "claim": {"root": "well", "value": "clena"},
                    "subject": "s"}  # fmt: skip
            saw(await expect_error_then_ack(c, typo, "schema_violation"))
            saw(await expect_error_then_ack(c, {"type": "teleport"}, "unknown_type"))
            saw(await expect_error_then_ack(c, {"type": "beliefs"}, "invalid_frame"))
            saw(await expect_error_then_ack(c, {"type": "event", "kind": "tick"}, "invalid_event"))
            forged = {"type": "event", "event_id": "forged", "day": 1, "kind": "act",
                      "actor": "mira", "action": "open", "status": "rejected",
                      "claim": {"root": "action:mira:open", "value": "completed"}}  # fmt: skip
            saw(await expect_error_then_ack(c, forged, "contract_violation"))
            crowd = {"type": "event", "event_id": "crowd", "day": 1, "kind": "observe",
                     **observe([f"w{i}" for i in range(257)], "r", 1)}  # fmt: skip
            saw(await expect_error_then_ack(c, crowd, "too_many_residents"))
            saw(await c.request({"type": "beliefs", "resident": "nobody"}))
            terms = [f"{i:03d}" + "t" * 197 for i in range(100)]  # an 80 KB focus, echoed
            focus = {"people": terms, "places": terms, "roots": terms, "topics": terms}
            await c.event("observe", **observe(["mira"], "crowd", "big"))
            saw(await c.request({"type": "narrative", "resident": "mira", "focus": focus}))
        async with WsClient(sc.url, token="ro") as r:
            saw(await r.event("tick", day=2))
        async with WsClient(sc.url, token="wrong") as bad:
            saw(bad.hello_error)
            assert await bad.wait_closed() == 4001
        async with WsClient(sc.url, token="secret", hello_extra={"protocol": 2}) as old:
            saw(old.hello_error)
            assert await old.wait_closed() == 4002
        async with WsClient(sc.url, token="secret", hello=False) as rude:
            await rude.send({"type": "beliefs", "resident": "mira"})
            saw(await rude.next_of("error"))
            assert await rude.wait_closed() == 4000
    async with (
        running(tmp_path, db=tmp_path / "slow.db", outbox_limit=4096) as sc,
        WsClient(sc.url) as writer,
        WsClient(sc.url, subscribe="*") as slow,
    ):
        # One notification bigger than this peer's whole outbox bound: slow_consumer.
        await writer.event("observe", **observe(["mira"], "well", "clean", subject="s" * 4000))
        assert await slow.wait_closed() == 4008
        saw(slow.untaken("error")[-1])
    limits = Limits(max_subscriptions=1)
    async with (
        running(tmp_path, db=tmp_path / "limits.db", limits=limits) as sc,
        WsClient(sc.url, subscribe="*") as greedy,
    ):
        saw(await greedy.request({"type": "subscribe", "residents": ["mira"]}))
        assert (await greedy.request({"type": "unsubscribe"}))["type"] == "unsubscribed"
    async with (
        running(tmp_path, db=tmp_path / "stop.db", commit_grace=0.0) as sc,
        WsClient(sc.url) as late,
    ):
        crowd = [f"w{i}" for i in range(200)]
        for i in range(200):
            await late.send_event("observe", **observe(crowd, f"k:{i}", i))

        async def backlog() -> None:
            while sc.writer.queued < 2:
                await asyncio.sleep(0.005)

        await within(backlog(), 30)
        await within(sc.stop(), 30)
        await late.wait_closed()
        saw(late.untaken("error")[-1])
    async with (
        running(tmp_path, db=tmp_path / "busy.db") as sc,
        WsClient(sc.url) as source,
        WsClient(sc.url, "slot") as slot,
    ):
        await source.event("tick", 1, event_id="t")
        await source.send({"type": "fork", "into": "slot", "rid": "f"})
        while "slot" not in sc.writer.saving:  # (its worker process is only starting)
            await asyncio.sleep(0.005)
        saw(await slot.event("tick", 1, event_id="early"))  # world_busy
        forked = await source.next_where(lambda f: f.get("rid") == "f", 60)
        assert forked["type"] == "forked"
    assert seen == {str(code) for code in ErrorCode} - {str(code) for code in UNREACHABLE}


async def test_refused_event_of_a_burst_stores_nothing_of_itself_only(sc: Sidecar) -> None:
    """In a burst, the one invalid event is refused whole; its neighbours commit and are acked."""
    async with WsClient(sc.url) as c:
        first = await c.send_event("observe", **observe(["mira"], "well", "clean"))
        bad = await c.send_event("intervene", resident="kai", op="soften", claim={"root": "well"})
        last = await c.send_event("observe", **observe(["kai"], "well", "clean"))
        assert (await c.ack_of(first))["type"] == "ack"
        assert (await c.ack_of(bad))["code"] == "invalid_event"
        assert (await c.ack_of(last))["type"] == "ack"
    events = db_rows(sc.config.db, "SELECT event_id FROM events ORDER BY seq")
    assert events == [(first,), (last,)]
    assert db_rows(sc.config.db, "SELECT count(*) FROM evidence WHERE event_id = ?", (bad,)) == [
        (0,)
    ]


HUGE = "x" * 100_000

ECHOING: list[tuple[str, Frame, str]] = [
    ("a huge unknown type", {"type": HUGE}, "unknown_type"),
    (
        "a huge event kind",
        {"type": "event", "event_id": "k", "day": 1, "kind": HUGE},
        "invalid_event",
    ),
    (
        "a huge event id",
        {"type": "event", "event_id": HUGE, "day": 1, "kind": "tick"},
        "invalid_event",
    ),
    ("a huge rid", {"type": "beliefs", "resident": "mira", "rid": HUGE}, "invalid_frame"),
]


@pytest.mark.parametrize(("what", "frame", "code"), ECHOING, ids=[w for w, _, _ in ECHOING])
async def test_error_quoting_huge_input_still_fits_a_frame(
    sc: Sidecar, what: str, frame: Frame, code: str
) -> None:
    """An error about a 100 KB field is still sent, under 60 KiB, and the connection goes on."""
    async with WsClient(sc.url) as c:
        await c.send(frame)
        got = await c.next_received(lambda f: f.get("type") == "error")
        assert got.frame["code"] == code
        assert got.size < 60 * 1024
        assert (await c.event("tick", day=1))["type"] == "ack"
        reply = await c.request({"type": "beliefs", "resident": "nobody"})
        assert reply["code"] == "not_found"
