"""End-to-end: belief notifications, subscription filters, resume without gaps, slow consumers."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from wsclient import Frame, WsClient, db_rows, observe, running, say, within

from sidecar.server import Sidecar
from sidecar.server.connection import Connection


@pytest.fixture
async def sc(tmp_path: Path) -> AsyncIterator[Sidecar]:
    async with running(tmp_path) as sidecar:
        yield sidecar


def seqs(frames: list[Frame]) -> list[int]:
    return [f["seq"] for f in frames]


def all_seqs(db: Path, world: str = "town", after: int = 0) -> list[int]:
    """Every change seq of ``world`` after ``after``, from the SQLite file."""
    rows = db_rows(
        db, "SELECT seq FROM changes WHERE world = ? AND seq > ? ORDER BY seq", (world, after)
    )
    return [r[0] for r in rows]


def server_side(sc: Sidecar, c: WsClient) -> Connection:
    """The server's Connection object for client ``c`` (matched by the client's local port)."""
    port = c.ws.local_address[1]
    found = [conn for conn in sc.connections if conn.ws.remote_address[1] == port]
    assert len(found) == 1
    return found[0]


async def test_subscribers_get_only_their_residents_and_their_world(sc: Sidecar) -> None:
    """A mira subscriber gets mira's changes only; "*" gets all; another world gets nothing."""
    async with (
        WsClient(sc.url) as writer,
        WsClient(sc.url, subscribe=["mira"]) as mira,
        WsClient(sc.url, subscribe="*") as everyone,
        WsClient(sc.url, world="village", subscribe="*") as village,
        WsClient(sc.url) as nobody,
    ):
        await writer.event("observe", **observe(["mira", "bo"], "well", "clean"))
        await writer.event("say", **say("bo", ["kai"], "well", "clean"))
        await writer.event("observe", **observe(["bo"], "mill", "burnt"))
        last = await writer.event("say", **say("bo", ["mira"], "mill", "burnt"))
        for c in (mira, everyone, village, nobody):
            await c.sync()
        got = mira.untaken("belief")
        assert [(n["resident"], n["root"]) for n in got] == [
            ("mira", "well"),
            ("mira", "mill"),
            ("mira", "believes:bo:mill"),  # she heard bo say it: she knows he claims it
        ]
        assert seqs(everyone.untaken("belief")) == list(range(1, last["seq"] + 1))
        assert {n["resident"] for n in everyone.untaken("belief")} == {"mira", "bo", "kai"}
        assert village.untaken("belief") == []
        assert nobody.untaken("belief") == []


async def test_subscribe_filters_roots_and_change_kinds(sc: Sidecar) -> None:
    """roots filters by prefix and changes by kind; each subscribe is answered by subscribed."""
    async with (
        WsClient(sc.url) as writer,
        WsClient(sc.url) as roots,
        WsClient(sc.url) as kinds,
    ):
        reply = await roots.request({"type": "subscribe", "residents": "*", "roots": ["water:"]})
        assert reply["type"] == "subscribed"
        reply = await kinds.request(
            {"type": "subscribe", "residents": ["mira"], "changes": ["doubted", "corrected"]}
        )
        assert reply["type"] == "subscribed"
        await writer.event("observe", **observe(["mira"], "water:well", "clean"))
        await writer.event("observe", **observe(["mira"], "water:river", "high"))
        await writer.event("observe", **observe(["mira"], "weather", "rain"))
        await writer.event("say", **say("bo", ["mira"], "water:well", "poisoned"))
        await writer.event("say", **say("bo", ["mira"], "water:well", "poisoned"))
        await writer.event("say", **say("bo", ["mira", "kai"], "weather", "dry"))
        await roots.sync()
        await kinds.sync()
        assert [(n["root"], n["change"]) for n in roots.untaken("belief")] == [
            ("water:well", "formed"),
            ("water:river", "formed"),
            ("water:well", "doubted"),
            ("water:well", "doubted"),
        ]
        assert [(n["resident"], n["root"], n["change"]) for n in kinds.untaken("belief")] == [
            ("mira", "water:well", "doubted"),
            ("mira", "water:well", "doubted"),
            ("mira", "weather", "doubted"),
        ]


async def test_subscribe_crossing_only_sends_changes_that_cross_the_threshold(sc: Sidecar) -> None:
    """With crossing 60, only changes moving confidence across 60, up or down, are sent."""
    async with WsClient(sc.url) as writer, WsClient(sc.url) as c:
        await c.request({"type": "subscribe", "residents": ["mira"], "crossing": 60})
        steps = [
            ("bo", "poisoned"),  # formed 58: stays below
            ("tom", "poisoned"),  # 58 → 66: crosses up
            ("kai", "poisoned"),  # 66 → 74: stays above
            ("ann", "clean"),  # 74 → 54: crosses down
            ("lee", "clean"),  # 54 → 34: stays below
        ]
        for speaker, value in steps:
            await writer.event("say", **say(speaker, ["mira"], "well", value))
        await c.sync()
        got = [(n["root"], n["prev_confidence"], n["confidence"]) for n in c.untaken("belief")]
        # Each hearing also forms a firsthand belief that the speaker claims it, at 78: a new
        # belief above the threshold crosses it (from nothing).
        assert got == [
            ("believes:bo:well", None, 78),
            ("well", 58, 66),
            ("believes:tom:well", None, 78),
            ("believes:kai:well", None, 78),
            ("well", 74, 54),
            ("believes:ann:well", None, 78),
            ("believes:lee:well", None, 78),
        ]


async def test_unsubscribe_stops_notifications(sc: Sidecar) -> None:
    """unsubscribe of one resident keeps the others; unsubscribe with no residents stops all."""
    async with WsClient(sc.url) as writer, WsClient(sc.url, subscribe=["mira", "bo"]) as c:
        reply = await c.request({"type": "unsubscribe", "residents": ["mira"]})
        assert reply["type"] == "unsubscribed"
        await writer.event("observe", **observe(["mira", "bo"], "well", "clean"))
        await c.sync()
        assert [n["resident"] for n in c.untaken("belief")] == ["bo"]
        await c.request({"type": "unsubscribe"})
        await writer.event("observe", **observe(["mira", "bo"], "mill", "open"))
        await c.sync()
        assert [n["resident"] for n in c.untaken("belief")] == ["bo"]
    async with WsClient(sc.url) as writer, WsClient(sc.url, subscribe="*") as star:
        await star.request({"type": "unsubscribe", "residents": ["bo"]})
        await writer.event("observe", **observe(["mira", "bo"], "bridge", "safe"))
        await star.sync()
        assert [n["resident"] for n in star.untaken("belief")] == ["mira"]


async def test_resume_after_disconnect_has_no_gap_or_duplicate(sc: Sidecar) -> None:
    """Resume from seq N sends exactly the changes after N in order, then resumed, then live."""
    async with WsClient(sc.url) as writer:
        async with WsClient(sc.url, subscribe="*") as a:
            for i in range(5):
                await writer.event("observe", **observe(["mira", "bo", "kai"], f"k{i}", i))
            got = await a.beliefs_until(7)
            last = got[-1]["seq"]
            assert seqs(got) == list(range(1, last + 1))
        for i in range(5, 10):
            await writer.event("observe", **observe(["mira", "bo", "kai"], f"k{i}", i))
        latest = all_seqs(sc.config.db)[-1]
        async with WsClient(sc.url, subscribe="*", resume=last) as b:
            backlog = await b.beliefs_until(latest)
            resumed = await b.next_of("resumed")
            assert (resumed["seq"], resumed["sent"]) == (latest, len(backlog))
            assert seqs(backlog) == list(range(last + 1, latest + 1))
            live = await writer.event("observe", **observe(["mira"], "live", True))
            after = await b.beliefs_until(live["seq"])
            assert seqs(after) == [latest + 1]
            order = [
                r.frame["type"] for r in b.received if r.frame["type"] in ("belief", "resumed")
            ]
            assert order == ["belief"] * len(backlog) + ["resumed", "belief"]


async def test_resume_while_events_stream_in_is_contiguous(sc: Sidecar) -> None:
    """A client resuming while another connection streams events sees every seq exactly once."""
    async with WsClient(sc.url) as writer:
        for i in range(20):
            await writer.event("observe", **observe(["mira", "bo"], f"k{i}", i))
        for attempt in range(25):
            start = all_seqs(sc.config.db)[-1]
            resume_from = start - 10
            sent = [
                await writer.send_event("observe", **observe(["mira", "bo"], f"s{attempt}-{i}", i))
                for i in range(60)
            ]
            async with WsClient(sc.url, subscribe="*", resume=resume_from) as b:
                acks = [await writer.ack_of(e) for e in sent]
                final = max(a["seq"] for a in acks)
                got = await b.beliefs_until(final, 30)
                assert seqs(got) == list(range(resume_from + 1, final + 1))
                await b.next_of("resumed")


async def test_slow_consumer_is_closed_bounded_and_resumes_without_loss(tmp_path: Path) -> None:
    """A "*" subscriber that stops reading is closed 4008, outbox bounded; resume loses nothing."""
    limit = 64 * 1024
    async with (
        running(tmp_path, outbox_limit=limit) as sc,
        WsClient(sc.url) as writer,
        WsClient(sc.url, subscribe="*") as slow,
    ):
        crowd = [f"r{i}" for i in range(40)]
        await writer.event("observe", **observe(crowd, "seed", 0))
        await slow.beliefs_until(len(crowd))
        conn = server_side(sc, slow)
        slow.pause_reading()
        subject = "the well is poisoned, " * 15  # ~500 bytes per notification, ~20 KB per event
        peak = 0
        for n in range(5000):
            ack = await writer.event(
                "announce", speaker="crier", audience="*", claim={"root": f"news{n}", "value": n},
                subject=subject,
            )  # fmt: skip
            assert ack["type"] == "ack"
            if conn.slow:
                break
            peak = max(peak, conn.outbox_bytes)
        assert conn.slow, "the subscriber was never declared slow"
        assert 0 < peak <= limit  # it did queue for the slow peer, and never past the bound
        assert conn.outbox_bytes <= limit
        for _ in range(20):  # the stream goes on after the slow one is dropped
            await writer.event("observe", **observe(crowd[:3], "after", True))

        code = await slow.wait_closed(60)
        assert code == 4008
        frames = [r.frame for r in slow.received]
        assert frames[-1]["type"] == "error" and frames[-1]["code"] == "slow_consumer"
        got = [f for f in frames if f["type"] == "belief"]
        assert seqs(got) == list(range(1, len(got) + 1))
        last = got[-1]["seq"]
        latest = all_seqs(sc.config.db)[-1]
        assert last < latest
        named = [int(n) for n in re.findall(r"\d+", frames[-1]["message"])]
        assert all(n <= last for n in named), "never advise resuming past what was received"

        async with WsClient(sc.url, subscribe="*", resume=last) as again:
            backlog = await again.beliefs_until(latest, 60)
            assert seqs(backlog) == all_seqs(sc.config.db, after=last)
            resumed = await again.next_of("resumed")
            assert resumed["sent"] == len(backlog)
            assert again.close_code is None


async def test_one_commit_bigger_than_the_outbox_reaches_a_subscriber_that_keeps_up(
    tmp_path: Path,
) -> None:
    """An announcement heard by a town of 600 makes ~1,200 notifications, ~300 KB, in one
    commit: more than the 64 KiB outbox. A "*" subscriber that reads as they come is not
    closed; it gets every change once, in seq order (those that did not fit read back from
    SQLite as it drains), including those of events sent meanwhile, and then live ones.
    (Before, it was closed 4008 slow_consumer.)"""
    limit = 64 * 1024
    town = [f"r{i:03d}" for i in range(600)]
    async with (
        running(tmp_path, outbox_limit=limit) as sc,
        WsClient(sc.url) as writer,
        WsClient(sc.url, subscribe="*") as sub,
    ):
        for i in range(0, len(town), 200):
            await writer.event("observe", **observe(town[i : i + 200], "here", True))
        await sub.beliefs_until(len(town))
        conn = server_side(sc, sub)
        crier = await writer.event(
            "announce", speaker="crier", audience="*", claim={"root": "festival", "value": 12},
            subject="The harvest festival is on day twelve, in the square by the old well",
        )  # fmt: skip
        assert crier["changes"] * 200 > limit
        during = [
            await writer.event("observe", **observe(town[:3], "after", n)) for n in range(5)
        ]  # fmt: skip
        latest = max(a["seq"] for a in [crier, *during])
        got = await sub.beliefs_until(latest, 60)
        assert seqs(got) == all_seqs(sc.config.db, after=len(town))
        assert not conn.slow and sub.close_code is None
        assert conn.outbox_bytes <= limit
        live = await writer.event("observe", **observe(["r000"], "later", True))
        assert seqs(await sub.beliefs_until(live["seq"])) == [live["seq"]]
        assert not sub.untaken("resumed")  # it resumed nothing: no 'resumed' frame


async def test_the_ack_of_a_commit_bigger_than_the_outbox_comes_after_its_notifications(
    tmp_path: Path,
) -> None:
    """One connection that writes and subscribes to "*" announces to a town of 600: its
    ~1,200 notifications overflow the 64 KiB outbox and are caught up from SQLite, and the
    announcement's ack still comes after every one of them (SPEC §14.2), then the acks of
    the events sent behind it, in order."""
    town = [f"r{i:03d}" for i in range(600)]
    async with (
        running(tmp_path, outbox_limit=64 * 1024) as sc,
        WsClient(sc.url, subscribe="*") as both,
    ):
        for i in range(0, len(town), 200):
            seen = await both.event("observe", **observe(town[i : i + 200], "here", True))
        crier = await both.send_event(
            "announce", speaker="crier", audience="*", claim={"root": "festival", "value": 12},
            subject="The harvest festival is on day twelve, in the square by the old well",
        )  # fmt: skip
        after = await both.send_event("observe", **observe(["r001"], "after", True))
        acks = [await both.ack_of(crier), await both.ack_of(after)]
        frames = [r.frame for r in both.received]
        at = [i for i, f in enumerate(frames) if f.get("type") == "ack"][-2:]
        beliefs = [f["seq"] for f in frames[: at[0]] if f.get("type") == "belief"]
        # every notification of it came before its ack (later ones may too: §14.2)
        assert beliefs[: acks[0]["seq"]] == list(range(1, acks[0]["seq"] + 1))
        assert acks[0]["changes"] * 200 > 64 * 1024 and seen["seq"] < acks[0]["seq"]
        assert both.close_code is None


async def test_a_time_skip_that_ages_thousands_of_rumours_reaches_a_subscriber(
    tmp_path: Path,
) -> None:
    """Sixty rumours told to a town of 21, then a tick 89 days on: the tick ages every
    rumour in one commit (3,600 change records, several times the 64 KiB outbox). The "*"
    subscriber reading along gets all of them in seq order and stays connected."""
    town = [f"r{i:02d}" for i in range(21)]
    async with (
        running(tmp_path, outbox_limit=64 * 1024) as sc,
        WsClient(sc.url) as writer,
        WsClient(sc.url, subscribe="*") as sub,
    ):
        for n in range(60):
            speaker = town[n % len(town)]
            heard = [t for t in town if t != speaker]
            told = await writer.event("say", day=1, **say(speaker, heard, f"rumour:{n}", n))
        await sub.beliefs_until(told["seq"], 30)
        tick = await writer.event("tick", day=90)
        assert tick["changes"] >= 1200 * 2
        got = await sub.beliefs_until(tick["seq"], 60)
        assert seqs(got) == all_seqs(sc.config.db, after=told["seq"])
        assert sub.close_code is None and not server_side(sc, sub).slow


async def test_a_subscriber_that_stops_reading_while_caught_up_is_a_slow_consumer(
    tmp_path: Path,
) -> None:
    """A "*" subscriber stops reading; announcements of ~84 KB each (a town of 40, long
    subjects) go on. Once the socket's buffers are full, the next one overflows its 64 KiB
    outbox while little waits there, so it is caught up from SQLite, and that backlog waits
    for room that never comes: after ``backlog_stall`` the subscriber is closed 4008
    slow_consumer (still in that backlog), and it resumes without loss. (Without the bound
    it stayed open for as long as its keepalive allowed, forever with none.)"""
    town = [f"r{i:02d}" for i in range(40)]
    async with (
        running(tmp_path, outbox_limit=64 * 1024, backlog_stall=0.5) as sc,
        WsClient(sc.url) as writer,
        WsClient(sc.url, subscribe="*") as stuck,
    ):
        seeded = await writer.event("observe", **observe(town, "seed", 0))
        await stuck.beliefs_until(seeded["seq"])
        conn = server_side(sc, stuck)
        stuck.pause_reading()
        subject = "the well by the square is poisoned, " * 55  # ~2 KB a notification
        for n in range(5000):
            await writer.event(
                "announce", speaker="crier", audience="*", claim={"root": f"news{n}", "value": n},
                subject=subject,
            )  # fmt: skip
            if conn.slow:
                break
        assert conn.slow, "the subscriber was never declared slow"
        assert conn.session.overflowed  # closed while its backlog waited, not on an overflow
        code = await stuck.wait_closed(30)
        assert code == 4008
        frames = [r.frame for r in stuck.received]
        assert frames[-1]["code"] == "slow_consumer"
        got = [f["seq"] for f in frames if f["type"] == "belief"]
        assert got == list(range(1, len(got) + 1))
        latest = all_seqs(sc.config.db)[-1]
        async with WsClient(sc.url, subscribe="*", resume=got[-1]) as again:
            backlog = await again.beliefs_until(latest, 60)
            assert seqs(backlog) == all_seqs(sc.config.db, after=got[-1])


async def test_notifications_are_json_for_a_json_hello(sc: Sidecar) -> None:
    """Notifications follow the encoding of hello, whatever the encoding of later requests."""
    async with WsClient(sc.url) as writer, WsClient(sc.url, json=True) as c:
        await c.send({"type": "subscribe", "residents": "*", "rid": "s"}, json=False)
        reply = await c.next_received(lambda f: f.get("rid") == "s")
        assert reply.frame["type"] == "subscribed" and not reply.text  # the reply: as asked
        await writer.event("observe", **observe(["mira"], "well", "clean"))
        got = await c.next_received(lambda f: f.get("type") == "belief")
        assert got.text and got.frame["resident"] == "mira"  # notifications: as hello


async def test_subscribe_in_hello_while_events_stream_in_misses_nothing(sc: Sidecar) -> None:
    """A hello with subscribe during a stream of events gets every change after welcome.seq."""
    async with WsClient(sc.url) as writer:
        for attempt in range(25):
            sent = [
                await writer.send_event("observe", **observe(["mira", "bo"], f"s{attempt}-{i}", i))
                for i in range(60)
            ]
            async with WsClient(sc.url, subscribe="*") as b:
                assert b.welcome is not None
                acks = [await writer.ack_of(e) for e in sent]
                final = max(a["seq"] for a in acks)
                if final == b.welcome["seq"]:
                    continue
                got = await b.beliefs_until(final, 30)
                assert seqs(got) == list(range(b.welcome["seq"] + 1, final + 1))


async def test_peers_that_vanish_mid_handshake_leave_no_trace_in_the_hub(sc: Sidecar) -> None:
    """Clients that send hello and drop at once are gone from the hub and the connection set."""
    for _ in range(20):
        c = WsClient(sc.url, hello=False)
        async with c:
            await c.send({"type": "hello", "protocol": 1, "world": "town", "subscribe": "*"})

    async def drained() -> None:
        while sc.connections:
            await asyncio.sleep(0.01)

    await within(drained())
    assert all(not conns for conns in sc.hub.values())
    async with WsClient(sc.url) as writer, WsClient(sc.url, subscribe="*") as live:
        ack = await writer.event("observe", **observe(["mira"], "well", "clean"))
        assert (await live.next_of("belief"))["seq"] == ack["seq"]
        assert sum(len(conns) for conns in sc.hub.values()) == 2


async def test_resume_reads_the_backlog_through_the_hellos_filters(sc: Sidecar) -> None:
    """hello.filters restores whole filters before the backlog: each change once, as filtered."""
    async with WsClient(sc.url) as writer:
        await writer.event("observe", **observe(["mira"], "water:well", "clean"))
        start = (await writer.event("observe", **observe(["kai"], "mill", "open")))["seq"]
        await writer.event("observe", **observe(["mira"], "water:river", "high"))
        await writer.event("observe", **observe(["mira"], "weather", "rain"))
        await writer.event("observe", **observe(["kai"], "mill", "burnt"))
        await writer.event("observe", **observe(["bo"], "water:well", "clean"))
        filters = [
            {"residents": ["mira"], "roots": ["water:"]},
            {"residents": "*", "changes": ["doubted"]},
            {"residents": ["mira", "bo"], "roots": ["water:"]},  # overlaps the first
        ]
        hello = {"filters": filters}
        async with WsClient(sc.url, resume=start, hello_extra=hello) as c:
            resumed = await c.next_of("resumed")
            got = [(n["resident"], n["root"], n["change"]) for n in c.untaken("belief")]
            assert got == [
                ("mira", "water:river", "formed"),
                ("kai", "mill", "doubted"),
                ("bo", "water:well", "formed"),
            ]
            assert resumed["sent"] == 3
            live = await writer.event("observe", **observe(["mira", "kai"], "water:lake", "low"))
            await c.sync()
            after = c.untaken("belief")[3:]
            assert [(n["resident"], n["root"]) for n in after] == [("mira", "water:lake")]
            assert after[0]["seq"] < live["seq"]


async def test_hello_filters_are_checked_like_subscribe_frames(sc: Sidecar) -> None:
    """A malformed hello filter is invalid_frame, one past the bounds limit_exceeded; both fatal."""
    bad = {"filters": [{"residents": ["mira"], "changes": ["exploded"]}]}
    async with WsClient(sc.url, hello_extra=bad) as c:
        assert c.hello_error is not None and c.hello_error["code"] == "invalid_frame"
        assert await c.wait_closed() == 4011
    too_many = {"filters": [{"residents": [f"r{i}"]} for i in range(65)]}
    async with WsClient(sc.url, hello_extra=too_many) as c:
        assert c.hello_error is not None and c.hello_error["code"] == "limit_exceeded"
        assert await c.wait_closed() == 4011
    not_maps = {"filters": ["mira"]}
    async with WsClient(sc.url, hello_extra=not_maps) as c:
        assert c.hello_error is not None and c.hello_error["code"] == "invalid_frame"


@pytest.fixture
def small_backlog_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Backlog pages of 3 changes over windows of 7 seqs: a short story crosses many of both."""
    from sidecar.server import connection

    monkeypatch.setattr(connection, "_BACKFILL_PAGE", 3)
    monkeypatch.setattr(connection, "_BACKFILL_SCAN", 7)


async def test_a_resume_of_named_residents_reads_only_theirs_in_sql_and_misses_nothing(
    small_backlog_pages: None, sc: Sidecar
) -> None:
    """A subscriber of mira and bo resuming over a town's history: the store's rows of other
    residents are left out as the backlog is read (a long gap costs her changes, not the
    town's), windows with none of hers are passed over, and ``resumed`` says the latest seq,
    with exactly her and bo's changes before it, in order; live ones follow."""
    town = ["mira", "bo", "kai", "ana", "lev", "tom"]
    async with WsClient(sc.url) as writer:
        for i in range(12):
            await writer.event("observe", **observe(town[2:], f"crowd{i}", i))  # none of theirs
        await writer.event("observe", **observe(["mira", "kai"], "well", "dry"))
        for i in range(8):
            await writer.event("observe", **observe(town[1:], f"more{i}", i))
        latest = all_seqs(sc.config.db)[-1]
        theirs = db_rows(
            sc.config.db,
            "SELECT seq FROM changes WHERE world = 'town' AND resident IN ('mira', 'bo') "
            "ORDER BY seq",
        )
        async with WsClient(sc.url, subscribe=["mira", "bo"], resume=0) as c:
            resumed = await c.next_of("resumed")
            got = c.untaken("belief")
            assert seqs(got) == [r[0] for r in theirs] and len(got) == 9
            assert (resumed["seq"], resumed["sent"]) == (latest, 9)
            await writer.event("observe", **observe(["kai", "bo"], "live", True))
            await c.sync()
            after = c.untaken("belief")[9:]
            assert [(n["resident"], n["root"]) for n in after] == [("bo", "live")]


async def test_a_filter_added_while_a_backlog_is_read_gets_every_change_after_its_seq(
    small_backlog_pages: None, sc: Sidecar
) -> None:
    """A backlog read for mira's changes only; kai's filter is added while it is read (the
    peer has not read a frame yet): every one of kai's changes after the ``subscribed`` seq
    arrives, once, as the store holds them (a page read before the filter came is read again
    for it, never passed over)."""
    async with WsClient(sc.url) as writer:
        for i in range(40):
            await writer.event("observe", **observe(["mira", "kai", "bo"], f"k{i}", i))
        kai = [
            r[0]
            for r in db_rows(
                sc.config.db,
                "SELECT seq FROM changes WHERE world = 'town' AND resident = 'kai' ORDER BY seq",
            )
        ]
        for attempt in range(5):
            async with WsClient(sc.url, subscribe=["mira"], resume=0) as c:
                added = await c.request({"type": "subscribe", "residents": ["kai"]})
                await c.next_of("resumed", 30)
                got = [n["seq"] for n in c.untaken("belief") if n["resident"] == "kai"]
                assert got == [s for s in kai if s > added["seq"]], (attempt, added["seq"])
