"""A bare WebSocket + msgpack server: the transport limit the bench compares the sidecar to.

It does only what no server can avoid: accept the connection, answer ``hello``, decode each
event frame and send back an ack-sized frame. No validation, no engine, no SQLite. Run as
``python -m tools.echo_server --port P``; SIGTERM or SIGINT stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from typing import Any

import msgpack
from websockets.asyncio.server import ServerConnection, serve

__all__ = ["main", "serve_echo"]


async def _handle(ws: ServerConnection) -> None:
    pack = msgpack.packb
    async for message in ws:
        frame: dict[str, Any] = msgpack.unpackb(message, raw=False)
        kind = frame.get("type")
        if kind == "event":
            reply = {"type": "ack", "event_id": frame.get("event_id"), "duplicate": False,
                     "changes": 0}  # fmt: skip
        elif kind == "hello":
            reply = {"type": "welcome", "protocol": 1, "world": frame.get("world"), "seq": 0,
                     "server": "echo", "role": "writer"}  # fmt: skip
        else:
            reply = {"type": "error", "code": "unknown_type", "message": "echo server"}
        await ws.send(pack(reply))


async def serve_echo(host: str, port: int) -> None:
    """Serve until SIGINT/SIGTERM, with the sidecar's WebSocket settings."""
    async with serve(
        _handle, host, port, max_size=256 * 1024, compression=None, ping_interval=None
    ):
        done = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, done.set)
        await done.wait()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.echo_server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    asyncio.run(serve_echo(args.host, args.port))


if __name__ == "__main__":
    main()
