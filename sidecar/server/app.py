"""The sidecar process: the thin asyncio shell around the engine and the store.

It accepts WebSocket connections (and answers a plain HTTP GET as a health check), checks
tokens, runs the single writer off the event loop, fans committed changes out to
subscribers, and stops gracefully: on SIGINT/SIGTERM it stops reading, commits and
acknowledges everything already accepted, then closes every connection with 1001.
It contains no rule: those live in ``sidecar.engine``.
"""

from __future__ import annotations

import asyncio
import gc
import http
import ipaddress
import itertools
import logging
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import orjson
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response
from websockets.protocol import State

from protocol import CloseCode, DeleteWorld, ForkWorld, WorldsQuery

from .. import __version__
from ..engine import DEFAULT_RULES, Rules, WorldEvent
from ..store import (
    DEFAULT_MAX_OPEN_WORLDS,
    Availability,
    CannotOpen,
    DataDir,
    EventResult,
    HandlePool,
    Reader,
    SingleFile,
    StoreError,
    Writer,
    WriterLock,
    data_dir_lock,
    list_worlds,
    open_failure,
)
from . import inspector
from .auth import Auth
from .capture import DEFAULT_MAX_BYTES, CaptureWriter
from .connection import BoundedServerConnection, Connection
from .handles import budget
from .lifecycle import delete_reply, fork_reply, world_reply, worlds_reply
from .metrics import CONTENT_TYPE, Metrics
from .session import Limits
from .writer import WriterService

__all__ = ["ServerConfig", "Sidecar", "is_loopback"]

log = logging.getLogger("credence.server")
T = TypeVar("T")


@dataclass(slots=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8765
    db: Path = Path("./credence.db")
    writer_tokens: Sequence[str] = ()
    reader_tokens: Sequence[str] = ()
    capture: Path | None = None
    capture_max_bytes: int = DEFAULT_MAX_BYTES  # the capture is rotated to FILE.1 at this size
    max_frame: int = 256 * 1024  # inbound; larger frames close with 1009
    outbox_limit: int = 1024 * 1024  # bytes queued for one peer before slow_consumer
    #: While a backlog is sent (a resume, or a commit too big for the outbox), a peer whose
    #: outbox does not drain to a quarter for this long is a slow consumer (SPEC §14.4).
    backlog_stall: float = 30.0
    max_inflight: int = 1024  # requests of one connection awaiting their reply
    hello_timeout: float = 10.0
    ping_interval: float | None = 20.0
    ping_timeout: float | None = 20.0
    shutdown_timeout: float = 10.0
    #: On shutdown, batches go on for this long (default: half the shutdown timeout); events
    #: not started by then are refused with ``shutting_down``.
    commit_grace: float | None = None
    synchronous: str = "FULL"
    rules: Rules = DEFAULT_RULES  # for worlds created by this process; stored per world
    readers: int = 2
    limits: Limits = field(default_factory=Limits)  # subscriptions per connection (SPEC §8.2)
    #: Rules for particular worlds, used when this process creates them (a world that exists
    #: keeps the rules it was created with).
    world_rules: Mapping[str, Rules] = field(default_factory=dict)
    metrics: bool = True  # serve GET /metrics (Prometheus text format)
    #: Serve each world from its own SQLite file under this directory (``db`` is unused).
    data_dir: Path | None = None
    #: With ``data_dir``: world files open at once, for the writer and for each reader
    #: thread (least recently used closed first).
    max_open_worlds: int = DEFAULT_MAX_OPEN_WORLDS
    #: WebSocket connections at once; more are answered 503 before their handshake. None:
    #: what the file-handle limit leaves beside the world files (:mod:`.handles`).
    max_connections: int | None = None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Sidecar:
    """One running sidecar. ``await start()``, then ``await stop()`` (or ``run_forever``)."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        # The file handles, world files' first (a ValueError here names what to change).
        self.handles = budget(
            pools=1 + config.readers,
            per_pool=config.max_open_worlds if config.data_dir is not None else 1,
            configured=config.max_connections,
        )
        self.auth = Auth.from_specs(config.writer_tokens, config.reader_tokens)
        if self.auth.open and not is_loopback(config.host):
            raise ValueError(
                f"refusing to serve on {config.host}: no token is configured, so the sidecar "
                "only serves on loopback (pass --token to serve on other interfaces)"
            )
        # One writer per database file (or data directory): refused here, before anything
        # is opened.
        if config.data_dir is not None:
            config.data_dir.mkdir(parents=True, exist_ok=True)
        self.lock = WriterLock(
            config.db if config.data_dir is None else data_dir_lock(config.data_dir)
        )
        self.lock.acquire()
        try:
            self.store: SingleFile | DataDir = (
                DataDir(
                    config.data_dir,
                    rules=config.rules,
                    synchronous=config.synchronous,
                    max_open_worlds=config.max_open_worlds,
                    lock_held=True,
                )
                if config.data_dir is not None
                else SingleFile(
                    config.db,
                    rules=config.rules,
                    synchronous=config.synchronous,
                )
            )
            for world, rules in config.world_rules.items():
                self.store.ensure_world(world, rules)
        except BaseException:
            self.lock.release()
            raise
        self.hub: dict[str, set[Connection]] = {}
        self.stopping = False
        secrets = [s for table in (self.auth.writers, self.auth.readers) for v in table.values()
                   for s in v]  # fmt: skip
        self.capture = (
            CaptureWriter(config.capture, secrets=secrets, max_bytes=config.capture_max_bytes)
            if config.capture
            else None
        )
        self._ids = itertools.count(1)
        self._local = threading.local()
        #: Worlds whose file could not be opened (by the writer or a reader): ``degraded``.
        self.availability = (
            self.store.availability if isinstance(self.store, DataDir) else Availability()
        )
        self._reader_pools: list[HandlePool[Path, Reader]] = []  # one per reader thread
        self._pools_lock = threading.Lock()
        self._read_pool = ThreadPoolExecutor(config.readers, thread_name_prefix="credence-reader")
        self.connections: set[Connection] = set()
        #: The WebSocket upgrades let through (:meth:`_admit`), from their handshake on: what
        #: ``max_connections`` bounds (the server's own set holds only finished handshakes).
        self._admitted: set[ServerConnection] = set()
        self.metrics = Metrics(lambda: self.writer.queued, lambda: len(self.connections))
        # The service drives the store exactly like a bare Writer (apply, close).
        self.writer = WriterService(
            cast(Writer, _TimedWriter(self.store, self.metrics)), self._publish
        )
        self._reader_epoch = 0  # bumped when a world file is deleted: reopen readers
        self.server: Server | None = None
        self._writer_task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        sock = next(iter(self.server.sockets))
        return int(sock.getsockname()[1])

    @property
    def url(self) -> str:
        host = self.config.host
        return f"ws://[{host}]:{self.port}" if ":" in host else f"ws://{host}:{self.port}"

    @property
    def failed(self) -> bool:
        """The writer failed: nothing can be stored until a restart (health answers 503)."""
        return self.writer.failure is not None

    async def start(self) -> None:
        # Supervised: WriterService.run never raises; stop() always awaits it.
        self._writer_task = asyncio.create_task(self.writer.run(), name="credence-writer")
        unread = 2 * self.config.outbox_limit

        class _Bounded(BoundedServerConnection):
            unread_limit = unread

        self.server = await serve(
            self._handle,
            self.config.host,
            self.config.port,
            create_connection=_Bounded,
            process_request=self._process_request,
            max_size=self.config.max_frame,
            ping_interval=self.config.ping_interval,
            ping_timeout=self.config.ping_timeout,
            compression=None,
            server_header=f"credence/{__version__}",
        )
        mode = (
            "open mode: no token configured, loopback only, any token accepted"
            if self.auth.open
            else "token auth"
        )
        store = (
            f"db {self.config.db}"
            if self.config.data_dir is None
            else f"data dir {self.config.data_dir}"
        )
        log.info("credence %s serving %s (%s, %s)", __version__, self.url, store, mode)

    async def stop(self) -> None:
        """Bounded graceful shutdown (about ``shutdown_timeout`` at most, however long the
        writer queue): stop accepting and reading; commit batches for half the timeout and
        refuse what has not started by then (``shutting_down``); answer and flush what was
        accepted; close every connection with 1001."""
        if self.stopping:
            return
        self.stopping = True
        if self.server is not None:
            self.server.close(close_connections=False)
        grace = self.config.commit_grace
        self.writer.shut_down(self.config.shutdown_timeout / 2 if grace is None else grace)
        await self.writer.drain()
        budget = self.config.shutdown_timeout / 2
        await asyncio.gather(
            *(c.shutdown(budget) for c in list(self.connections)), return_exceptions=True
        )
        if self.server is not None:
            try:
                await asyncio.wait_for(self.server.wait_closed(), budget)
            except TimeoutError:
                log.warning("connections still open after the shutdown timeout")
        await self.writer.close(self._writer_task)
        self._read_pool.shutdown(wait=True)
        for pool in self._reader_pools:
            pool.clear()
        if self.capture is not None:
            self.capture.close()
        self.lock.release()
        log.info(
            "credence stopped: %d events in %d batches", self.writer.events, self.writer.batches
        )

    async def run_forever(self, ready: Callable[[Sidecar], None] | None = None) -> int:
        """Serve until SIGINT or SIGTERM; ``ready`` is called once the port is bound.

        Returns the exit status: 1 if the writer had failed, else 0."""
        await self.start()
        # Everything built so far (modules, config, the engine's tables) lives as long as the
        # process: out of the collector's reach, a full collection has far less to walk, so
        # its pause (which holds up every ack) shrinks (see tools/PERFORMANCE.md, the tail).
        gc.freeze()
        if ready is not None:
            ready(self)
        done = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, done.set)
        await done.wait()
        log.info("signal received: finishing the batch in flight, then closing connections (1001)")
        await self.stop()
        return 1 if self.failed else 0

    # ------------------------------------------------------------------ plumbing

    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return self._admit(connection)
        if self.config.metrics and request.path.partition("?")[0] == "/metrics":
            return _plain(connection, self.metrics.exposition(), CONTENT_TYPE)
        page = inspector.respond(connection, request.path)  # GET /inspect: the live inspector
        if page is not None:
            return page
        unavailable = len(self.availability)
        state = (
            "failed" if self.failed else "stopping" if self.stopping
            else "degraded" if unavailable else "ok"
        )  # fmt: skip
        body = orjson.dumps(
            {"status": state, "server": f"credence/{__version__}",
             "connections": len(self.connections),
             "max_connections": self.handles.max_connections, "events": self.writer.events,
             "unavailable_worlds": unavailable}
        )  # fmt: skip
        ok = state == "ok"
        status = http.HTTPStatus.OK if ok else http.HTTPStatus.SERVICE_UNAVAILABLE
        return _json(connection, status, body)

    def _admit(self, connection: ServerConnection) -> Response | None:
        """None (go on with the handshake) while the connections, this one included, are
        within ``max_connections``; else a 503 that says so (SPEC §2), before any handshake:
        the handles of the connections already open and of the world files stay theirs."""
        most = self.handles.max_connections
        if len(self._admitted) >= most:  # (those whose handshake failed go; the rest, at close)
            self._admitted = {c for c in self._admitted if not _gone(c)}
        if len(self._admitted) < most:
            self._admitted.add(connection)
            return None
        body = orjson.dumps(
            {"status": "full", "code": "too_many_connections", "max_connections": most,
             "message": f"this sidecar serves at most {most} connections at once; "
                        "try again later"}
        )  # fmt: skip
        return _json(connection, http.HTTPStatus.SERVICE_UNAVAILABLE, body, retry_after=1)

    async def _handle(self, ws: ServerConnection) -> None:
        conn = Connection(self, ws, next(self._ids))
        self.connections.add(conn)
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)
            self._admitted.discard(ws)

    def _reader(self, world: str | None = None) -> Reader:
        """This reader thread's connection to the file that holds ``world`` (from the thread's
        own bounded pool: at most ``max_open_worlds`` open). Raises :class:`CannotOpen` with
        the reason if the file cannot be opened (the world is then reported unavailable)."""
        path = self.config.db if world is None else self._read_path(world)
        pool: HandlePool[Path, Reader] | None = getattr(self._local, "readers", None)
        if pool is None or self._local.epoch != self._reader_epoch:
            if pool is None:
                pool = HandlePool(self.config.max_open_worlds, Reader, Reader.close)
                with self._pools_lock:
                    self._reader_pools.append(pool)
            pool.clear()
            self._local.readers = pool
            self._local.epoch = self._reader_epoch
        try:
            try:
                reader = pool.get(path)
            except (StoreError, sqlite3.Error, OSError):
                if not len(pool):
                    raise
                pool.shrink(len(pool) // 2)  # out of handles? give some back, retry once
                reader = pool.get(path)
        except (StoreError, sqlite3.Error, OSError) as exc:
            if world is not None and not path.exists() and path != self._read_path(world):
                return self._reader(world)  # deleted meanwhile: read it as the empty world
            name = world if world is not None else str(path)
            reason = f"the file of world {name!r} cannot be opened: {open_failure(exc)}"
            self.availability.failed(name, reason)
            log.error("%s", reason)
            raise CannotOpen(reason) from exc
        if world is not None:
            self.availability.opened(world)
        return reader

    def _read_path(self, world: str) -> Path:
        if isinstance(self.store, DataDir):
            path = self.store.db_for(world)
            return path if path.exists() else self.store.empty_db
        return self.config.db

    async def read(self, fn: Callable[[Reader], T], world: str | None = None) -> T:
        """Run a read-only query in a reader thread with its own connection (to ``world``'s
        file when worlds have files of their own), in one read transaction: every statement
        of a reply sees the same commit (:meth:`Reader.snapshot`)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._read_pool, lambda: _snapshot(fn, self._reader(world))
        )

    # ------------------------------------------------------------------ world lifecycle

    async def lifecycle(
        self, conn: Connection, frame: WorldsQuery | ForkWorld | DeleteWorld
    ) -> list[dict[str, Any]]:
        """Answer a ``worlds``/``fork``/``delete`` frame; writes run on the writer's thread,
        between batches, after every earlier event of the connection was committed (the
        connection answers its frames in order). A fork is built in steps between other
        worlds' batches (see :func:`fork_reply`)."""
        token = conn.token

        def role_for(w: str) -> Any:
            return self.auth.role_for(w, token)

        if isinstance(frame, ForkWorld):
            return await fork_reply(
                self.store, conn.world, frame, role=conn.role, role_for=role_for,
                save=self.writer.save, saving=self.writer.saving,
                removing=self.writer.removing,
            )  # fmt: skip

        if isinstance(frame, DeleteWorld):
            frames = await delete_reply(
                self.store, frame, role=conn.role, role_for=role_for,
                save=self.writer.save, saving=self.writer.saving,
                removing=self.writer.removing,
            )  # fmt: skip
            self._reader_epoch += 1
            for other in list(self.hub.get(frame.world, ())):
                if other is not conn:
                    asyncio.get_running_loop().create_task(
                        other.ws.close(CloseCode.GOING_AWAY, "world deleted")
                    )
            return frames

        def reply() -> list[dict[str, Any]]:
            return world_reply(
                self.store, conn.world, frame, role=conn.role, role_for=role_for,
                saving=self.writer.saving,
            )  # fmt: skip

        if isinstance(frame, WorldsQuery) and isinstance(self.store, DataDir):
            # Listing a data directory only reads (DataDir.worlds is safe on any thread): a
            # reader thread does it, so 10,000 world files never hold the writer up.
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._read_pool, reply)
        if isinstance(frame, WorldsQuery):
            # One file: a reader thread lists it too, on its own connection (the writer's
            # commits are what it sees; a world a save is building is left out by its row).
            page = await self.read(lambda r: list_worlds(r, frame.after, frame.limit))
            return worlds_reply(frame, page, role_for)
        return await self._on_writer(reply)

    async def _on_writer(self, fn: Callable[[], T]) -> T:
        await self.writer.drain()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.writer.executor, fn)

    def _publish(self, world: str, results: Sequence[EventResult]) -> None:
        changes = [c for r in results for c in r.changes]
        for conn in list(self.hub.get(world, ())):
            conn.deliver(changes)


def _plain(
    connection: ServerConnection, body: bytes, content_type: str,
    status: http.HTTPStatus = http.HTTPStatus.OK,
) -> Response:  # fmt: skip
    response = connection.respond(status, "")
    response.body = body
    # respond() already set text/plain and length 0; Headers is a multidict, so replace.
    del response.headers["Content-Type"]
    del response.headers["Content-Length"]
    response.headers["Content-Type"] = content_type
    response.headers["Content-Length"] = str(len(body))
    return response


def _gone(connection: ServerConnection) -> bool:
    """Whether a connection no longer holds its socket (closed, or its handshake failed)."""
    transport = connection.transport
    return transport is None or transport.is_closing() or connection.protocol.state is State.CLOSED


def _json(
    connection: ServerConnection, status: http.HTTPStatus, body: bytes,
    retry_after: int | None = None,
) -> Response:  # fmt: skip
    response = _plain(connection, body + b"\n", "application/json", status)
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response


class _TimedWriter:
    """The store as the writer service sees it, timing each batch for the metrics."""

    def __init__(self, inner: SingleFile | DataDir, metrics: Metrics) -> None:
        self.inner, self.metrics = inner, metrics

    def apply(self, batch: Sequence[tuple[str, WorldEvent]]) -> list[EventResult]:
        return self._timed(batch, lambda: ({}, self.inner.apply(batch)))[1]

    def apply_or_hold(
        self, batch: Sequence[tuple[str, WorldEvent]],
        committed: Callable[[list[int], list[EventResult]], None] | None = None,
    ) -> tuple[dict[str, Any], list[EventResult]]:  # fmt: skip
        """A data directory's :meth:`~sidecar.store.DataDir.apply_or_hold`, timed; one
        file's :meth:`apply` (nothing held, every world committed at once)."""
        inner = self.inner
        if not isinstance(inner, DataDir):
            return {}, self.apply(batch)  # (through the attribute: tools.tail times it there)
        return self._timed(batch, lambda: inner.apply_or_hold(batch, committed))

    def _timed(
        self, batch: Sequence[tuple[str, WorldEvent]],
        call: Callable[[], tuple[dict[str, Any], list[EventResult]]],
    ) -> tuple[dict[str, Any], list[EventResult]]:  # fmt: skip
        """``call()``, observed as one batch of the events it took up: a world held back
        (its file opening or being upgraded) comes again in a later batch, and is counted
        there, once."""
        start = time.perf_counter()
        held: dict[str, Any] = {}
        try:
            held, results = call()
            return held, results
        finally:
            taken = sum(1 for world, _ in batch if world not in held)
            if taken:
                self.metrics.observe_batch(taken, time.perf_counter() - start)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _snapshot(fn: Callable[[Reader], T], reader: Reader) -> T:
    """``fn(reader)`` in one read transaction."""
    with reader.snapshot():
        return fn(reader)
