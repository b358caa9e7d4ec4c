"""Replay a capture or a hand-written scenario and record every ``belief`` notification.

Two kinds of input, told apart by their first byte:

* a **capture** (``credence serve --capture FILE``, format in :mod:`sidecar.server.capture`):
  every inbound WebSocket message of every connection, with its connection id and receive
  time, sent again byte for byte (only a ``hello``'s redacted token is replaced); a capture
  rotated at its size limit is the pair ``FILE.1`` then ``FILE``, read in that order when
  ``FILE`` is given;
* a **scenario**: JSONL, one client frame per line as a JSON object. ``"conn"`` says which
  connection sends it (default 1) and is removed before sending; lines starting with ``#``
  and blank lines are ignored; the first line may be a directive ``{"world": "town"}``
  naming the world of every connection that has no ``hello`` of its own (default
  ``"replay"``). A connection's ``hello`` is optional, but if present it is its first frame.

Online (:func:`replay_online`), each recorded connection gets its own WebSocket to a sidecar
(the one at ``url``, or one started in-process on a temporary database) and an observer
connection per world, subscribed to ``"*"``, collects the notifications. The *global* order
of the input is kept: before the next frame of another connection is sent, every reply to
the frames already sent on the current one has arrived (a query barrier, answered only after
the connection's earlier events are acknowledged), so the world log — and hence every seq —
is the same on every run. Offline (:func:`replay_offline`), the event frames go straight into
:class:`~sidecar.engine.MemoryWorld`, no server, no SQLite, and
:func:`protocol.belief_frame` builds the same notifications. That equality is what makes a
scenario's golden file a test of the whole stack.

A capture may be as large as the sidecar writes (two files of up to 256 MiB by default), so
nothing here grows with it: its records are checked in one pass and read again from its files
while they are sent (each connection's first record kept, for its hello), errors are named
after each query barrier, and the notifications are kept as canonical JSON lines, per world,
in a buffer of :data:`SPOOL_BYTES` that spills to one temporary file. Offline, each world's
:class:`~sidecar.engine.MemoryWorld` keeps what the world is (its beliefs, trust, promises
and the ids of its events), not its history.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import itertools
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

import msgpack
import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from protocol import PROTOCOL_VERSION, ErrorCode, ProtocolError, belief_frame, decode, parse_hello
from sidecar.engine import EngineError, MemoryWorld, parse_event
from sidecar.server.capture import REDACTED, CapturePart, capture_parts, rotated

__all__ = [
    "DEFAULT_WORLD",
    "Notifications",
    "Record",
    "Refusal",
    "ReplayError",
    "ReplayResult",
    "Script",
    "ScriptError",
    "compare",
    "load",
    "load_capture",
    "load_scenario",
    "notification_lines",
    "replay_offline",
    "replay_online",
    "same",
]

DEFAULT_WORLD = "replay"
CLIENT = "credence-replay"
#: ``rid`` prefix of the barrier queries; chosen so it cannot collide with a game's rids.
_BARRIER_RID = "credence-replay:barrier:"
#: A connection that sends this many frames in a row is synced (a query barrier) even before
#: another connection's turn: what it sent is then named in its refusals and forgotten.
SYNC_EVERY = 1000
#: The notifications held in memory before they spill to a temporary file.
SPOOL_BYTES = 16 * 1024 * 1024


class ScriptError(ValueError):
    """The input file is not a readable capture or scenario; the message says where and why."""


class ReplayError(RuntimeError):
    """The replay could not run to the end (refused observer, lost connection, no reply)."""


@dataclass(frozen=True, slots=True)
class Record:
    """One inbound message as it is to be sent again.

    ``data`` is the WebSocket message (bytes: msgpack, str: JSON text); ``frame`` its decoded
    map, or ``None`` when it does not decode (the sidecar will refuse it, as it did then).
    """

    conn: int
    data: bytes | str
    frame: dict[str, Any] | None
    where: str  # "line 7" or "record 12", for messages
    t: float | None = None  # receive time (unix seconds) in a capture

    @property
    def type(self) -> str | None:
        kind = self.frame.get("type") if self.frame is not None else None
        return kind if isinstance(kind, str) else None


@dataclass(slots=True)
class Script:
    """A loaded input: each connection's first record (in order of appearance), how many
    records there are, and the records themselves in global order when iterated
    (:attr:`records`): a scenario's are held (a hand-written file), a capture's are read
    again from its files, as they were when it was loaded."""

    path: Path
    kind: str  # "capture" or "scenario"
    firsts: dict[int, Record]
    frames: int
    default_world: str = DEFAULT_WORLD
    held: list[Record] | None = None  # a scenario's records
    parts: list[CapturePart] = field(default_factory=list)  # a capture's files

    @property
    def records(self) -> Iterator[Record]:
        """The records in order, read anew on each use. A capture rotated or replaced since
        it was loaded raises :class:`ReplayError` instead of giving other records."""
        if self.held is not None:
            return iter(self.held)
        return _read_again(self.path, self.parts)

    @property
    def default_hello(self) -> bool:
        """Whether a connection without a hello of its own gets one (scenarios only).

        In a capture, a connection whose first message is not a hello was refused for it,
        so its first message is sent as is, and refused again.
        """
        return self.kind == "scenario"

    def hello(self, conn: int) -> Record | None:
        """The connection's own hello, if its first record is one."""
        first = self.firsts.get(conn)
        return first if first is not None and first.type == "hello" else None

    def connections(self) -> list[int]:
        return list(self.firsts)

    def world_of(self, conn: int) -> str:
        hello = self.hello(conn)
        world = hello.frame.get("world") if hello is not None and hello.frame is not None else None
        return world if isinstance(world, str) and world else self.default_world

    def worlds(self) -> list[str]:
        return list(dict.fromkeys(self.world_of(c) for c in self.connections()))


@dataclass(frozen=True, slots=True)
class Refusal:
    """A frame the sidecar (or, offline, the engine) refused: the replay goes on without it."""

    conn: int
    where: str
    code: str
    message: str

    def __str__(self) -> str:
        return f"conn {self.conn} {self.where}: {self.code}: {self.message}"


class Notifications:
    """The belief notifications of a replay as canonical JSON lines (keys sorted; the world
    named on each when there are several), per world in arrival order, in bounded memory:
    held up to ``budget`` bytes in all, then written to one temporary file as a chunk per
    world. Read back by world, then seq (:meth:`lines`), as ``--out`` writes them."""

    def __init__(self, worlds: Sequence[str], budget: int | None = None) -> None:
        self.tag = len(worlds) > 1
        self.budget = SPOOL_BYTES if budget is None else budget
        self.count = 0
        self._held: dict[str, bytearray] = {}  # lines ending in a newline, per world
        self._chunks: dict[str, list[tuple[int, int]]] = {}
        self._last: dict[str, int] = {}
        self._unordered: set[str] = set()  # (never seen: each world's come in seq order)
        self._size = 0
        self._file: IO[bytes] | None = None

    def add(self, world: str, frame: dict[str, Any]) -> None:
        line = orjson.dumps({**frame, "world": world} if self.tag else frame, option=_SORTED)
        seq = frame.get("seq") or 0
        if seq < self._last.get(world, 0):
            self._unordered.add(world)
        self._last[world] = seq
        held = self._held.get(world)
        if held is None:
            held = self._held[world] = bytearray()
        held += line
        held += b"\n"
        self.count += 1
        self._size += len(line) + 1
        if self._size > self.budget:
            self._spill()

    def _spill(self) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="credence-replay-")  # noqa: SIM115
        self._file.seek(0, 2)
        for world, held in self._held.items():
            self._chunks.setdefault(world, []).append((self._file.tell(), len(held)))
            self._file.write(held)
        self._held.clear()
        self._size = 0

    def _world(self, world: str) -> Iterator[bytes]:
        for offset, size in self._chunks.get(world, ()):
            assert self._file is not None
            self._file.seek(offset)
            yield from self._file.read(size).splitlines()
        yield from bytes(self._held.get(world, b"")).splitlines()

    def lines(self) -> Iterator[str]:
        """Every notification's line, ordered by world, then seq."""
        for world in sorted(self._held.keys() | self._chunks.keys()):
            lines: Iterable[bytes] = self._world(world)
            if world in self._unordered:
                lines = sorted(lines, key=lambda line: orjson.loads(line).get("seq") or 0)
            for line in lines:
                yield line.decode()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


_SORTED = orjson.OPT_SORT_KEYS


@dataclass(slots=True)
class ReplayResult:
    spool: Notifications
    refusals: list[Refusal] = field(default_factory=list)
    frames: int = 0
    connections: int = 0

    def lines(self) -> Iterator[str]:
        """The notifications as canonical JSON lines, by world, then seq (bounded memory)."""
        return self.spool.lines()

    @property
    def notifications(self) -> list[dict[str, Any]]:
        """Every notification, decoded (held whole: for a small replay; use :meth:`lines`)."""
        return [orjson.loads(line) for line in self.lines()]


# --------------------------------------------------------------------------- loading


def load(path: str | Path) -> Script:
    """Load a capture or a JSONL scenario, whichever ``path`` holds.

    A capture starts with a 4-byte big-endian record length, so (for any record under
    16 MiB) with a NUL byte, which no JSONL text does.
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(1)
    except OSError as exc:
        raise ScriptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not head and not rotated(path).is_file():  # (a capture just rotated has FILE.1)
        raise ScriptError(f"{path}: the file is empty; expected a capture or a JSONL scenario")
    return load_capture(path) if head in (b"\x00", b"") else load_scenario(path)


def _decoded(data: bytes | str) -> dict[str, Any] | None:
    try:
        return decode(data)
    except ProtocolError:
        return None


def load_capture(path: str | Path) -> Script:
    """A capture (with its rotated part ``FILE.1`` first, if there is one), checked whole in
    one pass that keeps only each connection's first record; its records are numbered from
    the first of the pair."""
    path = Path(path)
    try:
        parts = capture_parts(path)
    except OSError as exc:
        raise ScriptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    firsts: dict[int, Record] = {}
    frames = 0
    for record in _capture_records(path, parts):
        frames += 1
        firsts.setdefault(record.conn, record)
    if not frames:
        raise ScriptError(f"{path}: the capture holds no frames")
    return Script(path, "capture", firsts, frames, parts=parts)


def _capture_records(path: Path, parts: Sequence[CapturePart]) -> Iterator[Record]:
    i = 0
    try:
        for part in parts:
            for rec in part.records():
                i += 1
                if not isinstance(rec, dict):
                    raise ScriptError(f"{path}: record {i} is not a map; is this a capture file?")
                conn, t, data = rec.get("conn"), rec.get("t"), rec.get("data")
                if isinstance(conn, bool) or not isinstance(conn, int) or conn < 1:
                    raise ScriptError(f"{path}: record {i}: 'conn' must be a positive integer")
                if isinstance(t, bool) or not isinstance(t, int | float):
                    raise ScriptError(f"{path}: record {i}: 't' must be a receive time in seconds")
                if not isinstance(data, bytes | str):
                    raise ScriptError(
                        f"{path}: record {i}: 'data' must be the message (bin or str)"
                    )
                yield Record(conn, data, _decoded(data), f"record {i}", float(t))
    except (ValueError, msgpack.UnpackException) as exc:
        if isinstance(exc, ScriptError):
            raise
        raise ScriptError(
            f"{path}: record {i + 1} is not valid msgpack ({exc}); is this a capture file?"
        ) from None
    except OSError as exc:
        raise ScriptError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _read_again(path: Path, parts: Sequence[CapturePart]) -> Iterator[Record]:
    """A loaded capture's records for sending: as checked, unless its files changed."""
    try:
        yield from _capture_records(path, parts)
    except ScriptError as exc:
        raise ReplayError(f"{exc} (it was read whole before the replay began)") from None


def load_scenario(path: str | Path) -> Script:
    """Parse a JSONL scenario; every mistake is reported as ``FILE:LINE: what is wrong``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ScriptError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ScriptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    records: list[Record] = []
    firsts: dict[int, Record] = {}
    world = DEFAULT_WORLD
    seen_content = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        at = f"{path}:{lineno}"
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ScriptError(f"{at}: not valid JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise ScriptError(
                f"{at}: expected a JSON object (one frame per line), got {_kind(obj)}"
            )
        first, seen_content = not seen_content, True
        if "type" not in obj and first and "world" in obj:
            world = _directive(obj, at)
            continue
        kind = obj.get("type")
        if not isinstance(kind, str) or not kind:
            raise ScriptError(
                f'{at}: a frame needs a string \'type\' ("event", "hello", …); only the first '
                'line may instead be a directive like {"world": "town"}'
            )
        conn = obj.pop("conn", 1)
        if isinstance(conn, bool) or not isinstance(conn, int) or conn < 1:
            raise ScriptError(
                f"{at}: 'conn' must be a positive integer (the sending connection), not {conn!r}"
            )
        if kind == "hello" and conn in firsts:
            raise ScriptError(f"{at}: the hello of connection {conn} must be its first frame")
        data = msgpack.packb(obj, use_bin_type=True)
        # Decoded by the wire codec, so a value the sidecar would refuse is refused offline too.
        records.append(Record(conn, data, _decoded(data), f"line {lineno}"))
        firsts.setdefault(conn, records[-1])
    if not records:
        raise ScriptError(f"{path}: the scenario holds no frames")
    return Script(path, "scenario", firsts, len(records), world, held=records)


def _kind(value: object) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _directive(obj: dict[str, Any], at: str) -> str:
    extra = sorted(set(obj) - {"world"})
    if extra:
        raise ScriptError(f"{at}: the directive line may only set 'world', not {', '.join(extra)}")
    world = obj["world"]
    if not isinstance(world, str) or not world:
        raise ScriptError(f"{at}: 'world' must be a non-empty string")
    return world


# --------------------------------------------------------------------------- offline


def replay_offline(script: Script) -> ReplayResult:
    """Fold the script's event frames through :class:`MemoryWorld`, one per world.

    Frames other than events change no belief and are skipped; a connection whose hello the
    sidecar would refuse sends nothing. Authorization is not modelled: offline, every
    connection may write.
    """
    worlds: dict[str, MemoryWorld] = {}
    conn_world: dict[int, str | None] = {}
    notes = Notifications(script.worlds())
    refusals: list[Refusal] = []
    for rec in script.records:
        if rec.conn not in conn_world:
            conn_world[rec.conn] = _offline_hello(script, rec, refusals)
            if rec.type == "hello" or not script.default_hello:
                continue
        world = conn_world[rec.conn]
        if world is None:
            continue  # the sidecar closed this connection at its hello
        if rec.frame is None:
            refusals.append(
                Refusal(rec.conn, rec.where, "bad_frame", "the message does not decode")
            )
            continue
        if rec.type != "event":
            continue
        try:
            event = parse_event(rec.frame)
            memory = worlds.setdefault(world, MemoryWorld(history=False))
            before = memory.change_count
            out = memory.apply(event)
        except EngineError as exc:
            refusals.append(Refusal(rec.conn, rec.where, exc.code, str(exc)))
            continue
        for seq, change in enumerate(out.changes if out else (), start=before + 1):
            notes.add(world, belief_frame(replace(change, seq=seq)))
    return ReplayResult(notes, refusals, script.frames, len(conn_world))


def _offline_hello(script: Script, rec: Record, refusals: list[Refusal]) -> str | None:
    """The world of the connection ``rec`` opens, or ``None`` if the sidecar would close it."""
    if rec.type != "hello" and script.default_hello:
        return script.default_world
    try:
        if rec.frame is None:
            raise ProtocolError(ErrorCode.BAD_FRAME, "the message does not decode")
        return parse_hello(rec.frame).world
    except ProtocolError as exc:
        refusals.append(Refusal(rec.conn, rec.where, str(exc.code), exc.message))
        return None


# --------------------------------------------------------------------------- online


def _decode_reply(message: bytes | str) -> dict[str, Any]:
    value = (
        orjson.loads(message) if isinstance(message, str) else msgpack.unpackb(message, raw=False)
    )
    return value if isinstance(value, dict) else {}


def _encode_like(frame: dict[str, Any], text: bool) -> bytes | str:
    return orjson.dumps(frame).decode() if text else msgpack.packb(frame, use_bin_type=True)


class _Peer:
    """One client connection of the replay: sends, and drains replies in a task. An
    observer's (``notes`` given) notifications go into ``notes``; other connections'
    are dropped (the observers see them all)."""

    _rids = itertools.count(1)

    def __init__(
        self,
        ws: ClientConnection,
        label: str,
        timeout: float,
        notes: Notifications | None = None,
        world: str = "",
    ) -> None:
        self.ws = ws
        self.label = label
        self.timeout = timeout
        self.text = False
        self.notes, self.world = notes, world
        self.errors: list[dict[str, Any]] = []  # since the last sync
        self.waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.unsynced = False
        self.closed: str | None = None  # why the sidecar ended the connection, if it did
        self.closing = False  # we are ending it ourselves
        self.task: asyncio.Task[None] | None = None

    async def handshake(self, hello: bytes | str) -> dict[str, Any]:
        """Send the hello and return the first reply (``welcome`` or a fatal ``error``)."""
        self.text = isinstance(hello, str)
        await self.ws.send(hello)
        try:
            reply = _decode_reply(await asyncio.wait_for(self.ws.recv(), self.timeout))
        except ConnectionClosed as exc:
            reply = {"type": "error", "code": "closed", "message": f"connection closed ({exc})"}
        except TimeoutError:
            raise ReplayError(
                f"{self.label}: no reply to hello within {self.timeout:g} s"
            ) from None
        if reply.get("type") == "welcome":
            self.task = asyncio.get_running_loop().create_task(
                self._read(), name=f"replay-{self.label}"
            )
        else:
            self.closed = f"{reply.get('code')}: {reply.get('message')}"
        return reply

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                frame = _decode_reply(message)
                rid = frame.get("rid")
                if isinstance(rid, str) and rid in self.waiting:
                    self.waiting.pop(rid).set_result(frame)
                elif frame.get("type") == "belief":
                    if self.notes is not None:
                        self.notes.add(self.world, frame)
                elif frame.get("type") == "error":
                    self.errors.append(frame)
        except ConnectionClosed:
            pass
        finally:
            if not self.closing:
                reason = self.ws.close_reason or "no reason given"
                self.closed = f"the sidecar closed the connection ({self.ws.close_code} {reason})"
            for future in self.waiting.values():
                if not future.done():
                    future.set_result({"type": "closed"})  # nothing more will be answered
            self.waiting.clear()

    async def send(self, data: bytes | str) -> None:
        await self.ws.send(data)
        self.unsynced = True

    async def sync(self) -> None:
        """Wait until every frame sent so far on this connection has been answered.

        The sidecar answers a connection's frames in order and a query only after the
        connection's earlier events are committed, so one query's reply is the barrier. If
        the sidecar closes the connection meanwhile, there is nothing left to wait for.
        """
        self.unsynced = False
        if self.closed is not None or self.task is None:
            return
        rid = f"{_BARRIER_RID}{next(self._rids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[rid] = future
        barrier = {
            "type": "explain",
            "resident": "~credence-replay",
            "root": "~barrier",
            "rid": rid,
        }
        try:
            await self.ws.send(_encode_like(barrier, self.text))
            await asyncio.wait_for(future, self.timeout)
        except ConnectionClosed:
            self.waiting.pop(rid, None)
        except TimeoutError:
            raise ReplayError(f"{self.label}: no reply within {self.timeout:g} s") from None

    async def close(self) -> None:
        self.closing = self.closed is None
        with contextlib.suppress(Exception):
            await self.ws.close()
        if self.task is not None:
            with contextlib.suppress(Exception):
                await self.task


def _hello_message(script: Script, first: Record, token: str | None) -> bytes | str:
    """The connection's own hello with its token replaced, or a default one (scenarios)."""
    own = first if first.type == "hello" else None
    if own is None and not script.default_hello:
        return first.data
    if own is None:
        frame: dict[str, Any] = {
            "type": "hello",
            "protocol": PROTOCOL_VERSION,
            "world": script.default_world,
            "client": CLIENT,
        }
        if token:
            frame["token"] = token
        return _encode_like(frame, text=False)
    if own.frame is None:
        return own.data
    frame = dict(own.frame)
    if token:
        frame["token"] = token
    elif frame.get("token") == REDACTED:
        del frame["token"]
    if frame == own.frame:
        return own.data  # unchanged: byte for byte
    return _encode_like(frame, isinstance(own.data, str))


async def replay_online(
    script: Script,
    url: str | None = None,
    *,
    token: str | None = None,
    speed: float | None = None,
    timeout: float = 30.0,
) -> ReplayResult:
    """Replay over the real wire; without ``url``, into an in-process sidecar on a temp db.

    ``speed`` paces frames by their recorded receive times divided by it; ``None`` sends as
    fast as the global order allows. Raises :class:`ReplayError` if an observer is refused
    or a connection stops answering.
    """
    if url is not None:
        return await _replay(script, url, token, speed, timeout)
    from sidecar.server import ServerConfig, Sidecar

    with tempfile.TemporaryDirectory(prefix="credence-replay-") as tmp:
        sidecar = Sidecar(ServerConfig(port=0, db=Path(tmp) / "replay.db"))
        await sidecar.start()
        try:
            return await _replay(script, sidecar.url, token, speed, timeout)
        finally:
            await sidecar.stop()


async def _open(
    url: str, label: str, timeout: float, notes: Notifications | None = None, world: str = ""
) -> _Peer:
    try:
        ws = await asyncio.wait_for(connect(url, compression=None, max_size=None), timeout)
    except TimeoutError:
        raise ReplayError(f"{label}: could not connect to {url} within {timeout:g} s") from None
    return _Peer(ws, label, timeout, notes, world)


async def _replay(
    script: Script, url: str, token: str | None, speed: float | None, timeout: float
) -> ReplayResult:
    peers: dict[int, _Peer] = {}
    observers: dict[str, _Peer] = {}
    refusals: list[Refusal] = []
    sent: dict[int, list[Record]] = {}  # per connection, what it sent since its last sync
    notes = Notifications(script.worlds())

    async def sync(conn: int) -> None:
        # Every frame sent on it so far is answered: name its refusals, forget what it sent.
        peer = peers[conn]
        if peer.unsynced:
            await peer.sync()
        refusals.extend(_attribute(conn, peer.errors, sent.pop(conn, [])))
        peer.errors.clear()

    try:
        for world in script.worlds():
            observer = await _open(url, f"observer of world {world!r}", timeout, notes, world)
            observers[world] = observer
            hello: dict[str, Any] = {
                "type": "hello", "protocol": PROTOCOL_VERSION, "world": world,
                "client": f"{CLIENT}-observer", "subscribe": "*",
            }  # fmt: skip
            if token:
                hello["token"] = token
            reply = await observer.handshake(msgpack.packb(hello, use_bin_type=True))
            if reply.get("type") != "welcome":
                hint = "" if token else " (pass --token)"
                raise ReplayError(
                    f"the sidecar refused the observer of world {world!r}: {observer.closed}{hint}"
                )
        current: int | None = None
        clock = asyncio.get_running_loop().time
        start, t0 = clock(), None
        for rec in script.records:
            peer = peers.get(rec.conn)
            if current is not None and current != rec.conn and peers[current].unsynced:
                await sync(current)  # keep the global order across connections
            elif len(sent.get(rec.conn, ())) >= SYNC_EVERY:
                await sync(rec.conn)
            if speed is not None and rec.t is not None:
                t0 = rec.t if t0 is None else t0
                delay = start + (rec.t - t0) / speed - clock()
                if delay > 0:
                    await asyncio.sleep(delay)
            current = rec.conn
            if peer is None:
                peer = peers[rec.conn] = await _open(url, f"conn {rec.conn}", timeout)
                reply = await peer.handshake(_hello_message(script, rec, token))
                if reply.get("type") != "welcome":
                    refusals.append(
                        Refusal(
                            rec.conn, rec.where, str(reply.get("code")), str(reply.get("message"))
                        )
                    )
                if rec.type == "hello" or not script.default_hello:
                    continue
            if peer.task is None or peer.closed is not None:
                continue  # the sidecar closed this connection; its frames go unanswered
            await peer.send(rec.data)
            sent.setdefault(rec.conn, []).append(rec)
        for conn in peers:
            await sync(conn)
        for observer in observers.values():
            await observer.sync()  # notifications were queued before every ack we saw
    except BaseException:
        notes.close()
        raise
    finally:
        await asyncio.gather(*(p.close() for p in [*peers.values(), *observers.values()]))
    for conn, peer in peers.items():
        if peer.task is not None and peer.closed is not None:
            refusals.append(Refusal(conn, "-", "closed", peer.closed))
    return ReplayResult(notes, refusals, script.frames, len(peers))


def _attribute(
    conn: int, errors: Sequence[dict[str, Any]], sent: Sequence[Record]
) -> list[Refusal]:
    """Name the frame each error answers: by event id when it has one, else ``?``."""
    out = []
    for err in errors:
        where = "?"
        event_id = err.get("event_id")
        if event_id is not None:
            where = next(
                (
                    r.where
                    for r in sent
                    if r.frame is not None and r.frame.get("event_id") == event_id
                ),
                "?",
            )
        out.append(Refusal(conn, where, str(err.get("code")), str(err.get("message"))))
    return out


# --------------------------------------------------------------------------- output


def notification_lines(notifications: Iterable[dict[str, Any]]) -> list[str]:
    """One canonical JSON line per notification: keys sorted, nothing dropped."""
    return [orjson.dumps(n, option=orjson.OPT_SORT_KEYS).decode() for n in notifications]


def _canonical(lines: Iterable[str], name: str) -> list[str]:
    return list(_canonical_lines(lines, name))


def _canonical_lines(lines: Iterable[str], name: str) -> Iterator[str]:
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield orjson.dumps(orjson.loads(line), option=orjson.OPT_SORT_KEYS).decode()
        except orjson.JSONDecodeError as exc:
            raise ScriptError(f"{name}:{lineno}: not valid JSON ({exc})") from None


def same(golden: Iterable[str], actual: Iterable[str], golden_name: str = "golden") -> bool:
    """Whether two notification streams are identical (as :func:`compare` finds them), read
    one line at a time: a long replay is checked without holding either."""
    ours = _canonical_lines(actual, "replay")
    for expected in _canonical_lines(golden, golden_name):
        if next(ours, None) != expected:
            return False
    return next(ours, None) is None


def _key(line: str) -> tuple[str, int]:
    obj = orjson.loads(line)
    return (
        (str(obj.get("world", "")), int(obj.get("seq") or 0)) if isinstance(obj, dict) else ("", 0)
    )


def compare(
    golden: Iterable[str],
    actual: Iterable[str],
    golden_name: str = "golden",
    actual_name: str = "replay",
) -> list[str]:
    """A readable diff of two notification streams; empty when they are identical.

    First a per-seq summary (which fields differ, which notifications exist on one side
    only), then the unified diff of the canonical lines.
    """
    expected, got = _canonical(golden, golden_name), _canonical(actual, actual_name)
    if expected == got:
        return []
    report = [f"{len(expected)} notification(s) in {golden_name}, {len(got)} in {actual_name}:"]
    by_key_expected = {_key(line): orjson.loads(line) for line in expected}
    by_key_got = {_key(line): orjson.loads(line) for line in got}
    for key in sorted(by_key_expected.keys() | by_key_got.keys()):
        world, seq = key
        label = f"seq {seq}" + (f" ({world})" if world else "")
        e, g = by_key_expected.get(key), by_key_got.get(key)
        if e is None:
            report.append(f"  {label}: only in {actual_name}: {_brief(g)}")
        elif g is None:
            report.append(f"  {label}: only in {golden_name}: {_brief(e)}")
        elif e != g:
            fields = [
                f"{k}: {golden_name} {_json(e.get(k))}, {actual_name} {_json(g.get(k))}"
                for k in sorted(e.keys() | g.keys())
                if e.get(k) != g.get(k) or (k in e) != (k in g)
            ]
            report.append(f"  {label} {_brief(e)}: " + "; ".join(fields))
    report.append("")
    report.extend(
        difflib.unified_diff(expected, got, fromfile=golden_name, tofile=actual_name, lineterm="")
    )
    return report


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _brief(n: Any) -> str:
    if not isinstance(n, dict):
        return repr(n)
    return f"{n.get('resident')} {n.get('root')} {n.get('change')} → {n.get('confidence')}"
