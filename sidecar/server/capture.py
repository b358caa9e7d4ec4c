"""Capture files: every inbound frame of every connection, for byte-for-byte replay.

A capture is a sequence of records, each a 4-byte big-endian length followed by that many
bytes of msgpack: a map ``{"conn": int, "t": float (unix seconds), "text": bool, "data":
bin | str}``. ``data`` is the WebSocket message exactly as received, except that a
``hello``'s token is replaced by ``"<redacted>"`` (a capture is shared; secrets are not).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgpack
import orjson

__all__ = ["CaptureWriter", "read_capture"]

_LEN = struct.Struct(">I")
REDACTED = "<redacted>"


def _redact(message: bytes | str) -> bytes | str:
    try:
        frame = (
            orjson.loads(message)
            if isinstance(message, str)
            else msgpack.unpackb(message, raw=False)
        )
    except Exception:
        return message
    if not isinstance(frame, dict) or frame.get("type") != "hello" or not frame.get("token"):
        return message
    frame["token"] = REDACTED
    return (
        orjson.dumps(frame).decode()
        if isinstance(message, str)
        else msgpack.packb(frame, use_bin_type=True)
    )


class CaptureWriter:
    def __init__(self, path: str | Path) -> None:
        self.file: BinaryIO = open(path, "ab")  # noqa: SIM115 - closed by close()
        self.records = 0

    def record(self, conn: int, message: bytes | str) -> None:
        data = _redact(message)
        body = msgpack.packb(
            {"conn": conn, "t": time.time(), "text": isinstance(data, str), "data": data},
            use_bin_type=True,
        )
        # One write per record, flushed: a crash of the sidecar loses no captured frame.
        self.file.write(_LEN.pack(len(body)) + body)
        self.file.flush()
        self.records += 1

    def close(self) -> None:
        self.file.flush()
        self.file.close()


def read_capture(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the records of a capture file in order; a truncated last record is ignored."""
    with open(path, "rb") as f:
        while True:
            head = f.read(_LEN.size)
            if len(head) < _LEN.size:
                return
            (size,) = _LEN.unpack(head)
            body = f.read(size)
            if len(body) < size:
                return
            yield msgpack.unpackb(body, raw=False)
