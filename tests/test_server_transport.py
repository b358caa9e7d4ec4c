"""Transport bounds: fragmented messages (issue 9 item 10) and ping floods (item 5).

Over real sockets: a message in more fragments than websockets' own cap (4,096) is read
whole, bounded by its total size only; a peer that floods pings and never reads the pongs
is disconnected once 2 x outbox_limit bytes wait for it, instead of growing our memory.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import msgpack
from websockets.asyncio.client import connect
from websockets.frames import Frame, Opcode
from wsclient import WsClient, observe, running, within


def _pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


async def test_a_message_in_ten_thousand_fragments_is_one_frame(tmp_path: Path) -> None:
    """10,000+ fragments (websockets alone closes 1009 past 4,096) make one event, acked."""
    async with running(tmp_path) as sc, WsClient(sc.url) as c:
        event = {"type": "event", "event_id": "frag", "kind": "observe", "day": 1,
                 **observe(["mira"], "water:well", "clean", subject="s" * 3000,
                           places=[f"place-{i:05d}" for i in range(700)])}  # fmt: skip
        data = msgpack.packb(event)
        pieces = _pieces(data, 1)
        assert len(pieces) > 10_000
        await c.ws.send(pieces)  # an iterable: one message, one WebSocket frame per piece
        ack = await c.ack_of("frag")
        assert ack["type"] == "ack" and ack["changes"] == 1
        text = '{"type": "beliefs", "resident": "mira", "rid": "t"' + " " * 9000 + "}"
        await c.ws.send(list(text))
        reply = await c.next_where(lambda f: f.get("rid") == "t")
        assert reply["type"] == "beliefs" and reply["beliefs"][0]["value"] == "clean"


async def test_fragments_past_the_message_size_limit_close_1009(tmp_path: Path) -> None:
    """The bound is the whole message's size: many small fragments over max_frame close 1009."""
    async with (
        running(tmp_path, max_frame=4096) as sc,
        connect(sc.url, proxy=None, max_size=None) as ws,
    ):
        await ws.send(msgpack.packb({"type": "hello", "protocol": 1, "world": "town"}))
        await within(ws.recv())
        await ws.send(_pieces(b"\x81\xa4type" + b"x" * 8000, 16))
        await within(ws.wait_closed())
        assert ws.close_code == 1009


def _masked(opcode: Opcode, payload: bytes, fin: bool = True) -> bytes:
    return Frame(opcode, payload, fin).serialize(mask=True)


async def test_a_ping_flood_that_never_reads_pongs_is_disconnected(tmp_path: Path) -> None:
    """Pings answered with pongs the peer never reads: cut off near the bound, memory bounded."""
    async with running(tmp_path, outbox_limit=64 * 1024) as sc:
        host, port = "127.0.0.1", sc.port
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # we never read anyway
        sock.connect((host, port))
        sock.setblocking(False)
        reader, writer = await asyncio.open_connection(sock=sock)
        key = "dGhlIHNhbXBsZSBub25jZQ=="
        writer.write(
            f"GET / HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        head = await within(reader.readuntil(b"\r\n\r\n"))
        assert b" 101 " in head
        hello = msgpack.packb({"type": "hello", "protocol": 1, "world": "town"})
        writer.write(_masked(Opcode.BINARY, hello))
        chunk = _masked(Opcode.PING, os.urandom(125)) * 1000  # ~131 KB of pings
        sent = 0
        cut = False
        while sent < 256 * 1024 * 1024:
            try:
                writer.write(chunk)
                await within(writer.drain())
            except (ConnectionError, OSError):
                cut = True
                break
            sent += len(chunk)
            peak = max((c.ws.transport.get_write_buffer_size() for c in sc.connections), default=0)
            assert peak <= 2 * 64 * 1024 + len(chunk)  # bounded: never far past the limit
        writer.close()
        assert cut, f"still connected after {sent} bytes of pings"

        async def gone() -> None:
            while sc.connections:
                await asyncio.sleep(0.01)

        await within(gone())
        async with WsClient(sc.url) as ok:  # the server is fine
            assert (await ok.event("tick", day=1))["type"] == "ack"
