"""One client connection: the asyncio driver of a sans-I/O :class:`~.session.Session`.

The session holds the protocol state (hello, subscriptions, resume, outbox accounting); this
module does the I/O around it, with three small tasks per connection in one task group,
joined by bounded queues so no peer can grow our memory:

* the *reader* (this handler) reads messages and hands the session's actions over in
  arrival order (an event is submitted to the writer first);
* the *responder* turns those actions into replies in the same order (an ack waits for its
  commit; a query waits for every earlier event of the connection, so you read your writes);
* the *sender* drains the session's outbox to the socket;
* and, after a ``resume`` or an overflow, a *backfill* task catches up from SQLite.

Notifications go straight into the outbox. If a subscriber stops reading and the outbox passes
its bound, the connection is told ``slow_consumer`` and closed; it can resume from its last
seq without loss, because every change is in SQLite. One commit's notifications that would
not fit the outbox of a subscriber that kept up (an announcement heard by thousands) do not
close it: the backfill reads them from SQLite as the outbox drains. A bug in one of the
tasks ends the task group, and with it the connection (close 1011), and is logged; it never
goes unnoticed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from protocol import (
    CloseCode,
    DeleteWorld,
    ErrorCode,
    ForkWorld,
    Hello,
    ProtocolError,
    WorldsQuery,
    decode,
    parse_client_frame,
)

from ..engine import Change
from ..store import CannotOpen, EventResult, Reader
from .auth import Role
from .queries import event_reply
from .session import Query, QueryFrame, Reply, Session, SessionState, Submit
from .writer import NotStored, busy_message

if TYPE_CHECKING:
    from .app import Sidecar

__all__ = ["BoundedServerConnection", "Connection", "PendingAck"]

log = logging.getLogger("credence.server")

_BACKFILL_PAGE = 500
#: Change seqs a backlog page walks at most (in SQL, leaving out those of residents no
#: filter names, see :meth:`Session.prefilter`), so one read stays short however few match.
_BACKFILL_SCAN = 50_000
#: Text pieces of one fragmented message are joined every this many (bounds the overhead).
_JOIN_EVERY = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingAck:
    """An event handed to the writer: its ack is the reply, once ``future`` resolves."""

    future: asyncio.Future[EventResult]
    submit: Submit


Work = Reply | PendingAck | Query


class Connection:
    def __init__(self, app: Sidecar, ws: ServerConnection, conn_id: int) -> None:
        self.app = app
        self.ws = ws
        self.id = conn_id
        config = app.config
        self.session = Session(
            outbox_limit=config.outbox_limit, max_frame=config.max_frame, limits=config.limits
        )
        self.session.observer = lambda frame: app.metrics.observe_frame(frame, conn_id)
        self.token: str | None = None  # kept for the worlds/fork/delete checks; never logged
        self.nonempty = asyncio.Event()
        self.room = asyncio.Event()
        self.room.set()
        self.work: asyncio.Queue[Work] = asyncio.Queue(config.max_inflight)
        self.close_code: int | None = None
        self.frames_in = 0
        self._tasks: dict[str, asyncio.Task[Any]] = {}
        self.caught = asyncio.Event()  # the backfill sent a page (or ended)
        self._group: asyncio.TaskGroup | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def world(self) -> str:
        return self.session.world

    @property
    def role(self) -> Role:
        return self.session.role

    @property
    def slow(self) -> bool:
        return self.session.slow

    @property
    def outbox_bytes(self) -> int:
        return self.session.outbox_bytes

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
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                self._start("sender", self._sender())
                self._start("responder", self._responder())
                if self.session.backfilling:
                    # A resume, changes committed during the handshake, or an overflow since:
                    # catch up from SQLite (live changes stay held back until then).
                    self._start("backfill", self._backfill())
                try:
                    await self._read_loop()
                except ConnectionClosed:
                    pass
                finally:
                    for name in ("sender", "responder", "backfill"):
                        task = self._tasks.get(name)
                        if task is not None:
                            task.cancel()
        except* Exception as group_error:  # a bug in one of the tasks: loud, and this peer only
            for bug in group_error.exceptions:
                log.error("conn %d failed: %r", self.id, bug, exc_info=bug)
            self.close_code = CloseCode.INTERNAL_ERROR
            with contextlib.suppress(ConnectionClosed):
                await self.ws.close(CloseCode.INTERNAL_ERROR, "internal_error")
        finally:
            self._group = None
            self._leave_hub()
            if self.session.state is not SessionState.CLOSED:
                self.session.closed()
            code = self.ws.close_code if self.close_code is None else self.close_code
            log.info(
                "conn %d closed code=%s frames=%d events=%d%s",
                self.id, code, self.frames_in, self.session.events_in,
                " (slow consumer)" if self.slow else "",
            )  # fmt: skip

    def _start(self, name: str, coro: Any) -> None:
        assert self._group is not None
        self._tasks[name] = self._group.create_task(coro, name=f"conn{self.id}-{name}")

    async def _handshake(self) -> Hello:
        try:
            message = await asyncio.wait_for(self._recv(), self.app.config.hello_timeout)
        except TimeoutError:
            raise ProtocolError(
                ErrorCode.HELLO_REQUIRED,
                "no 'hello' within the hello timeout",
                close=CloseCode.HELLO_TIMEOUT,
            ) from None
        self._capture(message, first=True)
        self.session.json = isinstance(message, str)
        bearer = _bearer(self.ws)
        hello = self.session.hello(
            decode(message), as_json=isinstance(message, str), auth=self.app.auth,
            bearer=bearer,
        )  # fmt: skip
        self.token = hello.token or bearer
        if hello.world in self.app.writer.saving:  # its rows are not whole: no seq to tell
            raise ProtocolError(
                ErrorCode.WORLD_BUSY, busy_message(hello.world), close=CloseCode.TRY_AGAIN_LATER
            )
        # Join the hub before reading the latest seq, with live delivery held back
        # (RESUMING): a change committed meanwhile is caught up from SQLite, not lost.
        self.app.hub.setdefault(self.world, set()).add(self)
        try:
            latest = await self.app.read(lambda r: r.latest_seq(hello.world), hello.world)
        except CannotOpen as exc:  # this world's file only; the health check says degraded
            raise ProtocolError(
                ErrorCode.INTERNAL_ERROR, f"{exc}; retry later", close=CloseCode.TRY_AGAIN_LATER
            ) from None
        self.session.welcome(latest, auth_open=self.app.auth.open)
        await self._flush_now()
        return hello

    async def _recv(self) -> bytes | str:
        """One whole message, however many fragments it came in (bounded by ``max_frame``
        in total, not by a fragment count)."""
        pieces: list[Any] = []
        async for piece in self.ws.recv_streaming():
            pieces.append(piece)
            if len(pieces) >= _JOIN_EVERY:
                pieces = [_join(pieces)]
        return _join(pieces)

    async def _messages(self) -> AsyncIterator[bytes | str]:
        while True:
            yield await self._recv()

    async def _read_loop(self) -> None:
        async for message in self._messages():
            if self.app.stopping:
                # Not read = not acknowledged; the client resends after reconnecting. Keep
                # reading (a break would end the handler: close 1000 and cancel the acks
                # still owed) until shutdown() has answered what was accepted and closes 1001.
                continue
            if self.session.closing:
                continue
            self.frames_in += 1
            self._capture(message)
            as_json = isinstance(message, str)
            try:
                frame = parse_client_frame(decode(message))
            except ProtocolError as exc:
                await self.work.put(self.session.refuse(exc, as_json=as_json))
                continue
            action = self.session.receive(frame, as_json=as_json, size=len(message))
            if isinstance(action, Submit):
                await self.work.put(await self._submit(action))
            else:
                await self.work.put(action)

    async def _submit(self, action: Submit) -> Reply | PendingAck:
        try:
            future = await self.app.writer.submit(self.world, action.event, action.size)
        except NotStored as exc:
            error = ProtocolError(exc.code, exc.message, rid=action.rid, event_id=action.event_id)
            return self.session.refuse(error, as_json=action.json)
        return PendingAck(future=future, submit=action)

    def _leave_hub(self) -> None:
        peers = self.app.hub.get(self.world)
        if peers is not None:
            peers.discard(self)
            if not peers:  # (one entry per world ever connected would grow without end)
                del self.app.hub[self.world]

    async def shutdown(self, timeout: float) -> None:
        """Graceful stop: answer everything already accepted, flush, close 1001."""
        try:
            await asyncio.wait_for(self._answered(), timeout)
        except TimeoutError:
            log.warning("conn %d: replies still owed at the shutdown timeout", self.id)
        with contextlib.suppress(ConnectionClosed):
            await self.ws.close(CloseCode.GOING_AWAY, "server shutting down")

    async def _answered(self) -> None:
        await self.work.join()
        while self.session.outbox and not self.session.closing:
            await asyncio.sleep(0.01)

    # ------------------------------------------------------------------ outbound

    def push(self, frame: dict[str, Any], json: bool | None = None) -> None:
        """Queue a frame for the sender; past the bound, the peer is a slow consumer."""
        if self.session.push(frame, json):
            self.nonempty.set()
            if not self.session.room:
                self.room.clear()
        elif self.session.slow:
            self._slow_consumer()

    async def _flush_now(self) -> None:
        while (data := self.session.pop()) is not None:
            await self.ws.send(data)

    async def _sender(self) -> None:
        try:
            while True:
                data = self.session.pop()
                if data is None:
                    self.nonempty.clear()
                    await self.nonempty.wait()
                    continue
                if self.session.room:
                    self.room.set()
                await self.ws.send(data)
        except ConnectionClosed:
            return

    def _slow_consumer(self) -> None:
        if self.close_code is not None:
            return
        self.close_code = CloseCode.SLOW_CONSUMER
        self.room.set()  # wake waiters: they see the session closing and stop
        self.caught.set()
        for name in ("sender", "responder", "backfill"):
            task = self._tasks.get(name)
            if task is not None:
                task.cancel()
        while not self.work.empty():  # nothing more is answered: never block the reader
            self.work.get_nowait()
            self.work.task_done()
        if self._group is not None:
            self._start("fatal", self._fatal(self.session.slow_error()))

    async def _fatal(self, exc: ProtocolError) -> None:
        """Send the error frame (if the peer still reads) and close with its code."""
        code = exc.close_code or CloseCode.INTERNAL_ERROR
        data = self.session.fatal(exc)
        with contextlib.suppress(ConnectionClosed, TimeoutError):
            await asyncio.wait_for(self.ws.send(data), 2)
        with contextlib.suppress(ConnectionClosed):
            await self.ws.close(code, str(exc.code))

    # ------------------------------------------------------------------ replies

    async def _responder(self) -> None:
        while True:
            item = await self.work.get()
            try:
                if isinstance(item, Reply):
                    self.push(item.frame, item.json)
                elif isinstance(item, PendingAck):
                    frame = await self._ack(item)
                    await self._behind_notifications(frame.get("seq"))
                    self.push(frame, item.submit.json)
                else:
                    for frame in await self._query(item.query):
                        await self._wait_room()
                        self.push(frame, item.json)
            finally:
                self.work.task_done()

    async def _ack(self, pending: PendingAck) -> dict[str, Any]:
        submit = pending.submit
        try:
            result = await pending.future
        except NotStored as exc:
            error = ProtocolError(exc.code, exc.message, rid=submit.rid, event_id=submit.event_id)
            return error.to_frame()
        return event_reply(result, submit.rid)

    async def _query(self, query: QueryFrame) -> list[dict[str, Any]]:
        from .queries import answer

        try:
            if isinstance(query, WorldsQuery | ForkWorld | DeleteWorld):
                return await self.app.lifecycle(self, query)
            if self.world in self.app.writer.saving:  # its rows are not whole yet
                raise ProtocolError(ErrorCode.WORLD_BUSY, busy_message(self.world))
            return await self.app.read(lambda r: answer(r, self.world, query), self.world)
        except ProtocolError as exc:
            exc.rid = query.rid
            return [exc.to_frame()]
        except CannotOpen as exc:
            return [
                ProtocolError(ErrorCode.INTERNAL_ERROR, f"{exc}; retry later", rid=query.rid)
                .to_frame()
            ]  # fmt: skip
        except Exception:
            log.exception("conn %d: query %s failed", self.id, type(query).__name__)
            return [
                ProtocolError(ErrorCode.INTERNAL_ERROR, "query failed", rid=query.rid).to_frame()
            ]

    async def _behind_notifications(self, seq: int | None) -> None:
        """An ack waits while its event's notifications are in an overflow's backlog: it
        comes after them, as it does when they fit (SPEC §14.2)."""
        while True:
            self.caught.clear()
            if not self.session.holds_ack(seq):
                return
            await self.caught.wait()

    async def _room_for_backlog(self) -> bool:
        """:meth:`_wait_room` for a backlog's next notification; False when the peer let it
        wait :attr:`ServerConfig.backlog_stall` seconds: then it is a slow consumer, as one
        whose outbox overflows (else a peer that stopped reading while its backlog is sent
        would hold its connection for as long as its keepalive lets it)."""
        try:
            await asyncio.wait_for(self._wait_room(), self.app.config.backlog_stall)
        except TimeoutError:
            self.session.stalled()
            self._slow_consumer()
            return False
        return not self.session.closing

    async def _wait_room(self) -> None:
        while not self.room.is_set() and not self.session.closing:
            await self.room.wait()

    # ------------------------------------------------------------------ notifications

    def deliver(self, changes: Sequence[Change]) -> None:
        """Called after a commit with the world's new changes, in seq order."""
        session = self.session
        if session.closing or not changes:
            return
        before, was_open = len(session.outbox), not session.backfilling
        session.deliver(changes)
        if session.slow:
            self._slow_consumer()
            return
        if was_open and session.backfilling and self._group is not None:
            # One commit's notifications overflowed the outbox of a peer that kept up: the
            # rest come from SQLite as it drains (live ones held back until then).
            self._start("backfill", self._backfill())
        if len(session.outbox) != before:
            self.nonempty.set()
            if not session.room:
                self.room.clear()

    async def _backfill(self) -> None:
        """Resume, or an overflow: every change after the session's cursor, from SQLite,
        then live ones."""
        session = self.session
        sent = 0
        while True:
            after, residents = session.cursor, session.prefilter()

            def page(
                r: Reader, after: int = after, residents: frozenset[str] | None = residents
            ) -> tuple[list[Change], int, int]:
                # (one read transaction: the latest seq and the rows of one commit)
                latest = r.latest_seq(self.world)  # (what the welcome said, read so)
                upto = min(after + _BACKFILL_SCAN, latest)
                rows = r.changes_after(self.world, after, limit=_BACKFILL_PAGE, upto=upto,
                                       residents=residents)  # fmt: skip
                full = len(rows) == _BACKFILL_PAGE
                return rows, (rows[-1].seq or upto) if full else upto, latest

            rows, through, latest = await self.app.read(page, self.world)
            if not _covers(residents, session.prefilter()):
                continue  # a filter added meanwhile may want what the read left out: again
            for change in rows:
                frame = session.catch_up(change)
                if frame is not None:
                    if not await self._room_for_backlog():
                        self.caught.set()
                        return
                    self.push(frame)
                    sent += 1
                if session.closing:
                    self.caught.set()
                    return
                # (filters change only while a frame waits for room: one added then may want
                # what the read left out, so the backlog is read on from here)
                if frame is not None and residents is not None:
                    if not _covers(residents, session.prefilter()):
                        break
            else:
                session.passed(through)
            self.caught.set()  # (acks held behind this page may go)
            if session.cursor >= latest and not session.behind:
                break
        before = len(session.outbox)
        session.caught_up(sent)
        self.caught.set()
        if len(session.outbox) != before:
            self.nonempty.set()

    def _capture(self, message: bytes | str, *, first: bool = False) -> None:
        if self.app.capture is not None:
            self.app.capture.record(self.id, message, first=first)


def _covers(read: frozenset[str] | None, wanted: frozenset[str] | None) -> bool:
    """Whether a backlog page read for the residents ``read`` (None: anyone's) holds every
    change the session's filters want now (``wanted``, :meth:`Session.prefilter`)."""
    return read is None or (wanted is not None and wanted <= read)


class BoundedServerConnection(ServerConnection):
    """A websockets server connection that bounds what a peer leaves unread.

    websockets answers every ping with a pong written straight to the transport, outside
    our outbox; a peer that floods pings and never reads would grow that buffer without
    end. Past :attr:`unread_limit` bytes waiting in the transport (our frames are written
    with flow control, so only pongs get there), the peer is not reading: the connection is
    aborted (no close frame, it would not be read either).
    """

    unread_limit = 2 * 1024 * 1024

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        transport = self.transport
        if transport.get_write_buffer_size() > self.unread_limit and not transport.is_closing():
            log.warning(
                "connection from %s aborted: %d bytes it does not read (pongs to its pings)",
                _address(self), transport.get_write_buffer_size(),
            )  # fmt: skip
            transport.abort()


def _address(ws: ServerConnection) -> str:
    addr = ws.remote_address
    return f"{addr[0]}:{addr[1]}" if addr else "?"


def _join(pieces: list[Any]) -> bytes | str:
    if pieces and isinstance(pieces[0], str):
        return "".join(pieces)
    return b"".join(pieces)


def _bearer(ws: ServerConnection) -> str | None:
    header = ws.request.headers.get("Authorization") if ws.request else None
    if header and header.lower().startswith("bearer "):
        return header[7:].strip() or None
    return None
