"""Capture files: every inbound frame of every connection, for byte-for-byte replay.

A capture is a sequence of records, each a 4-byte big-endian length followed by that many
bytes of msgpack: a map ``{"conn": int, "t": float (unix seconds), "text": bool, "data":
bin | str}``. ``data`` is the WebSocket message exactly as received, except that tokens are
redacted (a capture is shared; secrets are not):

* a ``hello`` that decodes has its ``token`` replaced by ``"<redacted>"`` (re-encoded);
* in the raw bytes of a connection's first message and of anything that does not decode
  or is a ``hello``, the value after a ``token`` key is masked with ``*`` of the same
  length (so a malformed hello stays malformed in exactly the same way), and so is every
  configured token, wherever it appears. So a refused hello that carries a valid token
  plus a defect (an integer key, a trailing byte, a lone surrogate, no ``type``) never
  leaks it.

A capture is bounded: when the next record would take the file past ``max_bytes`` (default
:data:`DEFAULT_MAX_BYTES`, 256 MiB; ``capture_max_bytes`` / ``--capture-max-bytes``), the
file is renamed ``FILE.1`` (replacing an older ``FILE.1``) and a new ``FILE`` begins, so the
two hold at most about twice the limit (a record is never split: a record larger than the
limit is a file of its own). Rotation is between records, so each file is whole records;
:func:`read_capture` reads ``FILE.1`` then ``FILE``. What was rotated out is gone: a
connection whose ``hello`` was in it replays as one whose first message is not a hello.
"""

from __future__ import annotations

import os
import re
import struct
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgpack
import orjson

__all__ = [
    "DEFAULT_MAX_BYTES",
    "REDACTED",
    "CapturePart",
    "CaptureWriter",
    "capture_parts",
    "read_capture",
    "redact",
    "rotated",
]

_LEN = struct.Struct(">I")
REDACTED = "<redacted>"
#: A capture file's size before it is rotated to ``FILE.1`` (256 MiB).
DEFAULT_MAX_BYTES = 256 * 2**20
_MASK = ord("*")

#: The msgpack key ``"token"`` (fixstr) and the str headers that may follow it.
_MSGPACK_KEY = b"\xa5token"
#: A JSON ``"token"`` key and its string value (escapes included), in text or bytes.
_JSON_TOKEN = re.compile(rb'"token"\s*:\s*"((?:[^"\\]|\\.)*)')


def _decoded(message: bytes | str) -> Any:
    try:
        if isinstance(message, str):
            return orjson.loads(message)
        return msgpack.unpackb(message, raw=False)
    except Exception:
        return None


def _msgpack_str_spans(data: bytes) -> Iterator[tuple[int, int]]:
    """Where a string value follows each ``"token"`` key in raw msgpack: (start, end)."""
    at = data.find(_MSGPACK_KEY)
    while at >= 0:
        pos = at + len(_MSGPACK_KEY)
        if pos < len(data):
            head = data[pos]
            size, skip = -1, 0
            if 0xA0 <= head <= 0xBF:
                size, skip = head & 0x1F, 1
            elif head in (0xD9, 0xC4) and pos + 2 <= len(data):  # str8 (or bin8)
                size, skip = data[pos + 1], 2
            elif head in (0xDA, 0xC5) and pos + 3 <= len(data):  # str16 (or bin16)
                size, skip = int.from_bytes(data[pos + 1 : pos + 3], "big"), 3
            elif head in (0xDB, 0xC6) and pos + 5 <= len(data):  # str32 (or bin32)
                size, skip = int.from_bytes(data[pos + 1 : pos + 5], "big"), 5
            if size > 0:
                yield pos + skip, min(len(data), pos + skip + size)
        at = data.find(_MSGPACK_KEY, at + 1)


def _scrub(data: bytes, secrets: Iterable[bytes], *, keyed: bool = True) -> bytes:
    """Mask token values after a ``token`` key, and every configured secret, in raw bytes."""
    buf = bytearray(data)
    if keyed:
        for start, end in _msgpack_str_spans(data):
            buf[start:end] = bytes([_MASK]) * (end - start)
        for match in _JSON_TOKEN.finditer(data):
            start, end = match.span(1)
            buf[start:end] = bytes([_MASK]) * (end - start)
    for secret in secrets:
        if not secret:
            continue
        at = data.find(secret)
        while at >= 0:
            buf[at : at + len(secret)] = bytes([_MASK]) * len(secret)
            at = data.find(secret, at + 1)
    return bytes(buf)


def _secret_forms(secrets: Iterable[str]) -> list[bytes]:
    """Each secret as UTF-8 bytes, and as JSON would escape it (``\\u00e9``)."""
    forms: set[bytes] = set()
    for secret in secrets:
        if secret:
            forms.add(secret.encode("utf-8", "surrogatepass"))
            forms.add(orjson.dumps(secret)[1:-1])
            forms.add(secret.encode("ascii", "backslashreplace").replace(b"\\x", b"\\u00"))
    return sorted(forms, key=len, reverse=True)


def redact(
    message: bytes | str, *, first: bool = False, secrets: Iterable[str] = ()
) -> bytes | str:
    """``message`` with its tokens redacted (see the module docstring).

    ``first``: it is the connection's first message (its hello, however malformed).
    """
    frame = _decoded(message)
    is_hello = isinstance(frame, dict) and frame.get("type") == "hello"
    if frame is not None and not first and not is_hello:
        return message  # an ordinary frame: byte for byte
    keyed = True  # mask the value after any "token" key
    if is_hello and isinstance(frame.get("token"), str) and frame["token"]:
        frame["token"] = REDACTED
        message = (
            orjson.dumps(frame).decode()
            if isinstance(message, str)
            else msgpack.packb(frame, use_bin_type=True)
        )
        keyed = False  # its token is now "<redacted>"; configured ones may remain elsewhere
    forms = _secret_forms(secrets)
    if isinstance(message, str):
        raw = message.encode("utf-8", "surrogatepass")
        return _scrub(raw, forms, keyed=keyed).decode("utf-8", "surrogatepass")
    return _scrub(message, forms, keyed=keyed)


def rotated(path: str | Path) -> Path:
    """Where a capture file's older part goes when it is rotated: ``FILE.1``."""
    path = Path(path)
    return path.with_name(path.name + ".1")


class CaptureWriter:
    """Appends records to ``path``, rotated to ``FILE.1`` at ``max_bytes`` (module docstring)."""

    def __init__(
        self, path: str | Path, *, secrets: Iterable[str] = (), max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        self.path = Path(path)
        self.file: BinaryIO = open(self.path, "ab")  # noqa: SIM115 - closed by close()
        self.size = os.fstat(self.file.fileno()).st_size  # a capture appended to goes on
        self.max_bytes = max_bytes
        self.records = 0
        self.rotations = 0
        self.secrets = tuple(s for s in secrets if s)

    def record(self, conn: int, message: bytes | str, *, first: bool = False) -> None:
        data = redact(message, first=first, secrets=self.secrets)
        body = msgpack.packb(
            {"conn": conn, "t": time.time(), "text": isinstance(data, str), "data": data},
            use_bin_type=True,
        )
        record = _LEN.pack(len(body)) + body
        if self.size and self.size + len(record) > self.max_bytes:
            self._rotate()
        # One write per record, flushed: a crash of the sidecar loses no captured frame.
        self.file.write(record)
        self.file.flush()
        self.size += len(record)
        self.records += 1

    def _rotate(self) -> None:
        """``FILE`` becomes ``FILE.1`` (the older ``FILE.1`` is dropped); a new ``FILE``."""
        self.file.close()
        os.replace(self.path, rotated(self.path))
        self.file = open(self.path, "ab")  # noqa: SIM115 - closed by close()
        self.size = 0
        self.rotations += 1

    def close(self) -> None:
        self.file.flush()
        self.file.close()


def read_capture(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the records of a capture in order: those of its rotated part ``FILE.1``, if
    there is one, then those of ``FILE``; a truncated last record of a file is ignored."""
    for part in capture_parts(path):
        yield from part.records()


class CapturePart:
    """One file of a capture as it was when first opened: its identity and size, so that a
    capture read twice (a replay checks it whole, then sends it) reads the same records
    even while the sidecar appends to it; if the file was rotated or replaced meanwhile,
    :meth:`records` says so instead of reading other records."""

    __slots__ = ("identity", "path", "size")

    def __init__(self, path: Path) -> None:
        self.path = path
        st = path.stat()
        self.identity, self.size = (st.st_dev, st.st_ino), st.st_size

    def records(self) -> Iterator[dict[str, Any]]:
        """The records of the first :attr:`size` bytes (a truncated last one ignored)."""
        with open(self.path, "rb") as f:
            st = os.fstat(f.fileno())
            if (st.st_dev, st.st_ino) != self.identity or st.st_size < self.size:
                raise OSError(f"{self.path}: the capture file was rotated or replaced meanwhile")
            left = self.size
            while left >= _LEN.size:
                (size,) = _LEN.unpack(f.read(_LEN.size))
                left -= _LEN.size
                if size > left:
                    return
                left -= size
                yield msgpack.unpackb(f.read(size), raw=False)


def capture_parts(path: str | Path) -> list[CapturePart]:
    """The files of a capture, oldest first: ``FILE.1`` if there is one, then ``FILE``."""
    path = Path(path)
    older = rotated(path)
    return [CapturePart(p) for p in (older, path) if p is path or p.is_file()]
