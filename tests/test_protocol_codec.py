"""protocol.codec and protocol.errors: the cross-language value rules, on both encodings."""

from __future__ import annotations

import math
from typing import Any

import msgpack
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import (
    MAX_OUTBOUND,
    MAX_SAFE_INT,
    CloseCode,
    ErrorCode,
    ProtocolError,
    decode,
    decode_json,
    decode_msgpack,
    encode,
    encode_json,
)
from protocol.codec import MAX_DEPTH

FRAME: dict[str, Any] = {
    "type": "event",
    "event_id": "e-1",
    "day": 2.5,
    "kind": "say",
    "speaker": "bo",
    "listeners": ["mira", "小明"],
    "claim": {"root": "water:well", "value": MAX_SAFE_INT},
    "subject": "井水有毒 🐍 Cafe\u0301",
    "flag": True,
    "nothing": None,
}


def refused(message: bytes | str) -> ErrorCode:
    """The error code decode() refuses ``message`` with (fails the test if it is accepted)."""
    with pytest.raises(ProtocolError) as caught:
        decode(message)
    return caught.value.code


def nested(levels: int) -> Any:
    """``levels`` lists around a 0."""
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down (``1``, ``1.0`` and ``True`` all differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and a == 0.0:
        return math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


# ----------------------------------------------------------------------- whole, prefixes, tails


def test_whole_msgpack_frame_decodes() -> None:
    """A complete binary message decodes to the map that was packed."""
    assert same(decode(msgpack.packb(FRAME, use_bin_type=True)), FRAME)


def test_whole_json_frame_decodes() -> None:
    """A complete text message decodes to the same map."""
    assert same(decode(orjson.dumps(FRAME).decode()), FRAME)


def test_bytes_like_messages_are_msgpack() -> None:
    """bytearray and memoryview messages are read as msgpack, str as JSON."""
    data = msgpack.packb(FRAME, use_bin_type=True)
    assert same(decode(bytearray(data)), FRAME)
    assert same(decode(memoryview(data)), FRAME)  # type: ignore[arg-type]
    assert refused(data.decode("latin-1")) is ErrorCode.BAD_FRAME


def test_every_strict_prefix_is_a_bad_frame() -> None:
    """Fed byte by byte, no prefix of a frame short of the whole decodes."""
    data = msgpack.packb(FRAME, use_bin_type=True)
    for end in range(len(data)):
        assert refused(data[:end]) is ErrorCode.BAD_FRAME, end
    assert same(decode(data), FRAME)


def test_every_strict_prefix_of_json_text_is_a_bad_frame() -> None:
    """No prefix of a JSON text frame short of the whole decodes either."""
    text = orjson.dumps(FRAME).decode()
    for end in range(len(text)):
        assert refused(text[:end]) is ErrorCode.BAD_FRAME, end


@given(st.binary(min_size=1, max_size=40))
def test_trailing_bytes_are_a_bad_frame(garbage: bytes) -> None:
    """Anything after the map, even another valid msgpack value, makes the message bad."""
    data = msgpack.packb({"type": "beliefs", "resident": "mira"}, use_bin_type=True)
    assert refused(data + garbage) is ErrorCode.BAD_FRAME


def test_trailing_text_after_json_is_a_bad_frame() -> None:
    """A text frame is one JSON map and nothing else."""
    assert refused('{"type": "beliefs"} {"type": "beliefs"}') is ErrorCode.BAD_FRAME
    assert refused('{"type": "beliefs"} x') is ErrorCode.BAD_FRAME


# ----------------------------------------------------------------------- value rules


@pytest.mark.parametrize("value", [MAX_SAFE_INT, -MAX_SAFE_INT, 0, -1, 2**32])
def test_integers_within_range_are_kept(value: int) -> None:
    """Integers within ±(2^53−1) decode exactly, from msgpack and from JSON."""
    for message in (msgpack.packb({"n": value}), orjson.dumps({"n": value}).decode()):
        assert same(decode(message), {"n": value})


@pytest.mark.parametrize("value", [MAX_SAFE_INT + 1, -MAX_SAFE_INT - 1, 2**63, 2**64 - 1, -(2**63)])
def test_integers_beyond_range_are_bad_frames(value: int) -> None:
    """Integers beyond ±(2^53−1) are refused in msgpack; in JSON as far as JSON carries them."""
    assert refused(msgpack.packb({"n": value})) is ErrorCode.BAD_FRAME
    assert refused(f'{{"n": {value}}}') is ErrorCode.BAD_FRAME


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_are_bad_frames(value: float) -> None:
    """NaN and ±infinity are refused, as float 64 and as float 32."""
    for single in (False, True):
        data = msgpack.packb({"x": [value]}, use_single_float=single)
        assert refused(data) is ErrorCode.BAD_FRAME
    assert refused('{"x": NaN}') is ErrorCode.BAD_FRAME
    assert refused('{"x": Infinity}') is ErrorCode.BAD_FRAME


def test_float32_decodes_as_a_float() -> None:
    """A float 32 is an ordinary float once decoded."""
    assert same(decode(msgpack.packb({"x": 2.5}, use_single_float=True)), {"x": 2.5})


def test_bin_values_are_bad_frames() -> None:
    """Text must be str: a bin anywhere in the frame is refused, with its path in the message."""
    with pytest.raises(ProtocolError) as caught:
        decode(msgpack.packb({"type": "x", "a": [{"b": b"bytes"}]}, use_bin_type=True))
    assert caught.value.code is ErrorCode.BAD_FRAME
    assert "frame.a[0].b" in caught.value.message


def test_ext_types_are_bad_frames() -> None:
    """Application ext types and the timestamp ext type are refused."""
    ext = msgpack.packb({"x": msgpack.ExtType(5, b"\x00")})
    stamp = msgpack.packb({"x": msgpack.Timestamp(1, 0)})
    assert refused(ext) is ErrorCode.BAD_FRAME
    assert refused(stamp) is ErrorCode.BAD_FRAME


def test_non_string_map_keys_are_bad_frames() -> None:
    """Map keys are strings, at every level."""
    assert refused(msgpack.packb({1: "x"})) is ErrorCode.BAD_FRAME
    assert refused(msgpack.packb({"a": {b"k": 1}}, use_bin_type=True)) is ErrorCode.BAD_FRAME
    assert refused(msgpack.packb({"a": {None: 1}})) is ErrorCode.BAD_FRAME


def test_invalid_utf8_is_a_bad_frame() -> None:
    """A msgpack str must hold UTF-8."""
    assert refused(b"\x81\xa1x\xa2\xc3\x28") is ErrorCode.BAD_FRAME


@pytest.mark.parametrize("value", [[1, 2], "hello", 7, None, True])
def test_a_frame_must_be_a_map(value: Any) -> None:
    """A message holding anything but a map is refused on both encodings."""
    assert refused(msgpack.packb(value)) is ErrorCode.BAD_FRAME
    assert refused(orjson.dumps(value).decode()) is ErrorCode.BAD_FRAME


def test_nesting_limit_is_sixteen_levels() -> None:
    """A value 16 levels below the frame map decodes; 17 levels is refused, on both encodings."""
    assert MAX_DEPTH == 16
    ok, deep = {"x": nested(15)}, {"x": nested(16)}
    for encode_one in (msgpack.packb, lambda v: orjson.dumps(v).decode()):
        assert same(decode(encode_one(ok)), ok)
        assert refused(encode_one(deep)) is ErrorCode.BAD_FRAME
    assert same(decode(msgpack.packb({"x": {"y": nested(14)}})), {"x": {"y": nested(14)}})
    assert refused(msgpack.packb({"x": {"y": nested(15)}})) is ErrorCode.BAD_FRAME


def test_deep_nesting_bombs_are_bad_frames() -> None:
    """Thousands of nested arrays are refused cleanly, not with a crash."""
    assert refused(b"\x81\xa1x" + b"\x91" * 100_000 + b"\xc0") is ErrorCode.BAD_FRAME
    assert refused('{"x": ' + "[" * 100_000 + "]" * 100_000 + "}") is ErrorCode.BAD_FRAME


def test_malformed_input_is_a_bad_frame() -> None:
    """Reserved bytes, empty messages and broken JSON are refused as bad_frame."""
    for message in (b"", b"\xc1", b"\x81\xc1\xc0", "", "{", "{'a': 1}", "nul"):
        assert refused(message) is ErrorCode.BAD_FRAME


def test_specific_decoders_enforce_the_same_rules() -> None:
    """decode_msgpack and decode_json apply the same checks as decode."""
    with pytest.raises(ProtocolError):
        decode_msgpack(msgpack.packb({"n": 2**53}))
    with pytest.raises(ProtocolError):
        decode_json(b'{"n": 9007199254740992}')
    assert decode_json(b'{"n": 9007199254740991}') == {"n": MAX_SAFE_INT}


# ----------------------------------------------------------------------- round trips


_KEYS = st.text(max_size=8)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE_INT, max_value=MAX_SAFE_INT)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)


def _values(depth: int) -> st.SearchStrategy[Any]:
    """JSON-compatible values at most ``depth`` levels deep (each level a list or a map)."""
    if depth == 0:
        return _SCALARS
    inner = _values(depth - 1)
    return _SCALARS | st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4)


FRAMES = st.dictionaries(_KEYS, _values(4), max_size=6)
DEEP_FRAMES = st.dictionaries(_KEYS, _values(MAX_DEPTH - 1), max_size=2)


@given(FRAMES)
def test_frames_round_trip_through_msgpack(frame: dict[str, Any]) -> None:
    """Any map of allowed values encodes with encode() and decodes to itself."""
    assert same(decode(encode(frame)), frame)


@given(FRAMES)
def test_frames_round_trip_through_json(frame: dict[str, Any]) -> None:
    """Any map of allowed values encodes with encode_json() and decodes to itself."""
    assert same(decode(encode_json(frame)), frame)


@given(DEEP_FRAMES)
def test_deep_frames_within_the_limit_round_trip(frame: dict[str, Any]) -> None:
    """Frames nested up to the depth limit round-trip on both encodings."""
    assert same(decode(encode(frame)), frame)
    assert same(decode(encode_json(frame)), frame)


@given(FRAMES)
def test_msgpack_and_json_decode_to_the_same_map(frame: dict[str, Any]) -> None:
    """The binary and the text form of one frame decode to equal maps."""
    assert same(decode(encode(frame)), decode(encode_json(frame)))


# ----------------------------------------------------------------------- encode limit


def _frame_of_size(size: int) -> dict[str, Any]:
    """A frame whose msgpack encoding is exactly ``size`` bytes (300 ≤ size < 65 000)."""
    base = len(msgpack.packb({"type": "x", "pad": ""}, use_bin_type=True))  # "" is one byte
    frame = {"type": "x", "pad": "a" * (size - base - 2)}  # a str 16 header is three bytes
    assert len(msgpack.packb(frame, use_bin_type=True)) == size
    return frame


def test_encode_accepts_a_frame_of_exactly_the_limit() -> None:
    """A frame of exactly MAX_OUTBOUND (60 KiB) bytes is encoded."""
    assert MAX_OUTBOUND == 60 * 1024
    assert len(encode(_frame_of_size(MAX_OUTBOUND))) == MAX_OUTBOUND


def test_encode_refuses_a_frame_over_the_limit() -> None:
    """One byte over 60 KiB is refused with too_large, naming the size."""
    with pytest.raises(ProtocolError) as caught:
        encode(_frame_of_size(MAX_OUTBOUND + 1))
    assert caught.value.code is ErrorCode.TOO_LARGE
    assert str(MAX_OUTBOUND + 1) in caught.value.message
    assert caught.value.close_code is None


def test_encode_limit_can_be_lowered() -> None:
    """encode(limit=) applies another bound."""
    frame = _frame_of_size(1000)
    assert len(encode(frame, limit=1000)) == 1000
    with pytest.raises(ProtocolError):
        encode(frame, limit=999)


def test_encode_uses_str_never_bin() -> None:
    """Outbound text is msgpack str (0xa0–0xbf, 0xd9–0xdb), never bin."""
    data = encode({"type": "x", "s": "a" * 40})
    assert b"\xd9\x28" in data  # str 8 of 40 bytes
    assert not any(marker in data for marker in (b"\xc4", b"\xc5", b"\xc6"))


# ----------------------------------------------------------------------- errors


def test_fatal_error_codes_carry_their_close_codes() -> None:
    """hello_required, unauthorized, unsupported_protocol and slow_consumer end the connection."""
    fatal = {
        ErrorCode.HELLO_REQUIRED: CloseCode.HELLO_REQUIRED,
        ErrorCode.UNAUTHORIZED: CloseCode.UNAUTHORIZED,
        ErrorCode.UNSUPPORTED_PROTOCOL: CloseCode.UNSUPPORTED_PROTOCOL,
        ErrorCode.SLOW_CONSUMER: CloseCode.SLOW_CONSUMER,
    }
    for code in ErrorCode:
        assert ProtocolError(code, "m").close_code == fatal.get(code), code
    custom = ProtocolError(ErrorCode.HELLO_REQUIRED, "m", close=CloseCode.HELLO_TIMEOUT)
    assert custom.close_code is CloseCode.HELLO_TIMEOUT


def test_close_codes_are_the_documented_numbers() -> None:
    """The close codes are the fixed numbers of the spec."""
    assert {c.name: c.value for c in CloseCode} == {
        "NORMAL": 1000,
        "GOING_AWAY": 1001,
        "MESSAGE_TOO_BIG": 1009,
        "TRY_AGAIN_LATER": 1013,
        "HELLO_REQUIRED": 4000,
        "UNAUTHORIZED": 4001,
        "UNSUPPORTED_PROTOCOL": 4002,
        "HELLO_TIMEOUT": 4003,
        "SLOW_CONSUMER": 4008,
        "INTERNAL_ERROR": 4011,
    }


def test_error_frame_leaves_out_nil_rid_and_event_id() -> None:
    """to_frame() carries rid and event_id only when they are set; false and 0 are set."""
    bare = ProtocolError(ErrorCode.NOT_FOUND, "gone").to_frame()
    assert bare == {"type": "error", "code": "not_found", "message": "gone"}
    full = ProtocolError(ErrorCode.INVALID_EVENT, "bad", rid=0, event_id="e").to_frame()
    assert full == {
        "type": "error",
        "code": "invalid_event",
        "message": "bad",
        "rid": 0,
        "event_id": "e",
    }
    assert ProtocolError(ErrorCode.BAD_FRAME, "m", rid=False).to_frame()["rid"] is False


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


_any_value = st.recursive(
    st.none() | st.booleans() | st.text(max_size=3)
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=True, allow_infinity=True) | st.binary(max_size=2),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=2) | st.integers(0, 3), children, max_size=3),
    max_leaves=12,
)  # fmt: skip


@given(_any_value, st.integers(min_value=0, max_value=MAX_DEPTH + 1))
def test_the_fast_check_agrees_with_the_explained_one(value: Any, depth: int) -> None:
    """check_value walks a valid frame once without path text and explains only a refusal:
    its verdict is the full walk's for any value at any starting depth."""
    from protocol.codec import _check_explained, check_value

    def verdict(check: Any) -> str | None:
        try:
            check(value, depth, "frame")
        except ProtocolError as exc:
            return exc.message
        return None

    assert verdict(check_value) == verdict(_check_explained)


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])
@pytest.mark.parametrize("leaf", ["x", 1, [], {}])
def test_nesting_limit_is_the_same_on_both_walks(depth: int, leaf: Any) -> None:
    from protocol.codec import _check_explained, check_value

    value = _nested(depth, leaf)
    outcomes = []
    for check in (check_value, _check_explained):
        try:
            check(value, 0, "frame")
            outcomes.append("ok")
        except ProtocolError as exc:
            outcomes.append(exc.message)
    assert outcomes[0] == outcomes[1]
    assert (outcomes[0] == "ok") == (depth <= MAX_DEPTH)  # the leaf sits at ``depth``
