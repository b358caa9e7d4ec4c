"""Write ``protocol/vectors/vectors.json``: example frames as JSON beside their msgpack bytes.

The generator lives with the tools, not in ``protocol/``: it drives the server's sans-I/O
``Session`` and the store to compute what a sidecar sends, while ``protocol/`` holds only the
language-neutral contract (the spec, its codec and frame validation, the vectors themselves).

Run ``python -m tools.vectors`` (``--check`` compares without writing and exits 1
if the file is stale). Every vector is checked against the real code while it is built: a
client vector must decode and parse (or fail with exactly its ``error_code``), and every server
vector of the scripted session is what the sidecar's own store, query and frame builders
produce. ``tests/test_vectors.py`` replays the same session against a running sidecar and
compares every frame it receives with :func:`build`'s transcript.

A vector is a map::

    name, description    what it shows
    direction            "client" (game → sidecar) or "server" (sidecar → game)
    context              client vectors: "handshake" (the first frame of a connection) or
                         "session" (after the welcome); null for server vectors
    valid                true: decodes and is accepted; false: refused with error_code
    error_code           the error frame's code for an invalid vector, else null
    close_code           the WebSocket close code the refusal ends the connection with, or
                         null when the connection stays open
    canonical            true when msgpack_hex is exactly msgpack.packb(json, use_bin_type=True)
    json                 the frame as a JSON value (null when it has no JSON form)
    msgpack_hex          the binary WebSocket message, lowercase hex
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack

from protocol import (
    CloseCode,
    DeleteWorld,
    ErrorCode,
    ForkWorld,
    ProtocolError,
    Subscribe,
    WorldsQuery,
    decode,
    encode,
    parse_client_frame,
    parse_hello,
)
from sidecar.engine import ClockBackwards
from sidecar.server.app import ServerConfig
from sidecar.server.auth import Auth, Role
from sidecar.server.lifecycle import world_reply
from sidecar.server.queries import answer, event_reply
from sidecar.server.session import Limits, Reply, Session, Submit
from sidecar.server.writer import SHUTDOWN_MESSAGE, world_busy
from sidecar.store import Reader, SingleFile, Writer

__all__ = ["OUTPUT", "Step", "build", "main", "render"]

OUTPUT = Path(__file__).resolve().parents[1] / "protocol" / "vectors" / "vectors.json"
WORLD = "town"
MAX_SAFE = 2**53 - 1

Frame = dict[str, Any]


def pack(value: Any, **options: Any) -> bytes:
    """The canonical encoding: ``msgpack.packb(value, use_bin_type=True)``."""
    data: bytes = msgpack.packb(value, use_bin_type=True, **options)
    return data


def _nest(levels: int) -> Any:
    """``levels`` lists around a 0: ``[[0]]`` for 2."""
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


# ----------------------------------------------------------------------- the simulated peer


@dataclass(slots=True)
class Step:
    """One message a client sends in the scripted session, and every frame it then receives."""

    conn: int
    send: bytes
    expect: list[Frame]


class _Sidecar:
    """What sidecar connections answer, computed by the sidecar's own sans-I/O
    :class:`~sidecar.server.session.Session` (the state machine the asyncio connection
    drives), store and builders, for a client that waits for each reply before sending the
    next frame (so the answer does not depend on timing). The test suite checks this
    against a real running sidecar, frame for frame.
    """

    def __init__(self, db: Path) -> None:
        self.writer = Writer(db)
        self.store = SingleFile(db, writer=self.writer)
        self.reader = Reader(db)
        self.sessions: dict[int, Session] = {}
        self.steps: list[Step] = []

    def close(self) -> None:
        self.store.close()  # (and the writer it was given)
        self.reader.close()

    def hello(self, conn: int, data: bytes) -> list[Frame]:
        # No outbox bound here: the frames are collected after each step, not sent.
        session = Session(max_frame=ServerConfig().max_frame, outbox_limit=1 << 40)
        session.hello(decode(data), as_json=False, auth=Auth())
        if session.welcome(self.reader.latest_seq(WORLD), auth_open=True):
            sent = 0
            for change in self.reader.changes_after(WORLD, session.cursor, limit=-1):
                frame = session.catch_up(change)
                if frame is not None:
                    session.push(frame)
                    sent += 1
            session.caught_up(sent)
        self.sessions[conn] = session
        frames = _sent(session)
        self.steps.append(Step(conn, data, frames))
        return frames

    def receive(self, data: bytes) -> list[Frame]:
        """Everything connection 1 receives after sending ``data`` (notifications, reply)."""
        session = self.sessions[1]
        try:
            frame = parse_client_frame(decode(data))
        except ProtocolError as exc:
            session.push(session.refuse(exc, as_json=False).frame)
        else:
            action = session.receive(frame, as_json=False, size=len(data))
            if isinstance(action, Submit):
                [result] = self.writer.apply([(WORLD, action.event)])
                session.deliver(result.changes)
                session.push(event_reply(result, action.rid))
            elif isinstance(action, Reply):
                session.push(action.frame, action.json)
            else:
                query = action.query
                try:
                    if isinstance(query, WorldsQuery | ForkWorld | DeleteWorld):
                        # (the session's connection is open mode: a writer in every world)
                        replies = world_reply(
                            self.store, WORLD, query, role=Role.WRITER,
                            role_for=lambda w: Role.WRITER,
                        )  # fmt: skip
                    else:
                        replies = answer(self.reader, WORLD, query)
                except ProtocolError as exc:
                    exc.rid = action.query.rid
                    replies = [exc.to_frame()]
                for reply in replies:
                    session.push(reply)
        frames = _sent(session)
        self.steps.append(Step(1, data, frames))
        return frames


def _sent(session: Session) -> list[Frame]:
    """The frames a session queued, as the client decodes them."""
    return [msgpack.unpackb(data, raw=False) for data in session.drain()]


# ----------------------------------------------------------------------- building vectors


@dataclass(slots=True)
class _Vectors:
    sidecar: _Sidecar
    items: list[Frame] = field(default_factory=list)
    names: set[str] = field(default_factory=set)

    def _add(
        self,
        name: str,
        description: str,
        direction: str,
        *,
        json_value: Any,
        data: bytes,
        context: str | None = None,
        error_code: ErrorCode | None = None,
        close_code: int | None = None,
    ) -> None:
        assert name not in self.names, f"duplicate vector name {name}"
        self.names.add(name)
        self.items.append(
            {
                "name": name,
                "description": description,
                "direction": direction,
                "context": context,
                "valid": error_code is None,
                "error_code": None if error_code is None else str(error_code),
                "close_code": close_code,
                "canonical": json_value is not None and pack(json_value) == data,
                "json": json_value,
                "msgpack_hex": data.hex(),
            }
        )

    # -- client, first frame of a connection

    def handshake(
        self,
        name: str,
        description: str,
        frame: Frame | None,
        *,
        data: bytes | None = None,
        error: ErrorCode | None = None,
    ) -> bytes:
        data = pack(frame) if data is None else data
        close: int | None = None
        try:
            parse_hello(decode(data))
        except ProtocolError as exc:
            assert exc.code == error, f"{name}: expected {error}, the code says {exc.code}"
            close = int(exc.close_code or CloseCode.INTERNAL_ERROR)  # connection._fatal
        else:
            assert error is None, f"{name}: expected {error}, but it parses"
        self._add(
            name,
            description,
            "client",
            json_value=frame,
            data=data,
            context="handshake",
            error_code=error,
            close_code=close,
        )
        return data

    # -- client, after the welcome: also sent to the simulated sidecar

    def session(
        self,
        name: str,
        description: str,
        frame: object,
        *,
        data: bytes | None = None,
        error: ErrorCode | None = None,
    ) -> list[Frame]:
        data = pack(frame) if data is None else data
        try:
            parse_client_frame(decode(data))
        except ProtocolError as exc:
            assert exc.code == error, f"{name}: expected {error}, the code says {exc.code}"
        else:
            assert error is None, f"{name}: expected {error}, but it parses"
        self._add(
            name,
            description,
            "client",
            json_value=frame,
            data=data,
            context="session",
            error_code=error,
        )
        return self.sidecar.receive(data)

    # -- server

    def server(self, name: str, description: str, frame: Frame) -> None:
        data = encode(frame)  # raises if it would break the 60 KiB outbound limit
        assert decode(data) == frame
        self._add(name, description, "server", json_value=frame, data=data)


def _only(frames: list[Frame], kind: str, **match: Any) -> Frame:
    found = [
        f for f in frames if f["type"] == kind and all(f.get(k) == v for k, v in match.items())
    ]
    assert len(found) == 1, f"expected one {kind} {match}, got {found}"
    return found[0]


def _event(event_id: str, day: float, kind: str, rid: object = None, **fields: Any) -> Frame:
    frame: Frame = {"type": "event", "event_id": event_id, "day": day, "kind": kind, **fields}
    if rid is not None:
        frame["rid"] = rid
    return frame


def _claim(root: str, value: Any) -> Frame:
    return {"root": root, "value": value}


def _trust_roots(v: _Vectors) -> None:
    """A source id holding ':' (SPEC §8.1): its trust root escapes it, so it never shares
    a root with another source's topic entry (``a`` on ``b`` is ``trust:a:b``)."""
    s = v.session
    out = s(
        "client.trust.set_escaped",
        "The game sets Mira's general trust in the source guard:north (an id may hold ':').",
        {"type": "trust", "event_id": "t-esc", "day": 34, "resident": "mira",
         "source": "guard:north", "value": 0.8, "rid": 95},
    )  # fmt: skip
    v.server(
        "server.belief.trust_escaped",
        "Its trust change: root trust:guard%3Anorth, the source with % and : percent-escaped "
        "(guard's trust on the topic north would be trust:guard:north).",
        _only(out, "belief"),
    )
    out = s(
        "client.trust.source_escaped",
        "Mira's trust in guard:north: source is the id as it is.",
        {"type": "trust", "resident": "mira", "source": "guard:north", "rid": 96},
    )
    v.server(
        "server.trust.source_escaped",
        "The entry with its own change record; a cursor names it as its root does, without "
        "trust: (guard%3Anorth).",
        out[0],
    )


def _beliefs(rid: object, **extra: Any) -> Frame:
    return {"type": "beliefs", "resident": "mira", "rid": rid, **extra}


def build() -> tuple[list[Frame], list[Step]]:
    """Every vector, in file order, and the scripted session's transcript."""
    with tempfile.TemporaryDirectory(prefix="credence-vectors-") as tmp:
        sidecar = _Sidecar(Path(tmp) / "vectors.db")
        try:
            v = _Vectors(sidecar)
            _handshakes(v)
            _story(v)
            _social(v)
            _encodings(v)
            _refusals(v)
            _queries(v)
            _worlds(v)
            _roots(v)
            _memory(v)
            _listings(v)
            _subscriptions(v)
            _texts(v)  # before the resume: its hello is replayed after every conn-1 step
            _promises(v)
            _trust_pages(v)
            _trust_roots(v)  # after every other event: it moves no earlier vector's seq
            _resume(v)
            _literal_errors(v)
        finally:
            sidecar.close()
    return v.items, sidecar.steps


SESSION_HELLO: Frame = {
    "type": "hello",
    "protocol": 1,
    "world": WORLD,
    "client": "example-game/1.0 (Godot 4.3)",
    "subscribe": "*",
    "rid": "hello-1",
}
RESUME_HELLO: Frame = {
    "type": "hello",
    "protocol": 1,
    "world": WORLD,
    "token": "town-writer-secret",
    "client": "example-game/1.0 (Godot 4.3)",
    "resume": 4,
    "subscribe": ["mira"],
    "rid": "hello-2",
}


def _handshakes(v: _Vectors) -> None:
    h = v.handshake
    h(
        "client.hello.minimal",
        "The smallest hello: protocol 1 and a world.",
        {"type": "hello", "protocol": 1, "world": WORLD},
    )
    data = h(
        "client.hello.subscribe_all",
        "A hello that subscribes to every resident of the world, with a rid (echoed in welcome). "
        "This is the first frame of the scripted session.",
        SESSION_HELLO,
    )
    welcome = v.sidecar.hello(1, data)
    v.server(
        "server.welcome",
        "The reply to a valid hello: protocol, world, the world's latest change seq, the "
        "server's name, this connection's role, the auth mode and the inbound frame limit.",
        _only(welcome, "welcome"),
    )
    h(
        "client.hello.resume",
        "A hello with a token, resuming after change seq 4 for one resident (sent on a second "
        "connection of the session).",
        RESUME_HELLO,
    )
    h(
        "client.hello.resume_filters",
        "A reconnect that restores two filters added with subscribe frames after the first "
        "hello (one narrowed by an unsubscribe), so the backlog after seq 4 is read through "
        "them too.",
        {
            "type": "hello",
            "protocol": 1,
            "world": WORLD,
            "resume": 4,
            "subscribe": ["mira"],
            "filters": [
                {"residents": ["kai"], "roots": ["water:"], "changes": ["doubted", "corrected"]},
                {"residents": "*", "crossing": 50},
            ],
            "rid": "hello-3",
        },
    )
    h(
        "client.hello.nil_optionals",
        "Every optional field given as nil: the same as leaving it out.",
        {
            "type": "hello",
            "protocol": 1,
            "world": WORLD,
            "token": None,
            "client": None,
            "resume": None,
            "subscribe": None,
            "rid": None,
        },
    )
    h(
        "client.hello.unknown_keys",
        "Keys the sidecar does not know are ignored, whatever their value.",
        {
            "type": "hello",
            "protocol": 1,
            "world": WORLD,
            "x-engine": "unity",
            "future": {"nested": [1, 2.5, None]},
        },
    )
    bad = ErrorCode
    h(
        "handshake.not_hello",
        "The first frame of a connection must be hello.",
        {"type": "beliefs", "resident": "mira"},
        error=bad.HELLO_REQUIRED,
    )
    h(
        "handshake.protocol_2",
        "Only protocol 1 is spoken.",
        {"type": "hello", "protocol": 2, "world": WORLD},
        error=bad.UNSUPPORTED_PROTOCOL,
    )
    h(
        "handshake.protocol_missing",
        "protocol is required (absent is not 1).",
        {"type": "hello", "world": WORLD},
        error=bad.UNSUPPORTED_PROTOCOL,
    )
    h(
        "handshake.protocol_string",
        'protocol is the integer 1, not the string "1".',
        {"type": "hello", "protocol": "1", "world": WORLD},
        error=bad.UNSUPPORTED_PROTOCOL,
    )
    h(
        "handshake.world_missing",
        "world is required.",
        {"type": "hello", "protocol": 1},
        error=bad.INVALID_FRAME,
    )
    h(
        "handshake.world_too_long",
        "world is at most 200 characters (code points).",
        {"type": "hello", "protocol": 1, "world": "w" * 201},
        error=bad.INVALID_FRAME,
    )
    h(
        "handshake.resume_negative",
        "resume is a non-negative integer.",
        {"type": "hello", "protocol": 1, "world": WORLD, "resume": -1},
        error=bad.INVALID_FRAME,
    )
    h(
        "handshake.resume_fraction",
        "resume is an integer: a float with a fraction is refused (3.0 would be taken as 3).",
        {"type": "hello", "protocol": 1, "world": WORLD, "resume": 3.5},
        error=bad.INVALID_FRAME,
    )
    h(
        "client.hello.integral_floats",
        "Integer fields take integral floats: protocol 1.0 and resume 3.0 (what Godot's JSON "
        "parser gives for every number) are 1 and 3.",
        {"type": "hello", "protocol": 1.0, "world": WORLD, "resume": 3.0},
    )
    h(
        "handshake.subscribe_not_list",
        'subscribe is a list of resident ids or "*".',
        {"type": "hello", "protocol": 1, "world": WORLD, "subscribe": "mira"},
        error=bad.INVALID_FRAME,
    )
    h(
        "client.hello.read_only",
        "A viewer (the inspector) asks for a read-only connection: role reader, whatever the "
        "token grants (role writer would insist on a writer token).",
        {"type": "hello", "protocol": 1, "world": WORLD, "role": "reader", "subscribe": "*"},
    )
    h(
        "handshake.role_unknown",
        "role is reader or writer.",
        {"type": "hello", "protocol": 1, "world": WORLD, "role": "admin"},
        error=bad.INVALID_FRAME,
    )
    h(
        "handshake.subscribe_star_in_list",
        '"*" is never a resident id: subscribe ["*"] is refused (send "*" itself for everyone).',
        {"type": "hello", "protocol": 1, "world": WORLD, "subscribe": ["*"]},
        error=bad.INVALID_FRAME,
    )
    h(
        "handshake.truncated",
        "A hello cut short: not a msgpack map at all.",
        None,
        data=pack({"type": "hello", "protocol": 1, "world": WORLD})[:-3],
        error=bad.BAD_FRAME,
    )


def _story(v: _Vectors) -> None:
    """The town story: every event kind, with the notifications and acks it causes."""
    s = v.session
    out = s(
        "client.event.say",
        "Bo tells Mira and Kai the well is poisoned: hearsay for each listener, Bo the source.",
        _event(
            "e-1",
            1,
            "say",
            rid=1,
            speaker="bo",
            listeners=["mira", "kai"],
            claim=_claim("water:well", "poisoned"),
            subject="The well is poisoned",
            topic="well",
        ),
    )
    v.server(
        "server.belief.formed_hearsay",
        "A belief formed from hearsay: 58, influencing, the speaker as source; prev_* are nil for "
        "a new belief.",
        _only(out, "belief", resident="mira", root="water:well"),
    )
    v.server(
        "server.belief.formed_believes",
        "Each listener also learns, firsthand, that the speaker claims it: a belief on "
        "believes:<speaker>:<root> with the asserted value, 78.",
        _only(out, "belief", resident="mira", root="believes:bo:water:well"),
    )
    v.server(
        "server.ack",
        "The ack of an event that caused four changes (for each listener the claim and "
        "believes:bo:water:well); seq is the last of them, rid is echoed.",
        _only(out, "ack"),
    )
    out = s(
        "client.event.observe",
        "Mira sees the doctor drink from the well, unharmed: firsthand evidence for every "
        "witness, with every optional field of observe.",
        _event(
            "e-2",
            3.5,
            "observe",
            witnesses=["mira"],
            claim=_claim("water:well", "clean"),
            subject="The doctor drank from the well and is fine",
            interpretations={"mira": "Maybe Bo was wrong about the well"},
            people=["doctor"],
            places=["well"],
            topics=["health"],
            importance=0.8,
        ),
    )
    v.server(
        "server.belief.doubted",
        "Contradicting evidence: doubted, 58 → 38, doubtful; value and subject stay.",
        _only(out, "belief", change="doubted"),
    )
    v.server(
        "server.belief.trust",
        "Mira's own eyes contradict what Bo told her: her trust in Bo drops 0.10, here on the "
        "belief's topic (root trust:bo:well; value and prev_value are the trust, confidence "
        "100 × trust), and likewise on general trust (trust:bo).",
        _only(out, "belief", root="trust:bo:well"),
    )
    out = s(
        "client.event.observe_minimal",
        "An observe event with only its required fields.",
        _event(
            "e-3",
            4,
            "observe",
            witnesses=["mira"],
            claim=_claim("water:well", "clean"),
            subject="Mira drew a bucket; the water is clear",
        ),
    )
    v.server(
        "server.belief.corrected",
        "A doubtful belief meets contradicting firsthand evidence: corrected, value and subject "
        "replaced, 72.",
        _only(out, "belief", change="corrected"),
    )
    out = s(
        "client.event.act",
        "Mira fetches water while Kai watches. The claim is derived: action:mira:fetch_water = "
        "completed; the actor always witnesses.",
        _event(
            "e-4",
            4,
            "act",
            actor="mira",
            action="fetch_water",
            status="completed",
            witnesses=["kai"],
        ),
    )
    v.server(
        "server.belief.formed_firsthand",
        "A belief formed firsthand: 78; the subject of an act without one is generated.",
        _only(out, "belief", resident="kai"),
    )
    s(
        "client.event.announce_all",
        'The mayor announces to everyone the world knows (audience "*"): hearsay for each, '
        "the speaker excluded.",
        _event(
            "e-5",
            5,
            "announce",
            speaker="mayor",
            audience="*",
            claim=_claim("festival:day", 12),
            subject="The harvest festival is on day 12",
            places=["square"],
        ),
    )
    out = s(
        "client.event.intervene_implant",
        "A player implants a memory in Kai: implanted evidence, value required.",
        _event(
            "e-6",
            5,
            "intervene",
            resident="kai",
            op="implant",
            claim=_claim("secret:door", True),
            subject="There is a secret door under the mill",
        ),
    )
    v.server(
        "server.belief.formed_implant",
        "An implanted belief: 65, source_kind implanted, detail names the op.",
        _only(out, "belief"),
    )
    out = s(
        "client.event.intervene_distort",
        "A player distorts Kai's belief on the festival day: value and subject replaced.",
        _event(
            "e-7",
            5,
            "intervene",
            resident="kai",
            op="distort",
            claim=_claim("festival:day", 13),
            subject="The harvest festival is on day 13",
        ),
    )
    v.server(
        "server.belief.intervened_distort",
        "An intervention: change intervened, detail distort.",
        _only(out, "belief"),
    )
    out = s(
        "client.event.intervene_soften",
        "A player softens Kai's implanted belief: only the claim root is needed.",
        _event("e-8", 6, "intervene", resident="kai", op="soften", claim={"root": "secret:door"}),
    )
    v.server(
        "server.belief.intervened_soften",
        "Soften: confidence − 25 (65 → 40).",
        _only(out, "belief"),
    )
    s(
        "client.event.intervene_suppress",
        "A player suppresses Kai's memory of the fetched water (a value, if given, is ignored).",
        _event(
            "e-9",
            6,
            "intervene",
            resident="kai",
            op="suppress",
            claim={"root": "action:mira:fetch_water", "value": "ignored"},
        ),
    )
    out = s(
        "client.event.tick",
        "The clock jumps to day 22: hearsay that nobody repeated ages, one step per full 7 days, "
        "before anything else.",
        _event("e-10", 22, "tick", rid="tick-22"),
    )
    v.server(
        "server.belief.decayed",
        "Hearsay aging: decayed, − 8; evidence_id is nil and day is the day the step fell due.",
        out[0],
    )
    v.server(
        "server.belief.faded",
        "The aging step that reaches 34 fades the belief: state past.",
        _only(out, "belief", change="faded"),
    )
    v.server(
        "server.ack.tick",
        "The ack of a tick counts every aging change it caused.",
        _only(out, "ack"),
    )
    s(
        "client.event.announce_list",
        "Mira announces to a listed audience.",
        _event(
            "e-11",
            22,
            "announce",
            speaker="mira",
            audience=["kai", "bo"],
            claim=_claim("water:well", "clean"),
            subject="The well water is clean; Bo was wrong",
            people=["bo"],
        ),
    )
    out = s(
        "client.event.duplicate",
        "e-1 sent again (with another rid): acknowledged as a duplicate, nothing changes.",
        _event(
            "e-1",
            1,
            "say",
            rid=2,
            speaker="bo",
            listeners=["mira", "kai"],
            claim=_claim("water:well", "poisoned"),
            subject="The well is poisoned",
            topic="well",
        ),
    )
    v.server(
        "server.ack.duplicate",
        "A duplicate event_id: duplicate true, changes 0, no seq.",
        _only(out, "ack"),
    )


def _social(v: _Vectors) -> None:
    """Trust set and queried, trust-weighted and overheard hearsay, an organizer's proposal."""
    s = v.session
    out = s(
        "client.trust.set",
        "The game sets how much Cara trusts Bo (general trust, no topic): a trust frame with a "
        "value is an event of kind trust, logged like any other.",
        {"type": "trust", "event_id": "t-1", "day": 22, "resident": "cara", "source": "bo",
         "value": 0.9},
    )  # fmt: skip
    v.server(
        "server.belief.trust_set",
        "A trust set by the game: change trust on root trust:bo, source_kind implanted, detail "
        "set; value and prev_value are the trust (the default 0.6 before).",
        _only(out, "belief"),
    )
    s(
        "client.event.trust",
        "The same as an event of kind trust, here on one topic: Ann trusts Bo little about the "
        "well.",
        _event("t-2", 22, "trust", resident="ann", source="bo", topic="well", value=0.2),
    )
    out = s(
        "client.event.say_overheard",
        "Bo tells Cara the well is poisoned, and Ann overhears. Each hears it weighted by their "
        "trust in Bo on the topic: Cara 0.9 → 75; Ann 0.2, halved for overhearing → 29.",
        _event(
            "e-30",
            22,
            "say",
            speaker="bo",
            listeners=["cara"],
            overhearers=["ann"],
            claim=_claim("water:well", "poisoned"),
            subject="The well is poisoned",
            topic="well",
        ),
    )
    v.server(
        "server.belief.formed_trusted",
        "Hearsay from a trusted source: Cara trusts Bo 0.9, so the belief forms at 75, not 58.",
        _only(out, "belief", resident="cara", root="water:well"),
    )
    s(
        "client.event.observe_mill",
        "Ann sees the mill open.",
        _event(
            "e-31", 22, "observe", witnesses=["ann"], claim=_claim("mill", "open"),
            subject="The mill is open",
        ),
    )  # fmt: skip
    s(
        "client.event.say_mill",
        "Kai tells Ann the mill is closed: her belief becomes doubtful.",
        _event(
            "e-32", 22, "say", speaker="kai", listeners=["ann"], claim=_claim("mill", "closed"),
            subject="The mill is closed",
        ),
    )  # fmt: skip
    out = s(
        "client.propose",
        "A memory organizer (an LLM) proposes edits to Ann's beliefs: it may reword a subject, "
        "but not lift a doubt. A propose frame is an event of kind propose.",
        {"type": "propose", "event_id": "p-1", "day": 22, "resident": "ann",
         "edits": [{"root": "water:well", "subject": "the well is fine again"},
                   {"root": "mill", "state": "influencing"}]},
    )  # fmt: skip
    v.server(
        "server.ack.propose",
        "The ack of a proposal carries a verdict per edit; the accepted one is an intervened "
        "change (detail edit).",
        _only(out, "ack"),
    )
    v.server(
        "server.belief.edited",
        "An accepted edit: intervened, detail edit, with the subject before and after.",
        _only(out, "belief"),
    )
    out = s(
        "client.event.propose",
        "The same as an event of kind propose; an edit that changes a value is refused, so "
        "nothing changes.",
        _event(
            "p-2", 22, "propose", resident="ann",
            edits=[{"root": "water:well", "value": "clean", "subject": "the well is clean"}],
        ),
    )  # fmt: skip
    v.server(
        "server.ack.propose_refused",
        "Every edit refused: changes 0, the verdicts say why.",
        _only(out, "ack"),
    )
    out = s(
        "client.trust.query",
        "Ann's trust table: a trust frame without value is a query.",
        {"type": "trust", "resident": "ann", "rid": 40},
    )
    v.server(
        "server.trust",
        "The trust reply: each stored (source, topic) with its value and the change records "
        "behind it; default is the trust in any source not listed.",
        out[0],
    )


def _encodings(v: _Vectors) -> None:
    """Valid frames that exercise the cross-language rules."""
    s = v.session
    s(
        "client.event.int_max_safe",
        "The largest integer every language carries exactly, 2^53−1, as a claim value.",
        _event(
            "e-20",
            22,
            "observe",
            witnesses=["ana"],
            claim=_claim("counter:max", MAX_SAFE),
            subject="The counter shows its largest value",
        ),
    )
    s(
        "client.event.int_min_safe",
        "The smallest integer allowed, −(2^53−1).",
        _event(
            "e-21",
            22,
            "observe",
            witnesses=["ana"],
            claim=_claim("counter:min", -MAX_SAFE),
            subject="The counter shows its smallest value",
        ),
    )
    s(
        "client.event.day_integer",
        "A float field (day) given as an integer; 22 is the world's clock, and a day equal to "
        "the clock is not backwards: accepted.",
        _event(
            "e-22",
            22,
            "observe",
            witnesses=["ana"],
            claim=_claim("weather:day22", "rain"),
            subject="It rained on day 22",
        ),
    )
    frame = _event(
        "e-23",
        22.5,
        "observe",
        witnesses=["ana"],
        claim=_claim("weather:now", "fog"),
        subject="Fog",
    )
    s(
        "client.event.day_float32",
        "day as a msgpack float 32 (0xca): accepted like float 64. Not canonical (the canonical "
        "form is float 64).",
        frame,
        data=pack(frame, use_single_float=True),
    )
    s(
        "client.event.bool_value",
        "A boolean claim value; false is not 0 (values only match if their types match).",
        _event(
            "e-24",
            22.5,
            "observe",
            witnesses=["ana"],
            claim=_claim("door:mill", False),
            subject="The mill door is closed",
        ),
    )
    s(
        "client.event.unicode",
        "UTF-8 text: emoji outside the BMP, CJK, a combining accent (e + U+0301, not normalised "
        "to é) and RTL text; ids too.",
        _event(
            "e-25",
            22.5,
            "say",
            speaker="小明",
            listeners=["ana", "Zoë"],
            claim=_claim("rumour:井", "有毒 ☠️"),
            subject="井水有毒 🐍☠️ — Cafe\u0301 owner says so; שלום 👋🏽",
        ),
    )
    s(
        "client.event.id_200_code_points",
        "An id of 200 characters is the limit; lengths count Unicode code points (here 200 emoji "
        "= 800 UTF-8 bytes = 400 UTF-16 units).",
        _event(
            "e-26",
            22.5,
            "observe",
            witnesses=["🐍" * 200],
            claim=_claim("snake", True),
            subject="s",
        ),
    )
    s(
        "client.event.nil_optionals",
        "Optional fields given as nil are the same as absent (interpretations, importance, lists, "
        "rid).",
        _event(
            "e-27",
            22.5,
            "observe",
            witnesses=["ana"],
            claim=_claim("weather:wind", "calm"),
            subject="No wind",
            interpretations=None,
            importance=None,
            people=None,
            places=None,
            topics=None,
            rid=None,
        ),
    )
    s(
        "client.event.unknown_keys",
        "Unknown keys are ignored, and a nil claim on an act is the same as none.",
        _event(
            "e-28",
            22.5,
            "act",
            actor="ana",
            action="open_door",
            status="rejected",
            witnesses=None,
            subject="Ana tried the mill door",
            claim=None,
            engine_tick=88123,
            extra={"a": [1, 2]},
        ),
    )
    data = (
        b"\x83"
        + b"\xd9\x04type"  # str 8 where fixstr would do
        + b"\xda\x00\x07beliefs"  # str 16
        + b"\xa8resident\xa3ana"
        + b"\xa3rid\xcf\x00\x00\x00\x00\x00\x00\x00\x07"  # uint 64 holding 7
    )
    out = s(
        "client.beliefs.wide_encodings",
        "Wider encodings than needed (str 8, str 16, uint 64 for 7) decode the same. Not "
        "canonical.",
        {"type": "beliefs", "resident": "ana", "rid": 7},
        data=data,
    )
    assert out[-1]["type"] == "beliefs"
    s(
        "client.beliefs.depth_16",
        "A value 16 levels below the frame map (the limit), in an unknown key.",
        {"type": "beliefs", "resident": "ana", "rid": 8, "x": _nest(15)},
    )


def _refusals(v: _Vectors) -> None:
    """Frames refused after the handshake; the connection stays open."""
    s = v.session
    b = ErrorCode.BAD_FRAME
    base = {"type": "beliefs", "resident": "mira"}
    out = s(
        "invalid.bin_instead_of_str",
        "Text sent as msgpack bin (0xc4) instead of str.",
        None,
        data=pack({"type": "beliefs", "resident": b"mira"}),
        error=b,
    )
    v.server(
        "server.error.bad_frame",
        "The reply to a frame that breaks the encoding rules (no rid: the frame was not read).",
        out[0],
    )
    s(
        "invalid.ext_type",
        "A msgpack ext type (here type 1).",
        None,
        data=pack({**base, "x": msgpack.ExtType(1, b"hello")}),
        error=b,
    )
    s(
        "invalid.timestamp_ext",
        "The msgpack timestamp ext type (−1) is an ext type too.",
        None,
        data=pack({**base, "at": msgpack.Timestamp(1_700_000_000, 0)}),
        error=b,
    )
    s(
        "invalid.non_string_key",
        "A map key that is not a string (the integer 1).",
        None,
        data=pack({**base, 1: "one"}),
        error=b,
    )
    s(
        "invalid.int_above_max_safe",
        "2^53 (uint 64): beyond ±(2^53−1). Send ids as strings.",
        None,
        data=pack({**base, "rid": 2**53}),
        error=b,
    )
    s(
        "invalid.int_below_min_safe",
        "−2^53 (int 64).",
        None,
        data=pack({**base, "rid": -(2**53)}),
        error=b,
    )
    s("invalid.uint64_max", "2^64−1.", None, data=pack({**base, "rid": 2**64 - 1}), error=b)
    s(
        "invalid.trailing_bytes",
        "A valid map followed by one more byte (nil): one message is exactly one map.",
        None,
        data=pack(base) + b"\xc0",
        error=b,
    )
    s("invalid.two_maps", "Two maps in one message.", None, data=pack(base) + pack(base), error=b)
    s("invalid.truncated", "A map cut short by one byte.", None, data=pack(base)[:-1], error=b)
    s("invalid.empty_message", "An empty binary message.", None, data=b"", error=b)
    s("invalid.nan", "NaN (float 64).", None, data=pack({**base, "x": float("nan")}), error=b)
    s(
        "invalid.infinity",
        "Infinity (float 64).",
        None,
        data=pack({**base, "x": float("-inf")}),
        error=b,
    )
    s(
        "invalid.nan_float32",
        "NaN as float 32.",
        None,
        data=pack({**base, "x": float("nan")}, use_single_float=True),
        error=b,
    )
    s(
        "invalid.bad_utf8",
        "A str whose bytes are not UTF-8.",
        None,
        data=b"\x82\xa4type\xa7beliefs\xa8resident\xa3\xff\xfe\xfd",
        error=b,
    )
    s("invalid.not_a_map", "A frame must be a map, not an array.", ["beliefs", "mira"], error=b)
    s("invalid.reserved_byte", "0xc1 is never used in msgpack.", None, data=b"\xc1", error=b)
    s(
        "invalid.depth_17",
        "A value 17 levels below the frame map.",
        {**base, "rid": 9, "x": _nest(16)},
        error=b,
    )
    s(
        "invalid.missing_type",
        "Every frame needs a string type (the rid is still echoed).",
        {"resident": "mira", "rid": 10},
        error=b,
    )
    s("invalid.type_not_string", "type must be a string.", {"type": 7, "rid": 11}, error=b)
    out = s(
        "invalid.unknown_type",
        "A type this sidecar does not know.",
        {"type": "teleport", "resident": "mira", "rid": 12},
        error=ErrorCode.UNKNOWN_TYPE,
    )
    v.server("server.error.unknown_type", "The reply to a frame of unknown type.", out[0])
    f = ErrorCode.INVALID_FRAME
    out = s(
        "invalid.beliefs_no_resident",
        "A beliefs query without its resident.",
        {"type": "beliefs", "rid": 13},
        error=f,
    )
    v.server(
        "server.error.invalid_frame",
        "The reply to a known frame with a missing or bad field; rid echoed.",
        out[0],
    )
    s(
        "invalid.hello_again",
        "hello is only valid as the first frame.",
        {"type": "hello", "protocol": 1, "world": WORLD, "rid": 14},
        error=f,
    )
    s(
        "invalid.rid_map",
        "rid must be a scalar (string, number or boolean).",
        {**base, "rid": {"id": 1}},
        error=f,
    )
    s(
        "invalid.resident_empty",
        "Ids are non-empty strings.",
        {"type": "beliefs", "resident": "", "rid": 15},
        error=f,
    )
    s(
        "invalid.explain_no_root",
        "explain needs resident and root.",
        {"type": "explain", "resident": "mira", "rid": 16},
        error=f,
    )
    s(
        "invalid.narrative_budget_low",
        "budget is 200..50000.",
        {"type": "narrative", "resident": "mira", "budget": 199, "rid": 17},
        error=f,
    )
    s(
        "invalid.narrative_budget_high",
        "budget is 200..50000.",
        {"type": "narrative", "resident": "mira", "budget": 50001, "rid": 18},
        error=f,
    )
    s(
        "invalid.narrative_budget_fraction",
        "budget is an integer: 600.5 is refused (600.0 is taken as 600).",
        {"type": "narrative", "resident": "mira", "budget": 600.5, "rid": 19},
        error=f,
    )
    s(
        "invalid.narrative_lang",
        "lang is en or zh-Hant.",
        {"type": "narrative", "resident": "mira", "lang": "fr", "rid": 20},
        error=f,
    )
    s(
        "invalid.graph_neither",
        "A graph query needs resident, root or both.",
        {"type": "graph", "rid": 21},
        error=f,
    )
    s(
        "invalid.subscribe_no_residents",
        'subscribe needs residents (a list or "*").',
        {"type": "subscribe", "roots": ["water:"], "rid": 22},
        error=f,
    )
    s(
        "invalid.subscribe_change_kind",
        "changes may only hold change kinds.",
        {"type": "subscribe", "residents": "*", "changes": ["exploded"], "rid": 23},
        error=f,
    )
    s(
        "invalid.subscribe_crossing",
        "crossing is a confidence 0..100.",
        {"type": "subscribe", "residents": "*", "crossing": 101, "rid": 24},
        error=f,
    )
    s(
        "invalid.subscribe_star_in_list",
        '"*" is never a resident id: residents ["*"] would match nothing, so it is refused '
        '(send "*" itself for every resident).',
        {"type": "subscribe", "residents": ["*"], "rid": "star"},
        error=f,
    )
    e = ErrorCode.INVALID_EVENT
    good = {"witnesses": ["ana"], "claim": _claim("r", "v"), "subject": "s"}
    out = s(
        "invalid.event.claim_float",
        "A claim value is a string, integer or boolean, never a float.",
        _event(
            "x-1", 23, "observe", rid=25, witnesses=["ana"], claim=_claim("r", 1.5), subject="s"
        ),
        error=e,
    )
    v.server(
        "server.error.invalid_event",
        "An event refused whole: nothing of it is stored; event_id and rid echoed.",
        out[0],
    )
    s(
        "invalid.event.no_event_id",
        "event_id is required (the error then has no event_id).",
        {"type": "event", "day": 23, "kind": "tick", "rid": 26},
        error=e,
    )
    s(
        "invalid.event.no_day",
        "day is required.",
        {"type": "event", "event_id": "x-2", "kind": "tick"},
        error=e,
    )
    s("invalid.event.day_negative", "day is 0..1e12.", _event("x-3", -1, "tick"), error=e)
    s("invalid.event.day_too_large", "day is 0..1e12.", _event("x-4", 1e12 + 1, "tick"), error=e)
    s("invalid.event.day_bool", "A boolean is not a number.", _event("x-5", True, "tick"), error=e)
    s(
        "invalid.event.unknown_kind",
        "kind is one of observe, say, announce, act, intervene, tick, trust, propose.",
        _event("x-6", 23, "dream", **good),
        error=e,
    )
    s(
        "invalid.event.no_value",
        "claim.value is required (except for suppress and soften).",
        _event("x-7", 23, "observe", witnesses=["ana"], claim={"root": "r"}, subject="s"),
        error=e,
    )
    s(
        "invalid.event.no_subject",
        "subject is required for observe, say and announce.",
        _event("x-8", 23, "observe", witnesses=["ana"], claim=_claim("r", "v")),
        error=e,
    )
    s(
        "invalid.event.empty_subject",
        "A required text field must not be empty.",
        _event("x-9", 23, "observe", witnesses=["ana"], claim=_claim("r", "v"), subject=""),
        error=e,
    )
    s(
        "invalid.event.subject_4001",
        "Text fields are at most 4000 characters (code points).",
        _event(
            "x-10", 23, "observe", witnesses=["ana"], claim=_claim("r", "v"), subject="s" * 4001
        ),
        error=e,
    )
    s(
        "invalid.event.nul_in_subject",
        "Text must not contain NUL (U+0000).",
        _event("x-11", 23, "observe", witnesses=["ana"], claim=_claim("r", "v"), subject="a\x00b"),
        error=e,
    )
    s(
        "invalid.event.no_witnesses",
        "observe needs at least one witness.",
        _event("x-12", 23, "observe", witnesses=[], claim=_claim("r", "v"), subject="s"),
        error=e,
    )
    s(
        "invalid.event.witness_star",
        'A resident id may not be "*".',
        _event("x-13", 23, "observe", witnesses=["*"], claim=_claim("r", "v"), subject="s"),
        error=e,
    )
    s(
        "invalid.event.id_201_code_points",
        "Ids are at most 200 characters (code points).",
        _event("x-14", 23, "observe", witnesses=["🐍" * 201], claim=_claim("r", "v"), subject="s"),
        error=e,
    )
    s(
        "invalid.event.interpretation_stranger",
        "interpretations may only be given for witnesses.",
        _event("x-15", 23, "observe", **good, interpretations={"bo": "nonsense"}),
        error=e,
    )
    s(
        "invalid.event.speaker_listens",
        "A speaker cannot be its own listener.",
        _event(
            "x-16",
            23,
            "say",
            speaker="bo",
            listeners=["bo", "ana"],
            claim=_claim("r", "v"),
            subject="s",
        ),
        error=e,
    )
    s(
        "invalid.event.announce_to_self",
        "An announcement needs an audience besides its speaker.",
        _event(
            "x-17",
            23,
            "announce",
            speaker="bo",
            audience=["bo"],
            claim=_claim("r", "v"),
            subject="s",
        ),
        error=e,
    )
    s(
        "invalid.event.topic_star",
        'A topic may not be "*" (it leads the topics list, whose entries are ids).',
        _event("x-topic", 23, "say", speaker="bo", listeners=["ana"], claim=_claim("r", "v"),
               subject="s", topic="*"),
        error=e,
    )  # fmt: skip
    s(
        "invalid.event.op_list",
        "intervene.op is one of the four op strings; a list or map is refused, not a crash.",
        _event("x-op", 23, "intervene", resident="ana", op=["implant"], claim=_claim("r", "v"),
               subject="s"),
        error=e,
    )  # fmt: skip
    s(
        "invalid.event.edit_merge_not_list",
        "Every field of a propose edit is typed: merge is a list of roots, not a number.",
        {"type": "propose", "event_id": "x-merge", "day": 23, "resident": "ana",
         "edits": [{"root": "r", "merge": 5}]},
        error=e,
    )  # fmt: skip
    out = s(
        "invalid.event.too_many_residents",
        "An event names at most welcome.max_residents (256) witnesses, listeners, overhearers "
        "and audience together.",
        _event("x-many", 23, "observe", witnesses=[f"w{i}" for i in range(257)],
               claim=_claim("r", "v"), subject="s"),
        error=ErrorCode.TOO_MANY_RESIDENTS,
    )  # fmt: skip
    v.server(
        "server.error.too_many_residents",
        "An event naming more residents than welcome.max_residents: refused whole, nothing "
        "stored; event_id echoed.",
        out[0],
    )
    c = ErrorCode.CONTRACT_VIOLATION
    out = s(
        "invalid.event.act_with_claim",
        "An act event's claim is derived; it must not carry one (the epistemic guard, reason "
        "act_claim_given).",
        _event(
            "x-18", 23, "act", actor="ana", action="run", status="completed", claim=_claim("r", "v")
        ),
        error=c,
    )
    v.server(
        "server.error.contract_violation",
        "An event that breaks the epistemic guard: refused whole, with a reason code.",
        out[0],
    )
    s(
        "invalid.event.announce_relation",
        "A public announcement cannot create a private relationship belief (public_relationship).",
        _event(
            "x-22", 23, "announce", speaker="mira", audience=["kai"],
            claim=_claim("relation:bo", "liar"), subject="Bo lied about the well",
        ),
        error=c,
    )  # fmt: skip
    s(
        "invalid.event.say_with_witnesses",
        "An utterance only ever makes hearsay, never firsthand evidence (utterance_as_firsthand).",
        _event(
            "x-23", 23, "say", speaker="bo", listeners=["ana"], witnesses=["ana"],
            claim=_claim("r", "v"), subject="s",
        ),
        error=c,
    )  # fmt: skip
    s(
        "invalid.event.act_status",
        "status is completed, rejected, interrupted or replaced.",
        _event("x-19", 23, "act", actor="ana", action="run", status="done"),
        error=e,
    )
    s(
        "invalid.event.implant_no_value",
        "implant and distort need claim.value and subject.",
        _event(
            "x-20", 23, "intervene", resident="ana", op="implant", claim={"root": "r"}, subject="s"
        ),
        error=e,
    )
    s(
        "invalid.event.intervene_op",
        "op is implant, distort, suppress or soften.",
        _event("x-21", 23, "intervene", resident="ana", op="erase", claim=_claim("r", "v")),
        error=e,
    )


def _queries(v: _Vectors) -> None:
    s = v.session
    out = s("client.beliefs", "Every belief of one resident, in root order.", _beliefs(30))
    v.server("server.beliefs", "The beliefs reply (one part here: part 0, more false).", out[0])
    out = s(
        "client.beliefs.after",
        "Beliefs after a root (exclusive), to list from where a previous listing stopped.",
        _beliefs(31, after="festival:day"),
    )
    v.server("server.beliefs.after", "The beliefs whose root sorts after festival:day.", out[0])
    out = s(
        "client.beliefs.unknown_resident",
        "A resident the world has never heard of.",
        {"type": "beliefs", "resident": "nobody", "rid": 32},
    )
    v.server("server.error.not_found", "The reply for an unknown resident.", out[0])
    out = s(
        "client.explain",
        "Why Mira believes what she believes about the well.",
        {"type": "explain", "resident": "mira", "root": "water:well", "rid": 33},
    )
    v.server(
        "server.explanation",
        "The belief, every piece of evidence behind it and its change history.",
        out[0],
    )
    out = s(
        "client.explain.limit",
        "Only the latest piece of evidence and the latest change of that belief.",
        {"type": "explain", "resident": "mira", "root": "water:well", "limit": 1, "rid": 46},
    )
    v.server(
        "server.explanation.limit",
        "The latest evidence and change; evidence_total and history_total count every one.",
        out[0],
    )
    s(
        "client.beliefs.limit",
        "At most two beliefs, after a root: one page of a long listing.",
        _beliefs(47, after="a", limit=2),
    )
    s(
        "invalid.beliefs_limit_zero",
        "limit must be between 1 and 10000.",
        {"type": "beliefs", "resident": "mira", "limit": 0, "rid": 48},
        error=ErrorCode.INVALID_FRAME,
    )
    out = s(
        "client.distribution",
        "Who believes what about the festival day.",
        {"type": "distribution", "root": "festival:day", "rid": 34},
    )
    v.server(
        "server.distribution",
        "Values with counts, mean confidence and states; one row per resident.",
        out[0],
    )
    out = s(
        "client.narrative",
        "Mira's beliefs as prompt text, at most 600 characters, in English.",
        {"type": "narrative", "resident": "mira", "budget": 600, "lang": "en", "rid": 35},
    )
    v.server("server.narrative", "The narrative text and its sections.", out[0])
    out = s(
        "client.narrative.zh_hant",
        "The same in Traditional Chinese, 200 characters (the smallest budget).",
        {"type": "narrative", "resident": "kai", "budget": 200, "lang": "zh-Hant", "rid": 36},
    )
    v.server(
        "server.narrative.zh_hant", "A narrative in zh-Hant, compressed to fit its budget.", out[0]
    )
    s(
        "client.narrative.defaults",
        "budget and lang left out: 2000 characters, English.",
        {"type": "narrative", "resident": "bo", "rid": 37},
    )
    s(
        "client.narrative.budget_float",
        "An integral float where an integer is expected is that integer: budget 600.0 is 600.",
        {"type": "narrative", "resident": "bo", "budget": 600.0, "rid": 37},
    )
    out = s(
        "client.graph",
        "The graph of one belief of one resident.",
        {"type": "graph", "resident": "mira", "root": "water:well", "rid": 38},
    )
    v.server("server.graph", "Nodes and edges of Mira's belief about the well.", out[0])
    s(
        "client.graph.root",
        "One root across every resident.",
        {"type": "graph", "root": "secret:door", "rid": 39},
    )
    out = s(
        "client.graph.page",
        "The same belief a page of two event nodes at a time (limit 1–1000, default 100).",
        {"type": "graph", "resident": "mira", "root": "water:well", "limit": 2, "rid": 71},
    )
    v.server(
        "server.graph.page",
        "The first two pieces of evidence, with the claim node and the people they name; next "
        "is the after of the next page.",
        out[0],
    )
    out = s(
        "client.graph.after",
        "The next page: after is the next of the previous reply.",
        {"type": "graph", "resident": "mira", "root": "water:well", "after": out[0]["next"],
         "limit": 2, "rid": 72},
    )  # fmt: skip
    v.server(
        "server.graph.after",
        "The last page (next is nil): the claim node again, and only the edges of this page.",
        out[0],
    )
    s(
        "invalid.graph.limit",
        "A graph page holds 1 to 1000 event nodes.",
        {"type": "graph", "resident": "mira", "limit": 0, "rid": 73},
        error=ErrorCode.INVALID_FRAME,
    )
    s(
        "invalid.graph.after",
        "after is the next of an earlier page of the same graph: a string.",
        {"type": "graph", "resident": "mira", "after": 5, "rid": 74},
        error=ErrorCode.INVALID_FRAME,
    )


def _memory(v: _Vectors) -> None:
    """Issue 10: the registry, filtered beliefs, a focused narrative."""
    s = v.session
    out = s(
        "client.register",
        "The game names residents (and labels its actions) per language, here before Lena has "
        "appeared anywhere: a register frame is an event of kind register, logged like any other.",
        {"type": "register", "event_id": "g-1", "day": 23,
         "residents": [{"resident": "mira", "names": {"en": "Mira", "zh-Hant": "米拉"}},
                       {"resident": "lena", "names": {"en": "Lena", "zh-Hant": "蕾娜"}}],
         "actions": [{"action": "fetch_water",
                      "names": {"en": "fetch water", "zh-Hant": "打水"}}]},
    )  # fmt: skip
    v.server("server.ack.register", "A registration changes no belief: changes 0, no seq.", out[0])
    s(
        "client.event.register",
        "The same as an event of kind register: Bo's names.",
        _event("g-2", 23, "register",
               residents=[{"resident": "bo", "names": {"en": "Bo", "zh-Hant": "阿博"}}]),
    )  # fmt: skip
    s(
        "invalid.event.register_lang",
        "Names are given in en or zh-Hant, the narrative's languages.",
        _event("g-3", 23, "register", residents=[{"resident": "kai", "names": {"fr": "Kai"}}]),
        error=ErrorCode.INVALID_EVENT,
    )
    out = s(
        "client.beliefs.filtered",
        "Mira's beliefs about water that she holds with at least 50, in any state but doubtful.",
        _beliefs(44, prefix=["water:"], min_confidence=50,
                 states=["influencing", "corrected", "anomalous", "past"]),
    )  # fmt: skip
    v.server("server.beliefs.filtered", "Only the beliefs every filter lets through.", out[0])
    out = s(
        "client.narrative.focus",
        "Mira's narrative while Bo is in front of her at the well: what bears on them first.",
        {"type": "narrative", "resident": "mira", "budget": 400, "rid": 45,
         "focus": {"people": ["bo"], "places": ["well"]}},
    )  # fmt: skip
    v.server(
        "server.narrative.focus",
        "A focused narrative: registered names, the focus echoed, each entry's why.",
        out[0],
    )
    out = s(
        "client.narrative.empty",
        "Lena is registered but nothing has happened to her yet: her narrative is not not_found.",
        {"type": "narrative", "resident": "lena", "rid": 46},
    )
    v.server(
        "server.narrative.empty",
        "The narrative of a known resident without beliefs: a fixed sentence, ten empty sections.",
        out[0],
    )


def _listings(v: _Vectors) -> None:
    """Issue 19: the residents and the event log, a page at a time (the inspector, ``credence
    log``)."""
    s = v.session
    out = s(
        "client.residents",
        "The world's residents in id order, two per page here (limit 1–1000, default 500).",
        {"type": "residents", "limit": 2, "rid": 46},
    )
    v.server(
        "server.residents",
        "A page of residents with their registered names; next is the after of the next page.",
        out[0],
    )
    out = s(
        "client.residents.after",
        "A later page: residents whose id sorts after kai (the next of an earlier page).",
        {"type": "residents", "after": "kai", "limit": 2, "rid": 47},
    )
    v.server(
        "server.residents.after",
        "Registered residents carry their display names per language.",
        out[0],
    )
    out = s(
        "client.events",
        "The world's event log from event seq 4, three events (limit 1–1000, default 100).",
        {"type": "events", "from": 4, "limit": 3, "rid": 48},
    )
    v.server(
        "server.events",
        "Each event's seq, id, day, kind, speaker or actor and subject; next is the from of the "
        "next page, last the log's length.",
        out[0],
    )
    s(
        "invalid.events.limit",
        "A page holds at most 1000 entries.",
        {"type": "events", "limit": 5000, "rid": 49},
        error=ErrorCode.INVALID_FRAME,
    )
    _said(v)


def _said(v: _Vectors) -> None:
    """Issue 18: own words, what a resident said to whom and when, a page at a time."""
    s = v.session
    out = s(
        "client.said",
        "What Bo said, from the start, one utterance per page here (limit 1–1000, default 100).",
        {"type": "said", "resident": "bo", "limit": 1, "rid": 50},
    )
    v.server(
        "server.said",
        "Each utterance's seq, event id, day, kind, claim, subject and whom it was told; next is "
        "the from of the next page.",
        out[0],
    )
    out = s(
        "client.said.from",
        "The next page: what Bo said from the event seq the last reply gave as next.",
        {"type": "said", "resident": "bo", "from": out[0]["next"], "limit": 1, "rid": 51},
    )
    v.server("server.said.from", "A later page of the same resident's words.", out[0])
    out = s(
        "client.said.announce_all",
        "What the mayor said: an announcement to everyone.",
        {"type": "said", "resident": "mayor", "limit": 1, "rid": 52},
    )
    v.server(
        "server.said.announce_all",
        "An announcement to everyone: everyone is true, to lists whom it reached then.",
        out[0],
    )
    s(
        "invalid.said.resident",
        "A said query names its resident.",
        {"type": "said", "rid": 53},
        error=ErrorCode.INVALID_FRAME,
    )
    s(
        "invalid.said.from",
        "from is an event seq: an integer of at least 1.",
        {"type": "said", "resident": "bo", "from": 0, "rid": 54},
        error=ErrorCode.INVALID_FRAME,
    )


def _subscriptions(v: _Vectors) -> None:
    s = v.session
    out = s(
        "client.subscribe",
        "Notifications for Mira and Kai, roots starting water: or festival:, only doubted or "
        "corrected changes that cross confidence 50.",
        {
            "type": "subscribe",
            "residents": ["mira", "kai"],
            "roots": ["water:", "festival:"],
            "changes": ["doubted", "corrected"],
            "crossing": 50,
            "rid": 40,
        },
    )
    v.server(
        "server.subscribed",
        "The reply to subscribe: seq is where the new filter starts (changes after it).",
        out[0],
    )
    out = s(
        "client.unsubscribe",
        "Stop notifications about Kai, from every subscription.",
        {"type": "unsubscribe", "residents": ["kai"], "rid": 41},
    )
    v.server("server.unsubscribed", "The reply to unsubscribe.", out[0])
    s(
        "client.unsubscribe.all",
        "No residents: drop every subscription.",
        {"type": "unsubscribe", "rid": 42},
    )
    s(
        "client.subscribe.all",
        "Every resident, every root, every change.",
        {"type": "subscribe", "residents": "*", "rid": 43},
    )


def _resume(v: _Vectors) -> None:
    frames = v.sidecar.hello(2, pack(RESUME_HELLO))
    v.server(
        "server.belief.resumed",
        "A notification sent while resuming: the same belief frame as live ones.",
        frames[1],
    )
    v.server(
        "server.resumed",
        "After the backlog of a resume: seq is the last change looked at, sent how many "
        "notifications it held.",
        frames[-1],
    )


def _texts(v: _Vectors) -> None:
    """Issue 18: a subject in several languages, and the game's reason for a failed act."""
    s = v.session
    out = s(
        "client.event.observe_texts",
        "A subject may be a map of language to text (en, zh-Hant): each narrative reads its "
        "own language, else English, else the other; replies give the map back as sent.",
        _event("txt-1", 23, "observe", rid="txt-1", witnesses=["lena"],
               claim=_claim("bridge:state", "standing"),
               subject={"en": "the bridge is still standing", "zh-Hant": "橋還好好的"}),
    )  # fmt: skip
    v.server(
        "server.belief.formed_texts",
        "A belief formed from a subject given per language: the subject is that map.",
        _only(out, "belief", resident="lena"),
    )
    s(
        "client.event.act_reason",
        "A refused act with the game's reason (text, or a map per language): the narrative says "
        "why it failed (\"... was refused: the rope snapped\").",
        _event("txt-2", 23, "act", rid="txt-2", actor="lena", action="fetch_water",
               status="rejected", reason={"en": "the rope snapped", "zh-Hant": "繩子斷了"}),
    )  # fmt: skip
    s(
        "invalid.event.subject_lang",
        "A subject map may hold en and zh-Hant, the narrative's languages; another is refused.",
        _event("txt-3", 23, "observe", rid="txt-3", witnesses=["lena"],
               claim=_claim("bridge:state", "standing"), subject={"fr": "le pont tient"}),
        error=ErrorCode.INVALID_EVENT,
    )  # fmt: skip


def _promises(v: _Vectors) -> None:
    """Issue 18: promises and goals (SPEC §7.13, §7.14, §10.11, §10.12)."""
    s = v.session
    out = s(
        "client.event.promise",
        "Bo promises Kai to mend the fence by day 32: each party holds a view of it, pending.",
        _event(
            "e-p1", 30.0, "promise", rid=80, promise="fence-1", promiser="bo", to=["kai"],
            action="mend_fence", subject="mend the fence", by=32,
        ),
    )  # fmt: skip
    v.server(
        "server.belief.promise_made",
        "A promise notification: change promise, root promise:<id>, value the party's state "
        "(pending), detail how it learned it (made).",
        _only(out, "belief", resident="kai"),
    )
    out = s(
        "client.event.act.keeps_promise",
        "Bo mends the fence with Kai watching: the promise is kept for both, seen firsthand.",
        _event(
            "e-p2", 31.0, "act", rid=81, actor="bo", action="mend_fence", status="completed",
            witnesses=["kai"],
        ),
    )  # fmt: skip
    v.server(
        "server.belief.promise_kept",
        "Kai saw the promised act: pending → kept (detail seen); Kai's trust in Bo rises.",
        _only(out, "belief", resident="kai", change="promise"),
    )
    s(
        "client.event.promise.unseen",
        "Bo promises Mira to fix the roof by day 33; a later event past the deadline makes it "
        "overdue for Mira, who never saw it done.",
        _event(
            "e-p3", 31.0, "promise", rid=82, promise="roof-1", promiser="bo", to=["mira"],
            action="fix_roof", subject="fix the roof", by=33,
        ),
    )  # fmt: skip
    out = s(
        "client.event.goal",
        "The game sets a goal for Mira (op set, changed, achieved or abandoned).",
        _event(
            "e-p4", 34.0, "goal", rid=83, resident="mira", goal="well-1", op="set",
            subject="find out who poisoned the well",
        ),
    )  # fmt: skip
    v.server(
        "server.belief.promise_overdue",
        "The goal event's day passed the roof promise's deadline: overdue for Mira (detail "
        "deadline, day the deadline).",
        _only(out, "belief", resident="mira", change="promise", root="promise:roof-1"),
    )
    v.server(
        "server.belief.goal_set",
        "A goal notification: change goal, root goal:<id>, value its state, subject its text.",
        _only(out, "belief", change="goal"),
    )
    out = s(
        "client.promises",
        "The promises a resident made or was made, in promise id order (state, after, limit "
        "1–1000, default 100).",
        {"type": "promises", "resident": "mira", "rid": 84},
    )
    v.server("server.promises", "Mira's promises, with her view of each.", out[-1])
    out = s(
        "client.goals",
        "A resident's goals in goal id order (state, after, limit).",
        {"type": "goals", "resident": "mira", "state": "active", "rid": 85},
    )
    v.server("server.goals", "Mira's active goals.", out[-1])
    s(
        "invalid.promise.by",
        "A promise's deadline must not be before the event's day.",
        _event(
            "e-p5", 34.0, "promise", rid=86, promise="late-1", promiser="bo", to=["kai"],
            action="a", subject="do it", by=10,
        ),
        error=ErrorCode.INVALID_EVENT,
    )  # fmt: skip
    s(
        "contract.promise_report_value",
        "An utterance on promise:<id> reports it kept or broken, nothing else.",
        _event(
            "e-p6", 34.0, "say", rid=87, speaker="kai", listeners=["mira"],
            claim=_claim("promise:fence-1", "maybe"), subject="Bo maybe mended it",
        ),
        error=ErrorCode.CONTRACT_VIOLATION,
    )  # fmt: skip
    s(
        "invalid.promises.state",
        "A promises query's state is one of pending, kept, overdue, broken.",
        {"type": "promises", "resident": "mira", "state": "late", "rid": 88},
        error=ErrorCode.INVALID_FRAME,
    )


def _trust_pages(v: _Vectors) -> None:
    """Issue 17: the trust table a page at a time (SPEC §10.6); queries only, no event."""
    s = v.session
    out = s(
        "client.trust.page",
        "Mira's trust table one entry per page here (limit 1–1000, default 100), in order of "
        "source, then topic (general trust first).",
        {"type": "trust", "resident": "mira", "limit": 1, "rid": 89},
    )
    v.server(
        "server.trust.page",
        "The first page: Mira's general trust in Bo; next names its last entry (the source, "
        "then :topic for a topic entry): pass it as after.",
        out[0],
    )
    out = s(
        "client.trust.after",
        "The next page: after is the next of the previous reply.",
        {"type": "trust", "resident": "mira", "after": out[0]["next"], "limit": 1, "rid": 90},
    )
    v.server(
        "server.trust.after",
        "Mira's trust in Bo on the well, with the change records that moved it.",
        out[0],
    )
    s(
        "invalid.trust.after",
        "With source, after names an entry of that source (here one of Bo's, asked of Kai).",
        {"type": "trust", "resident": "mira", "source": "kai", "after": "bo:well", "rid": 91},
        error=ErrorCode.INVALID_FRAME,
    )
    s(
        "invalid.trust.limit",
        "A trust page holds 1 to 1000 entries.",
        {"type": "trust", "resident": "mira", "limit": 1001, "rid": 92},
        error=ErrorCode.INVALID_FRAME,
    )


def _worlds(v: _Vectors) -> None:
    s = v.session
    out = s(
        "client.worlds",
        "List the worlds this connection's token may open.",
        {"type": "worlds", "rid": 50},
    )
    v.server(
        "server.worlds",
        "Each world with its clock, log length, last change seq and counts.",
        out[0],
    )
    out = s(
        "client.fork",
        "Save slot: copy the world's log up to event seq 5 into a new world, beliefs rebuilt.",
        {"type": "fork", "into": "town-slot-1", "at": 5, "rid": 51},
    )
    v.server(
        "server.forked",
        "The new world, as the worlds reply describes it, and where it came from.",
        out[0],
    )
    out = s(
        "client.worlds.page",
        "A page of the worlds: at most limit (1–1000) after a world id (after, exclusive); "
        "a sidecar may hold 10,000 worlds.",
        {"type": "worlds", "limit": 1, "rid": "worlds-page"},
    )
    v.server(
        "server.worlds.page",
        "The first of two worlds, and next: the after of the next page (null on the last).",
        out[0],
    )
    s(
        "invalid.worlds.limit",
        "A worlds page holds 1 to 1000 worlds.",
        {"type": "worlds", "limit": 0, "rid": "worlds-bad"},
        error=ErrorCode.INVALID_FRAME,
    )
    out = s(
        "client.delete",
        "Delete a world: naming it is the confirmation; the token must be a writer for it.",
        {"type": "delete", "world": "town-slot-1", "rid": 52},
    )
    v.server("server.deleted", "What the deleted world held.", out[0])


SCHEMA_ROOTS: list[Frame] = [
    {"prefix": "water:well", "values": ["clean", "poisoned"],
     "text": {"en": "the well water", "zh-Hant": "井水"}, "importance": 0.5},
    {"prefix": "location:", "mutable": True},
]  # fmt: skip


def _roots(v: _Vectors) -> None:
    s = v.session
    out = s(
        "client.schema",
        "Declare the world's roots: allowed values, display text, importance, mutability; "
        "undeclared roots are accepted with a warning. A schema frame is an event of kind schema.",
        {"type": "schema", "event_id": "sc-1", "day": 23, "undeclared": "warn",
         "roots": SCHEMA_ROOTS, "rid": 53},
    )  # fmt: skip
    v.server(
        "server.ack.schema",
        "A schema is logged like any event: an ack, no changes.",
        _only(out, "ack"),
    )
    out = s(
        "client.event.schema_typo",
        "A value the schema does not declare for water:well (a typo): refused, nothing stored.",
        _event("sc-2", 23, "observe", rid=54, witnesses=["ann"],
               claim=_claim("water:well", "poisond"), subject="the well is poisoned"),
    )  # fmt: skip
    v.server(
        "server.error.schema_violation",
        "Refused by the world's root schema, with a reason: value_not_allowed or undeclared_root.",
        _only(out, "error"),
    )
    out = s(
        "client.event.undeclared_root",
        "A root no declared prefix covers, in a world whose schema says warn: stored, and warned.",
        _event("sc-3", 23, "observe", rid=55, witnesses=["ann"],
               claim=_claim("weather:today", "rain"), subject="it is raining"),
    )  # fmt: skip
    v.server("server.ack.warnings", "An ack with warnings.", _only(out, "ack"))
    s(
        "client.event.schema",
        "The same as an event of kind schema: this one declares nothing and accepts every root.",
        _event("sc-4", 23, "schema", rid=56, undeclared="accept", roots=[]),
    )


def _literal_errors(v: _Vectors) -> None:
    """Error frames the scripted session does not reach, built as connection.py builds them."""
    code = ErrorCode
    cases: list[tuple[str, str, Callable[[], ProtocolError]]] = [
        (
            "server.error.hello_required",
            "No hello within the hello timeout (then close 4003); a first frame that is not hello "
            "gets the same code and close 4000.",
            lambda: ProtocolError(code.HELLO_REQUIRED, "no 'hello' within the hello timeout"),
        ),
        (
            "server.error.unsupported_protocol",
            "hello.protocol is not 1 (then close 4002).",
            lambda: _hello_error({"type": "hello", "protocol": 2, "world": WORLD, "rid": "h"}),
        ),
        (
            "server.error.unauthorized",
            "The token is missing, wrong or another world's (then close 4001).",
            lambda: ProtocolError(
                code.UNAUTHORIZED, f"token not valid for world {WORLD!r}", rid="h"
            ),
        ),
        (
            "server.error.forbidden",
            "A read-only connection sent an event; nothing stored, the connection stays open.",
            lambda: ProtocolError(
                code.FORBIDDEN, "a read-only token cannot send events", rid=5, event_id="e-99"
            ),
        ),
        (
            "server.error.clock_backwards",
            "An event dated before the world's clock by more than the world's late_event_days "
            "(default 0: any earlier day; equal to the clock is fine); refused whole, nothing stored, "
            "the connection stays open.",
            lambda: ProtocolError(
                code.CLOCK_BACKWARDS, str(ClockBackwards(3.0, 22.0)), rid=9, event_id="e-late"
            ),
        ),
        (
            "server.error.slow_consumer",
            "The client stopped reading notifications (then close 4008).",
            lambda: ProtocolError(code.SLOW_CONSUMER, "stopped reading; resume from seq 1234"),
        ),
        (
            "server.error.too_large",
            "One entry of a reply cannot fit in a 60 KiB frame.",
            lambda: ProtocolError(code.TOO_LARGE, "one beliefs entry is too large to send", rid=7),
        ),
        (
            "server.error.internal_error",
            "A bug or storage failure on the sidecar's side; the event it names was not stored.",
            lambda: ProtocolError(
                code.INTERNAL_ERROR, "event was not stored; retry", rid=8, event_id="e-8"
            ),
        ),
        (
            "server.error.shutting_down",
            "The sidecar is stopping and had not started this event: not stored; resend it "
            "after reconnecting.",
            lambda: ProtocolError(code.SHUTTING_DOWN, SHUTDOWN_MESSAGE, rid=9, event_id="e-9"),
        ),
        (
            "server.error.world_busy",
            "An event for a world a fork or an import is building: not stored; send it again "
            "after that save's reply.",
            lambda: ProtocolError(
                code.WORLD_BUSY, world_busy("town-slot-1").message, rid=10, event_id="e-10"
            ),
        ),
    ]
    for name, description, make in cases:
        v.server(name, description, make().to_frame())
    v.server(
        "server.error.limit_exceeded",
        "A subscribe past a per-connection bound (here 64 filters); nothing changed.",
        _limit_exceeded(),
    )


def _limit_exceeded() -> Frame:
    """The refusal of a 65th subscribe, as the session builds it."""
    session = Session()
    session.hello({"type": "hello", "protocol": 1, "world": WORLD}, as_json=False, auth=Auth())
    session.welcome(0, auth_open=True)
    reply: object = None
    for rid in range(Limits().max_subscriptions + 1):
        reply = session.receive(Subscribe(residents=None, rid=rid + 1), as_json=False, size=0)
    assert isinstance(reply, Reply) and reply.frame["code"] == "limit_exceeded"
    return reply.frame


def _hello_error(frame: Frame) -> ProtocolError:
    try:
        parse_hello(frame)
    except ProtocolError as exc:
        return exc
    raise AssertionError("the hello was accepted")


# ----------------------------------------------------------------------- output


def render(vectors: list[Frame]) -> str:
    """The exact text of ``vectors.json``."""
    return json.dumps(vectors, indent=2, ensure_ascii=True, allow_nan=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.vectors", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--check", action="store_true", help="compare with the file; exit 1 if stale"
    )
    parser.add_argument(
        "--out", type=Path, default=OUTPUT, help="where to write (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    vectors, _ = build()
    text = render(vectors)
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is stale: run python -m tools.vectors", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date ({len(vectors)} vectors)")
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {len(vectors)} vectors to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
