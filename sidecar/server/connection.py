"""One client connection: handshake, the frame loop, ordered replies, notifications.

Three small tasks per connection, joined by bounded queues so no peer can grow our memory:

* the *reader* (this handler) decodes frames and submits work in arrival order;
* the *responder* turns that work into replies in the same order (an ack waits for its
  commit; a query waits for every earlier event of the connection, so you read your writes);
* the *sender* drains the outbox to the socket.

Notifications go straight into the outbox. If a subscriber stops reading and the outbox passes
its bound, the connection is told ``slow_consumer`` and closed; it can resume from its last
seq without loss, because every change is in SQLite.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from protocol import (
    PROTOCOL_VERSION,
    BeliefsQuery,
    CloseCode,
    DistributionQuery,
    ErrorCode,
    EventFrame,
    ExplainQuery,
    GraphQuery,
    Hello,
    NarrativeQuery,
    ProtocolError,
    Subscribe,
    TrustQuery,
    Unsubscribe,
    belief_frame,
    decode,
    encode,
    encode_json,
    parse_client_frame,
    parse_hello,
)

from .. import __version__
from ..engine import Change
from ..store import EventResult
from .auth import Role
from .queries import event_reply

if TYPE_CHECKING:
    from .app import Sidecar

__all__ = ["Connection"]

log = logging.getLogger("credence.server")

_BACKFILL_PAGE = 500
_SLOW_MESSAGE = "stopped reading; reconnect with resume set to the last seq you received"
_DONE = object()


class Connection:
    def __init__(self, app: Sidecar, ws: ServerConnection, conn_id: int) -> None:
        self.app = app
        self.ws = ws
        self.id = conn_id
        self.world = ""
        self.role = Role.READER
        self.json = False
        self.subscriptions: list[Subscribe] = []
        self.excluded: set[str] = set()
        self.cursor = 0  # last change seq delivered or passed over
        self.backfilling = False
        self.missed = 0  # highest seq published while backfilling
        self.outbox: deque[bytes | str] = deque()
        self.outbox_bytes = 0
        self.nonempty = asyncio.Event()
        self.room = asyncio.Event()
        self.room.set()
        self.work: asyncio.Queue[Any] = asyncio.Queue(app.config.max_inflight)
        self.slow = False
        self.close_code: int | None = None
        self.frames_in = 0
        self.events_in = 0
        self.tasks: list[asyncio.Task[Any]] = []

    # ------------------------------------------------------------------ lifecycle

    @property
    def peer(self) -> str:
        addr = self.ws.remote_address
        return f"{addr[0]}:{addr[1]}" if addr else "?"

    async def run(self) -> None:
        try:
            hello = await self._handshake()
        except ProtocolError as exc:
            log.info("conn %d from %s refused: %s (%s)", self.id, self.peer, exc.code, exc.message)
            self._leave_hub()
            await self._fatal(exc)
            return
        except ConnectionClosed:
            self._leave_hub()
            return
        except BaseException:
            self._leave_hub()  # joined during the handshake; never leave a dead peer there
            raise
        log.info(
            "conn %d open from %s world=%r client=%r role=%s",
            self.id, self.peer, self.world, hello.client, self.role,
        )  # fmt: skip
        self.tasks = [
            asyncio.create_task(self._sender(), name=f"conn{self.id}-sender"),
            asyncio.create_task(self._responder(), name=f"conn{self.id}-responder"),
        ]
        if hello.resume is not None or self.missed > self.cursor:
            # A resume, or changes committed during the handshake: catch up from SQLite
            # (live changes stay held back until then). Only a resume is told `resumed`.
            backfill = self._backfill(announce=hello.resume is not None)
            self.tasks.append(asyncio.create_task(backfill, name=f"conn{self.id}-backfill"))
        else:
            self.backfilling = False
        try:
            await self._read_loop()
        except ConnectionClosed:
            pass
        finally:
            await self._finish()

    async def _handshake(self) -> Hello:
        try:
            message = await asyncio.wait_for(self.ws.recv(), self.app.config.hello_timeout)
        except TimeoutError:
            raise ProtocolError(
                ErrorCode.HELLO_REQUIRED,
                "no 'hello' within the hello timeout",
                close=CloseCode.HELLO_TIMEOUT,
            ) from None
        self.json = isinstance(message, str)
        self._capture(message, first=True)
        hello = parse_hello(decode(message))
        token = hello.token or _bearer(self.ws)
        role = self.app.auth.role_for(hello.world, token)
        if role is None:
            raise ProtocolError(
                ErrorCode.UNAUTHORIZED, f"token not valid for world {hello.world!r}", rid=hello.rid
            )
        self.world, self.role = hello.world, role
        # Join the hub before reading the latest seq, with live delivery held back
        # (backfilling): a change committed meanwhile is caught up from SQLite, not lost.
        self.backfilling = True
        self.app.hub.setdefault(self.world, set()).add(self)
        latest = await self.app.read(lambda r: r.latest_seq(hello.world))
        self.cursor = latest if hello.resume is None else hello.resume
        if hello.subscribe is not None or hello.subscribe_all:
            self.subscriptions.append(
                Subscribe(residents=None if hello.subscribe_all else hello.subscribe)
            )
        self.push(
            {
                "type": "welcome",
                "rid": hello.rid,
                "protocol": PROTOCOL_VERSION,
                "world": hello.world,
                "seq": latest,
                "server": f"credence/{__version__}",
                "role": str(role),
                "auth": "open" if self.app.auth.open else "token",
                "max_frame": self.app.config.max_frame,
            }
        )
        await self._flush_now()
        return hello

    async def _read_loop(self) -> None:
        async for message in self.ws:
            if self.app.stopping:
                # Not read = not acknowledged; the client resends after reconnecting. Keep
                # reading (a break would end the handler: close 1000 and cancel the acks
                # still owed) until shutdown() has answered what was accepted and closes 1001.
                continue
            self.frames_in += 1
            self._capture(message)
            as_json = isinstance(message, str)
            try:
                frame = parse_client_frame(decode(message))
            except ProtocolError as exc:
                await self.work.put(("frame", exc.to_frame(), as_json))
                continue
            await self._dispatch(frame, as_json)

    async def _dispatch(self, frame: object, as_json: bool) -> None:
        if isinstance(frame, EventFrame):
            self.events_in += 1
            if self.role is not Role.WRITER:
                error = ProtocolError(
                    ErrorCode.FORBIDDEN, "a read-only token cannot send events",
                    rid=frame.rid, event_id=frame.event.event_id,
                )  # fmt: skip
                await self.work.put(("frame", error.to_frame(), as_json))
                return
            future = await self.app.writer.submit(self.world, frame.event)
            await self.work.put(("event", future, as_json, frame.rid))
        elif isinstance(frame, Subscribe):
            self.subscriptions.append(frame)
            if frame.residents is not None:
                self.excluded.difference_update(frame.residents)
            else:
                self.excluded.clear()
            await self.work.put(
                ("frame", {"type": "subscribed", "rid": frame.rid, "seq": self.cursor}, as_json)
            )
        elif isinstance(frame, Unsubscribe):
            self._unsubscribe(frame)
            await self.work.put(("frame", {"type": "unsubscribed", "rid": frame.rid}, as_json))
        elif isinstance(
            frame,
            BeliefsQuery
            | ExplainQuery
            | DistributionQuery
            | NarrativeQuery
            | GraphQuery
            | TrustQuery,
        ):
            await self.work.put(("query", frame, as_json))

    def _unsubscribe(self, frame: Unsubscribe) -> None:
        if frame.residents is None:
            self.subscriptions.clear()
            self.excluded.clear()
            return
        gone = set(frame.residents)
        kept = []
        for sub in self.subscriptions:
            if sub.residents is None:
                kept.append(sub)
                self.excluded |= gone
                continue
            rest = tuple(r for r in sub.residents if r not in gone)
            if rest:
                kept.append(
                    Subscribe(
                        residents=rest, roots=sub.roots, changes=sub.changes, crossing=sub.crossing
                    )
                )
        self.subscriptions = kept

    def _leave_hub(self) -> None:
        self.app.hub.get(self.world, set()).discard(self)

    async def _finish(self) -> None:
        self._leave_hub()
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        code = self.ws.close_code if self.close_code is None else self.close_code
        log.info(
            "conn %d closed code=%s frames=%d events=%d%s",
            self.id, code, self.frames_in, self.events_in, " (slow consumer)" if self.slow else "",
        )  # fmt: skip

    async def shutdown(self, timeout: float) -> None:
        """Graceful stop: answer everything already accepted, flush, close 1001."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.work.join(), timeout)
            await asyncio.wait_for(self._drained(), timeout)
        with contextlib.suppress(Exception):
            await self.ws.close(CloseCode.GOING_AWAY, "server shutting down")

    async def _drained(self) -> None:
        while self.outbox:
            await asyncio.sleep(0.01)

    # ------------------------------------------------------------------ outbound

    def _encode(self, frame: dict[str, Any], json: bool | None = None) -> bytes | str:
        if "rid" in frame and frame["rid"] is None:
            frame = {k: v for k, v in frame.items() if k != "rid"}
        return encode_json(frame) if (self.json if json is None else json) else encode(frame)

    def push(self, frame: dict[str, Any], json: bool | None = None) -> None:
        """Queue a frame for the sender; past the bound, the peer is a slow consumer.

        Replies use the encoding of the request (``json``); notifications that of ``hello``.
        """
        if self.slow:
            return
        data = self._encode(frame, json)
        if self.outbox_bytes + len(data) > self.app.config.outbox_limit:
            self._slow_consumer()
            return
        self.outbox.append(data)
        self.outbox_bytes += len(data)
        if self.outbox_bytes > self.app.config.outbox_limit // 2:
            self.room.clear()
        self.nonempty.set()

    async def _flush_now(self) -> None:
        while self.outbox:
            data = self.outbox.popleft()
            self.outbox_bytes -= len(data)
            await self.ws.send(data)

    async def _sender(self) -> None:
        while True:
            while not self.outbox:
                self.nonempty.clear()
                await self.nonempty.wait()
            data = self.outbox.popleft()
            self.outbox_bytes -= len(data)
            if self.outbox_bytes <= self.app.config.outbox_limit // 4:
                self.room.set()
            await self.ws.send(data)

    def _slow_consumer(self) -> None:
        self.slow = True
        self.outbox.clear()
        self.outbox_bytes = 0
        self.close_code = CloseCode.SLOW_CONSUMER
        for task in self.tasks:
            task.cancel()
        asyncio.get_running_loop().create_task(
            # No seq in the message: the cursor already counts the notifications just discarded.
            self._fatal(ProtocolError(ErrorCode.SLOW_CONSUMER, _SLOW_MESSAGE))
        )

    async def _fatal(self, exc: ProtocolError) -> None:
        """Send the error frame (if the peer still reads) and close with its code."""
        code = exc.close_code or CloseCode.INTERNAL_ERROR
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.send(self._encode(exc.to_frame())), 2)
        with contextlib.suppress(Exception):
            await self.ws.close(code, str(exc.code))

    # ------------------------------------------------------------------ replies

    async def _responder(self) -> None:
        while True:
            item = await self.work.get()
            try:
                if item is _DONE:
                    return
                kind, payload, as_json = item[0], item[1], item[2]
                if kind == "frame":
                    self.push(payload, as_json)
                elif kind == "event":
                    self.push(await self._ack(payload, item[3]), as_json)
                elif kind == "query":
                    for frame in await self._query(payload):
                        await self._wait_room()
                        self.push(frame, as_json)
            finally:
                self.work.task_done()

    async def _ack(self, future: asyncio.Future[EventResult], rid: object) -> dict[str, Any]:
        try:
            result = await future
        except Exception as exc:
            log.error("conn %d: event not stored: %s", self.id, exc)
            return ProtocolError(
                ErrorCode.INTERNAL_ERROR, "event was not stored; retry", rid=rid
            ).to_frame()
        return event_reply(result, rid)

    async def _query(self, query: Any) -> list[dict[str, Any]]:
        from .queries import answer

        try:
            return await self.app.read(lambda r: answer(r, self.world, query))
        except ProtocolError as exc:
            exc.rid = query.rid
            return [exc.to_frame()]
        except Exception:
            log.exception("conn %d: query %s failed", self.id, type(query).__name__)
            return [
                ProtocolError(ErrorCode.INTERNAL_ERROR, "query failed", rid=query.rid).to_frame()
            ]

    async def _wait_room(self) -> None:
        while not self.room.is_set() and not self.slow:
            await self.room.wait()

    # ------------------------------------------------------------------ notifications

    def wants(self, change: Change) -> bool:
        if change.resident in self.excluded:
            return False
        return any(sub.matches(change) for sub in self.subscriptions)

    def deliver(self, changes: Sequence[Change]) -> None:
        """Called after a commit with the world's new changes, in seq order."""
        if self.slow or not changes:
            return
        if self.backfilling:
            self.missed = max(self.missed, changes[-1].seq or 0)
            return
        for change in changes:
            seq = change.seq or 0
            if seq <= self.cursor:
                continue
            self.cursor = seq
            if self.wants(change):
                self.push(belief_frame(change))
                if self.slow:
                    return

    async def _backfill(self, *, announce: bool = True) -> None:
        """Resume: every change after the client's seq, from SQLite, then live ones."""
        self.backfilling = True
        sent = 0
        try:
            while True:
                after = self.cursor
                rows = await self.app.read(
                    lambda r, after=after: r.changes_after(self.world, after, limit=_BACKFILL_PAGE)
                )
                for change in rows:
                    self.cursor = change.seq or self.cursor
                    if self.wants(change):
                        await self._wait_room()
                        self.push(belief_frame(change))
                        sent += 1
                if len(rows) < _BACKFILL_PAGE and self.missed <= self.cursor:
                    break
        finally:
            self.backfilling = False
        if announce:
            self.push({"type": "resumed", "seq": self.cursor, "sent": sent})

    def _capture(self, message: bytes | str, *, first: bool = False) -> None:
        if self.app.capture is not None:
            self.app.capture.record(self.id, message, first=first)


def _bearer(ws: ServerConnection) -> str | None:
    header = ws.request.headers.get("Authorization") if ws.request else None
    if header and header.lower().startswith("bearer "):
        return header[7:].strip() or None
    return None
