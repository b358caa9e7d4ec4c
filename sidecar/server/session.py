"""The connection state machine, without I/O: hello, subscriptions, resume, outbox accounting.

A :class:`Session` is fed decoded frames and change records and answers with typed actions
and encoded outbound frames; it never touches a socket, a clock, the store or asyncio. The
asyncio :class:`~sidecar.server.connection.Connection` drives one per WebSocket, and the
vector generator (``tools/vectors.py``) drives one to compute what a sidecar
answers, so the two cannot drift apart. It is tested without an event loop.

States and transitions (an illegal transition raises :class:`SessionStateError`, naming the
state and the event)::

    AWAIT_HELLO --hello accepted--> RESUMING --caught up--> OPEN
         |                              |  ^                 |
         |                              |  +--- overflow ----+
         +----- refused hello ----------+---- fatal error ---+--> CLOSING --> CLOSED
                                                                      (closed: from any)

* ``AWAIT_HELLO``: nothing but ``hello`` is accepted.
* ``RESUMING``: the hello was accepted and the connection joined its world; live changes are
  held back (only the highest seq is remembered) while the backlog is caught up from the
  store, after a ``resume``, for changes committed during the handshake, or after an
  *overflow*: one commit's notifications would not fit the outbox of a peer that kept up.
* ``OPEN``: frames are answered, matching live changes are queued as notifications.
* ``CLOSING``: a fatal error was queued (a refused hello, ``slow_consumer``); nothing more is
  queued. ``CLOSED``: the socket is gone.

Bounds on what a peer controls (each refusal is ``limit_exceeded``, the connection stays
open and nothing changes): at most :attr:`Limits.max_subscriptions` filters per connection,
:attr:`Limits.max_residents` resident ids listed over all of them, and
:attr:`Limits.max_roots` root prefixes per filter. The outbox holds at most
``outbox_limit`` bytes of encoded frames. A peer that lets more than half of it wait is not
keeping up: past the bound, the session turns ``slow_consumer``. A peer that kept up is not
dropped for the size of one commit (an announcement heard by thousands, a day's aging): the
notifications that do not fit are read back from the store as it drains its outbox, in seq
order, each once, as a ``resume`` reads them (SPEC §14.4).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from protocol import (
    PROTOCOL_VERSION,
    ErrorCode,
    EventFrame,
    Hello,
    ProtocolError,
    Subscribe,
    Unsubscribe,
    belief_frame,
    encode,
    encode_json,
    parse_hello,
)
from protocol.frames import MAX_RESIDENTS, QueryFrame

from .. import __version__
from ..engine import Change
from .auth import Auth, Role

__all__ = [
    "Action",
    "Limits",
    "Query",
    "QueryFrame",
    "Reply",
    "Session",
    "SessionState",
    "SessionStateError",
    "Submit",
]

SLOW_MESSAGE = "stopped reading; reconnect with resume set to the last seq you received"


class SessionState(StrEnum):
    AWAIT_HELLO = "await_hello"
    RESUMING = "resuming"
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


#: Allowed transitions, by state (read with the diagram in the module docstring).
TRANSITIONS: dict[SessionState, frozenset[SessionState]] = {
    SessionState.AWAIT_HELLO: frozenset(
        {SessionState.RESUMING, SessionState.CLOSING, SessionState.CLOSED}
    ),
    SessionState.RESUMING: frozenset(
        {SessionState.OPEN, SessionState.CLOSING, SessionState.CLOSED}
    ),
    SessionState.OPEN: frozenset(
        {SessionState.RESUMING, SessionState.CLOSING, SessionState.CLOSED}
    ),
    SessionState.CLOSING: frozenset({SessionState.CLOSED}),
    SessionState.CLOSED: frozenset(),
}


class SessionStateError(RuntimeError):
    """Our own misuse: an event the session cannot take in its current state."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Per-connection bounds on subscriptions (see the module docstring and SPEC §8.2)."""

    max_subscriptions: int = 64
    max_residents: int = 20_000
    max_roots: int = 256


# ---------------------------------------------------------------------------- actions


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """Answer the frame with ``frame``, in request order."""

    frame: dict[str, Any]
    json: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Submit:
    """Hand the event to the writer; its ack (or refusal) is the reply, in request order."""

    event: Any  # the engine's typed event (EventFrame.event)
    event_id: str
    rid: object
    json: bool
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """Answer a query from the store (after every earlier event of the connection)."""

    query: QueryFrame
    json: bool


Action = Reply | Submit | Query


@dataclass(frozen=True, slots=True)
class _Filter:
    """A subscription, with its residents as a set (a match is one lookup, not a scan)."""

    residents: frozenset[str] | None
    spec: Subscribe

    def matches(self, change: Change) -> bool:
        if self.residents is not None and change.resident not in self.residents:
            return False
        return self.spec.accepts(change)


def _filter(spec: Subscribe) -> _Filter:
    return _Filter(None if spec.residents is None else frozenset(spec.residents), spec)


# ---------------------------------------------------------------------------- session


@dataclass(slots=True)
class Session:
    """One connection's protocol state. See the module docstring."""

    outbox_limit: int = 1024 * 1024
    max_frame: int = 256 * 1024
    limits: Limits = field(default_factory=Limits)
    state: SessionState = SessionState.AWAIT_HELLO
    world: str = ""
    role: Role = Role.READER
    json: bool = False  # the hello's encoding: that of notifications and the fatal error
    hello_frame: Hello | None = None
    cursor: int = 0  # last change seq delivered or passed over
    missed: int = 0  # highest seq published while RESUMING
    resumed_sent: bool = False  # the hello's resume was answered ``resumed``
    #: RESUMING after an overflow (not a resume): acks of events whose notifications are in
    #: the backlog wait for them, so an ack still comes after its notifications (SPEC §14.2).
    overflowed: bool = False
    slow: bool = False
    filters: list[_Filter] = field(default_factory=list)
    excluded: set[str] = field(default_factory=set)
    outbox: deque[bytes | str] = field(default_factory=deque)
    outbox_bytes: int = 0
    room: bool = True  # paged replies and backfill may queue more (hysteresis, SPEC §14.4)
    events_in: int = 0
    #: Sees every frame queued (and the fatal one), before encoding: the server's metrics.
    observer: Callable[[dict[str, Any]], None] | None = None

    # ------------------------------------------------------------------ transitions

    def _to(self, new: SessionState, event: str) -> None:
        if new is not self.state and new not in TRANSITIONS[self.state]:
            raise SessionStateError(f"{event}: not allowed in state {self.state}")
        self.state = new

    def _require(self, event: str, *states: SessionState) -> None:
        if self.state not in states:
            raise SessionStateError(f"{event}: not allowed in state {self.state}")

    @property
    def backfilling(self) -> bool:
        return self.state is SessionState.RESUMING

    @property
    def closing(self) -> bool:
        return self.state in (SessionState.CLOSING, SessionState.CLOSED)

    def closed(self) -> None:
        """The socket is gone."""
        self._to(SessionState.CLOSED, "closed")

    # ------------------------------------------------------------------ handshake

    def hello(
        self, frame: dict[str, Any], *, as_json: bool, auth: Auth, bearer: str | None = None
    ) -> Hello:
        """Accept the first frame as ``hello`` (or raise the fatal :class:`ProtocolError`).

        On success the session is RESUMING: the caller joins the world's hub (live changes
        are held back from now on), reads the latest seq and calls :meth:`welcome`.
        """
        self._require("hello", SessionState.AWAIT_HELLO)
        self.json = as_json
        hello = parse_hello(frame)
        role = auth.role_for(hello.world, hello.token or bearer)
        if role is None:
            raise ProtocolError(
                ErrorCode.UNAUTHORIZED, f"token not valid for world {hello.world!r}", rid=hello.rid
            )
        if hello.role == "writer" and role is not Role.WRITER:
            raise ProtocolError(
                ErrorCode.UNAUTHORIZED,
                f"hello.role 'writer': this token may only read world {hello.world!r}",
                rid=hello.rid,
            )
        if hello.role == "reader":  # a viewer (the inspector) that must never write
            role = Role.READER
        # The hello's filters exist before the backlog is read (SPEC §9), within the same
        # bounds as ``subscribe`` frames; breaking one refuses the hello.
        specs = list(hello.filters)
        if hello.subscribe is not None or hello.subscribe_all:
            specs.insert(0, Subscribe(residents=None if hello.subscribe_all else hello.subscribe))
        for spec in specs:
            problem = self._over_limit(spec)
            if problem is not None:
                self.filters.clear()
                raise ProtocolError(ErrorCode.LIMIT_EXCEEDED, problem, rid=hello.rid)
            self.filters.append(_filter(spec))
        self.world, self.role, self.hello_frame = hello.world, role, hello
        self._to(SessionState.RESUMING, "hello")
        return hello

    def welcome(self, latest: int, *, auth_open: bool) -> bool:
        """Queue ``welcome`` for the world at change seq ``latest`` (the hello's filters are in).

        Returns whether a backlog must be caught up from the store first (a ``resume``, or
        changes committed since the hub was joined): then call :meth:`catch_up` for each
        change after :attr:`cursor` and :meth:`caught_up`; else the session is OPEN.
        """
        self._require("welcome", SessionState.RESUMING)
        hello = self.hello_frame
        assert hello is not None
        self.cursor = latest if hello.resume is None else hello.resume
        self.push(
            {
                "type": "welcome",
                "rid": hello.rid,
                "protocol": PROTOCOL_VERSION,
                "world": hello.world,
                "seq": latest,
                "server": f"credence/{__version__}",
                "role": str(self.role),
                "auth": "open" if auth_open else "token",
                "max_frame": self.max_frame,
                "max_residents": MAX_RESIDENTS,
            }
        )
        if hello.resume is not None or self.missed > self.cursor:
            return True
        self._to(SessionState.OPEN, "welcome")
        return False

    @property
    def announce_resume(self) -> bool:
        """Only a ``resume`` is told ``resumed``, once (not a catch-up after the handshake or
        an overflow)."""
        hello = self.hello_frame
        return hello is not None and hello.resume is not None and not self.resumed_sent

    def catch_up(self, change: Change) -> dict[str, Any] | None:
        """One change of the backlog, in seq order: the notification to send, if wanted."""
        self._require("catch_up", SessionState.RESUMING, SessionState.CLOSING)
        self.cursor = change.seq or self.cursor
        return belief_frame(change) if self.wants(change) else None

    def passed(self, seq: int) -> None:
        """The backlog read from the store has passed over every change up to ``seq``: those
        :meth:`prefilter` left out are wanted by no filter (those it let through were given
        to :meth:`catch_up`)."""
        self._require("passed", SessionState.RESUMING, SessionState.CLOSING)
        self.cursor = max(self.cursor, seq)

    def prefilter(self) -> frozenset[str] | None:
        """The residents whose changes any filter may want, when every filter names its
        residents (None: a ``"*"`` filter, or none at all, may want anyone's): what a
        backlog read from the store leaves out before :meth:`catch_up` decides."""
        named: set[str] = set()
        for f in self.filters:
            if f.residents is None:
                return None
            named |= f.residents
        return frozenset(named) if self.filters else None

    def holds_ack(self, seq: int | None) -> bool:
        """Whether the ack of an event whose last change is ``seq`` must wait: its
        notifications are in an overflow's backlog, not sent yet (a resume's backlog holds
        no ack back: SPEC §14.2)."""
        return self.overflowed and not self.closing and seq is not None and seq > self.cursor

    @property
    def behind(self) -> bool:
        """While RESUMING: changes were published past the backlog read so far."""
        return self.missed > self.cursor

    def caught_up(self, sent: int) -> None:
        """The backlog is done: live delivery resumes (and ``resumed`` is queued if asked)."""
        if self.closing:
            return
        announce = self.announce_resume
        self._to(SessionState.OPEN, "caught_up")
        self.overflowed = False
        self.resumed_sent = self.resumed_sent or announce
        if announce:
            self.push({"type": "resumed", "seq": self.cursor, "sent": sent})

    # ------------------------------------------------------------------ frames

    def receive(self, frame: object, *, as_json: bool, size: int) -> Action:
        """What to do with one parsed client frame (see :func:`protocol.parse_client_frame`)."""
        self._require("receive", SessionState.RESUMING, SessionState.OPEN, SessionState.CLOSING)
        if isinstance(frame, EventFrame):
            self.events_in += 1
            event_id = frame.event.event_id
            if self.role is not Role.WRITER:
                return self.refuse(
                    ProtocolError(
                        ErrorCode.FORBIDDEN,
                        "a read-only token cannot send events",
                        rid=frame.rid,
                        event_id=event_id,
                    ),
                    as_json=as_json,
                )
            return Submit(event=frame.event, event_id=event_id, rid=frame.rid, json=as_json,
                          size=size)  # fmt: skip
        if isinstance(frame, Subscribe):
            return self._subscribe(frame, as_json)
        if isinstance(frame, Unsubscribe):
            self._unsubscribe(frame)
            return Reply(frame={"type": "unsubscribed", "rid": frame.rid}, json=as_json)
        if isinstance(frame, QueryFrame):
            return Query(query=frame, json=as_json)
        raise SessionStateError(f"receive: not a client frame: {type(frame).__name__}")

    def refuse(self, error: ProtocolError, *, as_json: bool) -> Reply:
        """The reply refusing one frame (the connection stays open)."""
        return Reply(frame=error.to_frame(), json=as_json)

    def _over_limit(self, frame: Subscribe) -> str | None:
        """Why adding ``frame`` to the connection's filters breaks a bound, if it does."""
        limits = self.limits
        if len(self.filters) >= limits.max_subscriptions:
            return (
                f"at most {limits.max_subscriptions} subscriptions per connection; "
                "unsubscribe first or merge filters"
            )
        if len(frame.roots) > limits.max_roots:
            return f"a subscription lists at most {limits.max_roots} roots"
        if frame.residents is not None:
            listed = sum(len(f.residents) for f in self.filters if f.residents is not None)
            if listed + len(frame.residents) > limits.max_residents:
                return (
                    f"at most {limits.max_residents} residents over all subscriptions of a "
                    f'connection ({listed} listed now); subscribe with "*" instead'
                )
        return None

    def _subscribe(self, frame: Subscribe, as_json: bool) -> Reply:
        problem = self._over_limit(frame)
        if problem is not None:
            error = ProtocolError(ErrorCode.LIMIT_EXCEEDED, problem, rid=frame.rid)
            return self.refuse(error, as_json=as_json)
        self.filters.append(_filter(frame))
        if frame.residents is not None:
            self.excluded.difference_update(frame.residents)
        else:
            self.excluded.clear()
        return Reply(frame={"type": "subscribed", "rid": frame.rid, "seq": self.cursor},
                     json=as_json)  # fmt: skip

    def _unsubscribe(self, frame: Unsubscribe) -> None:
        if frame.residents is None:
            self.filters.clear()
            self.excluded.clear()
            return
        gone = set(frame.residents)
        kept = []
        for f in self.filters:
            if f.residents is None:
                kept.append(f)
                self.excluded |= gone
                continue
            if not gone & f.residents:
                kept.append(f)
                continue
            spec = f.spec
            rest = tuple(r for r in spec.residents or () if r not in gone)
            if rest:
                kept.append(
                    _filter(
                        Subscribe(
                            residents=rest,
                            roots=spec.roots,
                            changes=spec.changes,
                            crossing=spec.crossing,
                        )
                    )
                )
        self.filters = kept

    @property
    def subscriptions(self) -> list[Subscribe]:
        return [f.spec for f in self.filters]

    # ------------------------------------------------------------------ notifications

    def wants(self, change: Change) -> bool:
        if change.resident in self.excluded:
            return False
        return any(f.matches(change) for f in self.filters)

    def deliver(self, changes: Sequence[Change]) -> None:
        """The world's new committed changes, in seq order: queue the wanted notifications.

        When one would not fit and the peer kept up (its outbox held at most half the bound
        when they came), the session turns RESUMING instead of ``slow_consumer``: the rest
        are caught up from the store after :attr:`cursor`, as for a resume (check
        :attr:`backfilling`); a peer that did not keep up is a slow consumer."""
        if self.closing or not changes:
            return
        if self.state is not SessionState.OPEN:  # AWAIT_HELLO cannot be in a hub; RESUMING
            self.missed = max(self.missed, changes[-1].seq or 0)
            return
        kept_up = self.room
        for change in changes:
            seq = change.seq or 0
            if seq <= self.cursor:
                continue
            if self.wants(change):
                frame = belief_frame(change)
                data = self.encode(frame)
                over = self.outbox_bytes + len(data) > self.outbox_limit
                # (caught up, a frame is queued once the outbox is down to a quarter: one
                # that would not fit there either makes its peer a slow consumer at once)
                if over and kept_up and len(data) <= self.outbox_limit - self.outbox_limit // 4:
                    self._to(SessionState.RESUMING, "overflow")
                    self.overflowed = True
                    self.missed = max(self.missed, changes[-1].seq or 0)
                    return
                self.cursor = seq
                self._queue(frame, data)
                if self.slow:
                    return
            else:
                self.cursor = seq

    # ------------------------------------------------------------------ outbox

    def encode(self, frame: dict[str, Any], json: bool | None = None) -> bytes | str:
        if "rid" in frame and frame["rid"] is None:
            frame = {k: v for k, v in frame.items() if k != "rid"}
        return encode_json(frame) if (self.json if json is None else json) else encode(frame)

    def push(self, frame: dict[str, Any], json: bool | None = None) -> bool:
        """Queue a frame; ``False`` if it did not fit (the session is now a slow consumer).

        Replies use the encoding of the request (``json``); notifications that of ``hello``.
        """
        if self.slow or self.state is SessionState.CLOSED:
            return False
        return self._queue(frame, self.encode(frame, json))

    def _queue(self, frame: dict[str, Any], data: bytes | str) -> bool:
        """:meth:`push` of ``frame`` encoded as ``data``."""
        if self.slow or self.state is SessionState.CLOSED:
            return False
        if self.observer is not None:
            self.observer(frame)
        if self.outbox_bytes + len(data) > self.outbox_limit:
            self.stalled()
            return False
        self.outbox.append(data)
        self.outbox_bytes += len(data)
        if self.outbox_bytes > self.outbox_limit // 2:
            self.room = False
        return True

    def stalled(self) -> None:
        """The peer did not drain its outbox while a backlog waited to be sent: it is a slow
        consumer (nothing more is queued; the caller sends :meth:`slow_error`)."""
        self.slow, self.room = True, False
        self.outbox.clear()
        self.outbox_bytes = 0
        if not self.closing:
            self._to(SessionState.CLOSING, "slow_consumer")

    def pop(self) -> bytes | str | None:
        """The next encoded frame to send, if any."""
        if not self.outbox:
            return None
        data = self.outbox.popleft()
        self.outbox_bytes -= len(data)
        if not self.slow and self.outbox_bytes <= self.outbox_limit // 4:
            self.room = True
        return data

    def drain(self) -> Iterable[bytes | str]:
        """Every queued frame, in order (for a driver without a socket)."""
        while (data := self.pop()) is not None:
            yield data

    def fatal(self, error: ProtocolError) -> bytes | str:
        """The last frame before closing with ``error``'s close code; nothing more is queued."""
        if self.observer is not None:
            self.observer(error.to_frame())
        if not self.closing:
            self._to(SessionState.CLOSING, "fatal")
        self.outbox.clear()
        self.outbox_bytes = 0
        return self.encode(error.to_frame())

    def slow_error(self) -> ProtocolError:
        # No seq in the message: the cursor already counts the notifications just discarded.
        return ProtocolError(ErrorCode.SLOW_CONSUMER, SLOW_MESSAGE)
