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
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import orjson
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response

from .. import __version__
from ..engine import DEFAULT_RULES, Rules
from ..store import EventResult, Reader, Writer, WriterLock
from . import inspector
from .auth import Auth
from .capture import CaptureWriter
from .connection import BoundedServerConnection, Connection
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
    max_frame: int = 256 * 1024  # inbound; larger frames close with 1009
    outbox_limit: int = 1024 * 1024  # bytes queued for one peer before slow_consumer
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
        self.auth = Auth.from_specs(config.writer_tokens, config.reader_tokens)
        if self.auth.open and not is_loopback(config.host):
            raise ValueError(
                f"refusing to serve on {config.host}: no token is configured, so the sidecar "
                "only serves on loopback (pass --token to serve on other interfaces)"
            )
        # One writer per database file: refused here, before anything is opened.
        self.lock = WriterLock(config.db)
        self.lock.acquire()
        try:
            writer = Writer(config.db, rules=config.rules, synchronous=config.synchronous)
        except BaseException:
            self.lock.release()
            raise
        self.hub: dict[str, set[Connection]] = {}
        self.stopping = False
        secrets = [s for table in (self.auth.writers, self.auth.readers) for v in table.values()
                   for s in v]  # fmt: skip
        self.capture = CaptureWriter(config.capture, secrets=secrets) if config.capture else None
        self._ids = itertools.count(1)
        self._local = threading.local()
        self._readers: list[Reader] = []
        self._read_pool = ThreadPoolExecutor(config.readers, thread_name_prefix="credence-reader")
        self.writer = WriterService(writer, self._publish)
        self.server: Server | None = None
        self.connections: set[Connection] = set()
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
        log.info("credence %s serving %s (db %s, %s)", __version__, self.url, self.config.db, mode)

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
        for reader in self._readers:
            reader.close()
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
            return None
        page = inspector.respond(connection, request.path)  # GET /inspect: the live inspector
        if page is not None:
            return page
        state = "failed" if self.failed else "stopping" if self.stopping else "ok"
        body = orjson.dumps(
            {"status": state, "server": f"credence/{__version__}",
             "connections": len(self.connections), "events": self.writer.events}
        )  # fmt: skip
        ok = state == "ok"
        status = http.HTTPStatus.OK if ok else http.HTTPStatus.SERVICE_UNAVAILABLE
        response = connection.respond(status, "")
        response.body = body + b"\n"
        # respond() already set text/plain and length 0; Headers is a multidict, so replace.
        del response.headers["Content-Type"]
        del response.headers["Content-Length"]
        response.headers["Content-Type"] = "application/json"
        response.headers["Content-Length"] = str(len(response.body))
        return response

    async def _handle(self, ws: ServerConnection) -> None:
        conn = Connection(self, ws, next(self._ids))
        self.connections.add(conn)
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)

    def _reader(self) -> Reader:
        reader: Reader | None = getattr(self._local, "reader", None)
        if reader is None:
            reader = Reader(self.config.db)
            self._local.reader = reader
            self._readers.append(reader)
        return reader

    async def read(self, fn: Callable[[Reader], T]) -> T:
        """Run a read-only query in a reader thread with its own connection."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._read_pool, lambda: fn(self._reader()))

    def _publish(self, world: str, results: Sequence[EventResult]) -> None:
        changes = [c for r in results for c in r.changes]
        for conn in list(self.hub.get(world, ())):
            conn.deliver(changes)
