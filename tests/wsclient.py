"""A small WebSocket test client for the sidecar, and helpers to run a real server.

Everything here talks to a real :class:`~sidecar.server.Sidecar` over a real loopback socket:
:func:`running` starts one on an ephemeral port with a SQLite file under ``tmp_path``;
:class:`WsClient` connects, sends ``hello``, and collects every frame it receives in a
background task, so a test can ask for the next frame of a type (:meth:`WsClient.next_of`),
send a request and get the reply with its ``rid`` (:meth:`WsClient.request`), or send an
event and get its ack (:meth:`WsClient.event`).

Waits never assert on time: :func:`within` only guards against a hang, scaled by the
``CREDENCE_TEST_TIMEOUT_SCALE`` environment variable for slow machines.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import msgpack
import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from sidecar.server import ServerConfig, Sidecar

__all__ = [
    "WORLD",
    "Frame",
    "Received",
    "WsClient",
    "db_rows",
    "guard",
    "observe",
    "running",
    "say",
    "within",
]

T = TypeVar("T")
Frame = dict[str, Any]
WORLD = "town"

_event_ids = itertools.count(1)


def guard(seconds: float = 10.0) -> float:
    """A hang guard in seconds, scaled by ``CREDENCE_TEST_TIMEOUT_SCALE``."""
    return seconds * float(os.environ.get("CREDENCE_TEST_TIMEOUT_SCALE", "1"))


def rebuild_check(db: Path, seconds: float = 120.0) -> None:
    """``credence rebuild --check`` on ``db`` passes: replaying the log rebuilds every
    stored belief, change and trust value exactly."""
    done = subprocess.run(
        [sys.executable, "-m", "sidecar.cli", "rebuild", "--db", str(db), "--check"],
        capture_output=True, text=True, timeout=guard(seconds), check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


async def within(awaitable: Awaitable[T], seconds: float = 10.0) -> T:
    """Await ``awaitable``, failing (not hanging) if it never completes."""
    return await asyncio.wait_for(awaitable, guard(seconds))


@contextlib.asynccontextmanager
async def running(tmp_path: Path, **config: Any) -> AsyncIterator[Sidecar]:
    """A started sidecar on an ephemeral loopback port with its database in ``tmp_path``."""
    config.setdefault("port", 0)
    config.setdefault("db", tmp_path / "x.db")
    config.setdefault("ping_interval", None)
    sc = Sidecar(ServerConfig(**config))
    await sc.start()
    try:
        yield sc
    finally:
        await within(sc.stop(), 30)


def db_rows(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows from the sidecar's SQLite file, read on a fresh read-only connection."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


@dataclass(frozen=True, slots=True)
class Received:
    """One message as it arrived: the decoded map, whether it was text, and its size."""

    frame: Frame
    text: bool
    size: int


class WsClient:
    """A test client: ``async with WsClient(sc.url) as c: ...``.

    On entry it connects and (unless ``hello=False``) sends ``hello`` and waits for the
    reply, kept as :attr:`welcome` (or the error frame, if the server refused). Every frame
    received is kept in :attr:`received`; the ``next_of``/``request`` helpers *take* frames,
    so each is returned once.
    """

    def __init__(
        self,
        url: str,
        world: str = WORLD,
        *,
        token: str | None = None,
        subscribe: list[str] | str | None = None,
        resume: int | None = None,
        hello: bool = True,
        json: bool = False,
        headers: dict[str, str] | None = None,
        hello_extra: Frame | None = None,
        max_size: int | None = 4 * 1024 * 1024,
    ) -> None:
        self.url = url
        self.world = world
        self.token = token
        self.subscribe = subscribe
        self.resume = resume
        self.send_hello = hello
        self.json = json
        self.headers = headers
        self.hello_extra = hello_extra or {}
        self.max_size = max_size
        self.received: list[Received] = []
        self.welcome: Frame | None = None
        self.hello_error: Frame | None = None
        self._taken: set[int] = set()
        self._cond = asyncio.Condition()
        self._closed = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self._rids = itertools.count(1)
        self._ws: ClientConnection | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def ws(self) -> ClientConnection:
        assert self._ws is not None, "not connected"
        return self._ws

    async def __aenter__(self) -> WsClient:
        self._ws = await within(
            connect(
                self.url,
                additional_headers=self.headers,
                proxy=None,
                compression=None,
                ping_interval=None,
                max_size=self.max_size,
                close_timeout=guard(5),
            )
        )
        self.resume_reading()
        if self.send_hello:
            frame: Frame = {"type": "hello", "protocol": 1, "world": self.world, "client": "tests"}
            if self.token is not None:
                frame["token"] = self.token
            if self.subscribe is not None:
                frame["subscribe"] = self.subscribe
            if self.resume is not None:
                frame["resume"] = self.resume
            frame.update(self.hello_extra)
            await self.send(frame)
            reply = await self.next_where(lambda f: f.get("type") in ("welcome", "error"))
            if reply["type"] == "welcome":
                self.welcome = reply
            else:
                self.hello_error = reply
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with contextlib.suppress(Exception):
            await within(self.ws.close(), 10)
        await self._stop_reader()

    async def _stop_reader(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                text = isinstance(message, str)
                frame = orjson.loads(message) if text else msgpack.unpackb(message, raw=False)
                async with self._cond:
                    self.received.append(Received(frame, text, len(message)))
                    self._cond.notify_all()
        except ConnectionClosed:
            pass
        finally:
            if self.ws.close_code is not None:
                self._closed.set()
                async with self._cond:
                    self._cond.notify_all()

    def pause_reading(self) -> None:
        """Stop reading from the socket (the server's sends back up: a slow consumer)."""
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None

    def resume_reading(self) -> None:
        """Start (again) collecting frames from the socket."""
        if self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self._read())

    async def wait_closed(self, seconds: float = 30.0) -> int | None:
        """Read until the server closes the connection; return the close code received."""
        self.resume_reading()
        await within(self._closed.wait(), seconds)
        return self.ws.close_code

    @property
    def close_code(self) -> int | None:
        return self.ws.close_code

    # ------------------------------------------------------------------ sending

    async def send(self, frame: Frame, *, json: bool | None = None) -> None:
        """Send one frame, as msgpack (binary) or, with ``json``, as JSON text."""
        as_json = self.json if json is None else json
        await self.send_raw(orjson.dumps(frame).decode() if as_json else msgpack.packb(frame))

    async def send_raw(self, message: bytes | str) -> None:
        await self.ws.send(message)

    async def send_event(self, kind: str, day: float = 1, **fields: Any) -> str:
        """Send an event without waiting; return its ``event_id`` (generated if not given)."""
        event_id = fields.pop("event_id", None) or f"e{next(_event_ids)}"
        await self.send({"type": "event", "event_id": event_id, "kind": kind, "day": day, **fields})
        return event_id

    async def event(self, kind: str, day: float = 1, **fields: Any) -> Frame:
        """Send an event and return its ``ack`` (or the ``error`` refusing it)."""
        event_id = await self.send_event(kind, day, **fields)
        return await self.ack_of(event_id)

    async def ack_of(self, event_id: str) -> Frame:
        """The ack or error frame answering the event ``event_id``."""
        return await self.next_where(
            lambda f: f.get("type") in ("ack", "error") and f.get("event_id") == event_id
        )

    async def request(self, frame: Frame, *, json: bool | None = None) -> Frame:
        """Send a request (``rid`` added if absent); return the first frame with that rid."""
        rid = frame.setdefault("rid", f"r{next(self._rids)}")
        await self.send(frame, json=json)
        return await self.next_where(lambda f: f.get("rid") == rid)

    async def request_all(self, frame: Frame) -> list[Frame]:
        """Send a query and return every part of its reply (until ``more`` is false)."""
        first = await self.request(frame)
        parts = [first]
        while parts[-1].get("more"):
            parts.append(await self.next_where(lambda f: f.get("rid") == first["rid"]))
        return parts

    async def request_pages(self, query: Frame, *, most: int = 100) -> list[list[Frame]]:
        """Every page of a query paged by a cursor (each page's frames, in order), following
        ``next`` as the following query's ``after`` (SPEC §11): each frame answers with the
        query's own type and carries the same ``next`` (a head field)."""
        pages: list[list[Frame]] = []
        after = None
        while True:
            frames = await self.request_all({**query} | ({"after": after} if after else {}))
            assert all(f["type"] == query["type"] for f in frames), frames[0]
            pages.append(frames)
            after = frames[-1]["next"]
            assert all(f["next"] == after for f in frames)  # next is a head field: on every part
            if after is None:
                return pages
            assert len(pages) < most

    # ------------------------------------------------------------------ receiving

    def _find(self, pred: Callable[[Frame], bool]) -> int | None:
        for i, got in enumerate(self.received):
            if i not in self._taken and pred(got.frame):
                return i
        return None

    async def next_received(self, pred: Callable[[Frame], bool], seconds: float = 10.0) -> Received:
        """Take the first not-yet-taken message whose frame satisfies ``pred``, waiting for it."""

        async def wait() -> Received:
            async with self._cond:
                while True:
                    i = self._find(pred)
                    if i is not None:
                        self._taken.add(i)
                        return self.received[i]
                    if self._closed.is_set():
                        raise AssertionError(
                            f"connection closed ({self.ws.close_code}) before the frame "
                            f"arrived; untaken: {self.untaken()}"
                        )
                    await self._cond.wait()

        return await within(wait(), seconds)

    async def next_where(self, pred: Callable[[Frame], bool], seconds: float = 10.0) -> Frame:
        return (await self.next_received(pred, seconds)).frame

    async def next_of(self, kind: str, seconds: float = 10.0, **match: Any) -> Frame:
        """The next frame of ``type`` ``kind`` whose fields equal ``match``."""
        return await self.next_where(
            lambda f: f.get("type") == kind and all(f.get(k) == v for k, v in match.items()),
            seconds,
        )

    async def beliefs_until(self, seq: int, seconds: float = 10.0) -> list[Frame]:
        """Take ``belief`` notifications until one with ``seq`` ≥ ``seq`` has been taken."""
        out: list[Frame] = []
        while not out or out[-1]["seq"] < seq:
            out.append(await self.next_of("belief", seconds))
        return out

    def untaken(self, kind: str | None = None) -> list[Frame]:
        """Frames received and not taken yet (of one type, if given)."""
        return [
            r.frame
            for i, r in enumerate(self.received)
            if i not in self._taken and (kind is None or r.frame.get("type") == kind)
        ]

    async def sync(self) -> None:
        """A round trip: every frame the server sent before its reply to this has arrived."""
        await self.request({"type": "unsubscribe", "residents": ["\x00sync"]})


def observe(
    witnesses: list[str], root: str, value: Any, subject: str = "seen", **extra: Any
) -> Frame:
    """Fields of an ``observe`` event, for :meth:`WsClient.event`."""
    return {
        "witnesses": witnesses,
        "claim": {"root": root, "value": value},
        "subject": subject,
        **extra,
    }


def say(
    speaker: str, listeners: list[str], root: str, value: Any, subject: str = "said", **extra: Any
) -> Frame:
    """Fields of a ``say`` event, for :meth:`WsClient.event`."""
    return {
        "speaker": speaker,
        "listeners": listeners,
        "claim": {"root": root, "value": value},
        "subject": subject,
        **extra,
    }
