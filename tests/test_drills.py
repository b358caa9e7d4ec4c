"""Reliability drills: crash, bad input, restart and migration, auth and world isolation.

The crash, restart and bad-input drills run ``credence serve`` as a child process on a real
SQLite file and talk to it over real loopback WebSockets; the auth drill uses an in-process
sidecar. What is checked is always what a game relies on: an acknowledged event is stored,
nothing unacknowledged is half-stored, the server stays up, and one world never sees another.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
import sqlite3
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection as SyncConnection
from websockets.sync.client import connect as sync_connect
from wsclient import WsClient, db_rows, guard, observe, running

from protocol import CloseCode, ErrorCode
from sidecar.engine import derive_evidence, parse_event
from sidecar.store import MIGRATIONS, migrate
from tools.harness import ServerProcess
from tools.load import open_client
from tools.town import LATE_EVENT_DAYS, deal, encode_event

WORLD = "drill"
MAX_FRAME = 256 * 1024


# --------------------------------------------------------------------------- helpers


@dataclass(slots=True)
class Streamed:
    """What one streaming connection saw: ids sent, acked (in order), refused, its close code."""

    sent: list[str] = field(default_factory=list)
    acked: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    close_code: int | None = None


async def stream(
    url: str,
    events: list[dict[str, Any]],
    *,
    window: int = 64,
    on_ack: Callable[[int], None] | None = None,
    seconds: float = 60.0,
) -> Streamed:
    """Send ``events`` on one connection, ``window`` unanswered at most, until every one is
    answered or the connection drops. Replies come in request order, so the k-th reply is
    the k-th event's; an ack's ``event_id`` must say so."""
    out = Streamed()
    ws = await open_client(url, WORLD, None)
    pending: deque[str] = deque()
    slots = asyncio.Semaphore(window)
    closed = asyncio.Event()
    sending = [True]

    async def receive() -> None:
        try:
            async for message in ws:
                frame = msgpack.unpackb(message, raw=False)
                event_id = pending.popleft()
                slots.release()
                if frame["type"] == "ack":
                    assert frame["event_id"] == event_id, (frame, event_id)
                    out.acked.append(event_id)
                    if on_ack is not None:
                        on_ack(len(out.acked))
                else:
                    out.refused[event_id] = str(frame.get("code"))
                if not pending and not sending[0]:
                    return
        except ConnectionClosed:
            pass
        finally:
            closed.set()
            for _ in range(window + 1):
                slots.release()

    async def send_all() -> None:
        receiver = asyncio.get_running_loop().create_task(receive())
        for event in events:
            await slots.acquire()
            if closed.is_set():
                break
            pending.append(event["event_id"])
            try:
                await ws.send(encode_event(event))
            except ConnectionClosed:
                pending.pop()
                break
            out.sent.append(event["event_id"])
        sending[0] = False
        if not pending:
            receiver.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await receiver

    try:
        await asyncio.wait_for(send_all(), guard(seconds))
    finally:
        out.close_code = ws.close_code
        with contextlib.suppress(Exception):
            await ws.close()
    return out


def town_events(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` synthetic town events (every kind, all valid), in one client's order."""
    return deal(30, count, seed=seed, clients=1)[0]


def stored_ids(db: Path) -> set[str]:
    return {row[0] for row in db_rows(db, "SELECT event_id FROM events")}


def check_consistent(db: Path) -> int:
    """Every stored event has exactly the evidence its derivation gives, seqs have no gaps,
    no row belongs to an event that is not stored; returns the number of events."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT seq, event_id, body FROM events WHERE world = ? ORDER BY seq", (WORLD,)
        ).fetchall()
        assert [seq for seq, _, _ in rows] == list(range(1, len(rows) + 1))
        known: set[str] = set()
        for _, event_id, body in rows:
            event = parse_event(orjson.loads(body))
            expected = {
                (ev.evidence_id, ev.resident, ev.claim.root)
                for ev in derive_evidence(event, sorted(known))
            }
            stored = set(
                conn.execute(
                    "SELECT evidence_id, resident, root FROM evidence "
                    "WHERE world = ? AND event_id = ?",
                    (WORLD, event_id),
                ).fetchall()
            )
            assert stored == expected, event_id
            known.update(event.mentioned_residents())
        ids = {event_id for _, event_id, _ in rows}
        for table in ("evidence", "changes"):
            orphans = {r[0] for r in conn.execute(f"SELECT DISTINCT event_id FROM {table}")} - ids
            assert orphans == set(), (table, orphans)
        seqs = [
            r[0]
            for r in conn.execute("SELECT seq FROM changes WHERE world = ? ORDER BY seq", (WORLD,))
        ]
        assert seqs == list(range(1, len(seqs) + 1))
        world = conn.execute(
            "SELECT event_seq, change_seq FROM worlds WHERE world = ?", (WORLD,)
        ).fetchone()
        assert world == (len(rows), len(seqs))
        residents = {
            r[0] for r in conn.execute("SELECT resident FROM residents WHERE world = ?", (WORLD,))
        }
        assert residents == known
        return len(rows)
    finally:
        conn.close()


def rebuild_check(db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sidecar.cli", "rebuild", "--db", str(db), "--check"],
        capture_output=True,
        text=True,
        timeout=guard(120),
        check=False,
    )


async def one_good_event(url: str, event_id: str, day: float = 0) -> dict[str, Any]:
    """Send one valid observation on a fresh connection and return the reply."""
    ws = await open_client(url, WORLD, None)
    try:
        event = {
            "event_id": event_id,
            "day": day,
            "kind": "observe",
            "witnesses": ["zed"],
            "claim": {"root": "drill:ok", "value": True},
            "subject": "all is well",
        }
        await ws.send(encode_event(event))
        reply: dict[str, Any] = msgpack.unpackb(await asyncio.wait_for(ws.recv(), guard(10)))
        return reply
    finally:
        await ws.close()


# --------------------------------------------------------------------------- (a) crash


async def test_kill_9_mid_stream_keeps_every_acked_event_and_nothing_half_applied(
    tmp_path: Path,
) -> None:
    """SIGKILL mid-stream, restart on the same file: all acked events are there, every stored
    event is whole, the restarted server serves, and rebuild --check agrees."""
    db = tmp_path / "crash.db"
    events = town_events(4000, seed=5)
    server = ServerProcess(db, late_event_days=LATE_EVENT_DAYS).start()
    try:

        def crash(acked: int) -> None:
            if acked == 500:
                server.kill()

        got = await stream(server.url, events, on_ack=crash)
        assert server.proc is not None and server.proc.returncode == -signal.SIGKILL
    finally:
        server.close()
    assert 500 <= len(got.acked) < len(events), "the kill must land mid-stream"
    assert got.refused == {}
    assert got.close_code not in (1000, 1001)  # the connection was cut, not closed

    with ServerProcess(db, late_event_days=LATE_EVENT_DAYS) as again:
        reply = await one_good_event(again.url, "after-restart")
        assert reply["type"] == "ack" and reply["changes"] == 1
        assert again.stop() == 0

    stored = stored_ids(db)
    assert set(got.acked) <= stored
    assert stored - {"after-restart"} <= set(got.sent)
    assert check_consistent(db) == len(stored)
    done = rebuild_check(db)
    assert done.returncode == 0, done.stdout + done.stderr


# --------------------------------------------------------------------------- (c) restart


async def test_sigterm_under_load_acks_and_keeps_everything_it_accepted(tmp_path: Path) -> None:
    """SIGTERM while a client streams: exit code 0, close 1001, every acked event stored and
    every stored event acked."""
    db = tmp_path / "term.db"
    events = town_events(4000, seed=6)
    server = ServerProcess(db, late_event_days=LATE_EVENT_DAYS).start()
    try:

        def terminate(acked: int) -> None:
            if acked == 500:
                server.signal(signal.SIGTERM)

        got = await stream(server.url, events, on_ack=terminate)
        code = server.wait(guard(30))
    finally:
        server.close()
    assert code == 0, server.log_tail()
    assert got.close_code == CloseCode.GOING_AWAY
    assert 500 <= len(got.acked) < len(events)
    assert got.refused == {}
    stored = stored_ids(db)
    assert set(got.acked) <= stored
    assert stored == set(got.acked)
    assert check_consistent(db) == len(got.acked)


async def test_startup_on_an_older_schema_migrates_it(tmp_path: Path) -> None:
    """A version-1 database with a world in it is migrated at startup; events then work."""
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        assert migrate(conn, upto=1) == ["0001_initial"]
        conn.execute(
            "INSERT INTO worlds (world, day, event_seq, rules) VALUES (?, 1, 1, '{}')", (WORLD,)
        )
        conn.execute(
            "INSERT INTO events (world, seq, event_id, day, kind, body) "
            "VALUES (?, 1, 'old-tick', 1, 'tick', ?)",
            (WORLD, orjson.dumps({"event_id": "old-tick", "day": 1.0, "kind": "tick"}).decode()),
        )
    finally:
        conn.close()
    with ServerProcess(db) as server:
        reply = await one_good_event(server.url, "new-event", day=1)  # the world's clock: 1
        assert reply["type"] == "ack" and reply["changes"] == 1, reply
        assert server.stop() == 0
    names = [r[0] for r in db_rows(db, "SELECT name FROM _migrations ORDER BY name")]
    assert names == [name for name, _ in MIGRATIONS]
    assert db_rows(db, "SELECT seq, event_id FROM events ORDER BY seq") == [
        (1, "old-tick"),
        (2, "new-event"),
    ]
    assert db_rows(db, "SELECT subject_before, subject_after FROM changes") == [
        (None, "all is well")
    ]


# --------------------------------------------------------------------------- (b) bad input

_KNOWN_TYPES = {
    "hello",
    "event",
    "subscribe",
    "unsubscribe",
    "beliefs",
    "explain",
    "distribution",
    "narrative",
    "graph",
}
_REFUSAL_CODES = {str(code) for code in ErrorCode}
_ids = itertools.count(1)


def _template(kind: str, event_id: str) -> dict[str, Any]:
    claim = {"root": "water:well", "value": "clean"}
    base: dict[str, Any] = {"type": "event", "event_id": event_id, "day": 2, "kind": kind}
    extra: dict[str, dict[str, Any]] = {
        "observe": {"witnesses": ["mira", "kai"], "claim": claim, "subject": "seen"},
        "say": {"speaker": "bo", "listeners": ["mira"], "claim": claim, "subject": "said"},
        "announce": {"speaker": "bo", "audience": ["mira", "kai"], "claim": claim, "subject": "x"},
        "act": {"actor": "mira", "action": "fetch_water", "status": "completed", "witnesses": []},
        "intervene": {"resident": "mira", "op": "implant", "claim": claim, "subject": "implanted"},
        "tick": {},
    }
    return {**base, **extra[kind]}


_REQUIRED: dict[str, tuple[str, ...]] = {
    "observe": ("event_id", "day", "kind", "witnesses", "claim", "subject"),
    "say": ("event_id", "day", "kind", "speaker", "listeners", "claim", "subject"),
    "announce": ("event_id", "day", "kind", "speaker", "audience", "claim", "subject"),
    "act": ("event_id", "day", "kind", "actor", "action", "status"),
    "intervene": ("event_id", "day", "kind", "resident", "op", "claim", "subject"),
    "tick": ("event_id", "day", "kind", "type"),
}
_KINDS = st.sampled_from(sorted(_REQUIRED))
_NOT_TEXT = st.one_of(
    st.integers(-(2**53) + 1, 2**53 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.lists(st.integers(-9, 9), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(-9, 9), max_size=2),
)
_BAD_VALUE = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.integers(0, 9), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(0, 9), max_size=2),
    st.integers(min_value=2**53, max_value=2**60),
    st.none(),
)
_WRONG: dict[str, st.SearchStrategy[Any]] = {
    "event_id": st.one_of(_NOT_TEXT, st.just(""), st.text(min_size=201, max_size=300)),
    "day": st.one_of(
        st.text(max_size=5),
        st.booleans(),
        st.floats(max_value=-0.01),
        st.floats(min_value=1.1e12),
        st.lists(st.integers(-9, 9), max_size=2),
    ),
    "kind": st.text(max_size=20).filter(lambda k: k not in _REQUIRED),
    "witnesses": st.one_of(
        st.text(max_size=5),
        st.just([]),
        st.lists(_NOT_TEXT, min_size=1, max_size=3),
        st.just(["ok", "*"]),
    ),
    "listeners": st.one_of(
        st.text(max_size=5), st.just([]), st.lists(_NOT_TEXT, min_size=1, max_size=3)
    ),
    "audience": st.one_of(
        st.integers(-9, 9),
        st.just([]),
        st.just(["bo"]),
        st.lists(_NOT_TEXT, min_size=1, max_size=3),
    ),
    "claim": st.one_of(
        _NOT_TEXT.filter(lambda v: not isinstance(v, dict)),
        st.just({"value": "x"}),
        st.fixed_dictionaries({"root": st.just("r"), "value": _BAD_VALUE}),
    ),
    "subject": st.one_of(_NOT_TEXT, st.just(""), st.just("nul\x00inside")),
    "speaker": st.one_of(_NOT_TEXT, st.just(""), st.just("*")),
    "actor": st.one_of(_NOT_TEXT, st.just(""), st.just("*")),
    "action": st.one_of(_NOT_TEXT, st.just("")),
    "status": st.text(max_size=12).filter(
        lambda s: s not in ("completed", "rejected", "interrupted", "replaced")
    ),
    "resident": st.one_of(_NOT_TEXT, st.just(""), st.just("*")),
    "op": st.text(max_size=10).filter(
        lambda s: s not in ("implant", "distort", "suppress", "soften")
    ),
    "type": st.one_of(_NOT_TEXT, st.text(max_size=12).filter(lambda t: t not in _KNOWN_TYPES)),
}


@dataclass(frozen=True, slots=True)
class Case:
    """One message to send and whether it must be refused (``False``: valid-looking, either)."""

    what: str
    message: bytes | str
    must_refuse: bool = True
    text_bytes: bool = False  # send bytes as a text frame (invalid UTF-8 on purpose)


def _msgpack(frame: Any) -> bytes:
    data: bytes = msgpack.packb(frame, use_bin_type=True)
    return data


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """A bad (or borderline) frame: one of the categories of the drill (wrong types and
    missing fields, the largest spaces, drawn more often)."""
    category = draw(
        st.sampled_from(
            [
                "random_bytes",
                "random_text",
                "wrong_type",
                "wrong_type",
                "wrong_type",
                "missing",
                "missing",
                "deep",
                "huge",
                "huge",
                "unknown_type",
                "bad_utf8_msgpack",
                "bad_utf8_text",
                "lone_surrogate_json",
                "nul",
                "unicode_ok",
                "binary_value",
                "ext_type",
                "big_int",
            ]
        )
    )
    event_id = f"bad-{next(_ids)}"
    if category == "random_bytes":
        return Case(category, draw(st.binary(max_size=512)))
    if category == "random_text":
        text = draw(st.text(max_size=300))
        return Case(category, text)
    if category == "wrong_type":
        kind = draw(_KINDS)
        frame = _template(kind, event_id)
        key = draw(st.sampled_from([k for k in _REQUIRED[kind] if k in _WRONG]))
        frame[key] = draw(_WRONG[key])
        as_json = draw(st.booleans())
        return Case(
            f"{category}:{kind}.{key}", orjson.dumps(frame).decode() if as_json else _msgpack(frame)
        )
    if category == "missing":
        kind = draw(_KINDS)
        frame = _template(kind, event_id)
        del frame[draw(st.sampled_from(_REQUIRED[kind]))]
        return Case(f"{category}:{kind}", _msgpack(frame))
    if category == "deep":
        # Built as bytes: neither msgpack nor orjson will pack thousands of levels.
        depth = draw(st.integers(18, 5000))
        lists = draw(st.booleans())
        head = orjson.dumps(_template("tick", event_id))[:-1] + b',"extra":'
        if draw(st.booleans()):
            inner = (
                (b"[" * depth + b'"leaf"' + b"]" * depth)
                if lists
                else (b'{"k":' * depth + b'"leaf"' + b"}" * depth)
            )
            return Case(f"{category}:{depth}:json", (head + inner + b"}").decode())
        frame = _template("tick", event_id)
        body = _msgpack(frame)
        assert 0x80 <= body[0] < 0x8F
        nest = (b"\x91" if lists else b"\x81\xa1k") * depth
        return Case(
            f"{category}:{depth}",
            bytes([body[0] + 1]) + body[1:] + _msgpack("extra") + nest + _msgpack("leaf"),
        )
    if category == "huge":
        size = draw(st.integers(4001, MAX_FRAME + 4096))
        field_name = draw(
            st.sampled_from(["subject", "event_id", "speaker", "claim_value", "root"])
        )
        frame = _template("say", event_id)
        blob = draw(st.sampled_from(["x", "é", "漢", "😀"])) * size  # over every text limit
        if field_name == "claim_value":
            frame["claim"] = {"root": "r", "value": blob}
        elif field_name == "root":
            frame["claim"] = {"root": blob, "value": 1}
        else:
            frame[field_name] = blob
        return Case(f"{category}:{field_name}:{size}", _msgpack(frame))
    if category == "unknown_type":
        frame = {"type": draw(_WRONG["type"]), "rid": draw(st.integers(0, 99))}
        return Case(category, _msgpack(frame))
    if category == "bad_utf8_msgpack":
        bad = draw(
            st.sampled_from(
                [b"\xed\xa0\x80", b"\xff", b"\xc3\x28", b"\xf0\x28\x8c\xbc", b"\x80abc"]
            )
        )
        # {"type": <str with invalid UTF-8>}
        return Case(category, b"\x81\xa4type" + bytes([0xA0 | len(bad)]) + bad)
    if category == "bad_utf8_text":
        bad = draw(st.sampled_from([b"\xed\xa0\x80", b"\xff", b"\xc3\x28"]))
        return Case(category, b'{"type": "' + bad + b'"}', text_bytes=True)
    if category == "lone_surrogate_json":
        surrogate = draw(st.sampled_from(["\\ud800", "\\udfff", "\\udc00x", "\\ud83d"]))
        key = draw(st.sampled_from(["subject", "event_id", "speaker"]))
        frame = _template("say", event_id)
        text = orjson.dumps(frame).decode().replace(f'"{key}":"', f'"{key}":"{surrogate}', 1)
        return Case(f"{category}:{key}", text)
    if category == "nul":
        key = draw(st.sampled_from(["subject", "event_id", "speaker", "root", "listener"]))
        frame = _template("say", event_id)
        if key == "root":
            frame["claim"] = {"root": "wa\x00ter", "value": 1}
        elif key == "listener":
            frame["listeners"] = ["mi\x00ra"]
        else:
            frame[key] = f"{frame[key]}\x00"
        return Case(f"{category}:{key}", _msgpack(frame))
    if category == "binary_value":
        frame = {
            **_template("observe", event_id),
            "subject": draw(st.binary(min_size=1, max_size=20)),
        }
        return Case(category, _msgpack(frame))
    if category == "ext_type":
        frame = {
            **_template("tick", event_id),
            "x": msgpack.ExtType(draw(st.integers(0, 127)), b"zz"),
        }
        return Case(category, _msgpack(frame))
    if category == "big_int":
        value = draw(st.one_of(st.integers(min_value=2**53), st.integers(max_value=-(2**53))))
        frame = {
            **_template("tick", event_id),
            "extra": value if -(2**63) <= value < 2**64 else 2**63,
        }
        return Case(category, _msgpack(frame))
    # unicode_ok: valid events whose strings are unicode edge cases; acked or refused, both fine.
    tricky = st.text(
        st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40
    ).filter(lambda s: s != "*")
    frame = _template("say", f"{event_id}-{draw(tricky)}"[:200])
    frame["speaker"] = draw(tricky)
    frame["listeners"] = [draw(tricky)]
    frame["subject"] = draw(tricky) + "\u202e\u200d\ufeff\U0001f600\u0301"
    frame["claim"] = {
        "root": draw(tricky),
        "value": draw(st.one_of(tricky, st.just("nul\x00value"))),
    }
    return Case(
        category,
        orjson.dumps(frame).decode() if draw(st.booleans()) else _msgpack(frame),
        must_refuse=False,
    )


class Peer:
    """One connection to the server under test, reconnected (with hello) whenever it closed."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.ws: SyncConnection | None = None
        self.stack = contextlib.ExitStack()
        self.reconnects = 0

    def connection(self) -> SyncConnection:
        if self.ws is None:
            self.ws = self.stack.enter_context(
                sync_connect(
                    self.url,
                    compression=None,
                    max_size=None,
                    open_timeout=guard(10),
                    close_timeout=guard(5),
                    proxy=None,
                )
            )
            self.ws.send(_msgpack({"type": "hello", "protocol": 1, "world": WORLD}))
            welcome = msgpack.unpackb(self.ws.recv(timeout=guard(10)), raw=False)
            assert welcome["type"] == "welcome", welcome
            self.reconnects += 1
        return self.ws

    def exchange(self, case: Case) -> tuple[str, Any]:
        """Send one message; ``("frame", reply)`` or ``("closed", close code)``."""
        ws = self.connection()
        try:
            if case.text_bytes:
                ws.send(case.message, text=True)
            else:
                ws.send(case.message)
            reply = ws.recv(timeout=guard(15))
        except ConnectionClosed:
            code = ws.close_code
            self.ws = None
            return "closed", code
        if isinstance(reply, str):
            return "frame", orjson.loads(reply)
        return "frame", msgpack.unpackb(reply, raw=False)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stack.close()


def _size(case: Case) -> int:
    return len(case.message.encode() if isinstance(case.message, str) else case.message)


def test_bad_input_gets_errors_server_stays_up_and_stores_only_acked_events(tmp_path: Path) -> None:
    """~200 generated bad frames: each gets an error frame (or 1009/1007 for an oversize frame or
    invalid UTF-8 text), the server keeps serving, and only acknowledged events are stored."""
    db = tmp_path / "bad.db"
    acked: set[str] = set()
    outcomes: dict[str, int] = {}
    with ServerProcess(db, late_event_days=LATE_EVENT_DAYS) as server:
        peer = Peer(server.url)

        @settings(
            max_examples=200,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(case=cases())
        def one(case: Case) -> None:
            kind, got = peer.exchange(case)
            outcomes[case.what.split(":")[0]] = outcomes.get(case.what.split(":")[0], 0) + 1
            if kind == "closed":
                oversize = _size(case) > MAX_FRAME
                assert (got == 1009 and oversize) or (got == 1007 and case.text_bytes), (
                    case.what,
                    got,
                )
                return
            assert got["type"] in ("ack", "error"), (case.what, got)
            if got["type"] == "error":
                assert got["code"] in _REFUSAL_CODES, (case.what, got)
                assert got["code"] not in ("internal_error",), (case.what, got)
            else:
                assert not case.must_refuse, (case.what, got)
                acked.add(got["event_id"])

        try:
            one()
            assert server.proc is not None and server.proc.poll() is None, server.log_tail()
            reply = asyncio.run(one_good_event(server.url, "good-after-bad"))
            assert reply["type"] == "ack", reply
            acked.add("good-after-bad")
        finally:
            peer.close()
        assert server.stop() == 0
    assert stored_ids(db) == acked
    assert len(outcomes) >= 10, outcomes


# --------------------------------------------------------------------------- (d) auth


async def test_tokens_roles_and_worlds_are_isolated(tmp_path: Path) -> None:
    """Wrong token, another world's token and a reader writing are refused; world A sees
    nothing of world B: its queries get not_found or empty, its subscriber no notification."""
    tokens = {"writer_tokens": ["north=wn", "south=ws"], "reader_tokens": ["north=rn"]}
    async with running(tmp_path, **tokens) as sc:
        async with WsClient(sc.url, "south", token="ws") as south:
            ack = await south.event(
                "observe", **observe(["sam"], "secret:vault", "open", "the vault is open")
            )
            assert ack["type"] == "ack" and ack["changes"] == 1
        for world, token in (
            ("north", "nope"),
            ("north", None),
            ("north", "ws"),
            ("south", "wn"),
            ("south", "rn"),
        ):
            async with WsClient(sc.url, world, token=token) as c:
                assert c.welcome is None and c.hello_error is not None, (world, token)
                assert c.hello_error["code"] == "unauthorized"
                assert await c.wait_closed() == CloseCode.UNAUTHORIZED
        async with WsClient(sc.url, "north", token="rn") as reader:
            assert reader.welcome is not None and reader.welcome["role"] == "reader"
            refused = await reader.event("observe", **observe(["nia"], "north:gate", "shut"))
            assert refused["type"] == "error" and refused["code"] == "forbidden"
        assert db_rows(sc.config.db, "SELECT count(*) FROM events WHERE world = 'north'") == [(0,)]

        async with WsClient(sc.url, "north", token="wn", subscribe="*") as north:
            for query in (
                {"type": "beliefs", "resident": "sam"},
                {"type": "explain", "resident": "sam", "root": "secret:vault"},
                {"type": "narrative", "resident": "sam"},
            ):
                reply = await north.request(query)
                assert reply["type"] == "error" and reply["code"] == "not_found", (query, reply)
                assert "vault is open" not in orjson.dumps(reply).decode()
            for query in (
                {"type": "distribution", "root": "secret:vault"},
                {"type": "graph", "root": "secret:vault"},
                {"type": "graph", "resident": "sam"},
            ):
                parts = await north.request_all(query)
                text = orjson.dumps(parts).decode()
                assert "vault is open" not in text and '"open"' not in text, (query, parts)
                if parts[0]["type"] == "distribution":
                    assert parts[0]["values"] == [] and parts[0]["residents"] == []
            async with WsClient(sc.url, "south", token="ws") as south:
                more = await south.event(
                    "say",
                    speaker="sam",
                    listeners=["tia"],
                    claim={"root": "secret:vault", "value": "open"},
                    subject="psst",
                )
                # tia's hearsay, and her firsthand belief that sam claims it
                assert more["type"] == "ack" and more["changes"] == 2
            await north.sync()
            assert north.untaken("belief") == []
