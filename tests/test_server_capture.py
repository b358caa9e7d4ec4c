"""Token redaction in capture files, also for refused hellos that do not decode (issue 9 item 8).

A hello that carries a valid token plus one defect (an integer key, a trailing byte, a lone
surrogate, no ``type``) is refused, but it is still captured; the token must not be in the
capture file, in msgpack or JSON.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgpack
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from wsclient import running, within

from sidecar.server.capture import REDACTED, CaptureWriter, read_capture, redact, rotated

SECRET = "Sup3r-s3cret-t0ken-é"
HELLO = {"type": "hello", "protocol": 1, "world": "town", "token": SECRET}


def _mp(obj: object) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


#: name -> (the refused hello as sent, is it a text message)
DEFECTS: dict[str, bytes | str] = {
    "integer_key": _mp({1: 2, **HELLO}),
    "trailing_byte": _mp(HELLO) + b"\x00",
    "lone_surrogate_msgpack": _mp({**HELLO, "client": "x"}).replace(b"\xa1x", b"\xa3\xed\xa0\x80"),
    "no_type": _mp({k: v for k, v in HELLO.items() if k != "type"}),
    "json_trailing": '{"type":"hello","protocol":1,"world":"town","token":"' + SECRET + '"}x',
    "json_lone_surrogate": (
        '{"type":"hello","protocol":1,"world":"town","client":"\\ud800","token":"' + SECRET + '"}'
    ),
    "json_no_type": '{"protocol":1,"world":"town","token":"' + SECRET + '"}',
    "json_escaped_token": '{"protocol":1,"token":"'
    + SECRET.encode("ascii", "backslashreplace").decode().replace("\\x", "\\u00")
    + '"}x',
}


def _size(data: bytes | str) -> int:
    return len(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)


def _leaks(data: bytes | str) -> bool:
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    plain = SECRET.encode()
    return plain in raw or plain[:-2] in raw  # the ASCII part, also when the é is escaped


@pytest.mark.parametrize("name", list(DEFECTS))
def test_redact_masks_the_token_of_a_malformed_first_message(name: str) -> None:
    """Each defective hello keeps its shape (same length) but loses the token, configured or not."""
    message = DEFECTS[name]
    for secrets in ((), (SECRET,)):
        out = redact(message, first=True, secrets=secrets)
        assert not _leaks(out), (name, out)
        assert type(out) is type(message)
        assert _size(out) == _size(message)  # masked in place: the defect is kept for replay


def test_redact_keeps_ordinary_frames_byte_for_byte_and_redacts_decoded_hellos() -> None:
    """Only hellos (and the first message) are touched; a valid hello gets '<redacted>'."""
    event = _mp({"type": "observe", "token": "not-a-secret", "event_id": "e"})
    assert redact(event, secrets=(SECRET,)) == event
    out = redact(_mp(HELLO), first=True, secrets=(SECRET,))
    assert isinstance(out, bytes)
    assert msgpack.unpackb(out, raw=False)["token"] == REDACTED


async def test_refused_hellos_with_a_valid_token_never_reach_the_capture(tmp_path: Path) -> None:
    """Over a real socket: every defective hello is refused and the capture holds no token."""
    capture = tmp_path / "c.capture"
    async with running(tmp_path, writer_tokens=[f"town={SECRET}"], capture=capture) as sc:
        for message in DEFECTS.values():
            async with connect(sc.url, proxy=None) as ws:
                await ws.send(message)
                with pytest.raises(ConnectionClosed):
                    while True:
                        await within(ws.recv())
                assert ws.close_code is not None and ws.close_code >= 4000
        await asyncio.sleep(0)
    raw = capture.read_bytes()
    assert SECRET.encode() not in raw and SECRET.encode()[:-2] not in raw
    records = list(read_capture(capture))
    assert len(records) == len(DEFECTS)
    assert all(not _leaks(r["data"]) for r in records)


# ------------------------------------------------------------------------ bounded captures


def test_a_capture_rotates_at_its_limit_and_keeps_one_older_file(tmp_path: Path) -> None:
    """Records go to FILE until the next would pass the limit; then FILE becomes FILE.1 (the
    older FILE.1 dropped) and FILE starts again: never a third file, each file within the
    limit, records never split, and the pair reads as the tail of what was recorded, in
    order. A file appended to counts what it already holds; a record larger than the limit
    is a file of its own."""
    path = tmp_path / "c.capture"
    path.write_bytes(b"")
    writer = CaptureWriter(path, max_bytes=1024)
    sent = [_mp({"type": "event", "n": n, "pad": "x" * (n % 40)}) for n in range(200)]
    try:
        for n, data in enumerate(sent):
            writer.record(1 + n % 3, data)
            assert path.stat().st_size <= 1024
            assert not rotated(rotated(path)).exists()
    finally:
        writer.close()
    assert writer.rotations > 5 and rotated(path).stat().st_size <= 1024
    got = [r["data"] for r in read_capture(path)]
    assert 0 < len(got) < len(sent) and got == sent[-len(got) :]  # the tail, in order
    assert [r["data"] for r in read_capture(rotated(path))] == got[: -len(list(_one(path)))]
    # Reopened over a full file: the first record rotates it; a huge one stands alone.
    writer = CaptureWriter(path, max_bytes=1024)
    try:
        assert writer.size == path.stat().st_size
        writer.record(9, _mp({"type": "big", "pad": "y" * 3000}))
        assert writer.rotations == 1 and len(list(_one(path))) == 1
        writer.record(9, _mp({"type": "after"}))
        assert writer.rotations == 2
    finally:
        writer.close()
    kinds = [msgpack.unpackb(r["data"])["type"] for r in read_capture(path)]
    assert kinds == ["big", "after"]


def _one(path: Path) -> list[dict[str, object]]:
    """The records of one file of a capture, without its rotated part."""
    moved = path.with_name(path.name + ".hidden")
    older = rotated(path)
    had = older.exists()
    if had:
        older.rename(moved)
    try:
        return list(read_capture(path))
    finally:
        if had:
            moved.rename(older)


async def test_a_real_server_bounds_its_capture(tmp_path: Path) -> None:
    """A sidecar on an ephemeral port with capture_max_bytes 2048 and 150 events of ~100 bytes:
    the capture rotates, FILE and FILE.1 stay within 2 KiB, and the pair is the tail of the
    frames sent, byte for byte, in order."""
    capture = tmp_path / "c.capture"
    sent: list[bytes] = []
    async with running(tmp_path, capture=capture, capture_max_bytes=2048) as sc:
        async with connect(sc.url, proxy=None) as ws:
            hello = _mp({"type": "hello", "protocol": 1, "world": "town"})
            await ws.send(hello)
            sent.append(hello)
            assert msgpack.unpackb(await within(ws.recv()))["type"] == "welcome"
            for n in range(150):
                frame = _mp({"type": "event", "event_id": f"e{n}", "day": 1, "kind": "observe",
                             "witnesses": ["mira"], "claim": {"root": f"r{n}", "value": "v"},
                             "subject": "a thing seen"})  # fmt: skip
                await ws.send(frame)
                sent.append(frame)
                assert msgpack.unpackb(await within(ws.recv()))["type"] == "ack"
        assert sc.capture is not None and sc.capture.rotations >= 3
    assert capture.stat().st_size <= 2048 and rotated(capture).stat().st_size <= 2048
    assert not rotated(rotated(capture)).exists()
    got = [r["data"] for r in read_capture(capture)]
    assert len(got) > 10 and got == sent[-len(got) :]
