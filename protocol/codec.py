"""Wire codec: one WebSocket message is one map, msgpack (binary) or JSON (text).

The cross-language rules of ``protocol/SPEC.md`` are enforced here, on every inbound frame:
map keys are strings, integers lie within ±(2^53−1), no msgpack ext types, no bin (text is
always UTF-8 str), nesting is bounded. Outbound frames are encoded with the same rules and
must stay under :data:`MAX_OUTBOUND` bytes so a Godot client's 64 KiB buffer never overflows.
"""

from __future__ import annotations

import math
from typing import Any

import msgpack
import orjson

from .errors import ErrorCode, ProtocolError

__all__ = [
    "MAX_DEPTH",
    "MAX_INBOUND",
    "MAX_OUTBOUND",
    "MAX_SAFE_INT",
    "check_value",
    "decode",
    "decode_json",
    "decode_msgpack",
    "encode",
    "encode_json",
    "integral",
]

MAX_SAFE_INT = 2**53 - 1
MAX_OUTBOUND = 60 * 1024
MAX_INBOUND = 256 * 1024
MAX_DEPTH = 16


def _ext_hook(code: int, data: bytes) -> Any:
    raise ProtocolError(ErrorCode.BAD_FRAME, f"msgpack ext type {code} is not allowed")


def check_value(value: Any, depth: int = 0, path: str = "frame") -> None:
    """Raise :class:`ProtocolError` unless ``value`` obeys the cross-language rules.

    Every inbound frame passes here, on the event loop: a valid frame (nearly all of them)
    is walked once without building any path text; only a refused one is walked again to
    name where it breaks the rules."""
    if not _plainly_valid(value, depth):
        _check_explained(value, depth, path)


def _plainly_valid(value: Any, depth: int) -> bool:
    """``True`` if ``value`` obeys the rules using exact built-in types only; ``False`` means
    "not sure" (a rule broken, or a subclass), and :func:`_check_explained` decides."""
    if depth > MAX_DEPTH:
        return False
    t = type(value)
    if t is str or t is bool or value is None:
        return True
    if t is int:
        return bool(-MAX_SAFE_INT <= value <= MAX_SAFE_INT)
    if t is float:
        return math.isfinite(value)
    if depth >= MAX_DEPTH:
        return False
    if t is dict:
        for key, item in value.items():
            if type(key) is not str or not _plainly_valid(item, depth + 1):
                return False
        return True
    if t is list:
        for item in value:  # noqa: SIM110 (no generator object per list)
            if not _plainly_valid(item, depth + 1):
                return False
        return True
    return False


def _check_explained(value: Any, depth: int, path: str) -> None:
    """:func:`check_value`'s verdict with the path of the offending value in its message."""
    if depth > MAX_DEPTH:
        raise ProtocolError(ErrorCode.BAD_FRAME, f"{path}: nested deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, bool | str):
        return
    if isinstance(value, int):
        if not -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
            raise ProtocolError(ErrorCode.BAD_FRAME, f"{path}: integer outside ±(2^53−1)")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ProtocolError(ErrorCode.BAD_FRAME, f"{path}: NaN and infinity are not allowed")
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_explained(item, depth + 1, f"{path}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ProtocolError(ErrorCode.BAD_FRAME, f"{path}: map keys must be strings")
            _check_explained(item, depth + 1, f"{path}.{key}")
        return
    if isinstance(value, bytes | bytearray):
        raise ProtocolError(
            ErrorCode.BAD_FRAME, f"{path}: binary (bin) values are not allowed; send text as str"
        )
    raise ProtocolError(ErrorCode.BAD_FRAME, f"{path}: unsupported value type")


def integral(value: object) -> int | None:
    """``value`` as an integer if it is one: an int, or a float with no fraction (``3.0``).

    Godot's JSON parser turns every number into a float, so a seq echoed back arrives as
    ``12.0``; wherever the protocol expects an integer it takes such a float as the integer.
    Returns ``None`` for anything else (booleans, ``3.5``, strings, floats beyond ±(2^53−1)),
    which the caller refuses with its own message.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INT:
        return int(value)
    return None


def _as_frame(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProtocolError(ErrorCode.BAD_FRAME, "a frame must be a map")
    check_value(value)
    return value


def decode_msgpack(data: bytes) -> dict[str, Any]:
    """Decode one binary message; exactly one msgpack map, nothing after it."""
    try:
        value = msgpack.unpackb(
            data,
            raw=False,
            strict_map_key=False,  # checked by check_value, with a clearer message
            ext_hook=_ext_hook,
        )
    except ProtocolError:
        raise
    except msgpack.ExtraData:
        raise ProtocolError(ErrorCode.BAD_FRAME, "trailing bytes after the msgpack map") from None
    except UnicodeDecodeError:
        raise ProtocolError(ErrorCode.BAD_FRAME, "msgpack str is not valid UTF-8") from None
    except (ValueError, TypeError, msgpack.UnpackException, RecursionError) as exc:
        raise ProtocolError(
            ErrorCode.BAD_FRAME, f"malformed msgpack: {type(exc).__name__}"
        ) from None
    return _as_frame(value)


def decode_json(text: str | bytes) -> dict[str, Any]:
    """Decode one text message carrying the same map as JSON (for debugging consoles)."""
    try:
        value = orjson.loads(text)
    except (orjson.JSONDecodeError, RecursionError):
        raise ProtocolError(ErrorCode.BAD_FRAME, "malformed JSON text frame") from None
    return _as_frame(value)


def decode(message: bytes | str) -> dict[str, Any]:
    """Decode a WebSocket message: bytes are msgpack, str is JSON."""
    if isinstance(message, str):
        return decode_json(message)
    return decode_msgpack(bytes(message))


def encode(frame: dict[str, Any], *, limit: int = MAX_OUTBOUND) -> bytes:
    """Encode an outbound frame as msgpack; raise if it would exceed ``limit`` bytes."""
    data: bytes = msgpack.packb(frame, use_bin_type=True)
    if len(data) > limit:
        raise ProtocolError(
            ErrorCode.TOO_LARGE, f"outbound frame of {len(data)} bytes exceeds {limit}"
        )
    return data


def encode_json(frame: dict[str, Any]) -> str:
    """Encode a frame as JSON text (replies to a client that spoke JSON)."""
    return orjson.dumps(frame).decode()
